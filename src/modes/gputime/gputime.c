// SPDX-License-Identifier: BSD-3-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "modes/gputime/gputime.h"
#include "inject/gputime_wire.h"
#include "lib/u64map.h"

#define MAX_DURATION_NS (3600ull * 1000000000ull) /* longer: a lying record */
#define MAX_DEVICE 4096u                           /* device ordinals beyond: a lying record */
#define PROBES 8                                   /* hash keys tried for one row */

struct kernel_row {
	uint32_t name_id, grid[3], block[3];
	uint64_t count, total_ns, min_ns, max_ns;
};

struct copy_row {
	uint32_t kind, device, src_dev, dst_dev;
	uint64_t count, bytes, total_ns;
	double peak_gbps;
};

struct memset_row {
	uint32_t device;
	uint64_t count, bytes, total_ns;
};

struct coll_row {
	uint64_t comm_hash, count;
	uint32_t rank, nranks, fn, type_size;
	uint64_t calls, gpu_calls, total_ns, min_ns;
};

struct proc {
	uint32_t pid;
	char comm[GP_COMM_LEN];
	bool exited;
	uint64_t exit_ns;
	uint32_t budget; /* datagrams left in this read */
	uint64_t datagrams, records, unnamed_kernels;
	struct u64map *names, *kernels, *copies, *memsets, *colls;
	uint32_t nr_names, nr_kernels, nr_copies, nr_memsets, nr_colls;
	struct gt_lib_snap lib[3];
	int64_t offset;   /* CLOCK_MONOTONIC minus CUPTI's clock, from its hello */
	bool have_offset;
};

struct gt_agg {
	struct gt_limits lim;
	struct u64map *procs;
	uint64_t drops[GT_D__COUNT];
	void **view;
	size_t view_n;
	gt_event_fn on_event;
	void *event_ctx;
};

void gt_agg__on_event(struct gt_agg *a, gt_event_fn fn, void *ctx)
{
	a->on_event = fn;
	a->event_ctx = ctx;
}

/* e's times moved to CLOCK_MONOTONIC, then to the listener (CUPTI's records only). */
static void emit(struct gt_agg *a, const struct proc *p, struct gt_event *e, uint64_t start, uint64_t end)
{
	if (!a->on_event || !p->have_offset)
		return;
	e->pid = p->pid;
	e->start_ns = (uint64_t)((int64_t)start + p->offset);
	e->dur_ns = end - start;
	a->on_event(a->event_ctx, e);
}

static const char *const drop_names[GT_D__COUNT] = {
	[GT_D_OVERSIZED] = "oversized", [GT_D_MALFORMED] = "malformed", [GT_D_NO_CREDS] = "no_credentials",
	[GT_D_FLOOD] = "flood", [GT_D_PROCS] = "process_table_full", [GT_D_ROWS] = "process_caps",
	[GT_D_BAD_TIME] = "bad_time", [GT_D_CONN] = "connections_refused",
	[GT_D_NOT_FOLLOWED] = "not_followed",
};

const char *gt_drop_name(enum gt_drop d)
{
	return (unsigned int)d < GT_D__COUNT ? drop_names[d] : "unknown";
}

const char *gt_coll_name(uint32_t fn)
{
	static const char *const n[GPT_COLL__FNS] = {
		[GPT_COLL_OTHER] = "other", [GPT_COLL_ALLREDUCE] = "AllReduce", [GPT_COLL_ALLGATHER] = "AllGather",
		[GPT_COLL_REDUCESCATTER] = "ReduceScatter", [GPT_COLL_BROADCAST] = "Broadcast",
		[GPT_COLL_REDUCE] = "Reduce", [GPT_COLL_ALLTOALL] = "AlltoAll",
	};

	return fn < GPT_COLL__FNS ? n[fn] : "other";
}

