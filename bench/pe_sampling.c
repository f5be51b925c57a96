/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pe_sampling - what the overhead budget can do on a kernel without uprobe_multi links
 * (Linux < 6.6): perf-event uprobes only. Root.
 *
 *   pe_sampling calls LIB FUNC -- CMD [ARGS...]
 *       runs CMD (bench_workload launch: its "result ... ns_per_call X" line) once per
 *       configuration of a probe on FUNC of LIB and prints what a call cost and how many
 *       times the BPF program ran:
 *         none       no probe
 *         pmu        a perf-event uprobe (the uprobe PMU, as libbpf makes them), enabled
 *         pmu-off    the same, PERF_EVENT_IOC_DISABLE'd after the program was attached
 *         gate       a program that returns at once (what a BPF-side gate costs: the trap)
 *         tf-closed  a tracefs uprobe event whose program is held by a perf event bound to
 *                    this tool's own process (not CMD's): the event's PID filter keeps the
 *                    breakpoint out of CMD
 *         tf-open    the same with a second, program-less, disabled perf event for every
 *                    process open: the filter lets the breakpoint into CMD
 *   pe_sampling cycle LIB FUNC[,FUNC...] ROUNDS
 *       times making and removing an entry and a return probe on each FUNC, ROUNDS times:
 *         pmu        perf-event uprobes made (program attached) and closed one after the
 *                    other; then closed each from a thread of its own, all at once
 *         tf         the tracefs events' every-process perf events opened and closed (the
 *                    holders with the programs stay), closed serially, then from threads
 *         multi      (Linux 6.6+) two uprobe_multi links, entry and return, as the budget
 *                    makes and closes them per window there
 *       and prints the medians (ms for the whole set).
 *
 * The program counts its runs in an array map; the tool reads it after each run.
 *
 * Build (bench/run.py's build() makes bench_workload and its stand-in in .output/bench):
 *   gcc -O2 bench/pe_sampling.c -o .output/bench/pe_sampling -lbpf -lelf -lz -lpthread
 * Figures: docs/design.md, "The budget without uprobe_multi".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define MAXF 64
#define TRACEFS "/sys/kernel/tracing"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what)
{
	fprintf(stderr, "pe_sampling: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* ---- the programs ---- */

#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })

static int count_map = -1;

/* counting: map[0] += 1; gate: return 0 at once */
static int load_prog_type(bool gate, int attach_type)
{
	struct bpf_insn c[] = {
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, 6, 0, 0, 0),
		INSN(BPF_STX | BPF_MEM | BPF_W, 10, 6, -4, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -4),
		INSN(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0, count_map),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
		INSN(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, 1, 0, 0, 1),
		INSN(BPF_STX | BPF_ATOMIC | BPF_DW, 0, 1, 0, BPF_ADD),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	struct bpf_insn g[] = {
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = (enum bpf_attach_type)attach_type);
	int fd = gate ? bpf_prog_load(BPF_PROG_TYPE_KPROBE, "pe_gate", "GPL", g, 2, &o)
		      : bpf_prog_load(BPF_PROG_TYPE_KPROBE, "pe_count", "GPL", c, sizeof(c) / sizeof(c[0]), &o);

	if (fd < 0 && !attach_type)
		die("bpf_prog_load");
	return fd;
}

static int load_prog(bool gate)
{
	return load_prog_type(gate, 0);
}

/* BPF_LINK_CREATE's uprobe_multi layout (Linux 6.6+; not in older uapi headers). */
struct link_multi {
	__u32 prog_fd, target_fd, attach_type, flags;
	__u64 path, offsets, ref_ctr_offsets, cookies;
	__u32 cnt, um_flags, pid, pad;
};

#define TRACE_UPROBE_MULTI 48

static int multi_link(int prog, const char *path, const __u64 *offs, int n, bool ret)
{
	struct link_multi a = { .prog_fd = (__u32)prog, .attach_type = TRACE_UPROBE_MULTI,
				.path = (__u64)(unsigned long)path, .offsets = (__u64)(unsigned long)offs,
				.cnt = (__u32)n, .um_flags = ret ? 1 : 0 };
	int fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));

	return fd < 0 ? -errno : fd;
}

static unsigned long long runs(void)
{
	unsigned long long v = 0;
	__u32 k = 0;

	bpf_map_lookup_elem(count_map, &k, &v);
	return v;
}

static void zero_runs(void)
{
	unsigned long long v = 0;
	__u32 k = 0;

	bpf_map_update_elem(count_map, &k, &v, 0);
}

/* ---- the symbol ---- */

static long long func_offset(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY);
	Elf *e;
	Elf_Scn *s = NULL;
	long long off = -1;
	unsigned long long vaddr = 0;

	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE || !(e = elf_begin(fd, ELF_C_READ, NULL)))
		die(path);
	while ((s = elf_nextscn(e, s)) && !vaddr) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_DYNSYM || !(d = elf_getdata(s, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;

			if (gelf_getsym(d, (int)i, &sym) && sym.st_value &&
			    !strcmp(elf_strptr(e, sh.sh_link, sym.st_name), name))
				vaddr = sym.st_value;
		}
	}
	for (size_t i = 0, n = 0; vaddr && !elf_getphdrnum(e, &n) && i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz)
			off = (long long)(vaddr - ph.p_vaddr + ph.p_offset);
	}
	elf_end(e);
	close(fd);
	if (off < 0) {
		fprintf(stderr, "pe_sampling: %s: no %s\n", path, name);
		exit(1);
	}
	return off;
}

