/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hang_app: ranks of an NCCL job with a straggler or a hang made on purpose, for gpuprobe
 * --nccl's hang and straggler figures (issue 34 item 3). One rank a process (start it
 * with nccl_launcher.sh: NCCL_LAUNCH_APP=hang_app), or every rank in one process:
 *
 *   hang_app --rank R --nranks N --id-file F [options]
 *   hang_app --all N [options]        (ncclCommInitAll: N ranks in one process)
 *
 * K (--n, default 5) float32 AllReduce of 1 MiB on the world communicator, each waited
 * for by polling cuStreamQuery every 200 us (as PyTorch's watchdog polls its events). With
 * --all the N ranks' calls of one collective are made in one ncclGroupStart/End, ranks in
 * order, each on its own stream.
 *   --delay R:D     rank R sleeps D ms before entering each collective (a straggler)
 *   --stall R:I:M   rank R sleeps M ms before entering collective I (a rank that does not
 *                   enter: a hang, released after M ms)
 *   --linger MS     sleep MS ms after the last collective (a scrape of a running job)
 *   --inits M       with --all: ncclCommInitAll M times (M communicators, M comm_ids:
 *                   a process that floods gpuprobe's tables), the collectives on the last
 *   --split         (one rank a process) the collectives run on a split of the world that
 *                   is never asked its shape (as PyTorch's new_group): color rank % 2, key
 *                   N - rank (so the split's ranks run opposite to the world's), and with N
 *                   odd, rank N - 1 in none (NCCL_SPLIT_NOCOLOR: it runs no collective)
 * With the stand-in's FAKENCCL_HOLD_RANK/AT/MS a rank's collective also stays on its
 * stream, not complete, as a real one waits in its kernel for a rank that has not entered.
 *
 * Ground truth (last JSON line on stderr): per rank, the CLOCK_MONOTONIC time it entered
 * each collective ("entries", ns, taken right before the call), and the NOT_READY polls;
 * with --split, its "color" (-1: none) and its rank and size in the split by NCCL's rule
 * (by construction: the program never asks them).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "fakenccl.h"
#include "ncclid.h"

#define MAX_RANKS 16
#define MAX_N 1000
#define COUNT 262144 /* float32: 1 MiB */

static const char usage[] =
	"(--rank R --nranks N --id-file F [--split] | --all N [--inits M]) [--n K] [--delay R:D] [--stall R:I:M] [--linger MS]";

static unsigned long long entries[MAX_RANKS][MAX_N], polls;

#define NCC(call) nccl_check((call), #call, __LINE__)

static void nccl_check(ncclResult_t rc, const char *what, int line)
{
	if (rc == ncclSuccess)
		return;
	fprintf(stderr, "hang_app:%d: %s failed: %s (%d)\n", line, what, ncclGetErrorString(rc), (int)rc);
	exit(1);
}

static void sleep_ms(unsigned long long ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void poll_done(CUstream s)
{
	CUresult rc;

	while ((rc = cuStreamQuery(s)) == CUDA_ERROR_NOT_READY) {
		polls++;
		usleep(200);
	}
	CHECK(rc);
}

struct plan {
	int delay_rank, stall_rank;
	unsigned long long delay_ms, stall_at, stall_ms;
};

/* What rank r does before entering collective i. */
static void before(const struct plan *p, int r, unsigned long long i)
{
	if (r == p->delay_rank)
		sleep_ms(p->delay_ms);
	if (r == p->stall_rank && i == p->stall_at)
		sleep_ms(p->stall_ms);
}

static void parse_plan(const char *prog, const char *opt, const char *v, struct plan *p)
{
	unsigned int r;
	unsigned long long a, b;
	int n;

	if (!strcmp(opt, "--delay") && sscanf(v, "%u:%llu%n", &r, &a, &n) == 2 && !v[n]) {
		p->delay_rank = (int)r;
		p->delay_ms = a;
	} else if (!strcmp(opt, "--stall") && sscanf(v, "%u:%llu:%llu%n", &r, &a, &b, &n) == 3 && !v[n]) {
		p->stall_rank = (int)r;
		p->stall_at = a;
		p->stall_ms = b;
	} else {
		app_usage_error(prog, usage, "bad %s %s", opt, v);
	}
}

static int split_color(int r, int nranks)
{
	return nranks % 2 && r == nranks - 1 ? NCCL_SPLIT_NOCOLOR : r % 2;
}

static int split_key(int r, int nranks)
{
	return nranks - r;
}

/* Rank r's place in its split: the ranks of its color, by key, then by world rank. */
static void split_shape(int r, int nranks, int *size, int *rank)
{
	*size = *rank = 0;
	for (int i = 0; i < nranks; i++) {
		if (split_color(i, nranks) != split_color(r, nranks))
			continue;
		(*size)++;
		*rank += split_key(i, nranks) < split_key(r, nranks) ||
			 (split_key(i, nranks) == split_key(r, nranks) && i < r);
	}
}

static int split_on;

static void print_truth(int first, int nr, int nranks, unsigned long long k)
{
	fprintf(stderr, "{\"api\":\"hang_app\",\"pid\":%d,\"nranks\":%d,\"polls\":%llu,\"ranks\":[", (int)getpid(),
		nranks, polls);
	for (int r = first; r < first + nr; r++) {
		unsigned long long kk = split_on && split_color(r, nranks) < 0 ? 0 : k;

		fprintf(stderr, "%s{\"rank\":%d,", r > first ? "," : "", r);
		if (split_on) {
			int size, rank;

			split_shape(r, nranks, &size, &rank);
			fprintf(stderr, "\"color\":%d,\"split_rank\":%d,\"split_nranks\":%d,", split_color(r, nranks),
				rank, size);
		}
		fprintf(stderr, "\"entries\":[");
		for (unsigned long long i = 0; i < kk; i++)
			fprintf(stderr, "%s%llu", i ? "," : "", entries[r][i]);
		fprintf(stderr, "]}");
	}
	fprintf(stderr, "]}\n");
}

int main(int argc, char **argv)
{
	struct plan plan = { .delay_rank = -1, .stall_rank = -1 };
	int rank = -1, nranks = 0, all = 0, nloc;
	unsigned long long k = 5, linger = 0, inits = 1;
	const char *id_file = NULL;
	ncclComm_t comms[MAX_RANKS];
	CUstream streams[MAX_RANKS];
	CUdeviceptr buf;
	CUcontext ctx;
	int ndev;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rank") && i + 1 < argc)
			rank = (int)app_parse_u64("--rank", argv[++i]);
		else if (!strcmp(argv[i], "--nranks") && i + 1 < argc)
			nranks = (int)app_parse_u64("--nranks", argv[++i]);
		else if (!strcmp(argv[i], "--all") && i + 1 < argc)
			all = (int)app_parse_u64("--all", argv[++i]);
		else if (!strcmp(argv[i], "--id-file") && i + 1 < argc)
			id_file = argv[++i];
		else if (!strcmp(argv[i], "--n") && i + 1 < argc)
			k = app_parse_u64("--n", argv[++i]);
		else if (!strcmp(argv[i], "--inits") && i + 1 < argc)
			inits = app_parse_u64("--inits", argv[++i]);
		else if (!strcmp(argv[i], "--split"))
			split_on = 1;
		else if (!strcmp(argv[i], "--linger") && i + 1 < argc)
			linger = app_parse_u64("--linger", argv[++i]);
		else if ((!strcmp(argv[i], "--delay") || !strcmp(argv[i], "--stall")) && i + 1 < argc) {
			parse_plan(argv[0], argv[i], argv[i + 1], &plan);
			i++;
		} else
			app_usage_error(argv[0], usage, "unknown option %s", argv[i]);
	}
	if (all)
		nranks = all;
	if (nranks < 1 || nranks > MAX_RANKS || k < 1 || k > MAX_N ||
	    (!all && (rank < 0 || rank >= nranks || !id_file)) || inits < 1 || inits > 200 || (split_on && all))
		app_usage_error(argv[0], usage, "need 0 <= R < N <= %d and an id file, or --all N; 1 <= K <= %d",
				MAX_RANKS, MAX_N);
	CHECK(cuInit(0));
	CHECK(cuDeviceGetCount(&ndev));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, all ? 0 : rank % ndev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuMemAlloc_v2(&buf, COUNT * 4));
	nloc = all ? nranks : 1;
	for (int i = 0; i < nloc; i++)
		CHECK(cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING));
	if (all) {
		for (unsigned long long i = 0; i < inits; i++)
			NCC(ncclCommInitAll(comms, nranks, NULL));
	} else {
		ncclUniqueId id;

		if (rank == 0) {
			NCC(ncclGetUniqueId(&id));
			ncclid_write("hang_app", id_file, &id);
		} else {
			ncclid_read("hang_app", id_file, &id);
		}
		NCC(ncclCommInitRank(&comms[0], nranks, id, rank));
	}
	if (split_on) {
		ncclComm_t world = comms[0];

		NCC(ncclCommSplit(world, split_color(rank, nranks), split_key(rank, nranks), &comms[0], NULL));
		if (!comms[0]) { /* in none: it waits out the others' collectives */
			sleep_ms(linger);
			NCC(ncclCommDestroy(world));
			print_truth(rank, 1, nranks, k);
			return 0;
		}
		comms[1] = world;
	}
	for (unsigned long long i = 0; i < k; i++) {
		void *b = (void *)(uintptr_t)buf;

		if (all)
			NCC(ncclGroupStart());
		for (int j = 0; j < nloc; j++) {
			int r = all ? j : rank;

			before(&plan, r, i);
			entries[r][i] = app_now_ns();
			NCC(ncclAllReduce(b, b, COUNT, ncclFloat32, ncclSum, comms[j], (cudaStream_t)streams[j]));
		}
		if (all)
			NCC(ncclGroupEnd());
		for (int j = 0; j < nloc; j++)
			poll_done(streams[j]);
	}
	sleep_ms(linger);
	for (int j = 0; j < nloc + split_on; j++)
		NCC(ncclCommDestroy(comms[j]));
	print_truth(all ? 0 : rank, nloc, nranks, k);
	return 0;
}