const char *gt_copy_kind_name(uint32_t kind)
{
	static const char *const n[GPT_COPY__KINDS] = {
		[GPT_COPY_UNKNOWN] = "unknown", [GPT_COPY_HTOD] = "H2D", [GPT_COPY_DTOH] = "D2H",
		[GPT_COPY_HTOA] = "H2A", [GPT_COPY_ATOH] = "A2H", [GPT_COPY_ATOA] = "A2A", [GPT_COPY_ATOD] = "A2D",
		[GPT_COPY_DTOA] = "D2A", [GPT_COPY_DTOD] = "D2D", [GPT_COPY_HTOH] = "H2H", [GPT_COPY_PTOP] = "P2P",
	};

	return kind < GPT_COPY__KINDS ? n[kind] : "unknown";
}

/* nccl-tests (its GetBw functions): size is the buffer a rank sees in full; AllGather's and
 * ReduceScatter's and AlltoAll's is nranks x the per-rank count NCCL's call names. */
uint64_t gt_coll_size(uint32_t fn, uint64_t count, uint32_t type_size, uint32_t nranks)
{
	uint64_t b = count * type_size;

	switch (fn) {
	case GPT_COLL_ALLGATHER:
	case GPT_COLL_REDUCESCATTER:
	case GPT_COLL_ALLTOALL:
		return b * nranks;
	default:
		return b;
	}
}

double gt_busbw_factor(uint32_t fn, uint32_t nranks)
{
	double n = nranks ? (double)nranks : 1.0;

	switch (fn) {
	case GPT_COLL_ALLREDUCE:
		return 2.0 * (n - 1) / n;
	case GPT_COLL_ALLGATHER:
	case GPT_COLL_REDUCESCATTER:
	case GPT_COLL_ALLTOALL:
		return (n - 1) / n;
	default:
		return 1.0;
	}
}

struct gt_agg *gt_agg__new(const struct gt_limits *lim)
{
	struct gt_agg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->lim = *lim;
	a->procs = u64map__new();
	if (!a->procs) {
		free(a);
		return NULL;
	}
	return a;
}

static void proc_free(void *v)
{
	struct proc *p = v;

	if (!p)
		return;
	u64map__free_all(p->names, NULL);
	u64map__free_all(p->kernels, NULL);
	u64map__free_all(p->copies, NULL);
	u64map__free_all(p->memsets, NULL);
	u64map__free_all(p->colls, NULL);
	free(p);
}

void gt_agg__free(struct gt_agg *a)
{
	if (!a)
		return;
	u64map__free_all(a->procs, proc_free);
	free(a->view);
	free(a);
}

void gt_agg__drop(struct gt_agg *a, enum gt_drop why, uint64_t n)
{
	if ((unsigned int)why < GT_D__COUNT)
		a->drops[why] += n;
}

/* pid's record, made when there is room; NULL (counted by the caller) when not. */
static struct proc *proc_get(struct gt_agg *a, uint32_t pid, bool make)
{
	struct proc *p = u64map__get(a->procs, pid);

	if (p || !make)
		return p;
	if (u64map__size(a->procs) >= a->lim.max_procs)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->budget = UINT32_MAX;
	p->names = u64map__new();
	p->kernels = u64map__new();
	p->copies = u64map__new();
	p->memsets = u64map__new();
	p->colls = u64map__new();
	if (!p->names || !p->kernels || !p->copies || !p->memsets || !p->colls ||
	    u64map__put(a->procs, pid, p)) {
		proc_free(p);
		return NULL;
	}
	return p;
}

bool gt_agg__admit(struct gt_agg *a, uint32_t pid, uint32_t share)
{
	struct proc *p = proc_get(a, pid, false);

	if (!p)
		return true; /* its first: the feed makes it (or counts the table full) */
	if (p->budget == UINT32_MAX)
		p->budget = share;
	if (!p->budget) {
		a->drops[GT_D_FLOOD]++;
		return false;
	}
	p->budget--;
	return true;
}

void gt_agg__new_read(struct gt_agg *a)
{
	struct proc *p;
	uint64_t k;

	for (size_t it = 0; u64map__next(a->procs, &it, &k, (void **)&p);)
		p->budget = UINT32_MAX;
}

void gt_agg__name(struct gt_agg *a, uint32_t pid, const char *comm)
{
	struct proc *p = proc_get(a, pid, false);

	if (p && comm && *comm)
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
}

