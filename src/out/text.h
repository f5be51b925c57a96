/* SPDX-License-Identifier: BSD-3-Clause */
/* Pieces of the text reports every mode uses: sizes, histograms, the report's clock. */
#ifndef GP_TEXT_H
#define GP_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "1.5 MiB" */
void gp_text__bytes(uint64_t bytes, char *buf, size_t len);
/* bcc-style log2 histogram of n slots (slot i holds [2^i, 2^(i+1)) of unit) */
void gp_text__log2_hist(FILE *f, const uint64_t *slots, int n, const char *unit);
/* "HH:MM:SS", local time now */
void gp_text__clock(char *buf, size_t len);

#endif
