/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
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

/* One ring buffer; its records go to every subscriber, in the order they subscribed.
 * Each has its own reader (libbpf 1.1 has no per-ring consume): the rings take turns. */
struct source {
	struct gp_events *ev;
	struct ring_buffer *rb;
	int map_fd;
	struct gp_handlers h[MAX_SUBSCRIBERS];
	int nr_h;
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
};

#define CALL(h, fn, data) do { if ((h)->fn) (h)->fn((h)->ctx, data); } while (0)

/* The size of each record type (0: no such type): a shorter record is malformed. */
static const size_t min_size[] = {
	[GP_EV_ALLOC] = sizeof(struct gp_alloc_event),
	[GP_EV_FREE] = sizeof(struct gp_free_event),
	[GP_EV_MAP] = sizeof(struct gp_free_event),
	[GP_EV_UNMAP] = sizeof(struct gp_free_event),
	[GP_EV_EXIT] = sizeof(struct gp_exit_event),
	[GP_EV_NAME] = sizeof(struct gp_name_event),
	[GP_EV_STUB] = sizeof(struct gp_stub_event),
	[GP_EV_NAMECOPY] = sizeof(struct gp_namecopy_event),
	[GP_EV_COPY] = sizeof(struct gp_copy_event),
	[GP_EV_AUX] = sizeof(struct gp_aux_event),
	[GP_EV_IOCTL] = sizeof(struct gp_ioctl_event),
	[GP_EV_CALL] = sizeof(struct gp_call_event),
	[GP_EV_FORK] = sizeof(struct gp_proc_event),
	[GP_EV_EXEC] = sizeof(struct gp_proc_event),
	[GP_EV_GONE] = sizeof(struct gp_proc_event),
	[GP_EV_GRAPH] = sizeof(struct gp_graph_event),
	[GP_EV_CALL_STR] = sizeof(struct gp_call_str_event),
	[GP_EV_NCCL] = sizeof(struct gp_nccl_event),
	[GP_EV_NCCL_CUDA] = sizeof(struct gp_aux_event),
	[GP_EV_DLOPEN] = sizeof(struct gp_dlopen_event),
	[GP_EV_STACK] = sizeof(struct gp_stack_event),
	[GP_EV_PYCODE] = sizeof(struct gp_pycode_event),
	[GP_EV_PYLINES] = sizeof(struct gp_pylines_event),
};

/* Hands a record whose type and size were checked to h's handler of that type. */
static void call(const struct gp_handlers *h, __u32 type, const void *data)
{
	switch (type) {
	case GP_EV_ALLOC:
		CALL(h, on_alloc, data);
		break;
	case GP_EV_FREE:
	case GP_EV_MAP:
	case GP_EV_UNMAP:
		CALL(h, on_free, data);
		break;
	case GP_EV_EXIT:
		CALL(h, on_exit, data);
		break;
	case GP_EV_NAME:
		CALL(h, on_name, data);
		break;
	case GP_EV_STUB:
		CALL(h, on_stub, data);
		break;
	case GP_EV_NAMECOPY:
		CALL(h, on_namecopy, data);
		break;
	case GP_EV_COPY:
		CALL(h, on_copy, data);
		break;
	case GP_EV_AUX:
		CALL(h, on_aux, data);
		break;
	case GP_EV_CALL:
		CALL(h, on_call, data);
		break;
	case GP_EV_FORK:
	case GP_EV_EXEC:
	case GP_EV_GONE:
		CALL(h, on_proc, data);
		break;
	case GP_EV_CALL_STR:
		CALL(h, on_call_str, data);
		break;
	case GP_EV_GRAPH:
		CALL(h, on_graph, data);
		break;
	case GP_EV_STACK:
		CALL(h, on_stack, data);
		break;
	case GP_EV_PYCODE:
		CALL(h, on_pycode, data);
		break;
	case GP_EV_PYLINES:
		CALL(h, on_pylines, data);
		break;
	case GP_EV_IOCTL:
		CALL(h, on_ioctl, data);
		break;
	case GP_EV_NCCL:
		CALL(h, on_nccl, data);
		break;
	case GP_EV_NCCL_CUDA:
		CALL(h, on_nccl_cuda, data);
		break;
	case GP_EV_DLOPEN:
		CALL(h, on_dlopen, data);
		break;
	}
}

/* Checks a record's type and size and hands it to h; 0 or -EINVAL. */
static int deliver(const struct gp_handlers *h, const void *data, size_t size)
{
	const __u32 *type = data;

	if (size < sizeof(*type) || *type >= sizeof(min_size) / sizeof(min_size[0]) ||
	    !min_size[*type] || size < min_size[*type])
		return -EINVAL;
	call(h, *type, data);
	return 0;
}

int gp_events__dispatch(struct gp_events *ev, const struct gp_handlers *h, const void *data,
			size_t size)
{
	int r = deliver(h, data, size);

	if (r)
		ev->malformed++;
	else
		ev->handled++;
	return r;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct source *s = ctx;

	/* a record is counted once, handled or malformed, whatever the subscribers */
	if (gp_events__dispatch(s->ev, &s->h[0], data, size) == 0)
		for (int i = 1; i < s->nr_h; i++)
			deliver(&s->h[i], data, size);
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

	if (ev)
		ev->epfd = -1;
	return ev;
}

void gp_events__free(struct gp_events *ev)
{
	if (!ev)
		return;
	for (int i = 0; i < ev->nr_src; i++)
		ring_buffer__free(ev->src[i].rb);
	if (ev->epfd >= 0)
		close(ev->epfd);
	free(ev);
}

int gp_events__add(struct gp_events *ev, int map_fd, const struct gp_handlers *h)
{
	struct source *s;

	for (int i = 0; i < ev->nr_src; i++) {
		if (ev->src[i].map_fd != map_fd)
			continue;
		if (ev->src[i].nr_h >= MAX_SUBSCRIBERS)
			return -E2BIG;
		ev->src[i].h[ev->src[i].nr_h++] = *h;
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
	s->h[0] = *h;
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
	ev->nr_src++;
	return 0;
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
	for (int k = 0; k < ev->nr_src && !r; k++) {
		int i = (ev->next + k) % ev->nr_src;

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