void gt_agg__exit(struct gt_agg *a, uint32_t pid, uint64_t ts_ns)
{
	struct proc *p = proc_get(a, pid, false);

	if (p && !p->exited) {
		p->exited = true;
		p->exit_ns = ts_ns;
	}
}

/* The row of key (hash) whose fields match (same(row, want)), made when new and under cap;
 * NULL when the caps say no. */
static void *row_get(struct u64map *m, uint32_t *nr, uint32_t cap, uint64_t key, const void *want, size_t size,
		     bool (*same)(const void *row, const void *want))
{
	for (int i = 0; i < PROBES; i++) {
		void *r = u64map__get(m, key + (uint64_t)i);

		if (r && same(r, want))
			return r;
		if (!r) {
			if (*nr >= cap || !(r = malloc(size)))
				return NULL;
			memcpy(r, want, size);
			if (u64map__put(m, key + (uint64_t)i, r)) {
				free(r);
				return NULL;
			}
			(*nr)++;
			return r;
		}
	}
	return NULL;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static bool kernel_same(const void *r, const void *w)
{
	const struct kernel_row *a = r, *b = w;

	return a->name_id == b->name_id && !memcmp(a->grid, b->grid, sizeof(a->grid)) &&
	       !memcmp(a->block, b->block, sizeof(a->block));
}

static bool copy_same(const void *r, const void *w)
{
	const struct copy_row *a = r, *b = w;

	return a->kind == b->kind && a->device == b->device && a->src_dev == b->src_dev && a->dst_dev == b->dst_dev;
}

static bool memset_same(const void *r, const void *w)
{
	return ((const struct memset_row *)r)->device == ((const struct memset_row *)w)->device;
}

static bool coll_same(const void *r, const void *w)
{
	const struct coll_row *a = r, *b = w;

	return a->comm_hash == b->comm_hash && a->count == b->count && a->rank == b->rank &&
	       a->nranks == b->nranks && a->fn == b->fn && a->type_size == b->type_size;
}

static bool bad_time(struct gt_agg *a, uint64_t start, uint64_t end)
{
	if (end < start || end - start > MAX_DURATION_NS) {
		a->drops[GT_D_BAD_TIME]++;
		return true;
	}
	return false;
}

static bool bad_device(uint32_t d)
{
	return d >= MAX_DEVICE && d != GPT_NO_DEVICE;
}

static void on_name(struct gt_agg *a, struct proc *p, const struct gpt_name *n, const unsigned char *bytes)
{
	char *s;

	if (!n->id || n->id > a->lim.max_names || p->nr_names >= a->lim.max_names ||
	    u64map__get(p->names, n->id)) {
		a->drops[GT_D_ROWS]++; /* an id out of bounds, a cap, or named twice: the first stays */
		return;
	}
	s = malloc(n->len + 1);
	if (!s)
		return;
	memcpy(s, bytes, n->len);
	s[n->len] = '\0';
	/* a name is text only up to its first NUL */
	if (u64map__put(p->names, n->id, s)) {
		free(s);
		return;
	}
	p->nr_names++;
}

static void on_kernel(struct gt_agg *a, struct proc *p, const struct gpt_kernel *k)
{
	struct kernel_row want = { .name_id = k->name_id }, *r;
	uint64_t key = mix(k->name_id, 0), d;

	if (bad_time(a, k->start, k->end))
		return;
	memcpy(want.grid, k->grid, sizeof(want.grid));
	memcpy(want.block, k->block, sizeof(want.block));
	for (int i = 0; i < 3; i++)
		key = mix(mix(key, k->grid[i]), k->block[i]);
	r = row_get(p->kernels, &p->nr_kernels, a->lim.max_rows, key, &want, sizeof(want), kernel_same);
	if (!r) {
		a->drops[GT_D_ROWS]++;
		return;
	}
	d = k->end - k->start;
	if (!r->count || d < r->min_ns)
		r->min_ns = d;
	if (d > r->max_ns)
		r->max_ns = d;
	r->count++;
	r->total_ns += d;
	if (a->on_event) {
		struct gt_event e = { .type = GPT_KERNEL, .name = u64map__get(p->names, k->name_id), .device = k->device,
				      .stream = k->stream };

		memcpy(e.grid, k->grid, sizeof(e.grid));
		memcpy(e.block, k->block, sizeof(e.block));
		emit(a, p, &e, k->start, k->end);
	}
}

static void on_copy(struct gt_agg *a, struct proc *p, const struct gpt_copy *c)
{
	struct copy_row want = { .kind = c->kind, .device = c->device, .src_dev = c->src_dev, .dst_dev = c->dst_dev },
			*r;
	uint64_t d;

	if (c->kind >= GPT_COPY__KINDS || bad_device(c->device) || bad_device(c->src_dev) || bad_device(c->dst_dev)) {
		a->drops[GT_D_MALFORMED]++;
		return;
	}
	if (bad_time(a, c->start, c->end))
		return;
	r = row_get(p->copies, &p->nr_copies, a->lim.max_rows,
		    mix(mix(mix(mix(0, c->kind), c->device), c->src_dev), c->dst_dev), &want, sizeof(want), copy_same);
	if (!r) {
		a->drops[GT_D_ROWS]++;
		return;
	}
	d = c->end - c->start;
	r->count++;
	r->bytes += c->bytes;
	r->total_ns += d;
	if (d && (double)c->bytes / (double)d > r->peak_gbps)
		r->peak_gbps = (double)c->bytes / (double)d;
	if (a->on_event) {
		struct gt_event e = { .type = GPT_COPY, .device = c->device, .stream = c->stream, .copy_kind = c->kind,
				      .src_dev = c->src_dev, .dst_dev = c->dst_dev, .bytes = c->bytes };

		emit(a, p, &e, c->start, c->end);
	}
}

static void on_memset(struct gt_agg *a, struct proc *p, const struct gpt_memset *m)
{
	struct memset_row want = { .device = m->device }, *r;

	if (bad_device(m->device)) {
		a->drops[GT_D_MALFORMED]++;
		return;
	}
	if (bad_time(a, m->start, m->end))
		return;
	r = row_get(p->memsets, &p->nr_memsets, a->lim.max_rows, m->device, &want, sizeof(want), memset_same);
	if (!r) {
		a->drops[GT_D_ROWS]++;
		return;
	}
	r->count++;
	r->bytes += m->bytes;
	r->total_ns += m->end - m->start;
	if (a->on_event) {
		struct gt_event e = { .type = GPT_MEMSET, .device = m->device, .stream = m->stream, .bytes = m->bytes };

		emit(a, p, &e, m->start, m->end);
	}
}

static void on_coll(struct gt_agg *a, struct proc *p, const struct gpt_coll *c)
{
	struct coll_row want = { .comm_hash = c->comm_hash, .count = c->count, .rank = c->rank, .nranks = c->nranks,
				 .fn = c->fn, .type_size = c->type_size },
			*r;
	uint64_t d;

	if (c->fn >= GPT_COLL__FNS || !c->nranks || c->nranks > 65536 || c->rank >= c->nranks ||
	    c->type_size > 16 || c->count > (1ull << 48)) {
		a->drops[GT_D_MALFORMED]++;
		return;
	}
	if (bad_time(a, c->start, c->end))
		return;
	r = row_get(p->colls, &p->nr_colls, a->lim.max_rows,
		    mix(mix(mix(mix(c->comm_hash, c->count), c->rank), c->fn), (uint64_t)c->nranks << 8 | c->type_size),
		    &want, sizeof(want), coll_same);
	if (!r) {
		a->drops[GT_D_ROWS]++;
		return;
	}
	d = c->end - c->start;
	if (!r->calls || d < r->min_ns)
		r->min_ns = d;
	r->calls++;
	r->gpu_calls += c->gpu_timed ? 1 : 0;
	r->total_ns += d;
}

static void on_stats(struct gt_agg *a, struct proc *p, const struct gpt_stats *s)
{
	struct gt_lib_snap *l;

	if (s->source != GPT_SRC_CUPTI && s->source != GPT_SRC_NCCL) {
		a->drops[GT_D_MALFORMED]++;
		return;
	}
	/* running totals: the largest seen (a datagram may come late) */
	l = &p->lib[s->source];
	l->seen = true;
#define KEEP_MAX(f) l->f = s->f > l->f ? s->f : l->f
	KEEP_MAX(records);
	KEEP_MAX(sent);
	KEEP_MAX(send_dropped);
	KEEP_MAX(src_dropped);
	KEEP_MAX(unknown);
#undef KEEP_MAX
}

/* The fixed size of a record type (0: a name, variable; SIZE_MAX: no such type). */
static size_t fixed_size(uint16_t type)
{
	switch (type) {
	case GPT_HELLO: return sizeof(struct gpt_hello);
	case GPT_NAME: return 0;
	case GPT_KERNEL: return sizeof(struct gpt_kernel);
	case GPT_COPY: return sizeof(struct gpt_copy);
	case GPT_MEMSET: return sizeof(struct gpt_memset);
	case GPT_COLL: return sizeof(struct gpt_coll);
	case GPT_STATS: return sizeof(struct gpt_stats);
	default: return SIZE_MAX;
	}
}

/* One record of rec.size bytes at b (checked against what is left by the caller). */
static void on_record(struct gt_agg *a, struct proc *p, const struct gpt_rec *h, const unsigned char *b)
{
	union {
		struct gpt_hello hello;
		struct gpt_name name;
		struct gpt_kernel kernel;
		struct gpt_copy copy;
		struct gpt_memset memset;
		struct gpt_coll coll;
		struct gpt_stats stats;
	} u;
	size_t want = fixed_size(h->type);

	if (want == SIZE_MAX || (want && h->size != want) ||
	    (!want && (h->size < sizeof(struct gpt_name) || h->size > sizeof(struct gpt_name) + GPT_NAME_MAX))) {
		a->drops[GT_D_MALFORMED]++;
		return;
	}
	memcpy(&u, b, want ? want : sizeof(struct gpt_name)); /* the buffer need not be aligned */
	p->records++;
	switch (h->type) {
	case GPT_HELLO:
		if (u.hello.source == GPT_SRC_CUPTI || u.hello.source == GPT_SRC_NCCL)
			p->lib[u.hello.source].seen = true;
		if (u.hello.source == GPT_SRC_CUPTI && !p->have_offset) {
			p->offset = (int64_t)(u.hello.mono_ns - u.hello.src_ts);
			p->have_offset = true;
		}
		break;
	case GPT_NAME:
		if (u.name.len != h->size - sizeof(struct gpt_name)) {
			a->drops[GT_D_MALFORMED]++;
			return;
		}
		on_name(a, p, &u.name, b + sizeof(struct gpt_name));
		break;
	case GPT_KERNEL:
		on_kernel(a, p, &u.kernel);
		break;
	case GPT_COPY:
		on_copy(a, p, &u.copy);
		break;
	case GPT_MEMSET:
		on_memset(a, p, &u.memset);
		break;
	case GPT_COLL:
		on_coll(a, p, &u.coll);
		break;
	case GPT_STATS:
		on_stats(a, p, &u.stats);
		break;
	}
}

void gt_agg__feed(struct gt_agg *a, uint32_t pid, const void *buf, size_t len)
{
	const unsigned char *b = buf;
	struct gpt_dgram d;
	struct proc *p;
	size_t off = sizeof(d);

	if (len > GPT_DGRAM_MAX) {
		a->drops[GT_D_OVERSIZED]++;
		return;
	}
	if (len < sizeof(d)) {
		a->drops[GT_D_MALFORMED]++;
		return;
	}
	memcpy(&d, b, sizeof(d));
	if (d.magic != GPT_MAGIC || d.version != GPT_VERSION) {
		a->drops[GT_D_MALFORMED]++;
		return;
	}
	p = proc_get(a, pid, true);
	if (!p) {
		a->drops[GT_D_PROCS]++;
		return;
	}
	p->datagrams++;
	for (uint16_t i = 0; i < d.nrec; i++) {
		struct gpt_rec h;

		if (len - off < sizeof(h)) {
			a->drops[GT_D_MALFORMED]++; /* fewer records than it says */
			return;
		}
		memcpy(&h, b + off, sizeof(h));
		if (h.size < sizeof(h) || h.size > len - off) {
			a->drops[GT_D_MALFORMED]++; /* the rest cannot be found: the datagram ends */
			return;
		}
		on_record(a, p, &h, b + off);
		off += h.size;
	}
	if (off != len)
		a->drops[GT_D_MALFORMED]++; /* bytes after the last record */
}

static bool grow(void **arr, size_t *cap, size_t need, size_t size)
{
	void *n;

	if (need <= *cap)
		return true;
	n = realloc(*arr, need * size);
	if (!n)
		return false;
	*arr = n;
	*cap = need;
	return true;
}

static int by_pid(const void *x, const void *y)
{
	const struct proc *a = *(const struct proc *const *)x, *b = *(const struct proc *const *)y;

	return a->pid < b->pid ? -1 : a->pid > b->pid;
}

static int kernel_by_time(const void *x, const void *y)
{
	const struct gt_kernel_snap *a = x, *b = y;

	if (a->total_ns != b->total_ns)
		return a->total_ns > b->total_ns ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->name_id < b->name_id ? -1 : a->name_id > b->name_id;
}

static void snap_proc(struct gt_snap_data *o, const struct proc *p)
{
	struct gt_proc_snap *s = &o->procs[o->nr_procs++];
	void *v;
	uint64_t k;

	memset(s, 0, sizeof(*s));
	s->pid = p->pid;
	memcpy(s->comm, p->comm, sizeof(s->comm));
	s->unnamed = !p->comm[0];
	s->exited = p->exited;
	s->exit_ns = p->exit_ns;
	s->datagrams = p->datagrams;
	s->records = p->records;
	memcpy(s->lib, p->lib, sizeof(s->lib));
	for (size_t it = 0; u64map__next(p->kernels, &it, &k, &v);) {
		const struct kernel_row *r = v;
		struct gt_kernel_snap *ks = &o->kernels[o->nr_kernels++];

		*ks = (struct gt_kernel_snap){ .pid = p->pid, .name = u64map__get(p->names, r->name_id),
					       .name_id = r->name_id, .count = r->count, .total_ns = r->total_ns,
					       .min_ns = r->min_ns, .max_ns = r->max_ns };
		memcpy(ks->grid, r->grid, sizeof(ks->grid));
		memcpy(ks->block, r->block, sizeof(ks->block));
		s->kernels += r->count;
		s->kernel_ns += r->total_ns;
		if (!ks->name)
			s->unnamed_kernels += r->count;
	}
	for (size_t it = 0; u64map__next(p->copies, &it, &k, &v);) {
		const struct copy_row *r = v;

		o->copies[o->nr_copies++] = (struct gt_copy_snap){
			.pid = p->pid, .kind = r->kind, .device = r->device, .src_dev = r->src_dev, .dst_dev = r->dst_dev,
			.count = r->count, .bytes = r->bytes, .total_ns = r->total_ns, .peak_gbps = r->peak_gbps };
		s->copies += r->count;
		s->copy_bytes += r->bytes;
		s->copy_ns += r->total_ns;
	}
	for (size_t it = 0; u64map__next(p->memsets, &it, &k, &v);) {
		const struct memset_row *r = v;

		o->memsets[o->nr_memsets++] = (struct gt_memset_snap){ .pid = p->pid, .device = r->device,
								     .count = r->count, .bytes = r->bytes,
								     .total_ns = r->total_ns };
		s->memsets += r->count;
	}
	for (size_t it = 0; u64map__next(p->colls, &it, &k, &v);) {
		const struct coll_row *r = v;
		struct gt_coll_snap *c = &o->colls[o->nr_colls++];
		double f = gt_busbw_factor(r->fn, r->nranks);

		*c = (struct gt_coll_snap){ .pid = p->pid, .comm_hash = r->comm_hash, .rank = r->rank,
					    .nranks = r->nranks, .fn = r->fn, .type_size = r->type_size,
					    .count = r->count, .calls = r->calls, .gpu_calls = r->gpu_calls,
					    .total_ns = r->total_ns, .min_ns = r->min_ns };
		c->size = gt_coll_size(r->fn, r->count, r->type_size, r->nranks);
		if (c->size && r->total_ns) {
			/* bytes per ns are GB/s (1e9 bytes a second, nccl-tests' unit) */
			c->algbw_gbps = (double)c->size * (double)r->calls / (double)r->total_ns;
			c->busbw_gbps = c->algbw_gbps * f;
		}
		if (c->size && r->min_ns)
			c->best_busbw_gbps = (double)c->size / (double)r->min_ns * f;
		s->colls += r->calls;
	}
}

static int coll_order(const void *x, const void *y)
{
	const struct gt_coll_snap *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->comm_hash != b->comm_hash)
		return a->comm_hash < b->comm_hash ? -1 : 1;
	if (a->fn != b->fn)
		return a->fn < b->fn ? -1 : 1;
	return a->size < b->size ? -1 : a->size > b->size;
}

