/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unwind on stack copies taken in this very process: the registers and the
 * top of the stack captured the way the BPF helper does, then unwound from
 * CFI and symbolized. Also a copy cut short (partial stack, flagged), a
 * failed read, garbage registers and a vanished process. Built for an
 * architecture the unwinder does not know (UNWIND_SUPPORTED 0: neither x86-64 nor
 * arm64), the tests that need a real unwind skip with UNWIND_UNSUPPORTED_WHY; the
 * refusals run.
 */
#define _GNU_SOURCE
#include "lib/procmaps.h"
#include "lib/symbolize.h"
#include "lib/unwind.h"
#include "unit.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static struct unwinder *uw;
static struct symbolizer *sym;

struct stack_end_ctx {
	unsigned long long sp, end;
};

static int stack_end_cb(const struct map_entry *e, void *arg)
{
	struct stack_end_ctx *c = arg;

	if (c->sp >= e->start && c->sp < e->end)
		c->end = e->end;
	return 0;
}

/*
 * A copy of raw stack bytes, as bpf_probe_read_user takes them: they include
 * the redzones AddressSanitizer poisons, so neither instrumented loads nor its
 * memcpy interceptor may read them (make sanitize).
 */
__attribute__((no_sanitize("address"), noinline)) static void raw_copy(void *dst, const void *src, size_t n)
{
	const volatile unsigned char *s = src;
	unsigned char *d = dst;

	for (size_t i = 0; i < n; i++)
		d[i] = s[i];
}

/*
 * Registers at one point of this function (the asm label) and the stack
 * from there, at most GP_STACK_COPY_MAX and never past the stack's end.
 */
static __attribute__((noinline)) void capture(struct gp_stack_copy *c,
					      unsigned int want)
{
	struct stack_end_ctx e = { 0 };
	struct gp_user_regs r;
	uint64_t sp;

#if defined(__aarch64__)
	/* pc, sp, x29 (fp), x30 (lr) and x19-x28: struct gp_user_regs's order */
	__asm__ volatile("adr x9, .\n\t"
			 "str x9, [%0]\n\t"
			 "mov x9, sp\n\t"
			 "str x9, [%0, #8]\n\t"
			 "stp x29, x30, [%0, #16]\n\t"
			 "stp x19, x20, [%0, #32]\n\t"
			 "stp x21, x22, [%0, #48]\n\t"
			 "stp x23, x24, [%0, #64]\n\t"
			 "stp x25, x26, [%0, #80]\n\t"
			 "stp x27, x28, [%0, #96]\n\t"
			 :
			 : "r"(&r)
			 : "x9", "memory");
#else
	__asm__ volatile("lea 0(%%rip), %%rax\n\t"
			 "mov %%rax, %0\n\t"
			 "mov %%rsp, %1\n\t"
			 "mov %%rbp, %2\n\t"
			 "mov %%rbx, %3\n\t"
			 "mov %%r12, %4\n\t"
			 "mov %%r13, %5\n\t"
			 "mov %%r14, %6\n\t"
			 "mov %%r15, %7\n\t"
			 : "=m"(r.ip), "=m"(r.sp), "=m"(r.bp), "=m"(r.bx), "=m"(r.r12),
			   "=m"(r.r13), "=m"(r.r14), "=m"(r.r15)
			 :
			 : "rax");
#endif
	memset(c, 0, sizeof(*c));
	c->regs = r;
	sp = r.sp;
	e.sp = sp;
	procmaps__foreach(NULL, getpid(), stack_end_cb, &e);
	c->wanted = want;
	c->size = want;
	if (e.end && e.end - sp <= want) {
		c->size = (unsigned int)(e.end - sp);
		c->flags |= GP_STACK_COPY_TO_END;
	}
	raw_copy(c->data, (const void *)(uintptr_t)sp, c->size);
}

static char names[UNWIND_MAX_FRAMES][256];

static void symbolize_all(const struct unwind_frames *f)
{
	unsigned int i;

	for (i = 0; i < f->nr; i++)
		symbolizer__format(sym, getpid(), f->pcs[i], names[i],
				   sizeof(names[i]));
}

