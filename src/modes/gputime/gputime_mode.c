// SPDX-License-Identifier: BSD-3-Clause
/*
 * --gpu-time: exact GPU durations on request. No probes: the libraries gpuprobe builds
 * (src/inject/: libgpuprobe_cupti.so, CUDA's injection library; libgpuprobe_ncclprof.so,
 * NCCL's profiler plugin) run inside the traced processes and send their records here
 * through a unix datagram socket:
 *  - a command gpuprobe starts inherits one end of a socket pair, its number in
 *    GPUPROBE_GPUTIME_FD, with CUDA_INJECTION64_PATH and NCCL_PROFILER_PLUGIN set
 *    (prepare_command, before the command is forked): no path anywhere;
 *  - processes started elsewhere (a pod) send to --gpu-time-socket PATH, a socket made in
 *    a directory only root may write, named to them by GPUPROBE_GPUTIME_SOCK.
 * Every datagram is credited to the process the kernel says sent it (SCM_CREDENTIALS: a
 * process cannot name another) and read as hostile input by gputime.c; reads never block
 * and give each process a share, so that one flooding process costs its own records
 * (counted) and never the daemon's time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "core/events.h"
#include "modes/gputime/gputime_mode.h"
#include "inject/gputime_wire.h"
#include "core/modeshare.h"
#include "lib/option.h"
#include "core/options.h"
#include "lib/reasons.h"
#include "core/run.h"
#include "core/run_impl.h"
#include "core/timeline.h"
#include "lib/util.h"
#include <json-c/json.h>

#define TICK_MS 20
#define READ_MAX 4096   /* datagrams one read takes at most */
#define SHARE 1024      /* of which one process at most */
#define RCVBUF (8 << 20) /* the sockets' receive buffers: a burst waits there */
#define MAX_CLIENTS 1024 /* connections to --gpu-time-socket at once (more: refused, counted) */
/* Of which one user at most: whoever finds a socket (the command's abstract one is listed
 * in /proc/net/unix) cannot hold every connection and shut other users' processes out. */
#define USER_SHARE (MAX_CLIENTS / 8)
#define CUPTI_LIB "libgpuprobe_cupti.so"
#define NCCL_LIB "libgpuprobe_ncclprof.so"

struct gputime_settings gputime_settings = { .max_rows = 4096 };

static const struct gp_option options[] = {
	{ "gpu-time-socket", 0, "PATH", "--gpu-time: also take the records of processes started elsewhere, sent to this unix socket (made here; its directory must be root's and not writable by others); give them GPUPROBE_GPUTIME_SOCK=PATH, CUDA_INJECTION64_PATH and NCCL_PROFILER_PLUGIN",
	  GP_OPT_STRING, &gputime_settings.socket, .frontends = GP_FE_ALL, .group = GP_GRP_MODE },
	{ "cupti", 0, "PATH", "--gpu-time: the libcupti.so the command's injection library loads (else libcupti.so on its library path, then /usr/local/cuda/extras/CUPTI/lib64)",
	  GP_OPT_STRING, &gputime_settings.cupti, .frontends = GP_FE_CLI, .group = GP_GRP_MODE },
	{ "gpu-time-libs", 0, "DIR", "--gpu-time: where " CUPTI_LIB " and " NCCL_LIB " are (else beside the gpuprobe binary, then ../lib/gpuprobe from it)",
	  GP_OPT_STRING, &gputime_settings.libdir, .frontends = GP_FE_ALL, .group = GP_GRP_MODE },
	{ "gpu-time-max-rows", 0, "N", "--gpu-time: kernel (name and shape), copy, memset and collective rows of each kind a process keeps (the records past them counted: gputime_caps)",
	  GP_OPT_U64, &gputime_settings.max_rows, 1, 1000000, .frontends = GP_FE_ALL, .group = GP_GRP_MODE },
	{},
};

/* What prepare_command made for the command: the kept end of the socket pair, and an
 * abstract socket for its descendants whose launcher closed the inherited descriptor
 * (Python's subprocess does by default: torchrun's workers). */
