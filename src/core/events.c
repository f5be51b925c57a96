/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "events.h"

#define MAX_SOURCES 8
#define GP_READ_MS 20 /* the longest a record submitted without a wake-up waits in gp_events__poll */
#define MAX_SUBSCRIBERS 16 /* the run, its process tree, the allocation source, every mode */

/* One ring buffer; its records go to every subscriber, in the order they subscribed. */
struct source {
	struct gp_events *ev;
	int map_fd;
	struct gp_handlers h[MAX_SUBSCRIBERS];
	int nr_h;
};

struct gp_events {
	struct ring_buffer *rb;
	struct source src[MAX_SOURCES];
	int nr_src;
	int tick_ms; /* > 0: the shortest wait a subscriber asked for */
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
	return 0; /* a bad record must not stop the drain */
}

struct gp_events *gp_events__new(void)
{
	return calloc(1, sizeof(struct gp_events));
}

void gp_events__free(struct gp_events *ev)
{
	if (!ev)
		return;
	ring_buffer__free(ev->rb);
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
	s = &ev->src[ev->nr_src];
	s->ev = ev;
	s->map_fd = map_fd;
	s->h[0] = *h;
	s->nr_h = 1;
	if (!ev->rb) {
		ev->rb = ring_buffer__new(map_fd, on_record, s, NULL);
		if (!ev->rb)
			return -errno;
	} else if (ring_buffer__add(ev->rb, map_fd, on_record, s)) {
		return -errno;
	}
	ev->nr_src++;
	return 0;
}

void gp_events__want_tick(struct gp_events *ev, int ms)
{
	if (ms > 0 && (!ev->tick_ms || ms < ev->tick_ms))
		ev->tick_ms = ms;
}

int gp_events__poll(struct gp_events *ev, int timeout_ms)
{
	int n;

	if (ev->tick_ms && ev->tick_ms < timeout_ms)
		timeout_ms = ev->tick_ms;
	ev->tick_ms = 0;

	if (!ev->rb) { /* no ring buffer (--ioctl alone aggregates in BPF): just wait */
		usleep((useconds_t)timeout_ms * 1000);
		return 0;
	}
	/* records on hot paths come without a wake-up (gp_quiet_flags, common.bpf.h): read
	 * every ring when the wait ends, also when a record that wakes (a process, a library)
	 * ended it */
	if (timeout_ms > GP_READ_MS)
		timeout_ms = GP_READ_MS;
	n = ring_buffer__poll(ev->rb, timeout_ms);
	if (n >= 0) {
		int m = ring_buffer__consume(ev->rb);

		n = m < 0 ? m : n + m;
	}
	for (int i = 0; i < ev->nr_src; i++)
		for (int k = 0; k < ev->src[i].nr_h; k++)
			if (ev->src[i].h[k].on_tick)
				ev->src[i].h[k].on_tick(ev->src[i].h[k].ctx);
	return n == -EINTR ? 0 : n;
}

int gp_events__drain(struct gp_events *ev)
{
	return ev->rb ? ring_buffer__consume(ev->rb) : 0;
}

int gp_events__epoll_fd(const struct gp_events *ev)
{
	return ev->rb ? ring_buffer__epoll_fd(ev->rb) : -1;
}

uint64_t gp_events__handled(const struct gp_events *ev)
{
	return ev->handled;
}

uint64_t gp_events__malformed(const struct gp_events *ev)
{
	return ev->malformed;
}