static int copy_order(const void *x, const void *y)
{
	const struct gt_copy_snap *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->src_dev != b->src_dev)
		return a->src_dev < b->src_dev ? -1 : 1;
	if (a->dst_dev != b->dst_dev)
		return a->dst_dev < b->dst_dev ? -1 : 1;
	return a->device < b->device ? -1 : a->device > b->device;
}

static int memset_order(const void *x, const void *y)
{
	const struct gt_memset_snap *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->device < b->device ? -1 : a->device > b->device;
}

int gt_agg__snapshot(struct gt_agg *a, uint32_t pid, struct gt_snap_data *o)
{
	size_t n = 0, nk = 0, nc = 0, nm = 0, nl = 0;
	struct proc **v;

	if (!u64map__sorted(a->procs, &a->view, &a->view_n, by_pid) && u64map__size(a->procs))
		return -ENOMEM;
	v = (struct proc **)a->view;
	for (size_t i = 0; i < a->view_n; i++) {
		if (pid && v[i]->pid != pid)
			continue;
		n++;
		nk += v[i]->nr_kernels;
		nc += v[i]->nr_copies;
		nm += v[i]->nr_memsets;
		nl += v[i]->nr_colls;
	}
	if (!grow((void **)&o->procs, &o->cap_procs, n + 1, sizeof(*o->procs)) ||
	    !grow((void **)&o->kernels, &o->cap_kernels, nk + 1, sizeof(*o->kernels)) ||
	    !grow((void **)&o->copies, &o->cap_copies, nc + 1, sizeof(*o->copies)) ||
	    !grow((void **)&o->memsets, &o->cap_memsets, nm + 1, sizeof(*o->memsets)) ||
	    !grow((void **)&o->colls, &o->cap_colls, nl + 1, sizeof(*o->colls)))
		return -ENOMEM;
	o->nr_procs = o->nr_kernels = o->nr_copies = o->nr_memsets = o->nr_colls = 0;
	for (size_t i = 0; i < a->view_n; i++)
		if (!pid || v[i]->pid == pid)
			snap_proc(o, v[i]);
	qsort(o->kernels, o->nr_kernels, sizeof(*o->kernels), kernel_by_time);
	qsort(o->copies, o->nr_copies, sizeof(*o->copies), copy_order);
	qsort(o->memsets, o->nr_memsets, sizeof(*o->memsets), memset_order);
	qsort(o->colls, o->nr_colls, sizeof(*o->colls), coll_order);
	memcpy(o->drops, a->drops, sizeof(o->drops));
	return 0;
}

void gt_snap_data__clear(struct gt_snap_data *d)
{
	free(d->procs);
	free(d->kernels);
	free(d->copies);
	free(d->memsets);
	free(d->colls);
	memset(d, 0, sizeof(*d));
}

struct reap_ctx {
	uint64_t cutoff;
	uint32_t keep;
};

static bool doomed(void *ctx, uint64_t key, void *val)
{
	const struct reap_ctx *c = ctx;
	const struct proc *p = val;

	(void)key;
	return p->exited && p->pid != c->keep && (c->cutoff == UINT64_MAX || p->exit_ns < c->cutoff);
}

void gt_agg__reap(struct gt_agg *a, uint64_t cutoff_ns, uint32_t keep_pid)
{
	struct reap_ctx c = { cutoff_ns, keep_pid };

	u64map__delete_if(a->procs, doomed, &c, proc_free);
}