static struct {
	int fd, child_fd, abs_fd;
	bool cupti, nccl;
	char why[256];
} cmd = { -1, -1, -1, false, false, "" };

struct gputime_mode {
	struct gp_run *run;
	struct gt_agg *agg;
	int fds[3]; /* the command's socket, --gpu-time-socket's listener, the command's abstract one; -1 */
	int clients[MAX_CLIENTS]; /* its connections */
	uint32_t client_pid[MAX_CLIENTS]; /* SO_PEERCRED's at connect time */
	uint32_t client_uid[MAX_CLIENTS]; /* and its user */
	int nr_clients;
	char path[PATH_MAX];
	bool bound;
	unsigned char buf[GPT_DGRAM_MAX + 1];
	struct gputime_snap snap;
};

/* The folder of our libraries: --gpu-time-libs, else the binary's, else ../lib/gpuprobe. */
static int lib_path(const char *name, char *out, size_t len)
{
	char exe[PATH_MAX], dir[PATH_MAX];
	ssize_t n;

	if (gputime_settings.libdir) {
		if (snprintf(out, len, "%s/%s", gputime_settings.libdir, name) >= (int)len)
			return -ENAMETOOLONG;
		return access(out, R_OK) ? -errno : 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -errno;
	exe[n] = '\0';
	snprintf(dir, sizeof(dir), "%s", dirname(exe));
	if (snprintf(out, len, "%s/%s", dir, name) < (int)len && !access(out, R_OK))
		return 0;
	if (snprintf(out, len, "%s/../lib/gpuprobe/%s", dir, name) >= (int)len)
		return -ENAMETOOLONG;
	return access(out, R_OK) ? -ENOENT : 0;
}

/* One library into the command's environment, unless the variable is set already (the
 * program's own injection or plugin stays: said once). */
static bool inject(const char *var, const char *name)
{
	char path[PATH_MAX];
	const char *had = getenv(var);

	if (had && *had) {
		gp_log(GP_LOG_WARN, "--gpu-time: %s is set already (%s): left as it is", var, had);
		return false;
	}
	if (lib_path(name, path, sizeof(path))) {
		gp_log(GP_LOG_WARN, "--gpu-time: %s not found (--gpu-time-libs DIR)", name);
		return false;
	}
	return !setenv(var, path, 1);
}

/* The command's abstract listener, named in GPUPROBE_GPUTIME_SOCK as "@name": unguessable,
 * and whoever finds it (/proc/net/unix) sends as itself (credited by the kernel). */
static void abstract_listener(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	unsigned long long rnd[2];
	char name[64];
	int fd;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return;
	snprintf(name, sizeof(name), "@gpuprobe-gputime-%016llx%016llx", rnd[0], rnd[1]);
	memcpy(a.sun_path + 1, name + 1, strlen(name) - 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &(int){ 1 }, sizeof(int)) ||
	    bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name))) ||
	    listen(fd, 128)) {
		close(fd);
		return;
	}
	cmd.abs_fd = fd;
	setenv(GPT_ENV_SOCK, name, 1);
}

