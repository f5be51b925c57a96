/* SPDX-License-Identifier: BSD-3-Clause */
/* Tracefs uprobe events armed per window (uevent.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include "core/attach.h"
#include "core/uevent.h"
#include "lib/util.h"

#define GROUP_PREFIX "gpuprobe_"
#define FREE_THREADS 16
#define FREE_WAIT_NS (2 * 1000000000ull) /* an event still busy at exit: how long it is tried */
#define DETACH_COMM "gpuprobe-detach"  /* the process that removes a gpuprobe's events after it */
#define DETACH_WAIT_NS (15 * 1000000000ull) /* how long a new gpuprobe waits for such processes */

struct uevent {
	int link;      /* the program on the holder perf event (the link holds the event) */
	__u32 id;      /* the trace event's id */
	char name[64]; /* group/event, for its removal */
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char group[48];
static const char *root; /* the tracefs folder with uprobe_events */
static unsigned int seq; /* __atomic */

/* Where uprobe_events is (tracefs mounted at either place), or NULL. */
static const char *find_root(void)
{
	if (!access("/sys/kernel/tracing/uprobe_events", F_OK))
		return "/sys/kernel/tracing";
	if (!access("/sys/kernel/debug/tracing/uprobe_events", F_OK))
		return "/sys/kernel/debug/tracing";
	return NULL;
}

static bool forced_off(void)
{
	const char *f = getenv("GPUPROBE_NO_UPROBE_EVENTS");

	return f && *f && strcmp(f, "0");
}

int uevent__available(bool mount, char *err, size_t len)
{
	char path[96];
	const char *r;
	int e;

	if (forced_off()) {
		snprintf(err, len, "GPUPROBE_NO_UPROBE_EVENTS is set");
		return -EOPNOTSUPP;
	}
	if (!mount && access("/sys/kernel/tracing/events", F_OK) && access("/sys/kernel/debug/tracing/events", F_OK) &&
	    errno == ENOENT && attach__tracefs_mountable(err, len))
		return 0;
	e = mount ? attach__ensure_tracefs(err, len) : 0;
	if (e)
		return e;
	r = find_root();
	if (!r && (!access("/sys/kernel/tracing", F_OK) || errno == EACCES) &&
	    access("/sys/kernel/tracing/uprobe_events", F_OK) && errno == EACCES) {
		snprintf(err, len, "cannot read tracefs at /sys/kernel/tracing (needs root, or CAP_DAC_READ_SEARCH)");
		return -EACCES;
	}
	if (!r) {
		snprintf(err, len, "tracefs has no uprobe_events (a kernel built without CONFIG_UPROBE_EVENTS)");
		return -ENOENT;
	}
	snprintf(path, sizeof(path), "%s/uprobe_events", r);
	if (faccessat(AT_FDCWD, path, W_OK, AT_EACCESS)) {
		snprintf(err, len, "cannot write %s: %s (needs root, or CAP_DAC_OVERRIDE)", path, strerror(errno));
		return -EROFS;
	}
	return 0;
}

/* One command to uprobe_events: 0 or -errno. */
static int command(const char *line)
{
	char path[96];
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/uprobe_events", root);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, line, strlen(line)) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int remove_event(const char *name)
{
	char line[96];

	snprintf(line, sizeof(line), "-:%s\n", name);
	return command(line);
}

/*
 * The events of gpuprobe processes that are gone (killed before they could remove theirs):
 * names only, with no breakpoint or program, but uprobe_events would fill up. An event
 * another gpuprobe still uses cannot be removed (EBUSY), whichever PID namespace it runs in;
 * one made but not yet held may be, and its maker then makes it again (uevent__new).
 */
static void sweep(void)
{
	char path[96], line[512], *names = NULL;
	size_t n = 0, cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/uprobe_events", root);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *g = strchr(line, ':'), *sp, *end;
		long pid;

		if (!g || strncmp(g + 1, GROUP_PREFIX, strlen(GROUP_PREFIX)))
			continue;
		g++;
		sp = strchr(g, ' ');
		if (!sp || (size_t)(sp - g) >= 64)
			continue;
		*sp = '\0';
		pid = strtol(g + strlen(GROUP_PREFIX), &end, 10);
		if (*end != '_' || pid <= 0 || pid == getpid() || !kill((pid_t)pid, 0) || errno != ESRCH)
			continue;
		if (n == cap) {
			char *m = realloc(names, (cap = cap ? 2 * cap : 16) * 64);

			if (!m)
				break;
			names = m;
		}
		snprintf(names + 64 * n++, 64, "%s", g);
	}
	fclose(f);
	for (size_t i = 0; i < n; i++)
		if (!remove_event(names + 64 * i))
			gp_log(GP_LOG_DEBUG, "uprobe events: removed %s, left by a gpuprobe that is gone", names + 64 * i);
	free(names);
}

/* Whether PID (a /proc folder's name) is a gpuprobe-detach of the node's root: its status's
 * Name (the kernel escapes a newline in it) and real uid 0, in gpuprobe's own PID namespace.
 * No user, and no container's root, can make a gpuprobe wait by naming a process so (a
 * process that made itself undumpable has root's files in /proc, but not root's uid). */
static bool detacher(uint32_t pid, const struct stat *ns)
{
	char path[64], buf[2048];
	struct stat its;
	uint32_t uid;

	if (gp_proc_status(pid, buf, sizeof(buf), &uid) || uid ||
	    strncmp(buf, "Name:\t" DETACH_COMM "\n", strlen("Name:\t" DETACH_COMM "\n")))
		return false;
	snprintf(path, sizeof(path), "/proc/%u/ns/pid", pid);
	return !stat(path, &its) && its.st_ino == ns->st_ino && its.st_dev == ns->st_dev;
}

/* How many gpuprobe-detach processes of root's run now (uevent__free_all_apart's). */
static int detachers(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	struct stat ns;
	int n = 0;

	if (!d)
		return 0;
	if (stat("/proc/self/ns/pid", &ns)) {
		closedir(d);
		return 0;
	}
	while ((de = readdir(d))) {
		uint64_t pid;

		if (!gp_parse_u64(de->d_name, 1, UINT32_MAX, &pid) && detacher((uint32_t)pid, &ns))
			n++;
	}
	closedir(d);
	return n;
}

static void init(void)
{
	uint64_t t0 = gp_mono_ns();
	unsigned int r = 0;
	int n;

	/* another gpuprobe's events still being removed: each removal holds the kernel's
	 * event_mutex through a grace period, and this one's windows would wait behind them
	 * with their breakpoints in (a budget of 1 % read 2.65 % on the H200 so), so they go
	 * first, for up to DETACH_WAIT_NS */
	while ((n = detachers()) && gp_mono_ns() - t0 < DETACH_WAIT_NS)
		usleep(20000);
	if (gp_mono_ns() - t0 > 20000000)
		gp_log(GP_LOG_DEBUG, "uprobe events: waited %.2f s for another gpuprobe's to be removed%s",
		       (double)(gp_mono_ns() - t0) / 1e9, n ? " (some still are)" : "");

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (unsigned int)gp_mono_ns();
	/* the random part: two gpuprobe processes with one PID, in two PID namespaces */
	snprintf(group, sizeof(group), GROUP_PREFIX "%d_%08x", (int)getpid(), r);
	root = find_root();
	if (root)
		sweep();
}

static int read_id(const char *name, __u32 *id)
{
	char path[160], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/events/%s/id", root, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	*id = (__u32)strtoul(buf, NULL, 10);
	return *id ? 0 : -EIO;
}

static int event_open(__u32 id, pid_t pid, int cpu)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_TRACEPOINT, .config = id,
				     .sample_period = 1, .disabled = 1 };
	int fd = (int)syscall(__NR_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Only gpuprobe's own descriptors: nothing a traced process named reaches uprobe_events. */
static bool own_fd_path(const char *path)
{
	const char *p = "/proc/self/fd/";

	if (strncmp(path, p, strlen(p)) || !path[strlen(p)])
		return false;
	for (const char *c = path + strlen(p); *c; c++)
		if (*c < '0' || *c > '9')
			return false;
	return true;
}

/* The event made and held: 0, or -errno (-EAGAIN: it vanished before it was held). */
static int make(struct uevent *e, const char *path, unsigned long long offset, bool ret, int prog_fd, __u64 cookie)
{
	LIBBPF_OPTS(bpf_link_create_opts, o, .perf_event.bpf_cookie = cookie);
	char line[160];
	int r, pfd;

	snprintf(e->name, sizeof(e->name), "%s/b%u", group, __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	snprintf(line, sizeof(line), "%c:%s %s:0x%llx\n", ret ? 'r' : 'p', e->name, path, offset);
	r = command(line);
	if (r)
		return r;
	r = read_id(e->name, &e->id);
	/* the holder: bound to this process, whose mappings are never probed */
	pfd = r ? r : event_open(e->id, getpid(), -1);
	if (pfd < 0) {
		remove_event(e->name);
		return r || pfd == -ENOENT || pfd == -EINVAL ? -EAGAIN : pfd;
	}
	e->link = bpf_link_create(prog_fd, pfd, BPF_PERF_EVENT, &o);
	r = e->link < 0 ? -errno : 0;
	close(pfd);
	if (r)
		remove_event(e->name);
	return r;
}

struct uevent *uevent__new(const char *path, unsigned long long offset, bool ret, int prog_fd, __u64 cookie,
			   char *err, size_t len)
{
	struct uevent *e = calloc(1, sizeof(*e));
	int r = -EAGAIN;

	pthread_once(&once, init);
	if (!e) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	e->link = -1;
	if (!root) {
		snprintf(err, len, "tracefs has no uprobe_events");
		free(e);
		return NULL;
	}
	if (!own_fd_path(path)) {
		snprintf(err, len, "a uprobe event takes gpuprobe's own descriptor, not %s", path);
		free(e);
		return NULL;
	}
	for (int i = 0; i < 2 && r == -EAGAIN; i++)
		r = make(e, path, offset, ret, prog_fd, cookie);
	if (r) {
		snprintf(err, len, "cannot make a uprobe event on %s: %s", path, strerror(-r));
		free(e);
		return NULL;
	}
	return e;
}

int uevent__arm(const struct uevent *e, __u32 pid)
{
	int fd = -ENODEV;
	long cpus = sysconf(_SC_NPROCESSORS_CONF);

	if (pid)
		return event_open(e->id, (pid_t)pid, -1);
	/* every process: an event of one CPU (an offline one is refused, ENODEV) */
	for (int cpu = 0; fd == -ENODEV && cpu < (cpus > 0 ? cpus : 1); cpu++)
		fd = event_open(e->id, -1, cpu);
	return fd;
}

/* Removes a freed event's name: the kernel frees a perf event after an RCU grace period,
 * which a loaded machine (or an old kernel's global lock) stretches past 100 ms, so a name
 * still busy is tried again for up to FREE_WAIT_NS. 0 or -errno. */
static int remove_retried(const char *name)
{
	int r;

	for (uint64_t end = gp_mono_ns() + FREE_WAIT_NS, ms = 5;; ms = ms < 80 ? 2 * ms : ms) {
		r = remove_event(name);
		if (r != -EBUSY || gp_mono_ns() >= end)
			return r;
		usleep((useconds_t)ms * 1000);
	}
}

void uevent__free(struct uevent *e)
{
	int r;

	if (!e)
		return;
	/* the event goes with its last perf event, in close() */
	if (e->link >= 0)
		close(e->link);
	r = remove_retried(e->name);
	if (r)
		gp_log(GP_LOG_WARN, "uprobe events: cannot remove %s: %s (the next gpuprobe removes it)",
		       e->name, strerror(-r));
	free(e);
}

struct free_slice {
	struct uevent **es;
	int n, first, step;
};

static void *free_thread(void *arg)
{
	struct free_slice *s = arg;

	for (int i = s->first; i < s->n; i += s->step)
		uevent__free(s->es[i]);
	return NULL;
}

void uevent__free_all(struct uevent **es, int n)
{
	struct free_slice sl[FREE_THREADS];
	pthread_t t[FREE_THREADS];
	bool started[FREE_THREADS] = { 0 };
	int nt = n < FREE_THREADS ? n : FREE_THREADS;

	for (int i = 0; i < nt; i++) {
		sl[i] = (struct free_slice){ es, n, i, nt };
		started[i] = !pthread_create(&t[i], NULL, free_thread, &sl[i]);
		if (!started[i])
			free_thread(&sl[i]);
	}
	for (int i = 0; i < nt; i++)
		if (started[i])
			pthread_join(t[i], NULL);
	for (int i = 0; i < n; i++)
		es[i] = NULL;
}

/* The teardown child's descriptors: its events' links and its go pipe alone (everything
 * else of gpuprobe's, its other links above all, is the parent's to close), and /dev/null
 * on 0-2, so that no descriptor it opens lands there and nothing of it reaches gpuprobe's
 * output. */
static void apart_fds(struct uevent **es, int n, int go)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC), max = go > 2 ? go : 2;

	for (int i = 0; i < n; i++)
		max = es[i]->link > max ? es[i]->link : max;
	for (int fd = 0; fd <= max + 1024 && fd < 65536; fd++) {
		bool keep = fd == null || fd == go;

		for (int i = 0; !keep && i < n; i++)
			keep = es[i]->link == fd;
		if (!keep && fd > 2)
			close(fd);
	}
	for (int fd = 0; null >= 0 && fd <= 2; fd++)
		dup2(null, fd);
	if (null > 2)
		close(null);
}

