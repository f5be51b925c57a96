/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pystack: the line-table decoders against hand-made tables and against
 * CPython's own co_lines() (the interpreters found here), and
 * pystack__inspect on real interpreters: the version read from the binary,
 * the offsets (3.13: _Py_DebugOffsets must agree with the generated table).
 */
#define _GNU_SOURCE
#include "lib/pyoffsets_gen.h"
#include "lib/pystack.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdint.h>
#include <string.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static struct pystack *ps;

static void test_line_311_hand_made(void)
{
	/* entries: (code<<3 | len-1) | 0x80, then the code's operands */
	static const unsigned char t[] = {
		0xE9, 0x02,		/* 13 no-column, +1, 2 units: 11 */
		0xD2, 0x05, 0x09,	/* 10 one-line +0, 3 units: 11 */
		0xF8,			/* 15 no location, 1 unit: -1 */
		0xF0, 0x07, 0x00, 0x01, 0x01,	/* 14 long, -3, 1 unit: 8 */
		0x81, 0x04,		/* 0 short, 2 units: 8 */
		0xE0, 0x01, 0x02,	/* 12 one-line +2, 1 unit: 10 */
		0xE8, 0x50, 0x01,	/* 13, +40 (two-chunk varint): 50 */
	};
	static const int want[] = { 11, 11, 11, 11, 11, -1, 8, 8, 8, 10, 50 };
	unsigned int i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!ASSERT_EQ(pystack__line_311(t, sizeof(t), 10, (long)i), want[i], "line_at_unit"))
			goto cleanup;
	if (!ASSERT_EQ(pystack__line_311(t, sizeof(t), 10, 11), -1, "past_the_table"))
		goto cleanup;	/* past the end */
	if (!ASSERT_EQ(pystack__line_311(t, sizeof(t), 10, -1), 10, "before_first_unit"))
		goto cleanup;	/* before the first */
	if (!ASSERT_EQ(pystack__line_311(t, 1, 10, 5), -1, "truncated_table"))
		goto cleanup;	/* cut short: no overrun */
	if (!ASSERT_EQ(pystack__line_311((const unsigned char *)"\x01\x02", 2, 10, 0), -1, "pystack__line_311((const unsigned char *)x01x02, 2, 10, 0)"))
		goto cleanup;
cleanup:;
}

static void test_line_310_hand_made(void)
{
	/* (bytes, line delta) pairs; -128: no line */
	static const unsigned char t[] = { 4, 1, 6, 0, 2, 0x80, 8, 0xfe };
	if (!ASSERT_EQ(pystack__line_310(t, sizeof(t), 20, 0), 21, "first_unit"))
		goto cleanup;
	if (!ASSERT_EQ(pystack__line_310(t, sizeof(t), 20, 3), 21, "last_unit_of_entry"))
		goto cleanup;
	if (!ASSERT_EQ(pystack__line_310(t, sizeof(t), 20, 4), 21, "next_entry"))
		goto cleanup;
	if (!ASSERT_EQ(pystack__line_310(t, sizeof(t), 20, 10), -1, "no_line"))
		goto cleanup;
	if (!ASSERT_EQ(pystack__line_310(t, sizeof(t), 20, 12), 19, "negative_delta"))
		goto cleanup;
	if (!ASSERT_EQ(pystack__line_310(t, sizeof(t), 20, 20), -1, "past_the_table"))
		goto cleanup;
	if (!ASSERT_EQ(pystack__line_310(t, 1, 20, 0), -1, "truncated_table"))
		goto cleanup;
cleanup:;
}

/*
 * CPython's own answer: for a function with loops, a comprehension and
 * multi-line calls, co_lines() gives (start, end, line) byte ranges; every
 * code unit in them must decode to that line from co_linetable.
 */
static const char *py_script =
	"import sys\n"
	"def f(a, b):\n"
	"    x = [i * 2\n"
	"         for i in range(a)]\n"
	"    for k in x:\n"
	"        if k > b:\n"
	"            return (k,\n"
	"                    b)\n"
	"    try:\n"
	"        return len(x)\n"
	"    except Exception:\n"
	"        pass\n"
	"c = f.__code__\n"
	"print(c.co_firstlineno, c.co_linetable.hex())\n"
	"for s, e, l in c.co_lines():\n"
	"    print(s, e, -1 if l is None else l)\n";

