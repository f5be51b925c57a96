/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "core/events.h"
#include "api_trace.h"
#include "cuda_copy.h"
#include "cuda_launch.h"
#include "cuda_mem.h"
#include "nccl_calls.h"
#include "nv_ioctl.h"
#include "lib/util.h"

#define MAX_SOURCES 8
#define GP_READ_MS 20 /* the longest a record submitted without a wake-up waits in gp_events__poll */
#define MAX_SUBSCRIBERS 16 /* the run, its process tree, the allocation source, every mode */

/*
 * The longest one gp_events__poll or gp_events__drain reads records: the consumer yields
 * whatever the event rate, so that a signal, --interval and --duration take effect within
 * ~100 ms (a producer faster than the consumer would otherwise keep it in one read
 * forever); what is left is read at once by the next call, the rings taken in turn.
 */
#define GP_CONSUME_MS 15

/* Each record type's size (0: no such type; a shorter record is malformed) and where its
 * pid is, from the one list of record types (GP_RECORDS, events.h). */
struct rec_info {
	size_t size;
	size_t pid_off;
};

#define REC_INFO(ev, st) [ev] = { sizeof(struct st), offsetof(struct st, pid) },
static const struct rec_info recs[] = { GP_RECORDS(REC_INFO) };
#undef REC_INFO

#define NR_TYPES (sizeof(recs) / sizeof(recs[0]))

/* A subscriber as dispatch reads it: its handler of each type (NULL: none). */
struct sub {
	void *ctx;
	gp_record_fn fn[NR_TYPES];
	void (*on_any)(void *ctx, __u32 type, __u32 pid);
	void (*on_tick)(void *ctx);
};

/* One ring buffer; its records go to every subscriber, in the order they subscribed.
 * Each has its own reader (libbpf 1.1 has no per-ring consume): the rings take turns. */
struct source {
	struct gp_events *ev;
	struct ring_buffer *rb;
	int map_fd;
	struct sub h[MAX_SUBSCRIBERS];
	int nr_h;
	/* the ring's consumer and producer positions, their pages mapped read-only (the BPF
	 * ring buffer's layout: consumer page, then producer page; NULL: not mapped) */
	const unsigned long *cons, *prod;
	bool first; /* read before the others; a read of another yields once it holds records
		     * (gp_events__add_first) */
};

struct gp_events {
	int epfd;     /* every ring's wake-ups; -1 until a ring is added */
	struct source src[MAX_SOURCES];
	int nr_src;
	int next;     /* the ring read first by the next read (the one after a yield) */
	int tick_ms; /* > 0: the shortest wait a subscriber asked for */
	uint64_t deadline; /* the current read yields at this CLOCK_MONOTONIC ns */
	const volatile sig_atomic_t *stop; /* the current read yields once this is non-zero */
	bool yielded;      /* the read stopped at the deadline: records are left */
	bool more;         /* records were left by the last read: the next one does not wait */
	uint64_t handled, malformed;
	unsigned int test_record_us; /* tests: each record read takes this long (a reader behind) */
	int first_left; /* records the rings read first may still take in this read */
};

/* The most records the rings read first take in one read: a flood of them (a user starting
 * thousands of allocating processes, each a GP_EV_PIN whose handler opens the process's
 * files) must leave the other rings their turn; the rest wait for the next read. */
#define FIRST_MAX 4

/* h's (type, handler) pairs by type into *out; -EINVAL for an unknown type or one twice. */
static int compile(const struct gp_handlers *h, struct sub *out)
{
	*out = (struct sub){ .ctx = h->ctx, .on_any = h->on_any, .on_tick = h->on_tick };
	for (size_t i = 0; i < h->nr_on; i++) {
		__u32 t = h->on[i].type;

		if (t >= NR_TYPES || !recs[t].size || !h->on[i].fn || out->fn[t])
			return -EINVAL;
		out->fn[t] = h->on[i].fn;
	}
	return 0;
}

/* A record's type if its length holds its type's struct, else -1. */
static int checked_type(const void *data, size_t size)
{
	const __u32 *type = data;

	if (size < sizeof(*type) || *type >= NR_TYPES || !recs[*type].size || size < recs[*type].size)
		return -1;
	return (int)*type;
}

/* Hands a record whose type and size were checked to s. */
static void deliver(const struct sub *s, __u32 type, const void *data)
{
	if (s->on_any) {
		__u32 pid;

		memcpy(&pid, (const char *)data + recs[type].pid_off, sizeof(pid));
		s->on_any(s->ctx, type, pid);
	}
	if (s->fn[type])
		s->fn[type](s->ctx, data);
}

int gp_events__dispatch(struct gp_events *ev, const struct gp_handlers *h, const void *data,
			size_t size)
{
	struct sub sub;
	int type;

	if (compile(h, &sub))
		return -EINVAL;
	type = checked_type(data, size);
	if (type < 0) {
		ev->malformed++;
		return -EINVAL;
	}
	ev->handled++;
	deliver(&sub, (__u32)type, data);
	return 0;
}