static int index_of(const struct unwind_frames *f, const char *fn)
{
	char want[128];
	unsigned int i;

	snprintf(want, sizeof(want), "%s+", fn);
	for (i = 0; i < f->nr; i++)
		if (strncmp(names[i], want, strlen(want)) == 0)
			return (int)i;
	return -1;
}

static struct gp_stack_copy copy;

static __attribute__((noinline)) int level3(unsigned int want)
{
	capture(&copy, want);
	return (int)copy.size + 1;
}

static __attribute__((noinline)) int level2(unsigned int want)
{
	return level3(want) + 2;
}

static __attribute__((noinline)) int level1(unsigned int want)
{
	return level2(want) + 3;
}

static void test_full_stack_in_order(void)
{
	struct unwind_frames f;
	int c, l3, l2, l1, m;

	if (!UNWIND_SUPPORTED)
		UNIT_SKIP(UNWIND_UNSUPPORTED_WHY);

	level1(GP_STACK_COPY_MAX);
	if (!ASSERT_EQ(unwinder__unwind(uw, getpid(), &copy, &f), 0, "unwind"))
		goto cleanup;
	symbolize_all(&f);
	c = index_of(&f, "capture");
	l3 = index_of(&f, "level3");
	l2 = index_of(&f, "level2");
	l1 = index_of(&f, "level1");
	m = index_of(&f, "main");
	if (!ASSERT_EQ(c, 0, "capture_frame"))
		goto cleanup;
	if (!ASSERT_EQ(l3, 1, "level3_frame"))
		goto cleanup;
	if (!ASSERT_EQ(l2, 2, "level2_frame"))
		goto cleanup;
	if (!ASSERT_EQ(l1, 3, "level1_frame"))
		goto cleanup;
	if (!ASSERT_TRUE(m > l1, "main_after_level1"))
		goto cleanup;
	/* main's callers end at _start, whose CFI ends the stack cleanly */
	if (!ASSERT_EQ(f.flags, 0, "clean_end"))
		goto cleanup;
cleanup:;
}

/*
 * Return addresses signed by pointer authentication (-mbranch-protection: paciasp puts a
 * code above the 48-bit address before the prologue saves x30): the copy is signed the
 * way such code leaves it, every saved return address given a PAC in bits 48-63, and the
 * walk must give the same frames, stripped. arm64 only: x86-64 has no such bits.
 */
static void test_signed_returns_stripped(void)
{
#if defined(__aarch64__)
	struct unwind_frames plain, f;
	unsigned int i, k, signed_words = 0;
	const uint64_t pac = 0x5a3c000000000000ull; /* bits 48-63, bit 55 clear (user) */

	level1(GP_STACK_COPY_MAX);
	if (!ASSERT_EQ(unwinder__unwind(uw, getpid(), &copy, &plain), 0, "unwind_plain"))
		goto cleanup;
	if (!ASSERT_TRUE(plain.nr >= 5, "plain_frames"))
		goto cleanup;
	for (i = 0; i + 8 <= copy.size; i += 8) {
		uint64_t w;

		memcpy(&w, copy.data + i, 8);
		for (k = 1; k < plain.nr; k++)
			if (w == plain.pcs[k]) {
				w |= pac;
				memcpy(copy.data + i, &w, 8);
				signed_words++;
				break;
			}
	}
	copy.regs.lr |= pac;
	if (!ASSERT_TRUE(signed_words >= 3, "return_addresses_signed"))
		goto cleanup;
	if (!ASSERT_EQ(unwinder__unwind(uw, getpid(), &copy, &f), 0, "unwind_signed"))
		goto cleanup;
	if (!ASSERT_EQ(f.nr, plain.nr, "same_depth"))
		goto cleanup;
	for (k = 0; k < f.nr; k++)
		if (!ASSERT_EQ(f.pcs[k], plain.pcs[k], "same_frame"))
			goto cleanup;
	if (!ASSERT_EQ(f.flags, plain.flags, "same_end"))
		goto cleanup;
cleanup:;
#else
	UNIT_SKIP("pointer authentication is arm64's");
#endif
}

