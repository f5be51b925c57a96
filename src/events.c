/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <bpf/libbpf.h>
#include "events.h"

struct gp_events {
	struct gp_handlers h;
	struct ring_buffer *rb;
	uint64_t handled, malformed;
};

int gp_events__dispatch(struct gp_events *ev, const void *data, size_t size)
{
	const __u32 *type = data;

	if (size < sizeof(*type))
		goto bad;
	switch (*type) {
	case GP_EV_ALLOC:
		if (size < sizeof(struct gp_alloc_event))
			goto bad;
		if (ev->h.on_alloc)
			ev->h.on_alloc(ev->h.ctx, data);
		break;
	case GP_EV_FREE:
	case GP_EV_MAP:
	case GP_EV_UNMAP:
		if (size < sizeof(struct gp_free_event))
			goto bad;
		if (ev->h.on_free)
			ev->h.on_free(ev->h.ctx, data);
		break;
	case GP_EV_EXIT:
		if (size < sizeof(struct gp_exit_event))
			goto bad;
		if (ev->h.on_exit)
			ev->h.on_exit(ev->h.ctx, data);
		break;
	default:
		goto bad;
	}
	ev->handled++;
	return 0;
bad:
	ev->malformed++;
	return -EINVAL;
}

static int on_record(void *ctx, void *data, size_t size)
{
	gp_events__dispatch(ctx, data, size);
	return 0; /* a bad record must not stop the drain */
}

struct gp_events *gp_events__new(const struct gp_handlers *h)
{
	struct gp_events *ev = calloc(1, sizeof(*ev));

	if (ev)
		ev->h = *h;
	return ev;
}

void gp_events__free(struct gp_events *ev)
{
	if (!ev)
		return;
	ring_buffer__free(ev->rb);
	free(ev);
}

int gp_events__add(struct gp_events *ev, int map_fd)
{
	if (!ev->rb) {
		ev->rb = ring_buffer__new(map_fd, on_record, ev, NULL);
		return ev->rb ? 0 : -errno;
	}
	return ring_buffer__add(ev->rb, map_fd, on_record, ev);
}

int gp_events__poll(struct gp_events *ev, int timeout_ms)
{
	int n = ring_buffer__poll(ev->rb, timeout_ms);

	return n == -EINTR ? 0 : n;
}

int gp_events__drain(struct gp_events *ev)
{
	return ring_buffer__consume(ev->rb);
}

uint64_t gp_events__handled(const struct gp_events *ev)
{
	return ev->handled;
}

uint64_t gp_events__malformed(const struct gp_events *ev)
{
	return ev->malformed;
}
