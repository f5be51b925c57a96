// SPDX-License-Identifier: BSD-3-Clause
/*
 * What making and closing uprobe links costs a process that never calls the probed
 * functions: the churn of the overhead budget's sampled periods (src/core/budget.c), alone.
 * Takes gpuprobe's place in bench/gpu/inproc.py (--gp .output/bench/gpu/linkchurn): from its
 * command line it reads -p PID and --duration S (gpuprobe's other flags are ignored), says
 * "gpuprobe: tracing" on stderr, and for S seconds, every --period-ms, makes an entry and a
 * return uprobe_multi link (an empty BPF program) on --funcs functions of the process's
 * libcuda that a PyTorch loop never calls (texture, surface, graphics-interop, linker
 * entry points), holds them --hold-ms, and closes them. The harness's overhead is then the
 * churn's: per cycle, overhead x period.
 *     linkchurn [--period-ms 100] [--hold-ms 2] [--funcs 48] [--match P1,P2,...] [--lib NAME]
 *               -p PID --duration S       (NAME: a part of the library's path, /libcuda.so)
 * LINKCHURN_PERIOD_MS and LINKCHURN_FUNCS in the environment set the first two.
 * Built by bench/gpu/inproc.sh --build (static: libbpf, libelf, zlib, zstd).
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "../baselines/uprobe_multi.h"
#include "lib/procmaps.h"
#include "lib/safeopen.h"

#define MAX_FUNCS 512

static const char *default_match = "cuTexRef,cuSurfRef,cuTexObject,cuSurfObject,cuGraphicsGL,cuGL,cuEGL,"
				   "cuVDPAU,cuGraphicsVDPAU,cuLink,cuMipmappedArray,cuArray3D,cuProfiler";

static void die(const char *what)
{
	fprintf(stderr, "linkchurn: error: %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
	exit(1);
}

static unsigned long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}

static void sleep_until(unsigned long long t)
{
	struct timespec ts = { .tv_sec = t / 1000000000ull, .tv_nsec = t % 1000000000ull };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

struct find {
	const char *want;
	struct map_entry e;
	bool found;
};

static int find_cb(const struct map_entry *e, void *ctx)
{
	struct find *f = ctx;

	if (e->path[0] != '/' || e->deleted || !strstr(e->path, f->want))
		return 0;
	f->e = *e;
	f->found = true;
	return 1;
}

/* The library the process maps (a part of its path: want), opened as gpuprobe opens what a
 * traced process names (src/lib/safeopen.h: inside its root, a regular file of the mapped
 * inode); the fd, which the links attach through. */
static int open_lib(int pid, const char *want)
{
	struct find f = { .want = want };
	char err[256] = "";
	int fd, r = procmaps__foreach(NULL, pid, find_cb, &f);
	struct safeopen_id id;

	if (r < 0) {
		errno = -r;
		die("cannot read the process's maps");
	}
	errno = 0;
	if (!f.found)
		die("the process maps no such library (--lib)");
	id = (struct safeopen_id){ f.e.dev_major, f.e.dev_minor, f.e.inode };
	fd = safe_open_mapped(NULL, pid, f.e.path, &id, err, sizeof(err));
	if (fd < 0) {
		fprintf(stderr, "linkchurn: error: cannot open %s: %s\n", f.e.path, err);
		exit(1);
	}
	return fd;
}