static int check_against(const char *python, int modern, int *checked)
{
	char cmd[1024], hex[65536];
	unsigned char tab[32768];
	int first, s, e, l, u, bad = 0;
	size_t n = 0, i;
	FILE *p;

	*checked = 0;
	if (access(python, X_OK))
		return -ENOENT;
	snprintf(cmd, sizeof(cmd), "%s -c '%s'", python, py_script);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	if (fscanf(p, "%d %65535s", &first, hex) != 2) {
		pclose(p);
		return -EBADMSG;
	}
	for (i = 0; hex[2 * i] && hex[2 * i + 1] && n < sizeof(tab); i++)
		sscanf(hex + 2 * i, "%2hhx", &tab[n++]);
	while (fscanf(p, "%d %d %d", &s, &e, &l) == 3) {
		for (u = s; u < e; u += 2) {
			int got = modern ? pystack__line_311(tab, n, first, u / 2)
					 : pystack__line_310(tab, n, first, u);

			if (got != l) {
				printf("#   %s: offset %d: got %d, CPython %d\n", python,
				       u, got, l);
				bad++;
			}
			(*checked)++;
		}
	}
	pclose(p);
	return bad;
}

static void test_lines_match_cpython(void)
{
	static const struct {
		const char *python;
		int modern;
	} pys[] = {
		{ "/usr/bin/python3.11", 1 },
		{ "/root/.pyenv/versions/3.10.13/bin/python3.10", 0 },
		{ "/root/.pyenv/versions/3.12.1/bin/python3.12", 1 },
		{ "/root/.pyenv/versions/3.13.0/bin/python3.13", 1 },
	};
	unsigned int i, found = 0;
	int checked;

	for (i = 0; i < sizeof(pys) / sizeof(pys[0]); i++) {
		int bad = check_against(pys[i].python, pys[i].modern, &checked);

		if (bad == -ENOENT) {
			printf("# %s: not here, skipped\n", pys[i].python);
			continue;
		}
		if (!ASSERT_EQ(bad, 0, "lines_as_co_lines"))
			goto cleanup;
		if (!ASSERT_TRUE(checked > 20, "units_checked"))
			goto cleanup;
		printf("# %s: %d code units agree with co_lines()\n", pys[i].python,
		       checked);
		found++;
	}
	if (!ASSERT_TRUE(found >= 1, "pythons_found"))
		goto cleanup;	/* Debian's python3.11 at least (make deps) */
cleanup:;
}

/* A child interpreter that waits; inspect it like a traced process. */
static int spawn_python(const char *python, pid_t *pid, int *out)
{
	int fds[2];
	char b;

	if (access(python, X_OK) || pipe(fds))
		return -ENOENT;
	*pid = fork();
	if (*pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		execl(python, python, "-c",
		      "import sys,time; print('x', flush=True); time.sleep(30)", NULL);
		_exit(127);
	}
	close(fds[1]);
	/* the interpreter is up once it printed; the pipe stays open until
	 * it is killed (a write to a closed pipe would end it early) */
	*out = fds[0];
	if (read(fds[0], &b, 1) != 1)
		return -EIO;
	return 0;
}

static void inspect_one(const char *python, unsigned int minor, const char *want_ver)
{
	struct gp_py_proc pp;
	char ver[32], err[256];
	pid_t pid = -1;
	int ret, out = -1;

	if (spawn_python(python, &pid, &out)) {
		printf("# %s: not here, skipped\n", python);
		return;
	}
	ret = pystack__inspect(ps, pid, &pp, ver, sizeof(ver), err, sizeof(err));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(out);
	if (ret)
		printf("#   %s: %s\n", python, err);
	if (!ASSERT_EQ(ret, 0, "inspect"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ver, want_ver, "version_text"))
		goto cleanup;
	if (!ASSERT_EQ((pp.version_hex >> 16) & 0xff, minor, "version_minor"))
		goto cleanup;
	if (!ASSERT_TRUE(pp.runtime_addr != 0, "runtime_found"))
		goto cleanup;
	if (!ASSERT_EQ(pp.instr_is_int, minor < 11, "instr_is_int"))
		goto cleanup;
	/* whatever source the offsets came from, they are the headers' */
	if (!ASSERT_EQ(pp.frame_previous, (unsigned)py_offsets_gen[minor - 10].frame_previous, "frame_previous_offset"))
		goto cleanup;
	if (!ASSERT_EQ(pp.frame_code, (unsigned)py_offsets_gen[minor - 10].frame_code, "frame_code_offset"))
		goto cleanup;
	if (!ASSERT_EQ(pp.interp_threads_head, (unsigned)py_offsets_gen[minor - 10].interp_threads_head, "interp_threads_head_offset"))
		goto cleanup;
	if (!ASSERT_EQ(pp.tstate_next, (unsigned)py_offsets_gen[minor - 10].tstate_next, "tstate_next_offset"))
		goto cleanup;
	if (!ASSERT_EQ(pp.tstate_native_thread_id,
		       minor >= 11 ? (unsigned)py_offsets_gen[minor - 10].tstate_native_thread_id : GP_PY_NONE,
		       "native_thread_id where the version has it"))
		goto cleanup;
	printf("# %s: %s, _PyRuntime at 0x%llx\n", python, ver,
	       (unsigned long long)pp.runtime_addr);
cleanup:;
}

