/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "modes/cudatrace/midname.h"
#include "modes/cudatrace/selflearn.h"
#include "lib/util.h"

/* The few driver types and entry points used (cuda.h, CUDA 12+), declared here: gpuprobe
 * has no build-time dependency on CUDA. */
typedef int cu_result;
typedef int cu_device;
typedef void *cu_handle; /* CUcontext, CUmodule, CUlibrary, CUkernel, CUfunction */
typedef cu_result (*cu_init_fn)(unsigned int);
typedef cu_result (*cu_device_get_fn)(cu_device *, int);
typedef cu_result (*cu_ctx_retain_fn)(cu_handle *, cu_device);
typedef cu_result (*cu_ctx_release_fn)(cu_device);
typedef cu_result (*cu_ctx_set_fn)(cu_handle);
typedef cu_result (*cu_lib_load_fn)(cu_handle *, const void *, void *, void **, unsigned int, void *, void **,
				    unsigned int);
typedef cu_result (*cu_lib_kernel_fn)(cu_handle *, cu_handle, const char *);
typedef cu_result (*cu_kernel_func_fn)(cu_handle *, cu_handle);
typedef cu_result (*cu_mod_load_fn)(cu_handle *, const void *);
typedef cu_result (*cu_mod_func_fn)(cu_handle *, cu_handle, const char *);
typedef cu_result (*cu_unload_fn)(cu_handle);
#define CU_ERROR_NO_DEVICE 100
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U /* linux/memfd.h, 6.3; glibc 2.36's sys/mman.h lacks it */
#endif

#define SL_KERNEL "gpuprobe_self_learn"
/* One empty kernel; Turing's target first (CUDA 13's oldest), then Maxwell's for a driver
 * that still runs one (the driver JIT-compiles PTX for the GPU it has). */
static const char *const ptx[] = {
	"// gpuprobe: learns where this driver keeps a kernel's name\n.version 6.4\n.target sm_75\n"
	".address_size 64\n\n.visible .entry " SL_KERNEL "()\n{\n\tret;\n}\n",
	"// gpuprobe: learns where this driver keeps a kernel's name\n.version 6.4\n.target sm_52\n"
	".address_size 64\n\n.visible .entry " SL_KERNEL "()\n{\n\tret;\n}\n",
};

/* The steps a child reports as failed, with what they mean. */
static const struct { const char *step, *what; } steps[] = {
	{ "dlopen", "the driver could not be loaded" },
	{ "symbols", "the driver lacks an entry point (cuLibraryLoadData needs CUDA 12+)" },
	{ "init", "cuInit failed" },
	{ "library", "cuLibraryLoadData refused the PTX image" },
	{ "kernel", "cuLibraryGetKernel failed" },
	{ "context", "device 0's primary context was refused (compute mode EXCLUSIVE_PROCESS or PROHIBITED, MIG, a busy GPU)" },
	{ "module", "cuModuleLoadData refused the PTX image" },
	{ "function", "cuModuleGetFunction failed" },
	{ "kfunction", "cuKernelGetFunction failed" },
	{ "unlearned", "a handle's object did not hold its name where it was looked for" },
	{ "helper", "the static gpuprobe could not start its dynamically linked learning program" },
};