static bool matches(const char *name, const char *list)
{
	const char *p = list;

	while (*p) {
		size_t n = strcspn(p, ",");

		if (n && !strncmp(name, p, n))
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

/* File offsets of up to `want` distinct functions whose names start with one of `match`. */
static int find_offsets(int fd, const char *match, unsigned long long *offs, int want)
{
	char err[256] = "";
	int n = 0;
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t nph;

	elf_version(EV_CURRENT);
	e = safe_elf_begin(fd, err, sizeof(err));
	if (!e || elf_getphdrnum(e, &nph)) {
		fprintf(stderr, "linkchurn: error: the library is not a usable ELF file: %s\n", err);
		exit(1);
	}
	while ((scn = elf_nextscn(e, scn)) && n < want) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize && n < want; i++) {
			GElf_Sym s;
			const char *name;
			bool dup = false;

			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC || !s.st_value)
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name || !matches(name, match))
				continue;
			for (size_t k = 0; k < nph; k++) {
				GElf_Phdr ph;

				if (!gelf_getphdr(e, (int)k, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
				    s.st_value < ph.p_vaddr || s.st_value >= ph.p_vaddr + ph.p_filesz)
					continue;
				unsigned long long off = s.st_value - ph.p_vaddr + ph.p_offset;

				for (int j = 0; j < n; j++)
					dup |= offs[j] == off;
				if (!dup)
					offs[n++] = off;
				break;
			}
		}
	}
	elf_end(e);
	return n;
}


int main(int argc, char **argv)
{
	int pid = 0, period_ms = 100, hold_ms = 2, want = 48, n, prog;
	double secs = 0;
	const char *match = default_match, *lib = "/libcuda.so";
	char path[64];
	int lib_fd;
	static unsigned long long offs[MAX_FUNCS];
	unsigned long long end, cycles = 0;
	struct bpf_insn ins[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, po, .expected_attach_type = (enum bpf_attach_type)UPROBE_MULTI);

	/* the harness passes gpuprobe's command line: the churn's own settings may come from the
	 * environment instead */
	if (getenv("LINKCHURN_PERIOD_MS"))
		period_ms = atoi(getenv("LINKCHURN_PERIOD_MS"));
	if (getenv("LINKCHURN_FUNCS"))
		want = atoi(getenv("LINKCHURN_FUNCS"));
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "-p") && v)
			pid = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--duration") && v)
			secs = atof(argv[++i]);
		else if (!strcmp(argv[i], "--period-ms") && v)
			period_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--hold-ms") && v)
			hold_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--funcs") && v)
			want = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--lib") && v)
			lib = argv[++i];
		else if (!strcmp(argv[i], "--match") && v)
			match = argv[++i];
		/* gpuprobe's own flags (the harness passes its configuration's): ignored */
	}
	errno = 0;
	if (pid <= 0 || secs <= 0 || period_ms <= 0 || hold_ms < 0 || hold_ms >= period_ms || want < 1 || want > MAX_FUNCS)
		die("usage: linkchurn [--period-ms P] [--hold-ms H<P] [--funcs N<=512] [--match P1,...] [--lib NAME] -p PID --duration S");
	lib_fd = open_lib(pid, lib);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", lib_fd); /* that inode, not a path again */
	n = find_offsets(lib_fd, match, offs, want);
	if (n < 1) {
		errno = 0;
		die("no function of the library matches --match");
	}
	prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "linkchurn", "GPL", ins, 2, &po);
	if (prog < 0)
		die("cannot load the empty program");
	fprintf(stderr, "gpuprobe: tracing PID %d: links on %d functions of its %s every %d ms for %d ms\n", pid, n, lib,
		period_ms, hold_ms);
	end = now_ns() + (unsigned long long)(secs * 1e9);
	for (unsigned long long t = now_ns(); t < end; t += (unsigned long long)period_ms * 1000000ull) {
		int a = bench_uprobe_multi(prog, path, offs, n, 0, pid), b = bench_uprobe_multi(prog, path, offs, n, 1, pid);

		if (a < 0 || b < 0)
			die("cannot make a link");
		sleep_until(now_ns() + (unsigned long long)hold_ms * 1000000ull);
		close(b);
		close(a);
		cycles++;
		sleep_until(t + (unsigned long long)period_ms * 1000000ull < end ? t + (unsigned long long)period_ms * 1000000ull : end);
	}
	printf("{\"mode\":\"linkchurn\",\"functions\":%d,\"cycles\":%llu,\"period_ms\":%d,\"hold_ms\":%d}\n", n, cycles,
	       period_ms, hold_ms);
	return 0;
}