/* Whether ring s holds records not read yet (its positions mapped; false where not). */
static bool holds_records(const struct source *s)
{
	return s->cons && s->prod && __atomic_load_n(s->prod, __ATOMIC_ACQUIRE) != __atomic_load_n(s->cons, __ATOMIC_ACQUIRE);
}

/* Whether a ring read first holds records not read yet. */
static bool first_waiting(const struct gp_events *ev)
{
	if (ev->first_left <= 0)
		return false;
	for (int i = 0; i < ev->nr_src; i++) {
		const struct source *s = &ev->src[i];

		if (s->first && holds_records(s))
			return true;
	}
	return false;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct source *s = ctx;
	int type = checked_type(data, size);

	/* a record is counted once, handled or malformed, whatever the subscribers */
	if (type < 0) {
		s->ev->malformed++;
	} else {
		s->ev->handled++;
		for (int i = 0; i < s->nr_h; i++)
			deliver(&s->h[i], (__u32)type, data);
	}
	if (s->ev->test_record_us)
		usleep(s->ev->test_record_us);
	/* a ring read first had its share of this read: the others' turn */
	if (s->first && --s->ev->first_left <= 0)
		return -EAGAIN;
	/* a record that must be read first came: this read yields to it */
	if (!s->first && first_waiting(s->ev)) {
		s->ev->yielded = true;
		return -EAGAIN;
	}
	/* a bad record must not stop the drain; the deadline or a stop does (libbpf has
	 * consumed this record already: a negative return only ends the read) */
	if ((s->ev->stop && *s->ev->stop) || (s->ev->deadline && gp_mono_ns() >= s->ev->deadline)) {
		s->ev->yielded = true;
		return -EAGAIN;
	}
	return 0;
}

struct gp_events *gp_events__new(void)
{
	struct gp_events *ev = calloc(1, sizeof(struct gp_events));

	if (ev) {
		const char *t = getenv("GPUPROBE_TEST_RECORD_US"); /* tests: a slow reader */

		ev->epfd = -1;
		ev->test_record_us = t ? (unsigned int)strtoul(t, NULL, 10) : 0;
	}
	return ev;
}

void gp_events__free(struct gp_events *ev)
{
	if (!ev)
		return;
	for (int i = 0; i < ev->nr_src; i++) {
		long pg = sysconf(_SC_PAGESIZE);

		ring_buffer__free(ev->src[i].rb);
		if (ev->src[i].cons)
			munmap((void *)ev->src[i].cons, (size_t)pg);
		if (ev->src[i].prod)
			munmap((void *)ev->src[i].prod, (size_t)pg);
	}
	if (ev->epfd >= 0)
		close(ev->epfd);
	free(ev);
}

/* s's positions, mapped read-only beside libbpf's own mappings (gp_events__unread); none
 * where the kernel refuses (the reads then say nothing). */
static void map_positions(struct source *s)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *c = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, s->map_fd, 0);
	void *p = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, s->map_fd, pg);

	if (c == MAP_FAILED || p == MAP_FAILED) {
		int e = errno;

		if (c != MAP_FAILED)
			munmap(c, (size_t)pg);
		if (p != MAP_FAILED)
			munmap(p, (size_t)pg);
		/* without them a record submitted after a read is not known unread: the daemon's
		 * unnamed kernels are held back only after a read that yielded, and a ring read
		 * first takes its turn only at each read's start */
		gp_log(GP_LOG_WARN, "cannot map a ring buffer's positions read-only (%s): records that came after a read are not seen as unread",
		       strerror(e));
		return;
	}
	gp_log(GP_LOG_DEBUG, "ring buffer (map fd %d): its positions mapped read-only", s->map_fd);
	s->cons = c;
	s->prod = p;
}

int gp_events__add(struct gp_events *ev, int map_fd, const struct gp_handlers *h)
{
	struct source *s;
	struct sub sub;

	if (compile(h, &sub))
		return -EINVAL;
	for (int i = 0; i < ev->nr_src; i++) {
		if (ev->src[i].map_fd != map_fd)
			continue;
		if (ev->src[i].nr_h >= MAX_SUBSCRIBERS)
			return -E2BIG;
		ev->src[i].h[ev->src[i].nr_h++] = sub;
		return 0;
	}
	if (ev->nr_src >= MAX_SOURCES)
		return -E2BIG;
	if (ev->epfd < 0) {
		ev->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (ev->epfd < 0)
			return -errno;
	}
	s = &ev->src[ev->nr_src];
	s->ev = ev;
	s->map_fd = map_fd;
	s->h[0] = sub;
	s->nr_h = 1;
	s->rb = ring_buffer__new(map_fd, on_record, s, NULL);
	if (!s->rb)
		return -errno;
	/* the rings' wake-ups through one fd (an epoll fd polls readable when its own does) */
	if (epoll_ctl(ev->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(s->rb),
		      &(struct epoll_event){ .events = EPOLLIN, .data.u32 = (uint32_t)ev->nr_src })) {
		int r = -errno;

		ring_buffer__free(s->rb);
		s->rb = NULL;
		return r;
	}
	map_positions(s);
	ev->nr_src++;
	return 0;
}