void uevent__free_all_apart(struct uevent **es, int n)
{
	int go[2] = { -1, -1 };
	pid_t pid;

	if (n <= 0)
		return;
	fflush(NULL);
	/* the child closes the links only once this process's copies are closed: a copy closed
	 * here after the child's is the link's last, and its grace period would be paid here */
	pid = pipe2(go, O_CLOEXEC) ? -1 : fork();
	if (pid < 0) {
		gp_log(GP_LOG_DEBUG, "uprobe events: no process to remove them apart (%s): removed here",
		       strerror(errno));
		for (int i = 0; i < 2; i++)
			if (go[i] >= 0)
				close(go[i]);
		uevent__free_all(es, n);
		return;
	}
	if (!pid) {
		sigset_t all;
		char c;

		/* a grandchild does it, init's at once: no zombie of gpuprobe's while it lives on */
		if (fork())
			_exit(0);
		/* out of gpuprobe's session and process group (a second Ctrl-C is not for it),
		 * deaf to the stops that ended gpuprobe: killed midway, it would leave names */
		setsid();
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGPIPE, SIG_IGN);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		prctl(PR_SET_NAME, DETACH_COMM);
		close(go[1]);
		apart_fds(es, n, go[0]);
		while (read(go[0], &c, 1) < 0 && errno == EINTR)
			; /* EOF: gpuprobe's copies are closed (or it is gone) */
		/* the links first, one grace period each under the kernel's event_mutex, then the
		 * names, which by then are mostly free; no gp_log here (another thread of gpuprobe
		 * may have held its lock at the fork), and whatever name is left the next gpuprobe
		 * removes, as those of a killed one */
		for (int i = 0; i < n; i++)
			close(es[i]->link);
		for (int i = 0; i < n; i++)
			remove_retried(es[i]->name);
		_exit(0);
	}
	/* the parent's copies: not the events' last, so no grace period here (a failed second
	 * fork leaves them the parent's last after all, closed here the slow way) */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	for (int i = 0; i < n; i++) {
		if (es[i]->link >= 0)
			close(es[i]->link);
		free(es[i]);
		es[i] = NULL;
	}
	close(go[0]);
	close(go[1]);
	gp_log(GP_LOG_DEBUG, "uprobe events: %d handed to gpuprobe-detach, a process of their own that removes them", n);
}