static bool owned_safe(const struct stat *st)
{
	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

int selflearn__safe(const char *lib, char *real, size_t rlen, char *why, size_t len)
{
	char path[PATH_MAX], link[PATH_MAX], *slash;
	struct stat st, lst;
	ssize_t k;
	int fd;

	if (stat(lib, &lst)) {
		snprintf(why, len, "%s: %s", lib, strerror(errno));
		return -errno;
	}
	/* gpuprobe probes a file it opened through its descriptor: the file is the one that
	 * descriptor holds, and it is loaded only through a path of gpuprobe's own mount
	 * namespace that leads to that very file (dev and inode compared below) */
	if (!strncmp(lib, "/proc/self/fd/", 14)) {
		k = readlink(lib, link, sizeof(link) - 1);
		if (k <= 0 || link[0] != '/') {
			snprintf(why, len, "%s: not a path of this mount namespace: not loaded", lib);
			return -EPERM;
		}
		link[k] = '\0';
		lib = link;
	}
	if (!strncmp(lib, "/proc/", 6)) {
		snprintf(why, len, "%s is reached through /proc (another process's root): not loaded", lib);
		return -EPERM;
	}
	if (!realpath(lib, path)) {
		snprintf(why, len, "%s: %s", lib, strerror(errno));
		return -errno;
	}
	if (!strncmp(path, "/proc/", 6) || strlen(path) >= rlen) {
		snprintf(why, len, "%s resolves to %s: not loaded", lib, path);
		return -EPERM;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) || st.st_dev != lst.st_dev || st.st_ino != lst.st_ino ||
	    !S_ISREG(st.st_mode) || !owned_safe(&st)) {
		close(fd);
		snprintf(why, len, "%s is not a regular file owned by root and writable by root only: not loaded", path);
		return -EPERM;
	}
	close(fd);
	snprintf(real, rlen, "%s", path);
	/* every directory above it: root's, no one else may rename or plant an entry there
	 * (a sticky world-writable one, /tmp, is refused too: its files are anyone's to make) */
	while ((slash = strrchr(path, '/'))) {
		if (slash == path)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (lstat(path, &st) || !S_ISDIR(st.st_mode) || !owned_safe(&st)) {
			snprintf(why, len, "%s lies in %s, a directory not owned by root or writable by others: not loaded",
				 real, path);
			return -EPERM;
		}
		if (slash == path)
			break;
	}
	return 0;
}

static const char *step_what(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (strlen(steps[i].step) == n && !memcmp(steps[i].step, s, n))
			return steps[i].what;
	return NULL;
}

/* Digits of base 10 or 16 making up the whole of [s, s + n), at most max. */
static bool num(const char *s, size_t n, int base, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!n || n > (base == 16 ? 16 : 9))
		return false;
	for (size_t i = 0; i < n; i++) {
		int d = s[i] >= '0' && s[i] <= '9' ? s[i] - '0' :
			base == 16 && s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10 : -1;

		if (d < 0)
			return false;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	*out = v;
	return v <= max;
}

int selflearn__parse(const char *buf, size_t len, struct sl_lesson *out, size_t cap, size_t *n, char *why,
		     size_t wlen)
{
	const char *p = buf, *end = buf + len;
	size_t at = 0;

	*n = 0;
	why[0] = '\0';
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *f[4], *c = p;
		size_t fl[4];
		uint64_t a, b;

		if (!nl)
			break; /* a line cut (the child killed mid-write): not used */
		for (int i = 0; i < 4; i++) {
			while (c < nl && *c == ' ')
				c++;
			f[i] = c;
			while (c < nl && *c != ' ')
				c++;
			fl[i] = (size_t)(c - f[i]);
		}
		p = nl + 1;
		if (fl[0] == 3 && !memcmp(f[0], "END", 3) && !fl[1])
			continue;
		if (fl[0] == 1 && f[0][0] == 'L' && !fl[3] && fl[1] == 16 && num(f[1], fl[1], 16, UINT64_MAX, &a) &&
		    num(f[2], fl[2], 10, MN_SLOTS - 1, &b) && b >= 1) {
			if (*n == cap)
				goto bad;
			out[(*n)++] = (struct sl_lesson){ .tag = a, .slot = (uint32_t)b };
			continue;
		}
		if (fl[0] == 1 && f[0][0] == 'E' && !fl[3] && step_what(f[1], fl[1]) &&
		    num(f[2], fl[2], 10, 999999, &b)) {
			bool nodev = fl[1] == 4 && !memcmp(f[1], "init", 4) && b == CU_ERROR_NO_DEVICE;
			int w = snprintf(why + at, wlen - at, "%s%s (%" PRIu64 ")", at ? "; " : "",
					 nodev ? "no GPU (cuInit: CUDA_ERROR_NO_DEVICE)" : step_what(f[1], fl[1]), b);

			if (w > 0 && (size_t)w < wlen - at)
				at += (size_t)w;
			continue;
		}
		goto bad;
	}
	return 0;