static int m_prepare_command(char *err, size_t len)
{
	int sv[2], one = 1, sz = RCVBUF;
	char num[16];

	if (cmd.fd >= 0)
		return 0;
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv)) {
		snprintf(err, len, "--gpu-time: socketpair: %s", strerror(errno));
		return -errno;
	}
	/* ours: close-on-exec, credentials on every datagram (set before any is sent) */
	if (fcntl(sv[0], F_SETFD, FD_CLOEXEC) || setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one))) {
		snprintf(err, len, "--gpu-time: the command's socket: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -errno;
	}
	if (setsockopt(sv[0], SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	cmd.fd = sv[0];
	cmd.child_fd = sv[1];
	snprintf(num, sizeof(num), "%d", sv[1]);
	setenv(GPT_ENV_FD, num, 1);
	if (gputime_settings.cupti)
		setenv(GPT_ENV_CUPTI, gputime_settings.cupti, 1);
	if (!gputime_settings.socket)
		abstract_listener();
	else /* processes started elsewhere and the command's children alike */
		setenv(GPT_ENV_SOCK, gputime_settings.socket, 1);
	cmd.cupti = inject("CUDA_INJECTION64_PATH", CUPTI_LIB);
	cmd.nccl = inject("NCCL_PROFILER_PLUGIN", NCCL_LIB);
	if (!cmd.cupti && !cmd.nccl)
		snprintf(cmd.why, sizeof(cmd.why), "neither library was given to the command (see the warnings)");
	return 0;
}

static void m_free(void *st)
{
	struct gputime_mode *m = st;

	if (!m)
		return;
	for (int i = 0; i < 3; i++)
		if (m->fds[i] >= 0)
			close(m->fds[i]);
	for (int i = 0; i < m->nr_clients; i++)
		close(m->clients[i]);
	if (m->bound)
		unlink(m->path);
	gt_agg__free(m->agg);
	gt_snap_data__clear(&m->snap.d);
	free(m->snap.pids);
	free(m);
}

/* --gpu-time-socket's folder: root's, written by no one else (no one can swap the socket). */
static int check_dir(const char *path, char *err, size_t len)
{
	char copy[PATH_MAX], *dir;
	struct stat st;

	snprintf(copy, sizeof(copy), "%s", path);
	dir = dirname(copy);
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(err, len, "--gpu-time-socket %s: its folder %s is not a directory", path, dir);
		return -ENOTDIR;
	}
	if (st.st_uid != 0 || st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, len, "--gpu-time-socket %s: its folder %s must be root's and not writable by group or others",
			 path, dir);
		return -EPERM;
	}
	return 0;
}

static int bind_socket(struct gputime_mode *m, const char *path, char *err, size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	int one = 1, sz = RCVBUF, fd, r;

	if (strlen(path) >= sizeof(a.sun_path)) {
		snprintf(err, len, "--gpu-time-socket %s: longer than a unix socket's %zu bytes", path,
			 sizeof(a.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	r = check_dir(path, err, len);
	if (r)
		return r;
	/* a socket left by an earlier run goes; anything else there stays, and we stop */
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, len, "--gpu-time-socket %s: exists and is not a socket", path);
			return -EEXIST;
		}
		unlink(path);
	}
	strcpy(a.sun_path, path);
	/* connections (SOCK_SEQPACKET): each sender a queue of its own, its peer known
	 * (SO_PEERCRED); a datagram socket's one queue holds 10 datagrams (max_dgram_qlen) */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) || chmod(path, 0666) || listen(fd, 128)) {
		r = -errno;
		snprintf(err, len, "--gpu-time-socket %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return r;
	}
	(void)sz;
	m->fds[1] = fd;
	snprintf(m->path, sizeof(m->path), "%s", path);
	m->bound = true;
	return 0;
}

static int m_open(struct gp_run *run, void **st, char *err, size_t len)
{
	struct gputime_mode *m = calloc(1, sizeof(*m));
	struct gt_limits lim;

	*st = m;
	if (!m) {
		snprintf(err, len, "--gpu-time: out of memory");
		return -ENOMEM;
	}
	m->fds[0] = m->fds[1] = m->fds[2] = -1;
	m->run = run;
	/* GPUPROBE_TEST_SYSFS: tests point this at a fake tree (as --bandwidth-util's) */
	bw_links__read(getenv("GPUPROBE_TEST_SYSFS"), &m->snap.links);
	lim = (struct gt_limits){ .max_procs = (uint32_t)run->o->max_procs,
				  .max_rows = (uint32_t)gputime_settings.max_rows,
				  .max_names = (uint32_t)gputime_settings.max_rows };
	m->agg = gt_agg__new(&lim);
	if (!m->agg) {
		snprintf(err, len, "--gpu-time: out of memory");
		return -ENOMEM;
	}
	if (cmd.fd >= 0) {
		/* the command has its end now: ours only reads */
		if (cmd.child_fd >= 0)
			close(cmd.child_fd);
		cmd.child_fd = -1;
		unsetenv(GPT_ENV_FD);
		fcntl(cmd.fd, F_SETFL, fcntl(cmd.fd, F_GETFL) | O_NONBLOCK);
		m->fds[0] = cmd.fd;
		cmd.fd = -1;
		m->fds[2] = cmd.abs_fd;
		cmd.abs_fd = -1;
		unsetenv(GPT_ENV_SOCK);
	}
	if (gputime_settings.socket)
		return bind_socket(m, gputime_settings.socket, err, len);
	if (m->fds[0] < 0 && run->o->frontend != GP_FE_DAEMON)
		gp_log(GP_LOG_WARN, "--gpu-time: no command started and no --gpu-time-socket: no records can come");
	return 0;
}

