// SPDX-License-Identifier: BSD-3-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "gputime_wire.h"
#include "sender.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int sock = -1;
static uint32_t src;
static unsigned char buf[GPT_DGRAM_MAX];
static size_t used;   /* bytes in buf, the header included once a record is in */
static uint16_t nrec; /* records in buf */
static struct gpt_counts counts;

#define WAIT_MS 200       /* the longest one datagram waits for room */
#define LAST_WAIT_MS 1000 /* at the process's exit */

/* A datagram socket the environment names: an inherited fd, else a path. */
static int channel(void)
{
	const char *fd_s = getenv(GPT_ENV_FD), *path = getenv(GPT_ENV_SOCK);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int type = 0, fd;
	socklen_t tl = sizeof(type);
	struct stat st;

	if (fd_s && *fd_s) {
		char *end;
		long n = strtol(fd_s, &end, 10);

		/* only a datagram socket: a closed number (a launcher closed it) or one reused
		 * for a file is left alone */
		if (!*end && n > 2 && n < 65536 && !fstat((int)n, &st) && S_ISSOCK(st.st_mode) &&
		    !getsockopt((int)n, SOL_SOCKET, SO_TYPE, &type, &tl) &&
		    (type == SOCK_DGRAM || type == SOCK_SEQPACKET))
			return (int)n;
	}
	if (!path || !*path || strlen(path) >= sizeof(a.sun_path))
		return -1;
	/* "@name": an abstract socket (the started command's second way in, for children whose
	 * launcher closed the inherited descriptor) */
	strcpy(a.sun_path, path);
	if (path[0] == '@')
		a.sun_path[0] = '\0';
	/* a connection of our own: gpuprobe reads each apart (no shared queue to fill) */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* the kernel puts our credentials on each message, even one gpuprobe has not accepted yet */
	setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &(int){ 1 }, sizeof(int));
	if (connect(fd, (struct sockaddr *)&a,
		    path[0] == '@' ? (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path)) : sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A forked child starts with its parent's batch: those records are the parent's. */
static void after_fork(void)
{
	used = 0;
	nrec = 0;
	memset(&counts, 0, sizeof(counts));
	pthread_mutex_init(&lock, NULL);
}

bool gpt_sender_open(uint32_t source)
{
	pthread_mutex_lock(&lock);
	if (sock < 0) {
		sock = channel();
		src = source;
		if (sock >= 0)
			pthread_atfork(NULL, NULL, after_fork);
	}
	pthread_mutex_unlock(&lock);
	return sock >= 0;
}

static uint64_t last_send_ns;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sends buf (lock held). A full socket (gpuprobe reads every ~20 ms; a burst of CUPTI's
 * buffers outruns it) is waited for, up to wait_ms in all: the sending threads are CUPTI's
 * and NCCL's, never the program's own between its calls; what still cannot go is counted. */
static void send_locked(int wait_ms)
{
	uint64_t deadline = mono_ns() + (uint64_t)wait_ms * 1000000ull;
	ssize_t n = -1;

	if (!nrec)
		return;
	((struct gpt_dgram *)buf)->nrec = nrec;
	for (;;) {
		uint64_t now;
		struct pollfd p = { .fd = sock, .events = POLLOUT };

		n = send(sock, buf, used, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			break;
		now = mono_ns();
		if (now >= deadline)
			break;
		poll(&p, 1, (int)((deadline - now) / 1000000ull) + 1);
	}
	if (n == (ssize_t)used)
		counts.sent += nrec;
	else
		counts.send_dropped += nrec;
	used = 0;
	nrec = 0;
	last_send_ns = mono_ns();
}

static void add_locked(const void *rec, size_t size)
{
	if (size > GPT_DGRAM_MAX - sizeof(struct gpt_dgram))
		return;
	if (used + size > GPT_DGRAM_MAX || nrec == UINT16_MAX)
		send_locked(WAIT_MS);
	if (!used) {
		*(struct gpt_dgram *)buf = (struct gpt_dgram){ .magic = GPT_MAGIC, .version = GPT_VERSION };
		used = sizeof(struct gpt_dgram);
	}
	memcpy(buf + used, rec, size);
	used += size;
	nrec++;
}

void gpt_sender_add(const void *rec, size_t size)
{
	if (sock < 0)
		return;
	pthread_mutex_lock(&lock);
	add_locked(rec, size);
	/* a few records a second (NCCL's collectives) still reach gpuprobe within ~100 ms */
	if (mono_ns() - last_send_ns > 100000000ull)
		send_locked(WAIT_MS);
	pthread_mutex_unlock(&lock);
}

void gpt_sender_flush(bool last)
{
	if (sock < 0)
		return;
	pthread_mutex_lock(&lock);
	send_locked(last ? LAST_WAIT_MS : WAIT_MS);
	pthread_mutex_unlock(&lock);
}

void gpt_sender_count(uint64_t records, uint64_t src_dropped, uint64_t unknown)
{
	pthread_mutex_lock(&lock);
	counts.records += records;
	counts.src_dropped += src_dropped;
	counts.unknown += unknown;
	pthread_mutex_unlock(&lock);
}

void gpt_sender_stats(bool last)
{
	struct gpt_stats s = { .h = { .type = GPT_STATS, .size = sizeof(s) } };

	if (sock < 0)
		return;
	pthread_mutex_lock(&lock);
	/* in the batch's datagram: its own records are counted as sent (the stats say what
	 * happened before them; the last datagram's fate shows in the next, or never) */
	if (used + sizeof(s) > GPT_DGRAM_MAX)
		send_locked(WAIT_MS);
	s.source = src;
	s.records = counts.records;
	s.sent = counts.sent + nrec + 1;
	s.send_dropped = counts.send_dropped;
	s.src_dropped = counts.src_dropped;
	s.unknown = counts.unknown;
	add_locked(&s, sizeof(s));
	send_locked(last ? LAST_WAIT_MS : WAIT_MS);
	pthread_mutex_unlock(&lock);
}
