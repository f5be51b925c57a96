/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * empty_uprobe - the floor for gpuprobe's per-call cost: attaches an empty BPF program
 * as a uprobe (and with --ret an empty uretprobe) to functions of a library, filtered to
 * one command's PID, then runs the command. Nothing is recorded: what the command pays per
 * probed call is the price of the uprobe mechanism itself.
 *
 *   empty_uprobe [--multi] [--ret] [--all] [--toggle ON_US:OFF_US] LIB FUNC[,FUNC...] -- COMMAND [ARGS...]
 *
 *   --multi  one uprobe_multi link per program (BPF_TRACE_UPROBE_MULTI, Linux 6.6+), as
 *            gpuprobe attaches; default: one perf-event uprobe per function
 *   --ret    also an empty return probe on every function
 *   --all    every exported function of LIB (FUNC is then ignored; give "-")
 *   --toggle with --multi: while the command runs, the links are closed after ON_US
 *            microseconds and made again after OFF_US (what --max-overhead's sampling
 *            does: a detached uprobe costs the traced process nothing, an attached one
 *            whose program returns at once still costs the trap). At exit it prints
 *            "empty_uprobe: toggle cycles C attach_us_median A detach_us_median D
 *            on_fraction F" (F: the time from a link made to the start of its close, over
 *            the command's run).
 *
 * Prints "empty_uprobe: N probes attached in T ms" to stderr before the command runs,
 * and exits with the command's status.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "empty.skel.h"
#include "uprobe_multi.h"


static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void sleep_us(double us)
{
	struct timespec ts = { (time_t)(us / 1e6), (long)((us - (double)(time_t)(us / 1e6) * 1e6) * 1e3) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Every defined function in .dynsym (all, or those named in the comma list), as file
 * offsets. Returns the count, or -1. */
static int resolve(const char *path, const char *list, int all, const char ***names_out,
		   unsigned long **offs_out)
{
	Elf *e = NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t nph, cap = 64;
	int fd, n = 0;
	const char **names = malloc(cap * sizeof(*names));
	unsigned long *offs = malloc(cap * sizeof(*offs));

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !(e = elf_begin(fd, ELF_C_READ, NULL)) || elf_getphdrnum(e, &nph)) {
		fprintf(stderr, "empty_uprobe: cannot read %s\n", path);
		return -1;
	}
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;
			char key[512], *hay;
			int hit;

			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    s.st_shndx == SHN_UNDEF || !s.st_value)
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name)
				continue;
			if (!all) {
				snprintf(key, sizeof(key), ",%s,", name);
				if (asprintf(&hay, ",%s,", list) < 0)
					return -1;
				hit = strstr(hay, key) != NULL;
				free(hay);
				if (!hit)
					continue;
			}
			for (size_t p = 0; p < nph; p++) {
				GElf_Phdr ph;

				if (!gelf_getphdr(e, (int)p, &ph) || ph.p_type != PT_LOAD ||
				    !(ph.p_flags & PF_X) || s.st_value < ph.p_vaddr ||
				    s.st_value >= ph.p_vaddr + ph.p_memsz)
					continue;
				if ((size_t)n == cap) {
					cap *= 2;
					names = realloc(names, cap * sizeof(*names));
					offs = realloc(offs, cap * sizeof(*offs));
					if (!names || !offs)
						return -1;
				}
				names[n] = strdup(name);
				offs[n++] = s.st_value - ph.p_vaddr + ph.p_offset;
				break;
			}
		}
	}
	*names_out = names;
	*offs_out = offs;
	return n;
}

static int attach_multi(int prog_fd, const char *path, unsigned long *offs, int n, int ret,
			pid_t pid)
{
	_Static_assert(sizeof(*offs) == 8, "uprobe_multi offsets are 64-bit");
	return bench_uprobe_multi(prog_fd, path, offs, n, ret, pid);
}

#define MAX_CYCLES 200000

/* Closes and remakes the links every ON_US + OFF_US until the child exits; prints what
 * making and closing them took (the tracer's side) and the share of time they existed. */
static int toggle(int *fds, int nfd, const int *progs, const char *path, unsigned long *offs, int n,
		  pid_t child, double on_us, double off_us, int *status)
{
	static double att[MAX_CYCLES], det[MAX_CYCLES];
	double t0 = now_ms(), on_ms = 0, t_on = t0;
	int cycles = 0;

	for (;;) {
		double a, b;

		sleep_us(on_us);
		a = now_ms();
		for (int k = 0; k < nfd; k++)
			close(fds[k]);
		b = now_ms();
		/* a link's breakpoints go at the start of close() (the rest waits for RCU
		 * grace periods) and come when making it returns */
		on_ms += a - t_on;
		if (cycles < MAX_CYCLES)
			det[cycles] = (b - a) * 1e3;
		if (waitpid(child, status, WNOHANG) == child)
			break;
		sleep_us(off_us);
		a = now_ms();
		for (int k = 0; k < nfd; k++) {
			fds[k] = attach_multi(progs[k], path, offs, n, k, child);
			if (fds[k] < 0) {
				fprintf(stderr, "empty_uprobe: toggle: uprobe_multi: %s\n", strerror(-fds[k]));
				return -1;
			}
		}
		b = now_ms();
		t_on = b;
		if (cycles < MAX_CYCLES)
			att[cycles] = (b - a) * 1e3;
		cycles++;
	}
	int m = cycles < MAX_CYCLES ? cycles : MAX_CYCLES;

	qsort(att, (size_t)m, sizeof(double), cmp_double);
	qsort(det, (size_t)m + 1 <= MAX_CYCLES ? (size_t)m + 1 : MAX_CYCLES, sizeof(double), cmp_double);
	fprintf(stderr, "empty_uprobe: toggle cycles %d attach_us_median %.1f detach_us_median %.1f on_fraction %.4f\n",
		cycles, m ? att[m / 2] : 0.0, det[(m + 1) / 2], on_ms / (now_ms() - t0));
	return 0;
}