static int m_attach(void *st, struct gp_run *run, enum gp_lib kind, const char *lib, char *err, size_t len)
{
	(void)st, (void)run, (void)kind, (void)lib, (void)err, (void)len;
	return 0; /* no probes: the records come from inside the processes */
}

/* The sender's PID from the datagram's credentials, 0 when it carries none. */
static uint32_t sender_of(struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		struct ucred uc;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_CREDENTIALS ||
		    c->cmsg_len < CMSG_LEN(sizeof(uc)))
			continue;
		memcpy(&uc, CMSG_DATA(c), sizeof(uc));
		return uc.pid > 0 ? (uint32_t)uc.pid : 0;
	}
	return 0;
}

/* Up to budget datagrams from fd (peer: its connection's PID, 0 for the command's socket);
 * how many were taken, or -1 once the connection is closed. */
static int read_fd(struct gputime_mode *m, int fd, uint32_t peer, int budget)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(16 * sizeof(int))];
	} ctl;
	int n = 0;

	while (n < budget) {
		struct iovec iov = { m->buf, sizeof(m->buf) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl, .msg_controllen = sizeof(ctl) };
		ssize_t got = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
		uint32_t pid;

		if (got < 0)
			break;
		if (got == 0 && peer) /* the other end closed */
			return -1;
		n++;
		/* descriptors passed to us are closed at once: we take none */
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
				for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
					close(((int *)CMSG_DATA(c))[i]);
		pid = sender_of(&mh);
		if (!pid)
			pid = peer; /* sent before we accepted it, without SO_PASSCRED: who connected */
		if (!pid) {
			gt_agg__drop(m->agg, GT_D_NO_CREDS, 1);
			continue;
		}
		if (mh.msg_flags & MSG_TRUNC || (size_t)got > GPT_DGRAM_MAX) {
			gt_agg__drop(m->agg, GT_D_OVERSIZED, 1);
			continue;
		}
		/* the sockets take any local process: only those the run follows add rows */
		if (!gp_run__follows(m->run, pid)) {
			gt_agg__drop(m->agg, GT_D_NOT_FOLLOWED, 1);
			continue;
		}
		if (!gt_agg__admit(m->agg, pid, SHARE))
			continue;
		gt_agg__feed(m->agg, pid, m->buf, (size_t)got);
		{
			char comm[GP_COMM_LEN] = "";

			if (!gp_proc_comm(pid, comm, sizeof(comm)))
				gt_agg__name(m->agg, pid, comm);
		}
	}
	return n;
}

/* The connections user uid holds now. */
static int user_clients(const struct gputime_mode *m, uint32_t uid)
{
	int n = 0;

	for (int i = 0; i < m->nr_clients; i++)
		n += m->client_uid[i] == uid;
	return n;
}

/* New connections to a listener, each with its peer's PID; a user past its share is
 * refused (counted: connections_refused). */
static void accept_clients(struct gputime_mode *m, int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
		struct ucred uc = { 0 };
		socklen_t l = sizeof(uc);

		if (fd < 0)
			return;
		if (m->nr_clients == MAX_CLIENTS || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &l) || uc.pid <= 0) {
			gt_agg__drop(m->agg, GT_D_PROCS, 1);
			close(fd);
			continue;
		}
		if (user_clients(m, uc.uid) >= USER_SHARE) {
			gt_agg__drop(m->agg, GT_D_CONN, 1);
			close(fd);
			continue;
		}
		m->client_uid[m->nr_clients] = uc.uid;
		setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
		m->clients[m->nr_clients] = fd;
		m->client_pid[m->nr_clients++] = (uint32_t)uc.pid;
	}
}

