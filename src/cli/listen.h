/* SPDX-License-Identifier: BSD-3-Clause */
/* The daemon's listening socket from "ADDR:PORT" or "[V6ADDR]:PORT". */
#ifndef GP_LISTEN_H
#define GP_LISTEN_H

#include <stddef.h>

/* A bound, listening, non-blocking socket; names resolve too, the first address wins.
 * Returns the fd (and its family) or -errno with one reason in err. */
int listen__open(const char *spec, int *family, char *err, size_t len);

#endif
