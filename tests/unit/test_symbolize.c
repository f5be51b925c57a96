/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Build with -g -fno-omit-frame-pointer and do not strip: the tests resolve
 * functions of this very binary through its .symtab.
 */
#define _GNU_SOURCE
#include "lib/symbolize.h"
#include "lib/procmaps.h"
#include "unit.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

static char tmp_root[256];	/* short: keeps snprintf sizes provable */
static char exe_path[PATH_MAX];
static const char *exe_name;	/* basename of this binary, in exe_path */

/* noclone: keep the symbol name exact (no .constprop/.isra suffix) */
#ifdef __clang__
#define EXACT_FUNC __attribute__((noinline))	/* clang has no noclone */
#else
#define EXACT_FUNC __attribute__((noinline, noclone))
#endif

EXACT_FUNC int some_noinline_function(int x)
{
	volatile int v = x;

	v = v * 3 + 1;
	v ^= x << 2;
	return v;
}

/* defined in C under a C++ mangled name: k1(float*, int) */
EXACT_FUNC void k1_impl(float *p, int n)
	__asm__("_Z2k1Pfi");
void k1_impl(float *p, int n)
{
	volatile int i;

	for (i = 0; i < n; i++)
		p[i] *= 2.0f;
}

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void cleanup_tmp(void)
{
	if (tmp_root[0])
		nftw(tmp_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static unsigned long long addr_of(const void *p)
{
	return (unsigned long long)(uintptr_t)p;
}

static char *slurp(const char *path)
{
	size_t cap = 0, len = 0;
	char *buf = NULL, *nbuf;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto cleanup;
	for (;;) {
		if (cap - len < 4097) {
			cap = cap ? cap * 2 : 65536;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				free(buf);
				buf = NULL;
				goto cleanup;
			}
			buf = nbuf;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
cleanup:
	if (fd >= 0)
		close(fd);
	return buf;
}

static int write_str(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	int err = 0;

	if (!f) {
		err = -errno;
		goto cleanup;
	}
	fputs(s, f);
	if (fclose(f))
		err = -errno;
cleanup:
	return err;
}

/*
 * Creates <tmp_root>/<name>/<pid>/ with the given maps and a "root" symlink
 * to "/", so paths in maps resolve like they do for a process in our mount
 * namespace. Returns the fake proc root in buf.
 */
static int fake_pid(const char *name, int pid, const char *maps, char *buf,
		    size_t len)
{
	char path[PATH_MAX];
	int err = 0;

	snprintf(buf, len, "%s/%s", tmp_root, name);
	if (mkdir(buf, 0755) && errno != EEXIST) {
		err = -errno;
		goto cleanup;
	}
	snprintf(path, sizeof(path), "%s/%d", buf, pid);
	if (mkdir(path, 0755) && errno != EEXIST) {
		err = -errno;
		goto cleanup;
	}
	snprintf(path, sizeof(path), "%s/%d/root", buf, pid);
	if (symlink("/", path) && errno != EEXIST) {
		err = -errno;
		goto cleanup;
	}
	snprintf(path, sizeof(path), "%s/%d/maps", buf, pid);
	err = write_str(path, maps);
cleanup:
	return err;
}

struct find_ctx {
	unsigned long long addr;
	struct map_entry e;
	bool found;
};

static int find_cb(const struct map_entry *e, void *data)
{
	struct find_ctx *ctx = data;

	if (ctx->addr >= e->start && ctx->addr < e->end) {
		ctx->e = *e;
		ctx->found = true;
		return 1;
	}
	return 0;
}

/* The mapping of this process that contains addr. */
static bool self_map(unsigned long long addr, struct map_entry *out)
{
	static struct find_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.addr = addr;
	procmaps__foreach("/proc", getpid(), find_cb, &ctx);
	if (ctx.found)
		*out = ctx.e;
	return ctx.found;
}

static void test_demangle(void)
{
	char buf[128];

	symbolize__demangle("_Z2k1Pfi", buf, sizeof(buf));
	if (!ASSERT_STR_EQ(buf, "k1(float*, int)", "demangled"))
		goto cleanup;
	symbolize__demangle("_ZN3gpu", buf, sizeof(buf));
	if (!ASSERT_STR_EQ(buf, "_ZN3gpu", "invalid_kept"))
		goto cleanup;	/* invalid: kept */
	symbolize__demangle("_ZN3gpu6kernelEv", buf, sizeof(buf));
	if (!ASSERT_STR_EQ(buf, "gpu::kernel()", "nested_name"))
		goto cleanup;
	symbolize__demangle("cuLaunchKernel", buf, sizeof(buf));
	if (!ASSERT_STR_EQ(buf, "cuLaunchKernel", "c_name_kept"))
		goto cleanup;
	symbolize__demangle("_Z", buf, sizeof(buf));
	if (!ASSERT_STR_EQ(buf, "_Z", "bare_prefix_kept"))
		goto cleanup;
	symbolize__demangle(NULL, buf, sizeof(buf));
	if (!ASSERT_STR_EQ(buf, "", "null_name"))
		goto cleanup;
	symbolize__demangle("_Z2k1Pfi", buf, 5);
	if (!ASSERT_STR_EQ(buf, "k1(f", "truncated"))
		goto cleanup;
	symbolize__demangle("_Z2k1Pfi", NULL, 0);	/* no crash */
cleanup:;
}

static void test_self_function(void)
{
	struct symbolizer *s = symbolizer__new("/proc");
	char buf[512], want[512];

	if (!ASSERT_TRUE(s, "symbolizer_new"))
		goto cleanup;
	if (!ASSERT_EQ(symbolizer__format(s, getpid(),
				     addr_of(&some_noinline_function) + 4,
				     buf, sizeof(buf)), 0, "format_own_function"))
		goto cleanup;
	snprintf(want, sizeof(want), "some_noinline_function+0x4 (%s)",
		 exe_name);
	if (!ASSERT_STR_EQ(buf, want, "own_function"))
		goto cleanup;
	/* second time from the caches */
	if (!ASSERT_EQ(symbolizer__format(s, getpid(),
				     addr_of(&some_noinline_function),
				     buf, sizeof(buf)), 0, "format_from_cache"))
		goto cleanup;
	snprintf(want, sizeof(want), "some_noinline_function+0x0 (%s)",
		 exe_name);
	if (!ASSERT_STR_EQ(buf, want, "from_cache"))
		goto cleanup;
cleanup:
	symbolizer__free(s);
	symbolizer__free(NULL);
}

static void test_cxx_name(void)
{
	struct symbolizer *s = symbolizer__new(NULL);
	char buf[512], want[512];

	if (!ASSERT_TRUE(s, "symbolizer_new"))
		goto cleanup;
	if (!ASSERT_EQ(symbolizer__format(s, getpid(), addr_of(&k1_impl) + 4, buf,
				     sizeof(buf)), 0, "format_cxx"))
		goto cleanup;
	snprintf(want, sizeof(want), "k1(float*, int)+0x4 (%s)", exe_name);
	if (!ASSERT_STR_EQ(buf, want, "cxx_name"))
		goto cleanup;
cleanup:
	symbolizer__free(s);
}

static void test_libc(void)
{
	struct symbolizer *s = symbolizer__new("/proc");
	char buf[512];

	if (!ASSERT_TRUE(s, "symbolizer_new"))
		goto cleanup;
	/* not malloc: under ASan that resolves to the interceptor */
	if (!ASSERT_EQ(symbolizer__format(s, getpid(),
				     addr_of(&gnu_get_libc_version) + 1,
				     buf, sizeof(buf)), 0, "format_libc"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(buf, "(libc.so.6)", "contains (libc.so.6)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, "gnu_get_libc_version+0x1 (libc.so.6)", "libc_function"))
		goto cleanup;
cleanup:
	symbolizer__free(s);
}

static void test_unsymbolized(void)
{
	struct symbolizer *s = symbolizer__new("/proc");
	char buf[512], want[512], path[512];
	void *anon = MAP_FAILED, *data = MAP_FAILED;
	int fd = -1;

	if (!ASSERT_TRUE(s, "symbolizer_new"))
		goto cleanup;
	/* map first: a miss right after the maps were read is not re-read */
	anon = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!ASSERT_TRUE(anon != MAP_FAILED, "mmap_anon"))
		goto cleanup;
	snprintf(path, sizeof(path), "%s/data.bin", tmp_root);
	if (!ASSERT_EQ(write_str(path, "just some data, not an ELF file\n"), 0, "write_data_file"))
		goto cleanup;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!ASSERT_TRUE(fd >= 0, "open_data_file"))
		goto cleanup;
	data = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (!ASSERT_TRUE(data != MAP_FAILED, "mmap_data_file"))
		goto cleanup;

	/* no mapping at all */
	if (!ASSERT_EQ(symbolizer__format(s, getpid(), 0x10, buf, sizeof(buf)), 1, "format_unmapped"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, "0x10", "unmapped_address"))
		goto cleanup;

	/* anonymous mapping (think JIT code) */
	if (!ASSERT_EQ(symbolizer__format(s, getpid(), addr_of(anon) + 8, buf,
				     sizeof(buf)), 1, "format_anonymous"))
		goto cleanup;
	snprintf(want, sizeof(want), "0x%llx", addr_of(anon) + 8);
	if (!ASSERT_STR_EQ(buf, want, "anonymous_address"))
		goto cleanup;

	/* a mapped file without symbols: "0x.. (name)" (and cached as such) */
	snprintf(want, sizeof(want), "0x%llx (data.bin)", addr_of(data) + 3);
	if (!ASSERT_EQ(symbolizer__format(s, getpid(), addr_of(data) + 3, buf,
				     sizeof(buf)), 1, "format_no_symbols"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, want, "file_name_only"))
		goto cleanup;
	if (!ASSERT_EQ(symbolizer__format(s, getpid(), addr_of(data) + 3, buf,
				     sizeof(buf)), 1, "format_no_symbols_cached"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, want, "file_name_only_cached"))
		goto cleanup;
	munmap(anon, 4096);
	munmap(data, 4096);

	/* truncation is safe */
	if (!ASSERT_EQ(symbolizer__format(s, getpid(),
				     addr_of(&some_noinline_function), buf, 8),
		  0, "format_truncated"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, "some_no", "truncated_name"))
		goto cleanup;
	if (!ASSERT_EQ(symbolizer__format(s, getpid(), 0x10, buf, 0), -EINVAL, "zero_length_refused"))
		goto cleanup;
	if (!ASSERT_EQ(symbolizer__format(NULL, getpid(), 0x10, buf, sizeof(buf)),
		  -EINVAL, "null_symbolizer_refused"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, "0x10", "address_on_error"))
		goto cleanup;
cleanup:
	symbolizer__free(s);
}

static void test_missing_pid(void)
{
	struct symbolizer *s = symbolizer__new(tmp_root);
	char buf[64];

	if (!ASSERT_TRUE(s, "symbolizer_new"))
		goto cleanup;
	if (!ASSERT_EQ(symbolizer__format(s, 4242, 0x1234, buf, sizeof(buf)),
		  -ENOENT, "missing_pid"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, "0x1234", "missing_pid_address"))
		goto cleanup;
	symbolizer__forget_pid(s, 4242);	/* never cached: no-op */
cleanup:
	symbolizer__free(s);
}

/* Many fake pids sharing our maps: exercises both caches and eviction. */
static void test_fake_root_eviction(void)
{
	char root[PATH_MAX], buf[512], want[512];
	struct symbolizer *s = NULL;
	unsigned long long addr = addr_of(&some_noinline_function) + 4;
	char *maps;
	int pid, bad = 0;

	maps = slurp("/proc/self/maps");
	if (!ASSERT_TRUE(maps, "read_maps"))
		goto cleanup;
	for (pid = 1; pid <= 300 && !bad; pid++)
		bad = fake_pid("evict", pid, maps, root, sizeof(root));
	free(maps);
	if (!ASSERT_EQ(bad, 0, "fake_pids_made"))
		goto cleanup;
	s = symbolizer__new(root);
	if (!ASSERT_TRUE(s, "symbolizer_new"))
		goto cleanup;
	snprintf(want, sizeof(want), "some_noinline_function+0x4 (%s)",
		 exe_name);
	/* twice round: the second pass finds pid 1.. evicted and re-reads */
	for (pid = 1; pid <= 600 && !bad; pid++) {
		if (symbolizer__format(s, (pid - 1) % 300 + 1, addr, buf,
				       sizeof(buf)) != 0 || strcmp(buf, want)) {
			printf("#   pid %d: \"%s\"\n", pid, buf);
			bad = 1;
		}
	}
	symbolizer__forget_pid(s, 300);
	symbolizer__forget_pid(s, 300);
	if (!bad && (symbolizer__format(s, 300, addr, buf, sizeof(buf)) != 0 ||
		     strcmp(buf, want)))
		bad = 1;
	symbolizer__free(s);
	if (!ASSERT_EQ(bad, 0, "every_pid_named"))
		goto cleanup;
cleanup:;
}

/*
 * A deleted file: maps names a path that is gone, only map_files leads to
 * the mapped inode.
 */
static void test_map_files_fallback(void)
{
	char root[512], line[PATH_MAX + 256], link[PATH_MAX], buf[512];
	char want[512];
	unsigned long long addr = addr_of(&some_noinline_function) + 4;
	struct symbolizer *s = NULL;
	struct map_entry e;

	if (!ASSERT_TRUE(self_map(addr, &e), "own_mapping"))
		goto cleanup;
	snprintf(line, sizeof(line),
		 "%llx-%llx %s %08llx %02x:%02x %llu /gone/%s (deleted)\n",
		 e.start, e.end, e.perms, e.offset, e.dev_major, e.dev_minor,
		 e.inode, exe_name);
	if (!ASSERT_EQ(fake_pid("mapfiles", 77, line, root, sizeof(root)), 0, "fake_pid"))
		goto cleanup;
	snprintf(link, sizeof(link), "%s/77/map_files", root);
	if (!ASSERT_EQ(mkdir(link, 0755), 0, "mkdir_map_files"))
		goto cleanup;
	snprintf(link, sizeof(link), "%s/77/map_files/%llx-%llx", root,
		 e.start, e.end);
	if (!ASSERT_EQ(symlink(exe_path, link), 0, "map_files_link"))
		goto cleanup;

	s = symbolizer__new(root);
	if (!ASSERT_TRUE(s, "symbolizer_new"))
		goto cleanup;
	if (!ASSERT_EQ(symbolizer__format(s, 77, addr, buf, sizeof(buf)), 0, "format_through_map_files"))
		goto cleanup;
	snprintf(want, sizeof(want), "some_noinline_function+0x4 (%s)",
		 exe_name);
	if (!ASSERT_STR_EQ(buf, want, "named_through_map_files"))
		goto cleanup;
cleanup:
	symbolizer__free(s);
}

/*
 * The same file mapped elsewhere at another file offset, and a copy marked
 * ET_EXEC whose addresses must be used as link-time addresses unchanged.
 */
static void test_offsets_and_exec(void)
{
	char root[PATH_MAX], line[2 * PATH_MAX], copy[PATH_MAX], buf[512];
	char want[512];
	unsigned long long addr = addr_of(&some_noinline_function) + 4;
	unsigned long long base = ~0ULL, file_off, vaddr;
	struct symbolizer *s = NULL;
	struct map_entry e, first;
	unsigned char *img = NULL;
	Elf64_Ehdr *eh;
	struct stat st;
	size_t len = 0;
	char *maps;
	int fd;

	if (!ASSERT_TRUE(self_map(addr, &e), "own_mapping"))
		goto cleanup;
	file_off = addr - e.start + e.offset;
	/* PIE: link-time vaddr = runtime address - load base (offset-0 map) */
	maps = slurp("/proc/self/maps");
	if (!ASSERT_TRUE(maps, "read_maps"))
		goto cleanup;
	{
		char *p = maps, *nl;

		for (; *p; p = nl + 1) {
			nl = strchr(p, '\n');
			if (!nl)
				break;
			*nl = '\0';
			if (procmaps__parse_line(p, &first) == 0 &&
			    first.inode == e.inode && first.offset == 0 &&
			    first.dev_major == e.dev_major &&
			    first.dev_minor == e.dev_minor &&
			    first.start < base)
				base = first.start;
		}
	}
	free(maps);
	if (!ASSERT_TRUE(base != ~0ULL, "load_base"))
		goto cleanup;
	vaddr = addr - base;

	/* 1: same file at a made-up place and page-shifted file offset */
	snprintf(line, sizeof(line),
		 "10000000-20000000 r-xp %08llx %02x:%02x %llu %s\n",
		 (file_off & ~0xfffULL), e.dev_major, e.dev_minor, e.inode,
		 e.path);
	if (!ASSERT_EQ(fake_pid("offsets", 5, line, root, sizeof(root)), 0, "fake_pid_shifted"))
		goto cleanup;

	/* 2: a copy of this binary patched to ET_EXEC */
	snprintf(copy, sizeof(copy), "%s/exec-copy", tmp_root);
	img = (unsigned char *)slurp(exe_path);	/* NUL-safe: sized below */
	if (!ASSERT_TRUE(img, "read_binary"))
		goto cleanup;
	if (!ASSERT_EQ(stat(exe_path, &st), 0, "stat_binary"))
		goto cleanup;
	len = (size_t)st.st_size;
	eh = (Elf64_Ehdr *)img;
	if (!ASSERT_EQ(eh->e_type, ET_DYN, "binary_is_pie"))
		goto cleanup;
	eh->e_type = ET_EXEC;
	fd = open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (fd >= 0) {
		if (write(fd, img, len) != (ssize_t)len) {
			close(fd);
			fd = -1;
		}
	}
	free(img);
	if (!ASSERT_TRUE(fd >= 0, "write_exec_copy"))
		goto cleanup;
	close(fd);
	if (!ASSERT_EQ(stat(copy, &st), 0, "stat_exec_copy"))
		goto cleanup;
	snprintf(line, sizeof(line),
		 "1000-40000000 r-xp 00000000 %02x:%02x %llu %s\n",
		 major(st.st_dev), minor(st.st_dev),
		 (unsigned long long)st.st_ino, copy);
	if (!ASSERT_EQ(fake_pid("offsets", 6, line, root, sizeof(root)), 0, "fake_pid_exec"))
		goto cleanup;

	s = symbolizer__new(root);
	if (!ASSERT_TRUE(s, "symbolizer_new"))
		goto cleanup;
	snprintf(want, sizeof(want), "some_noinline_function+0x4 (%s)",
		 exe_name);
	if (!ASSERT_EQ(symbolizer__format(s, 5, 0x10000000 + (file_off & 0xfff),
				     buf, sizeof(buf)), 0, "format_shifted"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, want, "shifted_name"))
		goto cleanup;
	if (!ASSERT_EQ(symbolizer__format(s, 6, vaddr, buf, sizeof(buf)), 0, "format_exec"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, "some_noinline_function+0x4 (exec-copy)", "exec_name"))
		goto cleanup;
cleanup:
	symbolizer__free(s);
}

/*
 * By the time an exit is reported the process has no mappings left: an
 * empty maps file must neither be cached nor replace maps read earlier.
 */
static void test_exited_keeps_maps(void)
{
	struct timespec ts = { 0, 150 * 1000 * 1000 };
	unsigned long long addr = addr_of(&some_noinline_function) + 4;
	char root[512], path[600], buf[512], want[512];
	struct symbolizer *s = NULL;
	char *maps;

	maps = slurp("/proc/self/maps");
	if (!ASSERT_TRUE(maps, "read_maps"))
		goto cleanup;
	if (!ASSERT_EQ(fake_pid("zombie", 9, maps, root, sizeof(root)), 0, "fake_pid_zombie"))
		goto cleanup;
	free(maps);
	if (!ASSERT_EQ(fake_pid("zombie", 10, "", root, sizeof(root)), 0, "fake_pid_empty"))
		goto cleanup;
	s = symbolizer__new(root);
	if (!ASSERT_TRUE(s, "symbolizer_new"))
		goto cleanup;
	snprintf(want, sizeof(want), "some_noinline_function+0x4 (%s)",
		 exe_name);
	if (!ASSERT_EQ(symbolizer__format(s, 9, addr, buf, sizeof(buf)), 0, "format_zombie"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, want, "zombie_name"))
		goto cleanup;

	snprintf(path, sizeof(path), "%s/9/maps", root);
	if (!ASSERT_EQ(write_str(path, ""), 0, "empty_maps"))
		goto cleanup;
	nanosleep(&ts, NULL);
	/* miss -> re-read finds nothing -> old maps stay */
	if (!ASSERT_EQ(symbolizer__format(s, 9, 0x10, buf, sizeof(buf)), 1, "miss_after_exit"))
		goto cleanup;
	if (!ASSERT_EQ(symbolizer__format(s, 9, addr, buf, sizeof(buf)), 0, "format_after_exit"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, want, "kept_maps_name"))
		goto cleanup;

	if (!ASSERT_EQ(symbolizer__format(s, 10, 0x20, buf, sizeof(buf)), -ESRCH, "never_seen_pid"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, "0x20", "never_seen_address"))
		goto cleanup;
cleanup:
	symbolizer__free(s);
}

/* A library loaded after the maps were cached is found on a re-read. */
static void test_reread_after_dlopen(void)
{
	static const char *const cand[][2] = {
		{ "libm.so.6", "frexp" },	/* not cos: an IFUNC */
		{ "libbz2.so.1.0", "BZ2_bzlibVersion" },
		{ "libcrypt.so.1", "crypt" },
	};
	struct timespec ts = { 0, 150 * 1000 * 1000 };
	struct symbolizer *s = symbolizer__new("/proc");
	struct mapped_lib lib;
	char buf[512], want[512];
	void *h = NULL, *fn = NULL;
	size_t i;

	if (!ASSERT_TRUE(s, "symbolizer_new"))
		goto cleanup;
	/* cache our maps now */
	if (!ASSERT_EQ(symbolizer__format(s, getpid(),
				     addr_of(&some_noinline_function), buf,
				     sizeof(buf)), 0, "format_before_dlopen"))
		goto cleanup;
	for (i = 0; i < sizeof(cand) / sizeof(cand[0]) && !fn; i++) {
		if (procmaps__find_libs("/proc", getpid(), cand[i][0], &lib,
					1) != 0)
			continue;	/* already loaded: useless here */
		h = dlopen(cand[i][0], RTLD_NOW | RTLD_LOCAL);
		if (h)
			fn = dlsym(h, cand[i][1]);
	}
	if (!fn) {
		printf("#   skipped: no unloaded candidate library\n");
		symbolizer__free(s);
		return;
	}
	i--;
	nanosleep(&ts, NULL);	/* past the re-read rate limit */
	/* maps show the symlink's target: "(libbz2.so.1.0.4)" */
	snprintf(want, sizeof(want), "%s+0x0 (%s", cand[i][1], cand[i][0]);
	if (!ASSERT_EQ(symbolizer__format(s, getpid(), addr_of(fn), buf,
				     sizeof(buf)), 0, "format_after_dlopen"))
		goto cleanup;
	symbolizer__free(s);
	if (!ASSERT_EQ(strncmp(buf, want, strlen(want)), 0, "dlopened_name"))
		goto cleanup;
	if (!ASSERT_EQ(buf[strlen(buf) - 1], ')', "frame ends with the library in parentheses"))
		goto cleanup;
cleanup:;
}

/*
 * A process whose root is a real folder (not "/") planting at the paths its
 * maps name: a FIFO, an absolute symlink and an escaping relative one to this
 * very binary (maps gives its dev/inode, as if they mapped it). None may be
 * followed or block; a hard link of the binary inside the root is the control
 * that this route symbolizes at all.
 */
static void test_hostile_root(void)
{
	char root[512], dir[1024], p[1200], up[PATH_MAX + 64], maps[4 * PATH_MAX], buf[512], want[512];
	static const char *const subs[] = { "", "/91", "/91/root", "/91/root/lib" };
	unsigned long long addr = addr_of(&some_noinline_function) + 4, base = 0x100000000ULL;
	static const char *const names[] = { "good.so", "fifo.so", "abs.so", "up.so" };
	struct symbolizer *s = NULL;
	struct map_entry e;
	size_t off = 0;
	double t0;
	int i, r;

	if (!ASSERT_TRUE(self_map(addr, &e), "the mapping of this binary"))
		goto cleanup;
	snprintf(root, sizeof(root), "%s/hostile", tmp_root);
	for (i = 0; i < 4; i++) {
		snprintf(dir, sizeof(dir), "%s%s", root, subs[i]);
		if (!ASSERT_EQ(mkdir(dir, 0755), 0, "mkdir of the fake process's root"))
			goto cleanup;
	}
	snprintf(p, sizeof(p), "%s/good.so", dir);
	if (!ASSERT_EQ(link(exe_path, p), 0, "hard link of this binary inside the root"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/fifo.so", dir);
	if (!ASSERT_EQ(mkfifo(p, 0644), 0, "FIFO"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/abs.so", dir);
	if (!ASSERT_EQ(symlink(exe_path, p), 0, "absolute symlink out of the root"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/up.so", dir);
	snprintf(up, sizeof(up), "../../../../../../../../../../..%s", exe_path);
	if (!ASSERT_EQ(symlink(up, p), 0, "relative symlink climbing out"))
		goto cleanup;
	for (i = 0; i < 4; i++)
		off += (size_t)snprintf(maps + off, sizeof(maps) - off,
					"%llx-%llx %s %08llx %02x:%02x %llu /lib/%s\n",
					base * (i + 1), base * (i + 1) + (e.end - e.start), e.perms,
					e.offset, e.dev_major, e.dev_minor, e.inode, names[i]);
	snprintf(p, sizeof(p), "%s/91/maps", root);
	if (!ASSERT_EQ(write_str(p, maps), 0, "maps"))
		goto cleanup;
	for (i = 0; i < 4; i++) {
		unsigned long long a = base * (i + 1) + (addr - e.start);

		/* a symbolizer each: the one inode must not come from the cache */
		symbolizer__free(s);
		s = symbolizer__new(root);
		if (!ASSERT_TRUE(s, "symbolizer"))
			goto cleanup;
		t0 = (double)time(NULL);
		r = symbolizer__format(s, 91, a, buf, sizeof(buf));
		printf("#   /lib/%s: %s\n", names[i], buf);
		if (!ASSERT_TRUE((double)time(NULL) - t0 < 2, "no blocking"))
			goto cleanup;
		if (i == 0) {
			snprintf(want, sizeof(want), "some_noinline_function+0x4 (good.so)");
			if (!ASSERT_EQ(r, 0, "the hard link inside the root symbolizes"))
				goto cleanup;
		} else {
			snprintf(want, sizeof(want), "0x%llx (%s)", a, names[i]);
			if (!ASSERT_EQ(r, 1, "not symbolized"))
				goto cleanup;
		}
		if (!ASSERT_STR_EQ(buf, want, "formatted"))
			goto cleanup;
	}
cleanup:
	symbolizer__free(s);
}

/* The cached symbol tables together stay under the budget: least recently used go. */
static void test_files_budget(void)
{
	struct symbolizer *s = symbolizer__new("/proc");
	unsigned long long exe_bytes, libc_bytes, both;
	unsigned long long in_exe = addr_of(&some_noinline_function) + 4;
	unsigned long long in_libc = addr_of(&gnu_get_libc_version) + 1;
	char buf[512];

	if (!ASSERT_TRUE(s, "symbolizer"))
		goto cleanup;
	if (!ASSERT_EQ(symbolizer__format(s, getpid(), in_exe, buf, sizeof(buf)), 0, "this binary"))
		goto cleanup;
	exe_bytes = symbolizer__files_bytes(s);
	if (!ASSERT_EQ(symbolizer__format(s, getpid(), in_libc, buf, sizeof(buf)), 0, "libc"))
		goto cleanup;
	both = symbolizer__files_bytes(s);
	libc_bytes = both - exe_bytes;
	if (!ASSERT_TRUE(exe_bytes > 0 && libc_bytes > 0, "both tables counted"))
		goto cleanup;
	/* a budget for the larger of the two only: one table is kept at a time */
	symbolizer__set_files_budget(s, exe_bytes > libc_bytes ? exe_bytes : libc_bytes);
	if (!ASSERT_EQ(symbolizer__files_bytes(s), libc_bytes, "the least recently used (this binary's) went"))
		goto cleanup;
	if (!ASSERT_EQ(symbolizer__format(s, getpid(), in_exe, buf, sizeof(buf)), 0, "this binary again"))
		goto cleanup;
	if (!ASSERT_EQ(symbolizer__files_bytes(s), exe_bytes, "loaded again, libc's went"))
		goto cleanup;
	symbolizer__set_files_budget(s, 1);
	if (!ASSERT_EQ(symbolizer__format(s, getpid(), in_libc, buf, sizeof(buf)), 0, "a table over the budget is still used"))
		goto cleanup;
	if (!ASSERT_EQ(symbolizer__files_bytes(s), libc_bytes, "and is the only one kept"))
		goto cleanup;
cleanup:
	symbolizer__free(s);
}

int main(void)
{
	ssize_t n;
	char *slash;

	n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
	if (n <= 0) {
		perror("readlink");
		return 2;
	}
	exe_path[n] = '\0';
	slash = strrchr(exe_path, '/');
	exe_name = slash ? slash + 1 : exe_path;
	snprintf(tmp_root, sizeof(tmp_root), "/tmp/gpuprobe-symbolize-XXXXXX");
	if (!mkdtemp(tmp_root)) {
		perror("mkdtemp");
		return 2;
	}
	atexit(cleanup_tmp);

	RUN_TEST(test_demangle);
	RUN_TEST(test_self_function);
	RUN_TEST(test_cxx_name);
	RUN_TEST(test_libc);
	RUN_TEST(test_unsymbolized);
	RUN_TEST(test_missing_pid);
	RUN_TEST(test_fake_root_eviction);
	RUN_TEST(test_map_files_fallback);
	RUN_TEST(test_offsets_and_exec);
	RUN_TEST(test_exited_keeps_maps);
	RUN_TEST(test_reread_after_dlopen);
	RUN_TEST(test_hostile_root);
	RUN_TEST(test_files_budget);
	return unit_done();
}