static void test_inspect_interpreters(void)
{
	char deb[32] = "";
	FILE *p = popen("/usr/bin/python3.11 -c 'import platform;print(platform.python_version())'", "r");

	if (!ASSERT_TRUE(py_offsets_gen[1].minor == 11 && py_offsets_gen[3].minor == 13, "py_offsets_gen[1].minor == 11 && py_offsets_gen[3].minor ..."))
		goto cleanup;
	if (p) {
		if (!fgets(deb, sizeof(deb), p))
			deb[0] = 0;
		pclose(p);
		deb[strcspn(deb, "\n")] = 0;
	}
	inspect_one("/usr/bin/python3.11", 11, deb);	/* static libpython, no pyenv */
	inspect_one("/root/.pyenv/versions/3.10.13/bin/python3.10", 10, "3.10.13");
	inspect_one("/root/.pyenv/versions/3.12.1/bin/python3.12", 12, "3.12.1");
	/* 3.13: offsets read from the process's _Py_DebugOffsets */
	inspect_one("/root/.pyenv/versions/3.13.0/bin/python3.13", 13, "3.13.0");
cleanup:;
}

static void test_not_python(void)
{
	struct gp_py_proc pp;
	struct gp_py_frame f = { .code = 0x1000, .instr = 0x1010 };
	char err[256], buf[64];

	if (!ASSERT_EQ(pystack__inspect(ps, getpid(), &pp, NULL, 0, err, sizeof(err)), -ENOENT, "inspect_self"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "no CPython", "contains no CPython"))
		goto cleanup;
	if (!ASSERT_EQ(pystack__inspect(ps, 0, &pp, NULL, 0, err, sizeof(err)), -EINVAL, "pid_0_refused"))
		goto cleanup;
	/* a pid never inspected: the address, never a guess */
	if (!ASSERT_EQ(pystack__format(ps, getpid(), &f, buf, sizeof(buf)), -ENOENT, "format_unknown_pid"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, "0x1000 (?)", "address_only"))
		goto cleanup;
	pystack__forget_pid(ps, getpid());
cleanup:
	pystack__free(NULL);
}

/* A code object's copy as BPF sends it: name, file, a 3.10 line table of `pairs` (2 bytes,
 * +1 line) pairs, so that the code unit at byte 2i is on line first + i + 1. */
static struct gp_py_code *make_copy(uint64_t code, int first, size_t pairs)
{
	struct gp_py_code *c = calloc(1, sizeof(*c));
	static const char name[] = "Model.build", file[] = "/x/model.py";

	if (!c)
		return NULL;
	c->code = code;
	c->firstlineno = first;
	c->version_hex = 0x030a0d00;	/* 3.10.13: f_lasti in code units */
	c->code_adaptive = GP_PY_NONE;
	c->name_len = sizeof(name) - 1;
	c->name_kind = 1;
	memcpy(c->name, name, c->name_len);
	c->file_len = sizeof(file) - 1;
	c->file_kind = 1;
	memcpy(c->file, file, c->file_len);
	c->lt_len = (uint32_t)(pairs * 2);
	c->lt_chunks = c->lt_len ? (c->lt_len - 1) / GP_PY_LT_CHUNK : 0;
	for (size_t i = 0; i < pairs && 2 * i + 1 < GP_PY_LT_CHUNK; i++) {
		c->lt[2 * i] = 2;
		c->lt[2 * i + 1] = 1;
	}
	return c;
}

/* Frames of a code object copied at its first sight: named from the copy alone (the pid
 * was never inspected, as for a process gone), lines from the chunks that arrived; records
 * whose lengths do not hold are refused and counted; a pid's copies go with it. */