/* A copy too short for the callers: the innermost frames, flagged partial. */
static void test_short_copy_is_partial(void)
{
	struct unwind_frames f;
	unsigned int i;

	if (!UNWIND_SUPPORTED)
		UNIT_SKIP(UNWIND_UNSUPPORTED_WHY);

	level1(GP_STACK_COPY_MAX);
	copy.size = 64;	/* capture's own frame, not level1's */
	copy.flags &= ~GP_STACK_COPY_TO_END;
	if (!ASSERT_EQ(unwinder__unwind(uw, getpid(), &copy, &f), 0, "unwind"))
		goto cleanup;
	symbolize_all(&f);
	if (!ASSERT_TRUE(f.flags & UNWIND_TRUNCATED, "truncated_flag"))
		goto cleanup;
	if (!ASSERT_TRUE(f.nr >= 1, "some_frames"))
		goto cleanup;
	if (!ASSERT_EQ(index_of(&f, "capture"), 0, "index_of_capture"))
		goto cleanup;
	if (!ASSERT_EQ(index_of(&f, "main"), -1, "index_of_main"))
		goto cleanup;
	/* whatever frames came, each is a real function of ours */
	for (i = 0; i < f.nr; i++)
		if (!ASSERT_TRUE(strncmp(names[i], "0x", 2) != 0, "not_hex"))
			goto cleanup;
cleanup:;
}

static void test_failed_read_gives_pc_only(void)
{
	struct unwind_frames f;

	level1(GP_STACK_COPY_MAX);
	copy.err = -EFAULT;
	copy.size = 0;
	if (!ASSERT_EQ(unwinder__unwind(uw, getpid(), &copy, &f), 0, "unwind"))
		goto cleanup;
	if (!ASSERT_EQ(f.nr, 1, "pc_only"))
		goto cleanup;
	if (!ASSERT_EQ(f.pcs[0], copy.regs.ip, "pc_frame"))
		goto cleanup;
	if (!ASSERT_TRUE(f.flags & UNWIND_NO_STACK, "no_stack_flag"))
		goto cleanup;
cleanup:;
}

/* Registers and stack of random bytes: no crash, no frame outside a mapping. */
static void test_garbage_never_reported(void)
{
	struct unwind_frames f;
	unsigned int i, round;

	if (!UNWIND_SUPPORTED)
		UNIT_SKIP(UNWIND_UNSUPPORTED_WHY);

	srand(15);
	for (round = 0; round < 200; round++) {
		level1(GP_STACK_COPY_MAX);
		for (i = 0; i < 2048; i++)
			copy.data[rand() % copy.size] = (unsigned char)rand();
		if (round % 2)
			copy.regs.bp = copy.regs.sp + (unsigned)(rand() % 4096);
		if (round % 3 == 0)
			copy.regs.ip = ((uint64_t)rand() << 20) | (uint64_t)rand();
		if (!ASSERT_EQ(unwinder__unwind(uw, getpid(), &copy, &f), 0, "unwind"))
			goto cleanup;
		if (!ASSERT_TRUE(f.nr >= 1 && f.nr <= UNWIND_MAX_FRAMES, "frames_in_range"))
			goto cleanup;
		symbolize_all(&f);
		for (i = 1; i < f.nr; i++)	/* past pc 0: all mapped code */
			if (!ASSERT_TRUE(strchr(names[i], '('), "frame_named"))
				goto cleanup;
	}
cleanup:;
}

static void test_bad_input(void)
{
	struct unwind_frames f;

	if (!UNWIND_SUPPORTED)
		UNIT_SKIP(UNWIND_UNSUPPORTED_WHY);

	level1(GP_STACK_COPY_MAX);
	if (!ASSERT_EQ(unwinder__unwind(uw, 0, &copy, &f), -EINVAL, "pid_0_refused"))
		goto cleanup;
	copy.size = GP_STACK_COPY_MAX + 1;
	if (!ASSERT_EQ(unwinder__unwind(uw, getpid(), &copy, &f), -EINVAL, "oversized_copy_refused"))
		goto cleanup;
	copy.size = 256;
	/* pid_max is at most 4194304 */
	if (!ASSERT_EQ(unwinder__unwind(uw, 4194305 + 7, &copy, &f), -ESRCH, "no_such_pid"))
		goto cleanup;
	unwinder__free(NULL);
	unwinder__forget_pid(uw, getpid());
	level1(GP_STACK_COPY_MAX);
	if (!ASSERT_EQ(unwinder__unwind(uw, getpid(), &copy, &f), 0, "unwind_after_forget"))
		goto cleanup;
	if (!ASSERT_TRUE(f.nr >= 4, "frames_after_forget"))
		goto cleanup;
cleanup:;
}