/* ---- perf events ---- */

static int pmu_type(bool *ret_bit_known, int *ret_bit)
{
	char buf[64];
	int fd = open("/sys/bus/event_source/devices/uprobe/type", O_RDONLY), t;
	ssize_t n;

	if (fd < 0)
		die("uprobe PMU type");
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	t = atoi(buf);
	fd = open("/sys/bus/event_source/devices/uprobe/format/retprobe", O_RDONLY);
	*ret_bit_known = false;
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = 0;
		close(fd);
		*ret_bit = atoi(buf + strlen("config:"));
		*ret_bit_known = true;
	}
	return t;
}

static int pe_open(struct perf_event_attr *a, pid_t pid)
{
	int fd = (int)syscall(__NR_perf_event_open, a, pid, pid == -1 ? 0 : -1, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* A perf-event uprobe on path:off (the uprobe PMU, as libbpf makes them), prog attached. */
static int pmu_probe(const char *path, long long off, bool ret, int prog)
{
	static int type = -1, bit;
	static bool known;
	struct perf_event_attr a = { .size = sizeof(a) };
	int fd;

	if (type < 0)
		type = pmu_type(&known, &bit);
	a.type = (__u32)type;
	a.config = ret ? 1ULL << bit : 0;
	a.config1 = (__u64)(unsigned long)path;
	a.config2 = (__u64)off;
	a.disabled = 1;
	fd = pe_open(&a, -1);
	if (fd < 0) {
		errno = -fd;
		die("perf_event_open (uprobe PMU)");
	}
	if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog) || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0))
		die("PERF_EVENT_IOC_SET_BPF");
	return fd;
}

/* ---- tracefs events ---- */

static char group[64];

static void tf_write(const char *line)
{
	int fd = open(TRACEFS "/uprobe_events", O_WRONLY | O_APPEND);

	if (fd < 0 || write(fd, line, strlen(line)) < 0) {
		fprintf(stderr, "pe_sampling: uprobe_events <- %s: %s\n", line, strerror(errno));
		exit(1);
	}
	close(fd);
}