/* What the sockets hold, up to READ_MAX datagrams. */
static void drain(struct gputime_mode *m)
{
	int left = READ_MAX;

	gt_agg__new_read(m->agg);
	if (m->fds[0] >= 0)
		left -= read_fd(m, m->fds[0], 0, left);
	for (int i = 1; i < 3; i++)
		if (m->fds[i] >= 0)
			accept_clients(m, m->fds[i]);
	for (int i = 0; i < m->nr_clients && left > 0; i++) {
		int n = read_fd(m, m->clients[i], m->client_pid[i], left);

		if (n >= 0) {
			left -= n;
			continue;
		}
		close(m->clients[i]);
		m->clients[i] = m->clients[--m->nr_clients];
		m->client_pid[i] = m->client_pid[m->nr_clients];
		m->client_uid[i] = m->client_uid[m->nr_clients];
		i--;
	}
}

static void h_tick(void *ctx)
{
	struct gputime_mode *m = ctx;

	drain(m);
	gp_events__want_tick(m->run->events, TICK_MS);
}

static void h_proc(void *ctx, const struct gp_proc_event *e)
{
	struct gputime_mode *m = ctx;

	if (e->type == GP_EV_GONE) {
		drain(m); /* its last datagrams were sent before it exited */
		gt_agg__exit(m->agg, e->pid, e->ts_ns);
	}
}

/* One record of GPU work on the --trace timeline: a track per GPU and stream. */
static void on_event(void *ctx, const struct gt_event *e)
{
	struct gputime_mode *m = ctx;
	json_object *args = json_object_new_object();
	char name[64];
	const char *n = e->name;

	json_object_object_add(args, "device", json_object_new_int64(e->device));
	json_object_object_add(args, "stream", json_object_new_int64(e->stream));
	if (e->type == GPT_KERNEL) {
		char shape[96];

		snprintf(shape, sizeof(shape), "%u,%u,%u x %u,%u,%u", e->grid[0], e->grid[1], e->grid[2], e->block[0],
			 e->block[1], e->block[2]);
		json_object_object_add(args, "shape", json_object_new_string(shape));
		if (!n)
			n = "kernel (name unknown)";
	} else {
		json_object_object_add(args, "bytes", json_object_new_uint64(e->bytes));
		if (e->type == GPT_COPY) {
			snprintf(name, sizeof(name), "%s copy", gt_copy_kind_name(e->copy_kind));
			if (e->src_dev != GPT_NO_DEVICE) {
				json_object_object_add(args, "src_gpu", json_object_new_int64(e->src_dev));
				json_object_object_add(args, "dst_gpu", json_object_new_int64(e->dst_dev));
			}
		} else {
			snprintf(name, sizeof(name), "memset");
		}
		n = name;
	}
	gp_timeline__event(m->run->timeline, GP_LANE_GPU, e->pid, (e->device & 0x3fffU) << 16 | (e->stream & 0xffffU), n,
			   e->start_ns, e->dur_ns, 0, args);
}

static int m_start(void *st, struct gp_run *run, char *err, size_t len)
{
	struct gputime_mode *m = st;
	static const struct gp_on on[] = { GP_ON_PROCS(h_proc) };
	struct gp_handlers h = { .ctx = m, GP_ONS(on), .on_tick = h_tick };
	int r = gp_run__subscribe(run, &h);

	if (run->timeline)
		gt_agg__on_event(m->agg, on_event, m);
	if (r)
		snprintf(err, len, "--gpu-time: cannot read the run's records: %s", strerror(-r));
	gp_events__want_tick(run->events, TICK_MS);
	return r;
}