static void test_copies(void)
{
	const int pid = 999999;	/* no such process: nothing is read live */
	struct gp_py_code *c = make_copy(0x7f0000001000, 10, 3000), *bad = NULL;
	struct gp_py_lines *l = calloc(1, sizeof(*l));
	struct pystack_copy_stats st;
	struct gp_py_frame f = { .code = 0x7f0000001000, .instr = 5, .firstlineno = 10 };
	char buf[512];

	if (!ASSERT_TRUE(c && l, "allocated"))
		goto cleanup;
	if (!ASSERT_EQ(pystack__add_code(ps, pid, c), 0, "pystack__add_code"))
		goto cleanup;
	/* byte 10: pair 5, line 10 + 6 */
	if (!ASSERT_EQ(pystack__format(ps, pid, &f, buf, sizeof(buf)), 0, "format from the copy") ||
	    !ASSERT_STR_EQ(buf, "Model.build (/x/model.py:16)", "named from the copy"))
		goto cleanup;
	/* byte 5000 lies in the second chunk, not arrived yet: named, its line unknown */
	f.instr = 2500;
	if (!ASSERT_EQ(pystack__format(ps, pid, &f, buf, sizeof(buf)), PYSTACK_NO_LINE, "past the chunks arrived") ||
	    !ASSERT_STR_EQ(buf, "Model.build (/x/model.py:?)", "named, line unknown"))
		goto cleanup;
	l->code = c->code;
	l->firstlineno = c->firstlineno;
	l->off = GP_PY_LT_CHUNK;
	l->len = 6000 - GP_PY_LT_CHUNK;
	for (size_t i = 0; i < l->len; i += 2) {
		l->lt[i] = 2;
		l->lt[i + 1] = 1;
	}
	if (!ASSERT_EQ(pystack__add_lines(ps, pid, l), 0, "pystack__add_lines"))
		goto cleanup;
	if (!ASSERT_EQ(pystack__format(ps, pid, &f, buf, sizeof(buf)), 0, "format with both chunks") ||
	    !ASSERT_STR_EQ(buf, "Model.build (/x/model.py:2511)", "the line from the second chunk"))
		goto cleanup;
	/* another code object at the address (co_firstlineno differs): not this copy */
	f.firstlineno = 11;
	if (!ASSERT_EQ(pystack__format(ps, pid, &f, buf, sizeof(buf)), -ENOENT, "a reused address") ||
	    !ASSERT_STR_EQ(buf, "0x7f0000001000 (?)", "unnamed, never a guess"))
		goto cleanup;
	f.firstlineno = 10;
	/* hostile lengths: refused whole */
	bad = make_copy(0x7f0000002000, 1, 10);
	if (!ASSERT_TRUE(bad != NULL, "allocated"))
		goto cleanup;
	bad->name_len = GP_PY_STR_CHARS + 1;
	if (!ASSERT_EQ(pystack__add_code(ps, pid, bad), -EINVAL, "a name longer than copied"))
		goto cleanup;
	bad->name_len = 4;
	bad->name_kind = 3;
	if (!ASSERT_EQ(pystack__add_code(ps, pid, bad), -EINVAL, "a character of 3 bytes"))
		goto cleanup;
	bad->name_kind = 4;
	bad->file_len = 300;
	if (!ASSERT_EQ(pystack__add_code(ps, pid, bad), -EINVAL, "a file name of 300 characters"))
		goto cleanup;
	bad->file_len = 3;
	bad->lt_len = GP_PY_LT_MAX + 2;
	bad->lt_chunks = GP_PY_LT_CHUNKS;
	if (!ASSERT_EQ(pystack__add_code(ps, pid, bad), -EINVAL, "a line table longer than copied"))
		goto cleanup;
	bad->lt_len = 20;
	bad->lt_chunks = 3;
	if (!ASSERT_EQ(pystack__add_code(ps, pid, bad), -EINVAL, "chunks that do not match its length"))
		goto cleanup;
	l->off = 2 * GP_PY_LT_CHUNK;	/* past the table's 6000 bytes */
	if (!ASSERT_EQ(pystack__add_lines(ps, pid, l), -EINVAL, "a chunk past the table"))
		goto cleanup;
	l->off = GP_PY_LT_CHUNK;
	l->len = 100;
	if (!ASSERT_EQ(pystack__add_lines(ps, pid, l), -EINVAL, "a chunk of another length"))
		goto cleanup;
	if (!ASSERT_EQ(pystack__add_lines(ps, pid + 1, l), -ENOENT, "a chunk of another process's copy"))
		goto cleanup;
	pystack__copy_stats(ps, &st);
	if (!ASSERT_EQ(st.malformed, 7, "malformed records counted") || !ASSERT_EQ(st.kept, 1, "one copy kept") ||
	    !ASSERT_EQ(st.kept_bytes, 6000, "its line-table bytes"))
		goto cleanup;
	pystack__forget_copies(ps, pid);
	pystack__copy_stats(ps, &st);
	if (!ASSERT_EQ(st.kept, 0, "forgotten with its process") || !ASSERT_EQ(st.kept_bytes, 0, "and its bytes"))
		goto cleanup;
	if (!ASSERT_EQ(pystack__format(ps, pid, &f, buf, sizeof(buf)), -ENOENT, "no copy once forgotten"))
		goto cleanup;
cleanup:
	free(c);
	free(bad);
	free(l);
}

