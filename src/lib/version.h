/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GP_VERSION_H
#define GP_VERSION_H

#define GP_VERSION "0.2.0"

#endif