static void fill_drops(struct gputime_mode *m, struct gputime_snap *s)
{
	static const int reason[GT_D__COUNT] = {
		[GT_D_OVERSIZED] = GP_R_GPUTIME_REFUSED, [GT_D_MALFORMED] = GP_R_GPUTIME_REFUSED,
		[GT_D_NO_CREDS] = GP_R_GPUTIME_REFUSED, [GT_D_BAD_TIME] = GP_R_GPUTIME_REFUSED,
		[GT_D_CONN] = GP_R_GPUTIME_REFUSED, [GT_D_NOT_FOLLOWED] = GP_R_GPUTIME_REFUSED,
		[GT_D_FLOOD] = GP_R_GPUTIME_FLOOD, [GT_D_PROCS] = GP_R_GPUTIME_CAPS, [GT_D_ROWS] = GP_R_GPUTIME_CAPS,
	};
	uint64_t by[GP_R__COUNT] = { 0 }, not_sent = 0, lost = 0;
	size_t n = 0;

	for (int i = 0; i < GT_D__COUNT; i++)
		by[reason[i]] += s->d.drops[i];
	for (size_t i = 0; i < s->d.nr_procs; i++)
		for (int k = 0; k < 3; k++) {
			not_sent += s->d.procs[i].lib[k].send_dropped;
			lost += s->d.procs[i].lib[k].src_dropped;
		}
	by[GP_R_GPUTIME_NOT_SENT] = not_sent;
	by[GP_R_GPUTIME_SOURCE_LOST] = lost;
	for (int r = GP_R_GPUTIME_REFUSED; r <= GP_R_GPUTIME_SOURCE_LOST; r++)
		s->drops[n++] = (struct gp_snap_drop){ r, by[r] };
	n += gp_run__drops(m->run, s->drops + n);
	s->hdr.drops = s->drops;
	s->hdr.nr_drops = n;
}

static const struct gp_snap *m_snapshot(void *st, struct gp_run *run, enum gp_snap_kind kind, uint32_t pid)
{
	struct gputime_mode *m = st;
	struct gputime_snap *s = &m->snap;
	struct gp_snap_pid *pids;

	if (gt_agg__snapshot(m->agg, pid, &s->d) || !(pids = gp_snap__pids(&s->pids, s->d.nr_procs)))
		return NULL;
	s->hdr = (struct gp_snap){ .mode = "gputime", .kind = kind, .now_ns = gp_run__now(run), .pids = pids };
	for (size_t i = 0; i < s->d.nr_procs; i++) {
		const struct gt_proc_snap *p = &s->d.procs[i];

		gp_snap__add_pid(&s->hdr, pids, p->pid, p->comm, p->unnamed, p->exited, p->exit_ns, 0);
	}
	s->channel = m->fds[0] >= 0 && m->bound ? "inherited socket and --gpu-time-socket" :
		     m->fds[0] >= 0 ? "inherited socket" : m->bound ? m->path : "none";
	s->injected_cupti = cmd.cupti;
	s->injected_nccl = cmd.nccl;
	s->not_injected = cmd.why[0] ? cmd.why : NULL;
	fill_drops(m, s);
	return &s->hdr;
}

static void m_reap(void *st, struct gp_run *run, uint64_t cutoff_ns, uint32_t keep_pid)
{
	struct gputime_mode *m = st;

	(void)run;
	drain(m); /* before a report (the final one's): what the processes sent at their exit */
	gt_agg__reap(m->agg, cutoff_ns, keep_pid);
}

static int m_finish(void *st, struct gp_run *run, char *err, size_t len)
{
	(void)run, (void)err, (void)len;
	drain(st);
	return 0;
}

const struct gp_mode gp_mode_gputime = {
	.name = "gputime",
	.flag = "gpu-time",
	.doc = "Exact GPU durations from inside the processes (CUPTI's activity records, NCCL's profiler plugin): kernels by name and shape, copy bandwidth, NCCL bus bandwidth",
	.needs = GP_NEED_LIBCUDA, /* the run's process tree: exits (no probe of its own) */
	.frontends = GP_FE_CLI | GP_FE_DAEMON,
	.options = options,
	.prepare_command = m_prepare_command,
	.open = m_open,
	.attach = m_attach,
	.start = m_start,
	.snapshot = m_snapshot,
	.text = gputime_report__text,
	.json = gputime_report__json,
	.prom = gputime_report__prom,
	.reap = m_reap,
	.finish = m_finish,
	.free = m_free,
};