bad:
	*n = 0;
	snprintf(why, wlen, "its answer was not understood");
	return -EINVAL;
}

/* ---- the child ---- */

static void say(int fd, const char *fmt, ...)
{
	char b[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof(b) && write(fd, b, (size_t)n) < 0)
		_exit(1);
}

/* Its own memory, read as gpuprobe reads a process's (an unmapped address is an error,
 * never a fault). */
static long self_read(void *ctx, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t r = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);

	(void)ctx;
	return r < 0 ? -errno : (long)r;
}

static int self_who(void *ctx, uint32_t pid, uint32_t *build, uint32_t *uid)
{
	(void)ctx;
	(void)pid;
	*build = 1;
	*uid = 0;
	return 0;
}

#define SYM(h, name, type) ((type)dlsym(h, name))

void selflearn__child(const char *real, int fd)
{
	void *h = dlopen(real, RTLD_NOW | RTLD_LOCAL);
	cu_init_fn init;
	cu_device_get_fn dev_get;
	cu_ctx_retain_fn retain;
	cu_ctx_release_fn release;
	cu_ctx_set_fn set;
	cu_lib_load_fn lib_load;
	cu_lib_kernel_fn lib_kernel;
	cu_kernel_func_fn kernel_func;
	cu_mod_load_fn mod_load;
	cu_mod_func_fn mod_func;
	cu_unload_fn mod_unload, lib_unload;
	cu_handle lib = NULL, kern = NULL, ctx = NULL, mod = NULL, fn = NULL, kfn = NULL;
	struct mn_layout l[MN_LAYOUTS], lk[MN_LAYOUTS];
	struct midname *m = midname__new(self_read, NULL), *mk = midname__new(self_read, NULL);
	uint32_t me = (uint32_t)getpid();
	const char *image = NULL;
	cu_device dev = 0;
	cu_result r;
	size_t k, kk;

	if (!h || !m || !mk) {
		say(fd, "E dlopen 0\n");
		return;
	}
	midname__set_who(m, self_who);
	midname__set_who(mk, self_who);
	init = SYM(h, "cuInit", cu_init_fn);
	dev_get = SYM(h, "cuDeviceGet", cu_device_get_fn);
	retain = SYM(h, "cuDevicePrimaryCtxRetain", cu_ctx_retain_fn);
	release = SYM(h, "cuDevicePrimaryCtxRelease_v2", cu_ctx_release_fn);
	set = SYM(h, "cuCtxSetCurrent", cu_ctx_set_fn);
	lib_load = SYM(h, "cuLibraryLoadData", cu_lib_load_fn);
	lib_kernel = SYM(h, "cuLibraryGetKernel", cu_lib_kernel_fn);
	kernel_func = SYM(h, "cuKernelGetFunction", cu_kernel_func_fn);
	mod_load = SYM(h, "cuModuleLoadData", cu_mod_load_fn);
	mod_func = SYM(h, "cuModuleGetFunction", cu_mod_func_fn);
	mod_unload = SYM(h, "cuModuleUnload", cu_unload_fn);
	lib_unload = SYM(h, "cuLibraryUnload", cu_unload_fn);
	if (!init || !dev_get || !retain || !release || !set || !lib_load || !lib_kernel || !kernel_func ||
	    !mod_load || !mod_func || !mod_unload || !lib_unload) {
		say(fd, "E symbols 0\n");
		return;
	}
	if ((r = init(0))) {
		say(fd, "E init %d\n", r);
		return;
	}
	/* a CUkernel: no context needed */
	r = -1;
	for (size_t i = 0; i < sizeof(ptx) / sizeof(ptx[0]) && r; i++)
		if (!(r = lib_load(&lib, ptx[i], NULL, NULL, 0, NULL, NULL, 0)))
			image = ptx[i];
	if (r)
		say(fd, "E library %d\n", r);
	else if ((r = lib_kernel(&kern, lib, SL_KERNEL)))
		say(fd, "E kernel %d\n", r);
	else
		midname__learn(m, me, (uint64_t)(uintptr_t)kern, SL_KERNEL);
	/* a CUfunction, in device 0's primary context */
	if ((r = dev_get(&dev, 0)) || (r = retain(&ctx, dev)) || (r = set(ctx))) {
		say(fd, "E context %d\n", r);
	} else {
		r = -1;
		for (size_t i = 0; i < sizeof(ptx) / sizeof(ptx[0]) && r; i++)
			if (!image || image == ptx[i])
				r = mod_load(&mod, ptx[i]);
		if (r)
			say(fd, "E module %d\n", r);
		else if ((r = mod_func(&fn, mod, SL_KERNEL)))
			say(fd, "E function %d\n", r);
		else
			midname__learn(m, me, (uint64_t)(uintptr_t)fn, SL_KERNEL);
		if (kern && (r = kernel_func(&kfn, kern)))
			say(fd, "E kfunction %d\n", r);
		else if (kern) /* apart: it may only add a kind (below), never void the others */
			midname__learn(mk, me, (uint64_t)(uintptr_t)kfn, SL_KERNEL);
	}
	if (midname__stats(m).unlearned + midname__stats(mk).unlearned)
		say(fd, "E unlearned %" PRIu64 "\n", midname__stats(m).unlearned + midname__stats(mk).unlearned);
	k = midname__export(m, l, MN_LAYOUTS);
	for (size_t i = 0; i < k; i++)
		if (!l[i].contradicted)
			say(fd, "L %016" PRIx64 " %u\n", l[i].tag, l[i].slot);
	/* cuKernelGetFunction's CUfunction: its layout only for a tag the others did not teach */
	kk = midname__export(mk, lk, MN_LAYOUTS);
	for (size_t i = 0; i < kk; i++) {
		bool known = lk[i].contradicted;

		for (size_t j = 0; j < k && !known; j++)
			known = l[j].tag == lk[i].tag;
		if (!known)
			say(fd, "L %016" PRIx64 " %u\n", lk[i].tag, lk[i].slot);
	}
	say(fd, "END\n");
	if (mod)
		mod_unload(mod);
	if (lib)
		lib_unload(lib);
	if (ctx)
		release(dev);
}

