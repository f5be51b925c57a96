/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for elfsym: the input becomes a file (a memfd) and goes through
 * every entry point, fd-taking and by path (/proc/self/fd/N). Its last byte decides
 * whether the file is also made 8 GiB sparse (tmpfs counts only the pages written), so
 * claims far beyond the data are fed to the checks: no parse may read more than the
 * file holds (ASan's RSS limit and libFuzzer's -rss_limit_mb catch one that does), and
 * a refusal says so with -EFBIG or -EBADMSG. Build (make fuzz does):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc -o fuzz_elfsym \
 *         tests/fuzz/fuzz_elfsym.c src/lib/elfsym.c -lelf -lz
 * Seeds: small ELF files, e.g. "test_elfsym --write-mini-elf seed.so".
 */
#define _GNU_SOURCE
#include "lib/elfsym.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int count_cb(const char *name, unsigned long long value,
		    unsigned long long size, void *ctx)
{
	(void)value;
	(void)size;
	/* touch the whole name so ASan sees an unterminated one */
	*(size_t *)ctx += strlen(name);
	return 0;
}

/* The errors the API documents; anything else is a bug. */
static void check_ret(int r)
{
	if (r >= 0 || r == -ENOEXEC || r == -EBADMSG || r == -EFBIG ||
	    r == -ENODATA || r == -ENOMEM)
		return;
	fprintf(stderr, "undocumented error %d\n", r);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	static int fd = -1;
	unsigned long long probes[8], off;
	struct elf_symtab *st;
	struct stat sb;
	char err[256];
	size_t n = 0, i;
	const char *name;
	int r;

	if (fd < 0) {
		fd = memfd_create("fuzz_elfsym", MFD_CLOEXEC);
		if (fd < 0)
			return 0;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	if (size && (data[size - 1] & 1) && ftruncate(fd, 8LL << 30))
		return 0;

	r = elfsym__check_fd(fd, err, sizeof(err));
	check_ret(r);
	if (r < 0 && !err[0])
		abort();	/* every refusal says why */
	check_ret(elfsym__check(path, err, sizeof(err)));
	check_ret(elfsym__has_func_fd(fd, "cuLaunchKernel"));
	check_ret(elfsym__has_func(path, "cuMemAlloc_v2"));
	check_ret(elfsym__foreach_func_fd(fd, count_cb, &n));

	st = elf_symtab__load_fd(fd, err, sizeof(err));
	if (!st) {
		check_ret(-errno);
		return 0;
	}
	/* what is kept is bounded by what the file holds, not by what it claims */
	if (fstat(fd, &sb) == 0 &&
	    elf_symtab__bytes(st) > 64 * ((unsigned long long)sb.st_blocks * 512 + ELFSYM_DATA_SLACK) + 65536)
		abort();
	/* fixed probes plus addresses taken from the input itself */
	probes[0] = 0;
	probes[1] = 0x1000;
	probes[2] = 0x1204;
	probes[3] = ~0ULL;
	for (i = 4; i < 8; i++) {
		probes[i] = 0;
		if (size >= i * 8 + 8)
			memcpy(&probes[i], data + size - (i - 3) * 8, 8);
	}
	for (i = 0; i < 8; i++) {
		name = elf_symtab__lookup(st, probes[i], &off);
		if (name)
			n += strlen(name) + off;
		n += (size_t)elf_symtab__offset_to_vaddr(st, probes[i]);
		n += (size_t)elf_symtab__vaddr_to_offset(st, probes[i]);
	}
	n += elf_symtab__is_exec(st) + elf_symtab__count(st);
	elf_symtab__free(st);
	return n == 42 ? 0 : 0;	/* use n so nothing is optimized away */
}