int gp_events__add_first(struct gp_events *ev, int map_fd, const struct gp_handlers *h)
{
	int r = gp_events__add(ev, map_fd, h);

	for (int i = 0; !r && i < ev->nr_src; i++)
		if (ev->src[i].map_fd == map_fd)
			ev->src[i].first = true;
	return r;
}

bool gp_events__unread(const struct gp_events *ev)
{
	for (int i = 0; i < ev->nr_src; i++) {
		const struct source *s = &ev->src[i];

		if (holds_records(s))
			return true;
	}
	return false;
}

/* Reads every ring, each in turn from ev->next, until they are empty or budget_ns has
 * passed (0: no limit); records handled or -errno. */
static int consume(struct gp_events *ev, uint64_t budget_ns)
{
	uint64_t before = ev->handled + ev->malformed;
	int r = 0;

	ev->more = false;
	ev->yielded = false;
	if (ev->stop && *ev->stop) { /* records left or not: the caller ends the read */
		ev->more = true;
		return 0;
	}
	ev->deadline = budget_ns ? gp_mono_ns() + budget_ns : 0;
	ev->first_left = FIRST_MAX;
	/* the rings read first (FIRST_MAX records at most), then the others in turn */
	for (int i = 0; i < ev->nr_src && !r; i++) {
		if (!ev->src[i].first)
			continue;
		r = ring_buffer__consume(ev->src[i].rb);
		if (r < 0 && ev->yielded) {
			ev->more = true;
			ev->deadline = 0;
			return (int)(ev->handled + ev->malformed - before);
		}
		if (r == -EAGAIN && ev->first_left <= 0) { /* its share taken: records may be left */
			ev->more = true;
			r = 0;
		}
		r = r < 0 ? r : 0;
	}
	for (int k = 0; k < ev->nr_src && !r; k++) {
		int i = (ev->next + k) % ev->nr_src;

		if (ev->src[i].first)
			continue;
		r = ring_buffer__consume(ev->src[i].rb);
		if (r < 0 && ev->yielded) {
			ev->more = true;
			ev->next = (i + 1) % ev->nr_src;
			r = 0;
			break;
		}
		r = r < 0 ? r : 0;
	}
	ev->deadline = 0;
	return r < 0 ? r : (int)(ev->handled + ev->malformed - before);
}

void gp_events__stop_on(struct gp_events *ev, const volatile sig_atomic_t *flag)
{
	ev->stop = flag;
}

void gp_events__want_tick(struct gp_events *ev, int ms)
{
	if (ms > 0 && (!ev->tick_ms || ms < ev->tick_ms))
		ev->tick_ms = ms;
}

int gp_events__poll(struct gp_events *ev, int timeout_ms)
{
	/* the caller's next deadline (an interval report, --duration's end) */
	uint64_t until = gp_mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ULL, now;
	int n;

	if (ev->tick_ms && ev->tick_ms < timeout_ms)
		timeout_ms = ev->tick_ms;
	ev->tick_ms = 0;

	if (!ev->nr_src) { /* no ring buffer (--ioctl alone aggregates in BPF): just wait */
		usleep((useconds_t)timeout_ms * 1000);
		return 0;
	}
	/* records on hot paths come without a wake-up (gp_quiet_flags, common.bpf.h): read
	 * every ring when the wait ends, also when a record that wakes (a process, a library)
	 * ended it; records left by a read that yielded are read without a wait */
	if (timeout_ms > GP_READ_MS)
		timeout_ms = GP_READ_MS;
	if (!ev->more) {
		struct epoll_event e[MAX_SOURCES];

		n = epoll_wait(ev->epfd, e, MAX_SOURCES, timeout_ms);
		if (n < 0 && errno != EINTR)
			return -errno;
	}
	/* the read yields at the caller's deadline too, not a whole budget past it: a record
	 * at least, so that a deadline that is due makes the read no longer than that */
	now = gp_mono_ns();
	n = consume(ev, until > now + GP_CONSUME_MS * 1000000ULL ? GP_CONSUME_MS * 1000000ULL :
			until > now ? until - now : 1);
	for (int i = 0; i < ev->nr_src; i++)
		for (int k = 0; k < ev->src[i].nr_h; k++)
			if (ev->src[i].h[k].on_tick)
				ev->src[i].h[k].on_tick(ev->src[i].h[k].ctx);
	return n == -EINTR ? 0 : n;
}

int gp_events__drain(struct gp_events *ev)
{
	return consume(ev, GP_CONSUME_MS * 1000000ULL);
}

int gp_events__drain_for(struct gp_events *ev, int ms)
{
	return consume(ev, ms > 0 ? (uint64_t)ms * 1000000ULL : 0);
}

bool gp_events__more(const struct gp_events *ev)
{
	return ev->more;
}

int gp_events__epoll_fd(const struct gp_events *ev)
{
	return ev->epfd;
}

uint64_t gp_events__handled(const struct gp_events *ev)
{
	return ev->handled;
}

uint64_t gp_events__malformed(const struct gp_events *ev)
{
	return ev->malformed;
}