/* The learning program of a statically linked gpuprobe (src/static/selflearn_blob.S, `make
 * bundle`): selflearn__child in a dynamically linked program of its own, kept in gpuprobe's
 * image; absent (both NULL) from the dynamically linked build, which loads the driver itself. */
extern const char gp_selflearn_helper[] __attribute__((weak));
extern const char gp_selflearn_helper_end[] __attribute__((weak));

static size_t helper_size(void)
{
	uintptr_t a = (uintptr_t)gp_selflearn_helper, b = (uintptr_t)gp_selflearn_helper_end;

	return a && b > a ? (size_t)(b - a) : 0;
}

/* In the child of a static gpuprobe: runs the learning program from a memory file (no path
 * anyone could replace), with fd as its descriptor 3; says why on fd where it cannot. */
static void run_helper(const char *real, int fd)
{
	size_t len = helper_size();
	char *argv[] = { "gpuprobe-selflearn", (char *)real, NULL };
	int m;

	/* the pipe on 3 first: the memory file must not take that number */
	if ((fd != 3 && dup2(fd, 3) != 3) || fcntl(3, F_SETFD, 0)) {
		say(fd, "E helper %d\n", errno);
		return;
	}
	/* MFD_EXEC: a kernel whose vm.memfd_noexec is 1 makes memory files not executable
	 * unless asked; one older than 6.3 refuses the flag */
	m = memfd_create("gpuprobe-selflearn", MFD_CLOEXEC | MFD_EXEC);
	if (m < 0 && errno == EINVAL)
		m = memfd_create("gpuprobe-selflearn", MFD_CLOEXEC);
	/* a memory file takes the whole write at once, and the child has no signal handler */
	if (m >= 0 && write(m, gp_selflearn_helper, len) == (ssize_t)len)
		fexecve(m, argv, environ);
	say(fd, "E helper %d\n", errno);
}