static void test_stats_count(void)
{
	struct unwind_stats st;

	if (!UNWIND_SUPPORTED)
		UNIT_SKIP(UNWIND_UNSUPPORTED_WHY);

	unwinder__stats(uw, &st);
	if (!ASSERT_TRUE(st.unwinds >= 200, "unwinds_counted"))
		goto cleanup;
	if (!ASSERT_TRUE(st.files_opened >= 2, "files_opened_counted"))
		goto cleanup;	/* this binary and libc */
	if (!ASSERT_TRUE(st.maps_reads >= 2, "maps_reads_counted"))
		goto cleanup;	/* after forget_pid */
cleanup:;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/*
 * A fake /proc whose maps name files the "process" planted: a FIFO, a
 * symlink out of its root, a file that is not the mapped inode. The
 * unwinder must refuse each (through safeopen) and still return the pc.
 */
static void test_hostile_maps_refused(void)
{
	char tmp[] = "/tmp/gp-unwind-XXXXXX", p[PATH_MAX + 64];
	struct unwind_frames f;
	struct unwind_stats st;
	struct unwinder *fake = NULL;
	struct stat sb;
	FILE *m;

	if (!ASSERT_TRUE(mkdtemp(tmp) != NULL, "mkdtemp"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/77", tmp);
	if (!ASSERT_EQ(mkdir(p, 0755), 0, "mkdir_pid"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/77/root", tmp);
	if (!ASSERT_EQ(mkdir(p, 0755), 0, "mkdir_root"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/77/root/lib", tmp);
	if (!ASSERT_EQ(mkdir(p, 0755), 0, "mkdir_lib"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/77/root/lib/fifo.so", tmp);
	if (!ASSERT_EQ(mkfifo(p, 0644), 0, "mkfifo"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/77/root/lib/out.so", tmp);
	if (!ASSERT_EQ(symlink("/proc/self/exe", p), 0, "symlink_proc_self_exe"))
		goto cleanup;	/* a magic link, and out of the root */
	snprintf(p, sizeof(p), "%s/77/root/lib/other.so", tmp);
	m = fopen(p, "w");
	if (!ASSERT_TRUE(m != NULL, "open_other"))
		goto cleanup;
	fputs("not the mapped file", m);
	fclose(m);
	if (!ASSERT_EQ(stat(p, &sb), 0, "stat_other"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/77/maps", tmp);
	m = fopen(p, "w");
	if (!ASSERT_TRUE(m != NULL, "open_maps"))
		goto cleanup;
	fprintf(m, "10000-20000 r-xp 00000000 08:01 %llu /lib/fifo.so\n"
		   "20000-30000 r-xp 00000000 08:01 %llu /lib/out.so\n"
		   "30000-40000 r-xp 00000000 08:01 %llu /lib/other.so\n",
		(unsigned long long)sb.st_ino + 1, (unsigned long long)sb.st_ino + 2,
		(unsigned long long)sb.st_ino + 3);
	fclose(m);
	fake = unwinder__new(tmp);
	if (!ASSERT_TRUE(fake != NULL, "fake_unwinder"))
		goto cleanup;
	level1(GP_STACK_COPY_MAX);
	copy.regs.ip = 0x10010;
	if (!ASSERT_TRUE(unwinder__unwind(fake, 77, &copy, &f) <= 0, "fifo_refused"))
		goto cleanup;
	copy.regs.ip = 0x20010;
	if (!ASSERT_TRUE(unwinder__unwind(fake, 77, &copy, &f) <= 0, "symlink_refused"))
		goto cleanup;
	copy.regs.ip = 0x30010;
	if (!ASSERT_TRUE(unwinder__unwind(fake, 77, &copy, &f) <= 0, "other_inode_refused"))
		goto cleanup;
	unwinder__stats(fake, &st);
	printf("# last refusal: %s\n", unwinder__last_error(fake));
	if (!ASSERT_EQ(st.files_opened, 0, "no_file_opened"))
		goto cleanup;
	if (!ASSERT_TRUE(st.files_rejected >= 3, "files_rejected"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(unwinder__last_error(fake), "/lib/other.so: is ", "contains /lib/other.so: is"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(unwinder__last_error(fake), "not the mapped", "contains not the mapped"))
		goto cleanup;
	unwinder__free(fake);
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
cleanup:;
}

/* A fake /proc/<pid> in tmp for this process's mappings (its maps, map_files), its root
 * root (NULL: none). 0 or -1. */
static int fake_pid(const char *tmp, int pid, const char *root)
{
	char p[PATH_MAX + 64], link[64], line[4096];
	FILE *in, *out;
	int ret = -1;

	snprintf(p, sizeof(p), "%s/%d", tmp, pid);
	if (mkdir(p, 0755))
		return -1;
	snprintf(p, sizeof(p), "%s/%d/maps", tmp, pid);
	in = fopen("/proc/self/maps", "r");
	out = fopen(p, "w");
	while (in && out && fgets(line, sizeof(line), in))
		fputs(line, out);
	if (in && out)
		ret = 0;
	if (in)
		fclose(in);
	if (out)
		fclose(out);
	snprintf(p, sizeof(p), "%s/%d/map_files", tmp, pid);
	snprintf(link, sizeof(link), "/proc/%d/map_files", getpid());
	if (!ret)
		ret = symlink(link, p);
	snprintf(p, sizeof(p), "%s/%d/root", tmp, pid);
	if (!ret && root)
		ret = symlink(root, p);
	return ret;
}

/*
 * A process that exits while its files are looked at: its maps were read, its root is
 * gone, and kill(0) still finds it until it is reaped (CI once: a flood's process exited
 * while its first stack was kept, and libc's debug file, shared by every process, was
 * then "none" for the whole run: a later process's libc frames had no names). Its
 * files' debug files are not taken as missing; a live process then finds them.
 */
static void test_debug_file_after_an_exiting_process(void)
{
	char tmp[] = "/tmp/gp-unwind-XXXXXX", p[PATH_MAX + 64];
	struct unwinder *real = NULL, *fake = NULL;
	struct unwind_stats base, st;
	int pid = getpid();

	if (!UNWIND_SUPPORTED)
		UNIT_SKIP(UNWIND_UNSUPPORTED_WHY);
	real = unwinder__new(NULL);
	if (!ASSERT_TRUE(real != NULL, "unwinder") || !ASSERT_EQ(unwinder__prepare(real, pid), 0, "prepare"))
		goto cleanup;
	unwinder__stats(real, &base);
	if (!base.debug_files) {
		unwinder__free(real);
		UNIT_SKIP("no separate debug file for any file this test maps (libc6-dbg is not installed)");
	}
	/* its maps (read while it lived) and its mapped files; no root: it exited */
	if (!ASSERT_TRUE(mkdtemp(tmp) != NULL, "mkdtemp") || !ASSERT_EQ(fake_pid(tmp, pid, NULL), 0, "fake pid"))
		goto cleanup;
	fake = unwinder__new(tmp);
	if (!ASSERT_TRUE(fake != NULL, "fake_unwinder") ||
	    !ASSERT_EQ(unwinder__prepare(fake, pid), 0, "prepare_exiting"))
		goto cleanup;
	unwinder__stats(fake, &st);
	if (!ASSERT_TRUE(st.files_opened >= 2, "its files opened through map_files") ||
	    !ASSERT_EQ(st.debug_files, 0, "no debug file without its root"))
		goto cleanup;
	/* the same files in a process whose root is there */
	snprintf(p, sizeof(p), "%s/%d/root", tmp, pid);
	if (!ASSERT_EQ(symlink("/", p), 0, "root"))
		goto cleanup;
	if (!ASSERT_EQ(unwinder__prepare(fake, pid), 0, "prepare_live"))
		goto cleanup;
	unwinder__stats(fake, &st);
	ASSERT_EQ(st.debug_files, base.debug_files, "the debug files found then, as a live process finds them");
cleanup:
	unwinder__free(fake);
	unwinder__free(real);
	if (strcmp(tmp, "/tmp/gp-unwind-XXXXXX"))
		nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * The same files (device, inode) mapped from two roots, as a host library bind-mounted
 * into containers (the NVIDIA container toolkit mounts libcuda so): what one root holds
 * for them, here no debug file at all, says nothing of the other's. Before, the first
 * root looked in decided for every process: a container with no debug files left the
 * host's frames unnamed, and one with a debug file made to match the build-id would have
 * named another tenant's frames.
 */
static void test_debug_file_is_its_roots(void)
{
	char tmp[] = "/tmp/gp-unwind-XXXXXX", empty[PATH_MAX];
	struct unwinder *real = NULL, *fake = NULL;
	struct unwind_stats base, st;

	if (!UNWIND_SUPPORTED)
		UNIT_SKIP(UNWIND_UNSUPPORTED_WHY);
	real = unwinder__new(NULL);
	if (!ASSERT_TRUE(real != NULL, "unwinder") || !ASSERT_EQ(unwinder__prepare(real, getpid()), 0, "prepare"))
		goto cleanup;
	unwinder__stats(real, &base);
	if (!base.debug_files) {
		unwinder__free(real);
		UNIT_SKIP("no separate debug file for any file this test maps (libc6-dbg is not installed)");
	}
	if (!ASSERT_TRUE(mkdtemp(tmp) != NULL, "mkdtemp"))
		goto cleanup;
	snprintf(empty, sizeof(empty), "%s/empty-root", tmp);
	if (!ASSERT_EQ(mkdir(empty, 0755), 0, "mkdir_root") ||
	    !ASSERT_EQ(fake_pid(tmp, 101, empty), 0, "pid 101, a root without debug files") ||
	    !ASSERT_EQ(fake_pid(tmp, 102, "/"), 0, "pid 102, the host's root"))
		goto cleanup;
	fake = unwinder__new(tmp);
	if (!ASSERT_TRUE(fake != NULL, "fake_unwinder") || !ASSERT_EQ(unwinder__prepare(fake, 101), 0, "prepare 101"))
		goto cleanup;
	unwinder__stats(fake, &st);
	if (!ASSERT_TRUE(st.files_opened >= 2, "its files opened") ||
	    !ASSERT_EQ(st.debug_files, 0, "none in the root without them"))
		goto cleanup;
	if (!ASSERT_EQ(unwinder__prepare(fake, 102), 0, "prepare 102"))
		goto cleanup;
	unwinder__stats(fake, &st);
	ASSERT_EQ(st.debug_files, base.debug_files, "the host's root's debug files, the other root's none notwithstanding");
cleanup:
	unwinder__free(fake);
	unwinder__free(real);
	if (strcmp(tmp, "/tmp/gp-unwind-XXXXXX"))
		nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	int ret;

	uw = unwinder__new(NULL);
	sym = symbolizer__new(NULL);
	if (!uw || !sym) {
		printf("not ok 1 - setup\n0 passed, 1 failed\n");
		return 1;
	}
	RUN_TEST(test_full_stack_in_order);
	RUN_TEST(test_short_copy_is_partial);
	RUN_TEST(test_signed_returns_stripped);
	RUN_TEST(test_failed_read_gives_pc_only);
	RUN_TEST(test_garbage_never_reported);
	RUN_TEST(test_bad_input);
	RUN_TEST(test_stats_count);
	RUN_TEST(test_hostile_maps_refused);
	RUN_TEST(test_debug_file_after_an_exiting_process);
	RUN_TEST(test_debug_file_is_its_roots);
	ret = unit_done();
	unwinder__free(uw);
	symbolizer__free(sym);
	return ret;
}
