/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spawn_app: process churn with a known count, for the daemon's churn and series-cap tests.
 *
 *   spawn_app --n N [--jobs J] [--rate R] [--uid U] -- PROGRAM [ARGS...]
 *
 * Runs PROGRAM N times, at most J at a time (default 20), starting at most R a second
 * (default 0: as fast as J allows), each child as user U when given (set before the exec:
 * gpuprobe's tests run workloads as nobody). "{}" in PROGRAM is replaced by the child's
 * number (0 .. N-1), so a folder of symbolic links p0, p1 ... gives each process a name
 * (comm) of its own. The truth (last JSON line on stderr): children started, those that
 * exited 0, the others, the seconds from the first start to the last exit and the
 * achieved rate (started / seconds).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void sleep_until_ns(unsigned long long t)
{
	struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* PROGRAM with "{}" replaced by i. */
static char *program_of(const char *fmt, unsigned long i)
{
	const char *at = strstr(fmt, "{}");
	char *out = NULL;

	if (!at)
		return strdup(fmt);
	if (asprintf(&out, "%.*s%lu%s", (int)(at - fmt), fmt, i, at + 2) < 0)
		return NULL;
	return out;
}

int main(int argc, char **argv)
{
	unsigned long n = 0, jobs = 20, started = 0, ok = 0, bad = 0, running = 0;
	double rate = 0;
	long uid = -1;
	unsigned long long t0, t1;
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (i + 1 >= argc)
			break;
		if (!strcmp(argv[i], "--n"))
			n = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--jobs"))
			jobs = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--rate"))
			rate = strtod(argv[++i], NULL);
		else if (!strcmp(argv[i], "--uid"))
			uid = strtol(argv[++i], NULL, 10);
		else
			break;
	}
	if (i >= argc - 1 || strcmp(argv[i], "--") || !n || !jobs) {
		fprintf(stderr, "usage: %s --n N [--jobs J] [--rate R] [--uid U] -- PROGRAM [ARGS...]\n", argv[0]);
		return 2;
	}
	argv += i + 1;
	t0 = now_ns();
	while (started < n || running) {
		int st;
		pid_t pid;

		if (started < n && running < jobs) {
			char *prog = program_of(argv[0], started);

			if (rate > 0)
				sleep_until_ns(t0 + (unsigned long long)((double)started * 1e9 / rate));
			pid = prog ? fork() : -1;
			if (pid == 0) {
				if (uid >= 0 && (setgid((gid_t)uid) || setuid((uid_t)uid)))
					_exit(126);
				execv(prog, argv);
				_exit(127);
			}
			free(prog);
			if (pid < 0) {
				perror("spawn_app: fork");
				bad++;
				n--; /* not started: the truth says so */
				continue;
			}
			started++;
			running++;
			continue;
		}
		pid = wait(&st);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		running--;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
		else
			bad++;
	}
	t1 = now_ns();
	fprintf(stderr, "{\"api\": \"spawn\", \"started\": %lu, \"exited_ok\": %lu, \"failed\": %lu, \"seconds\": %.3f, \"rate\": %.1f}\n",
		started, ok, bad, (double)(t1 - t0) / 1e9, (double)started / ((double)(t1 - t0) / 1e9));
	return bad ? 1 : 0;
}