static int tf_event(const char *path, long long off, bool ret, int i)
{
	char line[512], p[512], buf[32];
	int fd;
	ssize_t n;

	snprintf(line, sizeof(line), "%c:%s/e%d %s:0x%llx\n", ret ? 'r' : 'p', group, i, path, off);
	tf_write(line);
	snprintf(p, sizeof(p), TRACEFS "/events/%s/e%d/id", group, i);
	fd = open(p, O_RDONLY);
	if (fd < 0)
		die(p);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return atoi(buf);
}

static void tf_remove(int i)
{
	char line[128];

	snprintf(line, sizeof(line), "-:%s/e%d\n", group, i);
	tf_write(line);
}

/* A perf event on tracefs event id: for pid (the filter), disabled; prog attached if >= 0. */
static int tf_open(int id, pid_t pid, int prog)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_TRACEPOINT, .config = (__u64)id,
				     .sample_period = 1, .disabled = 1 };
	int fd = pe_open(&a, pid);

	if (fd < 0) {
		errno = -fd;
		die("perf_event_open (tracefs event)");
	}
	if (prog >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog))
		die("PERF_EVENT_IOC_SET_BPF (tracefs)");
	return fd;
}

/* ---- calls ---- */

static double run_cmd(char **cmd)
{
	int p[2];
	pid_t pid;
	char buf[65536];
	size_t len = 0;
	ssize_t n;
	double ns = -1;
	char *r;

	if (pipe(p))
		die("pipe");
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execvp(cmd[0], cmd);
		_exit(127);
	}
	close(p[1]);
	while (len < sizeof(buf) - 1 && (n = read(p[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	close(p[0]);
	waitpid(pid, NULL, 0);
	r = strstr(buf, "ns_per_call ");
	if (r && strstr(buf, "result"))
		ns = atof(strstr(buf, "result") ? strstr(strstr(buf, "result"), "ns_per_call ") + 12 : r + 12);
	return ns;
}

static int calls(const char *lib, const char *func, char **cmd)
{
	long long off = func_offset(lib, func);
	int prog = load_prog(false), gate = load_prog(true), fd, id, hold, win;
	const char *names[] = { "none", "pmu", "pmu-off", "gate", "tf-closed", "tf-open" };

	for (int c = 0; c < 6; c++) {
		double ns;
		fd = hold = win = -1;
		zero_runs();
		switch (c) {
		case 1:
			fd = pmu_probe(lib, off, false, prog);
			break;
		case 2:
			fd = pmu_probe(lib, off, false, prog);
			if (ioctl(fd, PERF_EVENT_IOC_DISABLE, 0))
				die("PERF_EVENT_IOC_DISABLE");
			break;
		case 3:
			fd = pmu_probe(lib, off, false, gate);
			break;
		case 4:
		case 5:
			id = tf_event(lib, off, false, 0);
			hold = tf_open(id, getpid(), prog);
			if (c == 5)
				win = tf_open(id, -1, -1);
			break;
		}
		ns = run_cmd(cmd);
		printf("%-10s ns_per_call %8.1f  program runs %llu\n", names[c], ns, runs());
		fflush(stdout);
		if (fd >= 0)
			close(fd);
		if (win >= 0)
			close(win);
		if (hold >= 0) {
			close(hold);
			tf_remove(0);
		}
	}
	return 0;
}

/* ---- cycle ---- */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void *closer(void *arg)
{
	close((int)(long)arg);
	return NULL;
}

/* Closes fds[0..n), serially or each from a thread of its own; ms until all are closed. */
static double close_all(int *fds, int n, bool threads)
{
	pthread_t t[2 * MAXF];
	double t0 = now_ms();

	for (int i = 0; i < n; i++)
		if (!threads || pthread_create(&t[i], NULL, closer, (void *)(long)fds[i]))
			close(fds[i]), t[i] = 0;
	for (int i = 0; threads && i < n; i++)
		if (t[i])
			pthread_join(t[i], NULL);
	return now_ms() - t0;
}

static int cycle(const char *lib, char *funcs, int rounds)
{
	long long offs[MAXF];
	int nf = 0, n, prog = load_prog(false), fds[2 * MAXF], ids[2 * MAXF], holds[2 * MAXF];
	double *a = calloc((size_t)rounds, sizeof(double)), *d = calloc((size_t)rounds, sizeof(double));
	double *dt = calloc((size_t)rounds, sizeof(double));

	for (char *s = strtok(funcs, ","); s && nf < MAXF; s = strtok(NULL, ","))
		offs[nf++] = func_offset(lib, s);
	__u64 uoffs[MAXF];
	int mprog = load_prog_type(false, TRACE_UPROBE_MULTI), modes = 2;

	for (int i = 0; i < nf; i++)
		uoffs[i] = (__u64)offs[i];
	if (mprog >= 0) {
		int l = multi_link(mprog, lib, uoffs, nf, false);

		if (l >= 0) {
			modes = 3;
			close(l);
		}
	}
	n = 2 * nf;
	for (int mode = 0; mode < modes; mode++) {
		for (int r = 0; r < rounds; r++) {
			for (int th = 0; th < 2; th++) {
				double t0 = now_ms();

				for (int i = 0; i < n; i++)
					fds[i] = mode == 0 ? pmu_probe(lib, offs[i / 2], i % 2, prog) : -1;
				if (mode == 2) {
					fds[0] = multi_link(mprog, lib, uoffs, nf, false);
					fds[1] = multi_link(mprog, lib, uoffs, nf, true);
					if (fds[0] < 0 || fds[1] < 0) {
						errno = -(fds[0] < 0 ? fds[0] : fds[1]);
						die("uprobe_multi link");
					}
				}
				if (mode == 1) {
					if (r == 0 && th == 0) {
						double h0 = now_ms(), h1;

						for (int i = 0; i < n; i++) {
							ids[i] = tf_event(lib, offs[i / 2], i % 2, i);
							holds[i] = tf_open(ids[i], getpid(), prog);
						}
						h1 = now_ms();
						printf("tf  setup: %d events made and held in %.1f ms\n", n, h1 - h0);
						t0 = now_ms();
					}
					for (int i = 0; i < n; i++)
						fds[i] = tf_open(ids[i], -1, -1);
				}
				a[r] = now_ms() - t0;
				(th ? dt : d)[r] = close_all(fds, mode == 2 ? 2 : n, th);
			}
		}
		printf("%-5s %d probes: attach %.1f ms, detach serially %.1f ms, from threads %.1f ms (medians of %d)\n",
		       mode == 2 ? "multi" : mode ? "tf" : "pmu", n, median(a, rounds), median(d, rounds),
		       median(dt, rounds), rounds);
		fflush(stdout);
	}
	{
		double h0 = now_ms(), h1;

		close_all(holds, n, true);
		h1 = now_ms();
		for (int i = 0; i < n; i++)
			tf_remove(i);
		printf("tf  teardown: holders closed (threads) in %.1f ms, events removed in %.1f ms\n", h1 - h0,
		       now_ms() - h1);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int r;

	if (argc < 4) {
		fprintf(stderr, "usage: pe_sampling calls LIB FUNC -- CMD... | cycle LIB FUNC[,FUNC...] ROUNDS\n");
		return 2;
	}
	snprintf(group, sizeof(group), "pe_sampling_%d", getpid());
	count_map = bpf_map_create(BPF_MAP_TYPE_ARRAY, "pe_count", 4, 8, 1, NULL);
	if (count_map < 0)
		die("bpf_map_create");
	if (!strcmp(argv[1], "calls") && argc > 5 && !strcmp(argv[4], "--"))
		r = calls(argv[2], argv[3], argv + 5);
	else if (!strcmp(argv[1], "cycle") && argc == 5)
		r = cycle(argv[2], argv[3], atoi(argv[4]));
	else
		r = 2;
	return r;
}