int main(int argc, char **argv)
{
	int multi = 0, ret = 0, all = 0, i = 1, n, go[2], status, err = 1, probes = 0;
	int fds[2] = { -1, -1 }, progs[2] = { -1, -1 };
	double on_us = 0, off_us = 0;
	const char **names = NULL;
	unsigned long *offs = NULL;
	struct empty_bpf *skel = NULL;
	const char *lib, *funcs;
	char path[4096];
	double t0;
	pid_t child;

	for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-' && argv[i][2]; i++) {
		if (!strcmp(argv[i], "--multi"))
			multi = 1;
		else if (!strcmp(argv[i], "--ret"))
			ret = 1;
		else if (!strcmp(argv[i], "--all"))
			all = 1;
		else if (!strcmp(argv[i], "--toggle") && i + 1 < argc &&
			 sscanf(argv[i + 1], "%lf:%lf", &on_us, &off_us) == 2 && on_us > 0 && off_us > 0)
			i++;
		else
			break;
	}
	if (on_us > 0 && !multi) {
		fprintf(stderr, "empty_uprobe: --toggle needs --multi\n");
		return 2;
	}
	if (argc - i < 4 || strcmp(argv[i + 2], "--")) {
		fprintf(stderr, "usage: empty_uprobe [--multi] [--ret] [--all] [--toggle ON_US:OFF_US] "
				"LIB FUNC[,FUNC...] -- COMMAND [ARGS...]\n");
		return 2;
	}
	lib = argv[i];
	funcs = argv[i + 1];
	if (!realpath(lib, path)) {
		fprintf(stderr, "empty_uprobe: %s: %s\n", lib, strerror(errno));
		return 1;
	}
	/* the command waits on a pipe until the probes are attached to its PID */
	if (pipe(go))
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (!child) {
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		close(go[0]);
		execvp(argv[i + 3], argv + i + 3);
		fprintf(stderr, "empty_uprobe: cannot run %s: %s\n", argv[i + 3], strerror(errno));
		_exit(127);
	}
	close(go[0]);

	t0 = now_ms();
	n = resolve(path, funcs, all, &names, &offs);
	if (n <= 0) {
		fprintf(stderr, "empty_uprobe: no function of %s found in %s\n", funcs, path);
		goto out;
	}
	skel = empty_bpf__open();
	if (!skel)
		goto out;
	if (multi) {
		bpf_program__set_expected_attach_type(skel->progs.empty_enter, UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.empty_leave, UPROBE_MULTI);
	}
	if (empty_bpf__load(skel)) {
		fprintf(stderr, "empty_uprobe: cannot load the BPF programs\n");
		goto out;
	}
	for (int r = 0; r <= ret; r++) {
		struct bpf_program *prog = r ? skel->progs.empty_leave : skel->progs.empty_enter;

		if (multi) {
			int fd = attach_multi(bpf_program__fd(prog), path, offs, n, r, child);

			if (fd < 0) {
				fprintf(stderr, "empty_uprobe: uprobe_multi: %s\n", strerror(-fd));
				goto out;
			}
			probes += n; /* the fd stays open until exit */
			fds[r] = fd;
			progs[r] = bpf_program__fd(prog);
			continue;
		}
		for (int k = 0; k < n; k++) {
			LIBBPF_OPTS(bpf_uprobe_opts, o, .retprobe = r);

			if (!bpf_program__attach_uprobe_opts(prog, child, path, offs[k], &o)) {
				fprintf(stderr, "empty_uprobe: %s: %s\n", names[k], strerror(errno));
				goto out;
			}
			probes++;
		}
	}
	fprintf(stderr, "empty_uprobe: %d probes attached in %.1f ms\n", probes, now_ms() - t0);
	err = 0;
out:
	if (err) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return 1;
	}
	if (write(go[1], "g", 1) != 1)
		return 1;
	close(go[1]);
	if (on_us > 0) {
		if (toggle(fds, ret + 1, progs, path, offs, n, child, on_us, off_us, &status)) {
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			return 1;
		}
	} else if (waitpid(child, &status, 0) < 0) {
		return 1;
	}
	/* links are released by exit */
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
