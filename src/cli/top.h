/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `gpuprobe top`: a live view of every traced process, drawn with ncurses (or printed,
 * --batch) from a run's counters (gp_run__counters), probe hits and drops, once per
 * interval. The front end (src/cli/main.c) sets the run up as for tracing and hands it
 * over; the view names no mode.
 */
#ifndef GP_TOP_H
#define GP_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gp_run;

struct top_opts {
	double interval;    /* seconds between frames */
	double duration;    /* stop after this many seconds; 0: no limit */
	bool batch;         /* text frames on stdout, no terminal */
	uint64_t iterations; /* --batch: this many frames; 0: until the end */
	int sort;           /* enum top_col */
	bool reverse;
	int width;          /* --batch: line width */
	const char *who;    /* what is traced, for the title */
	uint32_t keep_pid;  /* never forgotten (the command): its final figures stay */
	double keep;        /* seconds an exited process keeps its final figures on screen */
	bool (*ended)(void *ctx); /* the traced processes ended */
	bool (*stop)(void *ctx);  /* a signal asks to stop */
	void *ctx;
};

/* Until q (or the end, --batch), a signal, --duration or --iterations. 0 or -errno with
 * one reason in err. */
/* 0 when the view can be drawn here (--batch, or stdin and stdout on a terminal); -ENOTTY with
 * err set otherwise: checked before anything is attached. */
int top__check_terminal(const struct top_opts *o, char *err, size_t len);
int top__run(struct gp_run *run, const struct top_opts *o, char *err, size_t len);

#endif