/* The child's descriptors: only its end of the pipe and the standard three (stdin and
 * stdout on /dev/null), so that the driver sees none of gpuprobe's BPF objects or files. */
static void child_fds(int keep)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
	}
	for (int fd = 3; fd < 65536; fd++)
		if (fd != keep && close(fd) && errno == EBADF && fd > keep + 1024)
			break; /* far past the last one in use */
}

int selflearn__run(const char *lib, unsigned int timeout_ms, struct sl_lesson *out, size_t cap, size_t *n,
		   unsigned int *ms, char *why, size_t len)
{
	char real[PATH_MAX], buf[SL_MAX_OUT];
	uint64_t t0 = gp_mono_ns(), deadline = t0 + (uint64_t)timeout_ms * 1000000;
	size_t got = 0;
	bool timed_out = false;
	int p[2], st = 0, r;
	pid_t pid, parent = getpid();
	/* no dynamic loader mapped: static glibc cannot host the driver, a program of its own can */
	bool helper = getauxval(AT_BASE) == 0;

	*n = 0;
	*ms = 0;
	if (helper && !helper_size()) {
		snprintf(why, len, "this gpuprobe is statically linked and cannot host the driver (the dynamically linked build can)");
		return -ENOTSUP;
	}
	r = selflearn__safe(lib, real, sizeof(real), why, len);
	if (r)
		return r;
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(why, len, "pipe: %s", strerror(errno));
		return -errno;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		r = -errno;
		snprintf(why, len, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return r;
	}
	if (!pid) {
		sigset_t all;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		/* gpuprobe's handlers are not the child's: a Ctrl-C or a stop ends it */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		close(p[0]);
		child_fds(p[1]);
		if (helper)
			run_helper(real, p[1]);
		else
			selflearn__child(real, p[1]);
		_exit(0); /* no atexit handlers of gpuprobe's, no dlclose of the driver */
	}
	close(p[1]);
	for (;;) {
		uint64_t now = gp_mono_ns();
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		ssize_t k;

		if (now >= deadline) {
			timed_out = true;
			break;
		}
		r = poll(&pf, 1, (int)((deadline - now) / 1000000 + 1));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue; /* the deadline is checked above */
		k = read(p[0], buf + got, sizeof(buf) - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
		/* done when it said END (a helper of the driver may hold the pipe open) */
		if (got == sizeof(buf) || (got >= 4 && !memcmp(buf + got - 4, "END\n", 4)))
			break;
	}
	close(p[0]);
	kill(pid, SIGKILL); /* done, or too late: either way nothing more is wanted of it */
	for (int i = 0; i < 2000 && waitpid(pid, &st, WNOHANG) == 0; i++)
		usleep(1000);
	*ms = (unsigned int)((gp_mono_ns() - t0) / 1000000);
	if (selflearn__parse(buf, got, out, cap, n, why, len))
		return -EINVAL;
	if (timed_out && !*n) {
		snprintf(why, len, "the driver did not answer within %u ms", timeout_ms);
		return -ETIMEDOUT;
	}
	if (!got) {
		snprintf(why, len, "the child died without an answer%s%s", WIFSIGNALED(st) ? " (killed by a signal)" : "",
			 helper && WIFEXITED(st) && WEXITSTATUS(st) == 127 ?
				 " (exit 127: this host's C library could not start the learning program)" : "");
		return -EIO;
	}
	return 0;
}