/*
 * glibc's sizeof(struct pthread) from an arm64 libc (what the CPython thread match needs
 * there): Debian 12's is 0x740; the same file with the value patched to one out of bounds,
 * unaligned, or in bounds is refused, refused, taken. Needs an arm64 libc: the one the
 * arm64 VM runs, or here the cross toolchain's.
 */
static int patched_size(const char *src, const char *dst, uint32_t v)
{
	char cmd[512];
	GElf_Shdr sh, dsh;
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd, ret = -1;

	snprintf(cmd, sizeof(cmd), "cp %s %s", src, dst);
	if (system(cmd))
		return -1;
	fd = open(dst, O_RDWR);
	elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	while (elf && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < d->d_size / sizeof(Elf64_Sym); i++) {
			GElf_Sym sy;
			const char *n;

			if (!gelf_getsym(d, (int)i, &sy) || !(n = elf_strptr(elf, sh.sh_link, sy.st_name)) ||
			    strcmp(n, "_thread_db_sizeof_pthread") ||
			    !gelf_getshdr(elf_getscn(elf, sy.st_shndx), &dsh))
				continue;
			if (pwrite(fd, &v, 4, (off_t)(dsh.sh_offset + sy.st_value - dsh.sh_addr)) == 4)
				ret = 0;
		}
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return ret;
}

static uint32_t size_of(const char *path)
{
	int fd = open(path, O_RDONLY);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	uint32_t v = elf ? pystack__pthread_size(elf, fd) : 0xffffffffu;

	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return v;
}

static void test_pthread_size_of_arm64_libc(void)
{
	const char *libc = "/usr/lib/aarch64-linux-gnu/libc.so.6";
	char tmp[] = "/tmp/gp-libc-XXXXXX";
	int fd;

	elf_version(EV_CURRENT);
	if (access(libc, R_OK))
		UNIT_SKIP("no arm64 libc here (/usr/lib/aarch64-linux-gnu/libc.so.6)");
	if (!ASSERT_EQ(size_of(libc), 0x740, "debian12_arm64_libc"))
		return;
	if (!ASSERT_EQ(size_of("/proc/self/exe"), 0, "no_symbol_no_size"))
		return;
	fd = mkstemp(tmp);
	if (!ASSERT_TRUE(fd >= 0, "tmp"))
		return;
	close(fd);
	if (!ASSERT_EQ(patched_size(libc, tmp, 0x100000), 0, "patch_huge"))
		goto cleanup;
	if (!ASSERT_EQ(size_of(tmp), 0, "huge_refused"))
		goto cleanup;
	if (!ASSERT_EQ(patched_size(libc, tmp, 0x741), 0, "patch_unaligned"))
		goto cleanup;
	if (!ASSERT_EQ(size_of(tmp), 0, "unaligned_refused"))
		goto cleanup;
	if (!ASSERT_EQ(patched_size(libc, tmp, 0x10), 0, "patch_tiny"))
		goto cleanup;
	if (!ASSERT_EQ(size_of(tmp), 0, "tiny_refused"))
		goto cleanup;
	if (!ASSERT_EQ(patched_size(libc, tmp, 0x800), 0, "patch_other"))
		goto cleanup;
	if (!ASSERT_EQ(size_of(tmp), 0x800, "in_bounds_taken"))
		goto cleanup;
cleanup:
	unlink(tmp);
}

int main(void)
{
	int ret;

	ps = pystack__new(NULL);
	if (!ps) {
		printf("not ok 1 - setup\n0 passed, 1 failed\n");
		return 1;
	}
	RUN_TEST(test_line_311_hand_made);
	RUN_TEST(test_line_310_hand_made);
	RUN_TEST(test_lines_match_cpython);
	RUN_TEST(test_inspect_interpreters);
	RUN_TEST(test_not_python);
	RUN_TEST(test_copies);
	RUN_TEST(test_pthread_size_of_arm64_libc);
	ret = unit_done();
	pystack__free(ps);
	return ret;
}
