/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "lib/cuctx.h"
#include "modes/nccl/nccl.h"
#include "lib/proctab.h"
#include "lib/u64map.h"
#include "lib/util.h"

_Static_assert(NCCL_SYNC_STREAM == (int)CU_SYNC_STREAM && NCCL_SYNC_CONTEXT == (int)CU_SYNC_CONTEXT &&
		       NCCL_SYNC_EVENT == (int)CU_SYNC_EVENT && NCCL_SYNC_STREAM_QUERY == (int)CU_SYNC_STREAM_QUERY &&
		       NCCL_SYNC_EVENT_QUERY == (int)CU_SYNC_EVENT_QUERY && NCCL_SYNC_ELAPSED == (int)CU_SYNC_ELAPSED &&
		       NCCL_SYNC__COUNT == (int)CU_SYNC__COUNT,
	       "a call's completion is counted by the kind of cuctx's synchronization");

/* One collective of a communicator being matched across its ranks: its number, the first
 * and last entries so far, the ranks that entered it. */
struct mslot {
	uint64_t seq, first_ns, last_ns, entered;
	int n, last_rank;
	bool done; /* every local rank entered it: a further entry is a duplicate */
};

/* A communicator matched across its ranks on this node (the processes share it). */
struct nmatch {
	struct nccl_straggle s; /* the statistics; the wait fields are made by the snapshot */
	struct mslot ring[NCCL_MATCH_RING];
	int refs;               /* communicators (ranks) that point at it */
	struct nccl_agg *owner;
};

enum { MATCH_UNTRIED, MATCH_ON, MATCH_REFUSED };

struct ncomm {
	struct nccl_comm_snap s; /* the scalars; the arrays are made by the snapshot */
	const uint64_t *clock;   /* its process's last driver call (the completion time) */
	struct nmatch *m;        /* its communicator's matching, when on */
	int match;               /* MATCH_* */
	struct u64map *colls;    /* fn << 8 | (dtype + 1) -> struct nccl_coll */
	struct u64map *p2p;      /* peer << 1 | send -> struct nccl_p2p */
	struct u64map *times;    /* fn << 8 | slot -> struct nccl_time */
	int splits;              /* splits and shrinks made from it so far */
	int split_seq;           /* made by its parent's split number split_seq */
	int parent_rank, parent_nranks;
	uint64_t p2p_row[NCCL_MATRIX_MAX], ring_row[NCCL_MATRIX_MAX];
	/* entries into collectives while its shape was not yet known (a split's, until every
	 * rank's split is seen: another rank may enter before the last split's record comes),
	 * matched once it joins; [NCCL_MATCH_RING], made on the first such entry */
	uint64_t *early;
	int nr_early;
};

struct nproc {
	struct gp_proc_head h;
	struct cuctx *cu;         /* contexts, events, the calls that wait for a synchronization */
	struct u64map *group;     /* tid -> (int *) its ncclGroupStart depth */
	struct u64map *by_handle; /* communicator handle -> its newest struct ncomm */
	struct ncomm **comms;
	size_t nr_comms;
	uint64_t groups, bad[NCCL_BAD__COUNT], failed, nested, other, calls;
	uint64_t clock;           /* ts_ns of its last driver call seen */
	int matches_opened;       /* match tables it made (NCCL_MATCH_SHARE) */
	int splits_open;          /* split tables it made still waiting for ranks (NCCL_MATCH_SHARE) */
	int init_alls;            /* ncclCommInitAll calls followed */
};

struct nccl_agg {
	struct proctab *procs; /* struct nproc; first (proctab__new_owner) */
	uint64_t comm_table_full;
	struct u64map *matches; /* comm_id -> struct nmatch */
	struct u64map *splits;  /* (parent comm_id, split number) -> struct nsplit */
	uint64_t match_full, match_share, match_too_large, match_mismatch;
};

/* One rank's ncclCommSplit call (NCCL_SPLIT_NOCOLOR too: it holds a place in the order). */
struct nsplit_rank {
	uint32_t pid;
	uint64_t handle; /* the new communicator; 0: in none, or not kept */
	int color, key;
	bool in;
};

/* A split of a communicator whose ranks are on this node, until every rank's call is seen:
 * then NCCL's rule gives each new communicator its shape (the ranks of one color, ordered
 * by key, then by rank in the parent), for a program that never asks it (PyTorch's
 * new_group). Bounded as the match tables: NCCL_MATCH_MAX waiting, NCCL_MATCH_SHARE opened
 * by one process, NCCL_MATCH_RANKS ranks. */
struct nsplit {
	uint64_t parent_id;
	int seq, nranks, seen;
	uint32_t opener;
	struct nsplit_rank r[]; /* [nranks], by rank in the parent */
};
_Static_assert(offsetof(struct nccl_agg, procs) == 0, "proctab__new_owner: the table first");

static const struct {
	const char *fn, *op;
} fns[GP_NCCL__COUNT] = {
#define GP_NCCL_FN(name) [GP_NCCL_##name] = { "nccl" #name, NULL },
#define GP_NCCL_DATA(name, op) [GP_NCCL_##name] = { "nccl" #name, #op },
#include "nccl_fns.def"
};

static const char *const dtype_names[NCCL_NTYPES] = {
	"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64",
	"bfloat16", "float8e4m3", "float8e5m2",
};
static const unsigned int dtype_sizes[NCCL_NTYPES] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };

const char *nccl_fn_name(int fn)
{
	return fn > 0 && fn < GP_NCCL__COUNT && fns[fn].fn ? fns[fn].fn : "unknown";
}

const char *nccl_op_name(int fn)
{
	return fn > 0 && fn < GP_NCCL__COUNT && fns[fn].op ? fns[fn].op : nccl_fn_name(fn);
}

bool nccl_fn_is_data(int fn)
{
	return fn > 0 && fn < GP_NCCL__COUNT && fns[fn].op;
}

const char *nccl_dtype_name(int dtype)
{
	return dtype >= 0 && dtype < NCCL_NTYPES ? dtype_names[dtype] : "unknown";
}

unsigned int nccl_dtype_size(int dtype)
{
	return dtype >= 0 && dtype < NCCL_NTYPES ? dtype_sizes[dtype] : 0;
}

const char *nccl_sync_name(enum nccl_sync k)
{
	return cu_sync_name((enum cu_sync)k);
}

const char *nccl_bad_name(enum nccl_bad b)
{
	static const char *const n[NCCL_BAD__COUNT] = { "null_comm", "destroyed_comm", "unknown_dtype" };

	return b < NCCL_BAD__COUNT ? n[b] : "?";
}

const char *nccl_shape_name(enum nccl_shape s)
{
	static const char *const n[] = { "unknown", "init", "query", "split", "shrink" };

	return s <= NCCL_SHAPE_SHRINK ? n[s] : "?";
}

uint64_t nccl_comm_id(const uint8_t *id, size_t len)
{
	return gp_fnv1a(id, len, GP_FNV1A_INIT);
}

/* ---- matching collectives across the ranks of a communicator ---- */

static void match_put(struct nmatch *m)
{
	if (!m || --m->refs > 0)
		return;
	u64map__del(m->owner->matches, m->s.id);
	free(m);
}

/* Every local rank entered sl: its skew (first to last entry) and the last rank. */
static void match_finish(struct nmatch *m, struct mslot *sl)
{
	uint64_t skew = sl->last_ns - sl->first_ns;
	int r = sl->last_rank;

	m->s.matched++;
	m->s.skew_sum_ns += skew;
	m->s.last_skew_ns = skew;
	if (skew > m->s.skew_max_ns)
		m->s.skew_max_ns = skew;
	m->s.skew_hist[gp_log2_slot(skew / 1000, NCCL_SKEW_SLOTS)]++;
	m->s.last_straggler = r;
	if (r >= 0 && r < NCCL_MATCH_RANKS) {
		m->s.last_to_enter[r]++;
		m->s.lag_ns[r] += skew;
		if (skew > m->s.lag_max_ns[r])
			m->s.lag_max_ns[r] = skew;
	}
	sl->done = true;
}

/* sl leaves the ring for a later collective: matched when every local rank of a
 * communicator with ranks elsewhere entered it, else counted. */
static void match_evict(struct nmatch *m, struct mslot *sl)
{
	int local = __builtin_popcountll(m->s.local);

	if (sl->done || local < 2)
		return;
	if ((sl->entered & m->s.local) == m->s.local && sl->n >= 2)
		match_finish(m, sl);
	else
		m->s.evicted++;
}

/* Rank r entered its collective number seq at ts. */
static void match_enter(struct nmatch *m, int r, uint64_t seq, uint64_t ts)
{
	struct mslot *sl = &m->ring[seq % NCCL_MATCH_RING];
	uint64_t bit = 1ULL << r;

	if ((sl->n || sl->done) && sl->seq != seq) {
		if (sl->seq > seq) {
			m->s.late++;
			return;
		}
		match_evict(m, sl);
		sl->n = 0;
	}
	if (!sl->n && (!sl->done || sl->seq != seq))
		*sl = (struct mslot){ .seq = seq, .first_ns = ts, .last_ns = ts, .last_rank = r };
	if (sl->done || (sl->entered & bit)) {
		m->s.duplicate++;
		return;
	}
	sl->entered |= bit;
	sl->n++;
	if (ts < sl->first_ns)
		sl->first_ns = ts;
	if (ts >= sl->last_ns) {
		sl->last_ns = ts;
		sl->last_rank = r;
	}
	if (sl->n == m->s.nranks)
		match_finish(m, sl);
}

/* c's rank joins the matching of its communicator, once its id and shape are known;
 * bounded: NCCL_MATCH_MAX tables, NCCL_MATCH_SHARE made by one process. */
/* Whether a new table fits: the node's (NCCL_MATCH_MAX) and the process's share of them
 * (NCCL_MATCH_SHARE, `opened` its tables now); a refusal is counted. */
static bool room_for(struct nccl_agg *a, struct u64map *tables, int opened)
{
	if (u64map__size(tables) >= NCCL_MATCH_MAX) {
		a->match_full++;
		return false;
	}
	if (opened >= NCCL_MATCH_SHARE) {
		a->match_share++;
		return false;
	}
	return true;
}

static void match_join(struct nccl_agg *a, struct nproc *p, struct ncomm *c)
{
	int n = c->s.nranks, r = c->s.rank;
	struct nmatch *m;

	if (c->match != MATCH_UNTRIED || !c->s.id_known || n < 2 || r < 0 || r >= n)
		return;
	c->match = MATCH_REFUSED;
	if (n > NCCL_MATCH_RANKS) {
		a->match_too_large++;
		return;
	}
	m = u64map__get(a->matches, c->s.id);
	if (!m) {
		if (!room_for(a, a->matches, p->matches_opened))
			return;
		m = calloc(1, sizeof(*m));
		if (!m || u64map__put(a->matches, c->s.id, m)) {
			free(m);
			return;
		}
		m->owner = a;
		m->s.id = c->s.id;
		m->s.nranks = n;
		m->s.last_straggler = -1;
		p->matches_opened++;
	} else if (m->s.nranks != n) {
		a->match_mismatch++;
		return;
	}
	m->s.local |= 1ULL << r;
	m->s.pid[r] = p->h.pid;
	m->refs++;
	c->m = m;
	c->match = MATCH_ON;
	for (int i = 0; c->early && i < c->nr_early; i++)
		match_enter(m, r, (uint64_t)i, c->early[i]);
	free(c->early);
	c->early = NULL;
}

/* ---- processes ---- */

static void free_comm(void *v)
{
	struct ncomm *c = v;

	if (!c)
		return;
	match_put(c->m);
	free(c->early);
	u64map__free_all(c->colls, NULL);
	u64map__free_all(c->p2p, NULL);
	u64map__free_all(c->times, NULL);
	free(c);
}

/* A synchronization completed a call (key[0] its struct nccl_time, key[1] its
 * communicator: no statistic, its hang figures). */
static void call_done(const struct cu_work *w, enum cu_sync kind)
{
	struct nccl_time *t = w->key[0];
	struct ncomm *c = w->key[1];

	if (c) {
		c->s.completed++;
		c->s.last_done_ns = *c->clock;
	}
	t->calls++;
	t->size += w->bytes;
	t->by[kind]++;
}

static void call_charge(int slot, void *key, uint64_t ns)
{
	if (slot == 0)
		((struct nccl_time *)key)->window_ns += ns;
}

static void call_batch(int slot, void *key, uint64_t bytes, uint64_t ns, enum cu_sync kind)
{
	struct nccl_time *t = key;

	if (slot != 0)
		return;
	t->size_by[kind] += bytes;
	t->ns_by[kind] += ns;
	if (ns)
		t->window_hist[gp_log2_slot(bytes * 1000 / ns, NCCL_SIZE_SLOTS)]++;
}

static void call_timed(int slot, void *key, uint64_t bytes, uint64_t gpu_ns)
{
	struct nccl_time *t = key;

	if (slot != 0)
		return;
	t->event_size += bytes;
	t->event_ns += gpu_ns;
	t->event_windows++;
}

static const struct cu_work_ops call_ops = {
	.done = call_done, .charge = call_charge, .batch = call_batch, .timed = call_timed,
};

static int init_proc(void *v, uint32_t pid)
{
	struct nproc *p = v;

	p->h.pid = pid;
	p->cu = cuctx__new(&call_ops);
	p->group = u64map__new();
	p->by_handle = u64map__new();
	p->comms = calloc(NCCL_MAX_COMMS, sizeof(*p->comms));
	return p->cu && p->group && p->by_handle && p->comms ? 0 : -ENOMEM;
}

static void fini_proc(void *ctx, void *v)
{
	struct nproc *p = v;

	(void)ctx;
	cuctx__free(p->cu);
	u64map__free_all(p->group, NULL);
	u64map__free(p->by_handle);
	for (size_t i = 0; i < p->nr_comms; i++)
		free_comm(p->comms[i]);
	free(p->comms);
}

static const struct proctab_ops proc_ops = { sizeof(struct nproc), init_proc, fini_proc };

struct nccl_agg *nccl_agg__new(void)
{
	struct nccl_agg *a = proctab__new_owner(sizeof(struct nccl_agg), &proc_ops);

	if (a && (!(a->matches = u64map__new()) || !(a->splits = u64map__new()))) {
		u64map__free(a->matches);
		proctab__free_owner(a);
		return NULL;
	}
	return a;
}

void nccl_agg__free(struct nccl_agg *a)
{
	struct u64map *m;

	if (!a)
		return;
	m = a->matches;
	u64map__free_all(a->splits, free);
	proctab__free_owner(a); /* the communicators drop their matches */
	u64map__free_all(m, free);
}

static struct nproc *get_proc(struct nccl_agg *a, uint32_t pid, const char *comm)
{
	return proctab__get_named(a->procs, pid, comm);
}

/* The GPU of the thread's current context, -1 when unknown. */
static int thread_gpu(struct nproc *p, uint64_t tid)
{
	return cuctx__thread_gpu(p->cu, tid);
}

/* ---- communicators ---- */

static struct ncomm *comm_new(struct nccl_agg *a, struct nproc *p, uint64_t handle)
{
	struct ncomm *c;

	if (p->nr_comms == NCCL_MAX_COMMS) {
		a->comm_table_full++;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->colls = u64map__new();
	c->p2p = u64map__new();
	c->times = u64map__new();
	if (!c->colls || !c->p2p || !c->times || u64map__put(p->by_handle, handle, c)) {
		free_comm(c);
		return NULL;
	}
	c->s.handle = handle;
	c->clock = &p->clock;
	c->s.nranks = c->s.rank = c->s.device = -1;
	c->s.color = c->s.key = -1;
	c->parent_rank = c->parent_nranks = -1;
	p->comms[p->nr_comms++] = c;
	return c;
}

/* The communicator a call names: the newest made with that handle, or one made before
 * gpuprobe saw it (its id unknown). */
static struct ncomm *comm_of(struct nccl_agg *a, struct nproc *p, uint64_t handle)
{
	struct ncomm *c = u64map__get(p->by_handle, handle);

	return c ? c : comm_new(a, p, handle);
}

static void match_join(struct nccl_agg *a, struct nproc *p, struct ncomm *c);

/* ncclCommInitAll(comms, ndev, devlist): ndev ranks in one process, comms[i] rank i. The
 * record carries the first NCCL_INIT_ALL_MAX handles in id[] (8 bytes each); their
 * comm_id: the process and the call's number there (no unique id is shared). */
static void on_init_all(struct nccl_agg *a, struct nproc *p, const struct gp_nccl_event *e)
{
	size_t n = e->id_len / 8;
	uint8_t key[16];
	uint64_t id;
	int seq;

	if (e->ret || e->nranks < 1 || !n || n > NCCL_INIT_ALL_MAX || n > (size_t)e->nranks) {
		p->other++; /* its communicators are not followed */
		return;
	}
	seq = p->init_alls++;
	memcpy(key, &p->h.pid, 4);
	memcpy(key + 4, &seq, 4);
	memcpy(key + 8, "InitAll", 8);
	id = nccl_comm_id(key, sizeof(key));
	for (size_t i = 0; i < n; i++) {
		uint64_t h;
		struct ncomm *c;

		memcpy(&h, e->id + 8 * i, 8);
		if (!h || !(c = comm_new(a, p, h)))
			continue;
		c->s.made_by = GP_NCCL_CommInitAll;
		c->s.id_known = true;
		c->s.id = id;
		c->s.nranks = e->nranks;
		c->s.rank = (int)i;
		c->s.shape = NCCL_SHAPE_INIT;
		match_join(a, p, c);
	}
	if (n < (size_t)e->nranks)
		p->other++; /* more than the record carries: the rest not followed */
}

static void on_init(struct nccl_agg *a, struct nproc *p, const struct gp_nccl_event *e)
{
	struct ncomm *c;

	if (e->fn == GP_NCCL_CommInitAll) {
		on_init_all(a, p, e);
		return;
	}
	if (e->ret || !e->newcomm || !(c = comm_new(a, p, e->newcomm)))
		return;
	c->s.made_by = (int)e->fn;
	c->s.id_known = e->id_len == GP_NCCL_ID_BYTES;
	c->s.id = c->s.id_known ? nccl_comm_id(e->id, GP_NCCL_ID_BYTES) : 0;
	c->s.nranks = e->nranks;
	c->s.rank = e->rank;
	c->s.shape = NCCL_SHAPE_INIT;
	c->s.device = thread_gpu(p, e->tid);
	match_join(a, p, c);
}

/* A split's or shrink's comm_id: every rank of the parent makes its splits in one order,
 * so (parent, sequence number, color or excluded ranks) is the same on each. */
static uint64_t child_id(uint64_t parent, int kind, int seq, const void *what, size_t len)
{
	uint8_t buf[16 + GP_NCCL_ID_BYTES];

	memcpy(buf, &parent, 8);
	memcpy(buf + 8, &seq, 4);
	memcpy(buf + 12, &kind, 4);
	memcpy(buf + 16, what, len);
	return nccl_comm_id(buf, 16 + len);
}

static uint64_t split_key(uint64_t parent_id, int seq)
{
	return child_id(parent_id, 3, seq, "", 0);
}

static void split_free(struct nccl_agg *a, uint64_t key, struct nsplit *sp)
{
	struct nproc *o = proctab__live(a->procs, sp->opener);

	if (o && o->splits_open > 0)
		o->splits_open--;
	u64map__del(a->splits, key);
	free(sp);
}

/* Rank r of the parent made its split number seq (newcomm its new communicator, 0: none):
 * its place in the split's table, opened by the first rank seen. */
static void split_join(struct nccl_agg *a, struct nproc *p, const struct ncomm *parent, int seq,
		       const struct gp_nccl_event *e, uint64_t newcomm)
{
	int n = parent->s.nranks, r = parent->s.rank;
	uint64_t key;
	struct nsplit *sp;

	/* a parent of unknown shape: its splits' shapes stay unknown (counted at the snapshot) */
	if (!parent->s.id_known || n < 2 || r < 0 || r >= n)
		return;
	if (n > NCCL_MATCH_RANKS) {
		a->match_too_large++;
		return;
	}
	key = split_key(parent->s.id, seq);
	sp = u64map__get(a->splits, key);
	if (!sp) {
		if (!room_for(a, a->splits, p->splits_open))
			return;
		sp = calloc(1, sizeof(*sp) + (size_t)n * sizeof(sp->r[0]));
		if (!sp || u64map__put(a->splits, key, sp)) {
			free(sp);
			return;
		}
		sp->parent_id = parent->s.id;
		sp->seq = seq;
		sp->nranks = n;
		sp->opener = p->h.pid;
		p->splits_open++;
	} else if (sp->nranks != n || sp->r[r].in) {
		a->match_mismatch++; /* another size, or a rank claimed twice */
		return;
	}
	sp->r[r] = (struct nsplit_rank){ .pid = p->h.pid, .handle = newcomm, .color = e->color, .key = e->key, .in = true };
	sp->seen++;
}

/* Every rank of the parent made the split: each new communicator's shape by NCCL's rule,
 * and its rank joins the matching. The communicators are found again by process and
 * handle (one may have exited, or be another by now: checked). */
static void split_done(struct nccl_agg *a, uint64_t parent_id, int seq)
{
	uint64_t key = split_key(parent_id, seq);
	struct nsplit *sp = u64map__get(a->splits, key);

	if (!sp || sp->seen < sp->nranks)
		return;
	for (int i = 0; i < sp->nranks; i++) {
		const struct nsplit_rank *me = &sp->r[i];
		struct nproc *q;
		struct ncomm *c;
		int size = 0, rank = 0;

		if (!me->handle || me->color < 0 || !(q = proctab__live(a->procs, me->pid)) ||
		    !(c = u64map__get(q->by_handle, me->handle)))
			continue;
		if (c->s.made_by != GP_NCCL_CommSplit || c->split_seq != seq || !c->s.parent_known ||
		    c->s.parent_id != parent_id || (c->s.nranks >= 0 && c->s.rank >= 0))
			continue;
		for (int j = 0; j < sp->nranks; j++) {
			if (sp->r[j].color != me->color)
				continue;
			size++;
			rank += sp->r[j].key < me->key || (sp->r[j].key == me->key && j < i);
		}
		c->s.nranks = size;
		c->s.rank = rank;
		c->s.shape = NCCL_SHAPE_SPLIT;
		match_join(a, q, c);
	}
	split_free(a, key, sp);
}

static void on_split(struct nccl_agg *a, struct nproc *p, const struct gp_nccl_event *e)
{
	struct ncomm *parent = e->comm ? comm_of(a, p, e->comm) : NULL, *c;
	int seq;

	if (e->ret || !parent)
		return;
	seq = parent->splits++;
	c = e->newcomm ? comm_new(a, p, e->newcomm) : NULL;
	if (e->fn == GP_NCCL_CommSplit) /* NCCL_SPLIT_NOCOLOR, or not kept: still a place in the order */
		split_join(a, p, parent, seq, e, c ? e->newcomm : 0);
	if (!c) { /* NCCL_SPLIT_NOCOLOR: this rank is in none */
		if (e->fn == GP_NCCL_CommSplit)
			split_done(a, parent->s.id, seq);
		return;
	}
	c->s.made_by = (int)e->fn;
	c->split_seq = seq;
	c->parent_rank = parent->s.rank;
	c->parent_nranks = parent->s.nranks;
	c->s.device = parent->s.device >= 0 ? parent->s.device : thread_gpu(p, e->tid);
	c->s.parent_known = parent->s.id_known;
	c->s.parent_id = parent->s.id;
	c->s.color = e->color;
	c->s.key = e->key;
	if (e->fn == GP_NCCL_CommSplit) {
		c->s.id_known = parent->s.id_known;
		c->s.id = child_id(parent->s.id, 1, seq, &e->color, sizeof(e->color));
		split_done(a, parent->s.id, seq);
		return;
	}
	/* shrink: the excluded ranks */
	c->s.id_known = parent->s.id_known && e->id_len >= 4 * e->count;
	c->s.id = child_id(parent->s.id, 2, seq, e->id, e->id_len);
	if (parent->s.nranks > 0 && parent->s.rank >= 0 && c->s.id_known) {
		const int32_t *ex = (const int32_t *)e->id;
		int below = 0;

		for (uint64_t i = 0; i < e->count; i++)
			below += ex[i] < parent->s.rank;
		c->s.nranks = parent->s.nranks - (int)e->count;
		c->s.rank = parent->s.rank - below;
		c->s.shape = NCCL_SHAPE_SHRINK;
	}
}

static void on_query(struct nccl_agg *a, struct nproc *p, const struct gp_nccl_event *e)
{
	struct ncomm *c;

	if (e->ret || !e->comm || !(c = comm_of(a, p, e->comm)))
		return;
	if (e->fn == GP_NCCL_CommCuDevice) {
		c->s.device = e->out;
		return;
	}
	if (e->fn == GP_NCCL_CommCount)
		c->s.nranks = e->out;
	else
		c->s.rank = e->out;
	if (c->s.shape != NCCL_SHAPE_INIT)
		c->s.shape = NCCL_SHAPE_QUERY;
	match_join(a, p, c);
}

static void on_end(struct nccl_agg *a, struct nproc *p, const struct gp_nccl_event *e)
{
	struct ncomm *c;

	if (e->ret || !e->comm || !(c = comm_of(a, p, e->comm)))
		return;
	if (e->fn != GP_NCCL_CommFinalize)
		c->s.destroyed = true;
}

static void on_group(struct nproc *p, const struct gp_nccl_event *e)
{
	int *depth = u64map__get_new(p->group, e->tid, sizeof(*depth));

	if (e->ret || !depth)
		return;
	if (e->fn == GP_NCCL_GroupStart) {
		(*depth)++;
	} else if (*depth > 0 && --*depth == 0) {
		p->groups++;
	}
}

/* ---- collectives and point-to-point calls ---- */

/* nccl-tests' size of one call (what algbw divides): the per-rank buffer for AllReduce,
 * Broadcast and Reduce; all ranks' data for AllGather, ReduceScatter, AlltoAll, Gather and
 * Scatter (count is per rank there). */
static uint64_t tests_size(int fn, uint64_t bytes, int n)
{
	switch (fn) {
	case GP_NCCL_AllGather:
	case GP_NCCL_ReduceScatter:
	case GP_NCCL_AlltoAll:
	case GP_NCCL_Gather:
	case GP_NCCL_Scatter:
		return n > 0 ? bytes * (uint64_t)n : bytes;
	default:
		return bytes;
	}
}

/* nccl-tests' busbw / algbw; 0 when nranks is unknown. */
static double bus_factor(int fn, int n)
{
	if (n <= 0)
		return 0;
	switch (fn) {
	case GP_NCCL_AllReduce:
		return 2.0 * (n - 1) / n;
	case GP_NCCL_AllGather:
	case GP_NCCL_ReduceScatter:
	case GP_NCCL_AlltoAll:
	case GP_NCCL_Gather:
	case GP_NCCL_Scatter:
		return (double)(n - 1) / n;
	default: /* Broadcast, Reduce, Send, Recv */
		return 1.0;
	}
}

/*
 * The bytes this rank sends to each rank for one call (its row of the matrices): sends are
 * measured (ncclSend's count); for collectives the ring in rank order NCCL's RING
 * algorithm implies (rank r sends to r + 1) is an inference — NCCL orders its rings by
 * topology, may run TREE or other algorithms, and several channels at once.
 */
static void attribute(struct ncomm *c, int fn, int root, uint64_t b)
{
	int n = c->s.nranks, r = c->s.rank, next;

	if (n < 1 || n > NCCL_MATRIX_MAX || r < 0 || r >= n) {
		c->s.unattributed_bytes += b;
		return;
	}
	next = (r + 1) % n;
	if (n == 1)
		return;
	switch (fn) {
	case GP_NCCL_Send:
		if (root >= 0 && root < n)
			c->p2p_row[root] += b;
		break;
	case GP_NCCL_AllReduce:
		c->ring_row[next] += 2 * (uint64_t)(n - 1) * b / (uint64_t)n;
		break;
	case GP_NCCL_AllGather:
	case GP_NCCL_ReduceScatter:
		c->ring_row[next] += (uint64_t)(n - 1) * b;
		break;
	case GP_NCCL_Broadcast:
	case GP_NCCL_Bcast: /* a chain from the root: the rank before it sends nothing */
		if (next != root)
			c->ring_row[next] += b;
		break;
	case GP_NCCL_Reduce: /* a chain ending at the root */
		if (r != root)
			c->ring_row[next] += b;
		break;
	case GP_NCCL_AlltoAll: /* every rank sends count to every other: no ring */
		for (int i = 0; i < n; i++)
			if (i != r)
				c->ring_row[i] += b;
		break;
	case GP_NCCL_Gather:
		if (r != root && root >= 0 && root < n)
			c->ring_row[root] += b;
		break;
	case GP_NCCL_Scatter:
		for (int i = 0; r == root && i < n; i++)
			if (i != r)
				c->ring_row[i] += b;
		break;
	default:
		break;
	}
}

static void count_data(struct ncomm *c, const struct gp_nccl_event *e, uint64_t bytes)
{
	int dtype = nccl_dtype_size(e->dtype) ? e->dtype : -1;

	if (e->fn == GP_NCCL_Send || e->fn == GP_NCCL_Recv) {
		bool send = e->fn == GP_NCCL_Send;
		struct nccl_p2p *x = u64map__get_new(c->p2p, (uint64_t)(uint32_t)e->peer << 1 | send, sizeof(*x));

		if (!x)
			return;
		x->peer = e->peer;
		x->send = send;
		x->calls++;
		x->bytes += bytes;
		x->api_ns += e->dur_ns;
		return;
	}
	struct nccl_coll *x = u64map__get_new(c->colls, (uint64_t)e->fn << 8 | (uint64_t)(dtype + 1), sizeof(*x));

	if (!x)
		return;
	x->fn = (int)e->fn;
	x->dtype = dtype;
	x->calls++;
	x->bytes += bytes;
	x->api_ns += e->dur_ns;
}

/* The call runs on its stream until a synchronization covers it. */
static void add_pending(struct nproc *p, struct ncomm *c, const struct gp_nccl_event *e, uint64_t bytes)
{
	uint64_t size = tests_size((int)e->fn, bytes, c->s.nranks);
	unsigned int slot = gp_log2_slot(size, NCCL_SIZE_SLOTS);
	struct nccl_time *t = u64map__get_new(c->times, (uint64_t)e->fn << 8 | slot, sizeof(*t));

	if (!t)
		return;
	t->fn = (int)e->fn;
	t->slot = (int)slot;
	if (!t->bus_factor)
		t->bus_factor = bus_factor((int)e->fn, c->s.nranks);
	/* NCCL launches on the stream it is given; 0 is the legacy default stream */
	if (cuctx__submit(p->cu, &(struct cu_work){
		    .stream = cu_stream_key(false, e->stream, e->tid), .ts_ns = e->ts_ns, .bytes = size, .key = { t, c },
	    }))
		return;
	if (c->s.issued == c->s.completed)
		c->s.busy_since_ns = e->ts_ns;
	c->s.issued++;
}

uint64_t nccl_comm_quiet_since(const struct nccl_comm_snap *c)
{
	if (!c->issued)
		return 0;
	if (c->issued > c->completed)
		return c->last_done_ns > c->busy_since_ns ? c->last_done_ns : c->busy_since_ns;
	return c->last_done_ns ? c->last_done_ns : c->busy_since_ns;
}

/* The rank entered its next collective: matched with the same one of the other ranks. */
static void entered(struct nccl_agg *a, struct nproc *p, struct ncomm *c, const struct gp_nccl_event *e)
{
	uint64_t seq = c->s.entered++;

	match_join(a, p, c);
	if (c->m) {
		match_enter(c->m, c->s.rank, seq, e->ts_ns);
		return;
	}
	/* its shape may come later (a split waiting for its other ranks' calls): kept for then */
	if (c->match != MATCH_UNTRIED || !c->s.id_known || (c->s.nranks >= 0 && c->s.rank >= 0) ||
	    seq != (uint64_t)c->nr_early || c->nr_early >= NCCL_MATCH_RING)
		return;
	if (!c->early && !(c->early = calloc(NCCL_MATCH_RING, sizeof(*c->early))))
		return;
	c->early[c->nr_early++] = e->ts_ns;
}

/* A call on a NULL or destroyed communicator, or with a data type NCCL does not have. */
static bool bad_call(struct nproc *p, const struct ncomm *c, const struct gp_nccl_event *e)
{
	int why = -1;

	if (!e->comm)
		why = NCCL_BAD_NULL_COMM;
	else if (c && c->s.destroyed)
		why = NCCL_BAD_DESTROYED_COMM;
	else if (!nccl_dtype_size(e->dtype))
		why = NCCL_BAD_UNKNOWN_DTYPE;
	if (why >= 0)
		p->bad[why]++;
	return why >= 0;
}

static void on_data(struct nccl_agg *a, struct nproc *p, const struct gp_nccl_event *e)
{
	struct ncomm *c = e->comm ? comm_of(a, p, e->comm) : NULL;
	uint64_t bytes = e->count * nccl_dtype_size(e->dtype);
	bool bad = bad_call(p, c, e);

	if (e->ret) {
		p->failed++;
		return;
	}
	if (!c || (bad && e->comm && c->s.destroyed))
		return;
	count_data(c, e, bytes);
	if (e->fn != GP_NCCL_Send && e->fn != GP_NCCL_Recv)
		entered(a, p, c, e);
	if (e->fn != GP_NCCL_Recv)
		attribute(c, (int)e->fn, e->peer, bytes);
	if (bytes)
		add_pending(p, c, e, bytes);
}

void nccl_agg__on_call(struct nccl_agg *a, const struct gp_nccl_event *e)
{
	struct nproc *p = get_proc(a, e->pid, e->comm_name);

	if (!p || e->fn == GP_NCCL_NONE || e->fn >= GP_NCCL__COUNT)
		return;
	/* a call NCCL made inside one of the program's is counted once, as the outer one */
	if (e->depth) {
		p->nested++;
		return;
	}
	p->calls++;
	switch (e->fn) {
	case GP_NCCL_CommInitRank:
	case GP_NCCL_CommInitRankConfig:
	case GP_NCCL_CommInitRankScalable:
	case GP_NCCL_CommInitAll:
		on_init(a, p, e);
		break;
	case GP_NCCL_CommSplit:
	case GP_NCCL_CommShrink:
		on_split(a, p, e);
		break;
	case GP_NCCL_CommCount:
	case GP_NCCL_CommCuDevice:
	case GP_NCCL_CommUserRank:
		on_query(a, p, e);
		break;
	case GP_NCCL_CommFinalize:
	case GP_NCCL_CommDestroy:
	case GP_NCCL_CommAbort:
		on_end(a, p, e);
		break;
	case GP_NCCL_GroupStart:
	case GP_NCCL_GroupEnd:
		on_group(p, e);
		break;
	default:
		on_data(a, p, e);
		break;
	}
}

/* ---- the driver calls: contexts, event records, synchronizations (cuctx.h) ---- */

void nccl_agg__on_cuda(struct nccl_agg *a, const struct gp_aux_event *e)
{
	struct nproc *p = get_proc(a, e->pid, NULL);

	if (!p)
		return;
	p->clock = e->ts_ns; /* what it completes, it completes at this call's time */
	cuctx__on_aux(p->cu, e);
}

/* ---- process lifetime ---- */

void nccl_agg__on_exit(struct nccl_agg *a, const struct gp_exit_event *e)
{
	proctab__end(a->procs, e->pid, e->ts_ns, false);
}

void nccl_agg__on_exec(struct nccl_agg *a, const struct gp_proc_event *e)
{
	proctab__end(a->procs, e->pid, e->ts_ns, true);
}

void nccl_agg__sweep(struct nccl_agg *a, uint64_t now_ns)
{
	proctab__sweep_end(a->procs, now_ns);
}

void nccl_agg__reap(struct nccl_agg *a, uint64_t cutoff_ns, uint32_t keep_pid)
{
	uint64_t gone[NCCL_MATCH_MAX], k;
	size_t n = 0;
	void *v;

	proctab__reap(a->procs, keep_pid, cutoff_ns, NULL, NULL);
	/* a split whose ranks seen have all gone will not be finished: its place freed */
	for (size_t it = 0; n < NCCL_MATCH_MAX && u64map__next(a->splits, &it, &k, &v);) {
		const struct nsplit *sp = v;
		bool live = false;

		for (int i = 0; i < sp->nranks && !live; i++)
			live = sp->r[i].in && proctab__live(a->procs, sp->r[i].pid);
		if (!live)
			gone[n++] = k;
	}
	for (size_t i = 0; i < n; i++)
		split_free(a, gone[i], u64map__get(a->splits, gone[i]));
}

/* ---- snapshots ---- */

static int cmp_coll(const void *a, const void *b)
{
	const struct nccl_coll *x = a, *y = b;

	return x->fn != y->fn ? x->fn - y->fn : x->dtype - y->dtype;
}

static int cmp_p2p(const void *a, const void *b)
{
	const struct nccl_p2p *x = a, *y = b;

	return x->peer != y->peer ? (x->peer < y->peer ? -1 : 1) : (int)y->send - (int)x->send;
}

static int cmp_time(const void *a, const void *b)
{
	const struct nccl_time *x = a, *y = b;

	return x->fn != y->fn ? x->fn - y->fn : x->slot - y->slot;
}

/* The values of m, copied into a sorted array of n elements of size bytes; NULL: -ENOMEM. */
static void *values(const struct u64map *m, size_t size, size_t *n, int (*cmp)(const void *, const void *))
{
	size_t cnt = u64map__size(m), i = 0;
	char *out = calloc(cnt ? cnt : 1, size);
	uint64_t k;
	void *v;

	*n = 0;
	if (!out)
		return NULL;
	for (size_t it = 0; u64map__next(m, &it, &k, &v);)
		memcpy(out + size * i++, v, size);
	qsort(out, cnt, size, cmp);
	*n = cnt;
	return out;
}

static uint64_t *row_copy(const uint64_t *row, int n)
{
	uint64_t *r;

	if (n < 1 || n > NCCL_MATRIX_MAX)
		return NULL;
	r = malloc((size_t)n * sizeof(*r));
	if (r)
		memcpy(r, row, (size_t)n * sizeof(*r));
	return r;
}

/* Completion batches counted before the communicator's size was known (a split whose shape
 * is derived at the snapshot): nccl-tests' size and bus factor now that it is. */
static void times_of_shape(struct nccl_comm_snap *c)
{
	for (size_t i = 0; i < c->nr_times; i++) {
		struct nccl_time *t = &c->times[i];
		uint64_t per_call;

		if (t->bus_factor)
			continue;
		t->bus_factor = bus_factor(t->fn, c->nranks);
		t->size = tests_size(t->fn, t->size, c->nranks);
		per_call = t->calls ? t->size / t->calls : t->size;
		t->slot = (int)gp_log2_slot(per_call, NCCL_SIZE_SLOTS);
	}
}

static int comm_snap(const struct ncomm *c, const struct nproc *p, struct nccl_comm_snap *o)
{
	*o = c->s;
	o->colls = values(c->colls, sizeof(*o->colls), &o->nr_colls, cmp_coll);
	o->p2p = values(c->p2p, sizeof(*o->p2p), &o->nr_p2p, cmp_p2p);
	o->times = values(c->times, sizeof(*o->times), &o->nr_times, cmp_time);
	o->p2p_row = row_copy(c->p2p_row, c->s.nranks);
	o->ring_row = row_copy(c->ring_row, c->s.nranks);
	o->split_seq = c->split_seq;
	o->parent_rank = c->parent_rank;
	o->parent_nranks = c->parent_nranks;
	if (c->m && c->s.rank >= 0 && c->s.rank < NCCL_MATCH_RANKS) {
		o->last_to_enter = c->m->s.last_to_enter[c->s.rank];
		o->lag_ns = c->m->s.lag_ns[c->s.rank];
		o->lag_max_ns = c->m->s.lag_max_ns[c->s.rank];
	}
	(void)p;
	if (o->times && o->nranks > 0) /* a size learned after calls (its queries) */
		times_of_shape(o);
	return o->colls && o->p2p && o->times ? 0 : -ENOMEM;
}

static int proc_snap(const struct nproc *p, struct nccl_proc_snap *o)
{
	int r = 0;

	memset(o, 0, sizeof(*o));
	o->pid = p->h.pid;
	memcpy(o->comm, p->h.comm, sizeof(o->comm));
	o->unnamed = p->h.unnamed;
	o->exited = p->h.exited;
	o->exec = p->h.exec;
	o->exit_ns = p->h.exit_ns;
	o->groups = p->groups;
	memcpy(o->bad, p->bad, sizeof(o->bad));
	o->failed = p->failed;
	o->nested = p->nested;
	o->other = p->other;
	o->unsynced = cuctx__pending(p->cu);
	o->calls = p->calls;
	o->comms = calloc(p->nr_comms ? p->nr_comms : 1, sizeof(*o->comms));
	if (!o->comms)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_comms && !r; i++) {
		r = comm_snap(p->comms[i], p, &o->comms[i]);
		o->nr_comms = i + 1;
	}
	return r;
}

/* Calls fn(ctx, comm) for every communicator of the snapshot. */
static void each_comm(struct nccl_snap_data *d, void (*fn)(void *ctx, struct nccl_proc_snap *p, struct nccl_comm_snap *c),
		      void *ctx)
{
	for (size_t i = 0; i < d->nr_procs; i++)
		for (size_t j = 0; j < d->procs[i].nr_comms; j++)
			fn(ctx, &d->procs[i], &d->procs[i].comms[j]);
}

struct split_q {
	const struct nccl_comm_snap *me;
	int seen, n, rank;
};

static bool same_split(const struct nccl_comm_snap *a, const struct nccl_comm_snap *b)
{
	return a->made_by == GP_NCCL_CommSplit && b->made_by == GP_NCCL_CommSplit && a->parent_known &&
	       b->parent_known && a->parent_id == b->parent_id && a->split_seq == b->split_seq;
}

static void split_peer(void *ctx, struct nccl_proc_snap *p, struct nccl_comm_snap *c)
{
	struct split_q *q = ctx;
	const struct nccl_comm_snap *me = q->me;

	(void)p;
	if (!same_split(me, c))
		return;
	q->seen += c->parent_rank >= 0;
	if (c->color != me->color)
		return;
	q->n++;
	if (c->key < me->key || (c->key == me->key && c->parent_rank < me->parent_rank))
		q->rank++;
}

/* A split whose ranks never said their shape: when every rank of the parent is traced (one
 * split record each), NCCL's rule gives it: the ranks of one color, ordered by key, then by
 * their rank in the parent. */
static void derive_split(void *ctx, struct nccl_proc_snap *p, struct nccl_comm_snap *c)
{
	struct nccl_snap_data *d = ctx;
	struct split_q q = { .me = c };

	(void)p;
	if (c->made_by != GP_NCCL_CommSplit || (c->nranks >= 0 && c->rank >= 0) || c->parent_rank < 0 ||
	    c->parent_nranks <= 0)
		return;
	each_comm(d, split_peer, &q);
	if (q.seen != c->parent_nranks)
		return;
	c->nranks = q.n;
	c->rank = q.rank;
	c->shape = NCCL_SHAPE_SPLIT;
	times_of_shape(c);
}

static struct nccl_matrix *matrix_of(struct nccl_snap_data *d, const struct nccl_comm_snap *c)
{
	struct nccl_matrix *m, *nm;
	size_t n = (size_t)c->nranks;

	for (size_t i = 0; i < d->nr_matrices; i++)
		if (d->matrices[i].id == c->id && d->matrices[i].nranks == c->nranks)
			return &d->matrices[i];
	nm = realloc(d->matrices, (d->nr_matrices + 1) * sizeof(*nm));
	if (!nm)
		return NULL;
	d->matrices = nm;
	m = &nm[d->nr_matrices];
	*m = (struct nccl_matrix){ .id = c->id, .nranks = c->nranks };
	m->pid = calloc(n, sizeof(*m->pid));
	m->p2p = calloc(n * n, sizeof(*m->p2p));
	m->ring = calloc(n * n, sizeof(*m->ring));
	d->nr_matrices++;
	return m->pid && m->p2p && m->ring ? m : NULL;
}

static void add_rows(void *ctx, struct nccl_proc_snap *p, struct nccl_comm_snap *c)
{
	struct nccl_snap_data *d = ctx;
	struct nccl_matrix *m;
	size_t n = (size_t)c->nranks, r = (size_t)c->rank;

	if (!c->id_known || c->nranks < 2 || c->nranks > NCCL_MATRIX_MAX || c->rank < 0 || c->rank >= c->nranks ||
	    !c->p2p_row || !c->ring_row || !(m = matrix_of(d, c)))
		return;
	m->pid[r] = p->pid;
	for (size_t j = 0; j < n; j++) {
		m->p2p[r * n + j] += c->p2p_row[j];
		m->ring[r * n + j] += c->ring_row[j];
	}
}

static int cmp_matrix(const void *a, const void *b)
{
	const struct nccl_matrix *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* A match's statistics, and the oldest collective some local rank waits in for another. */
static void straggle_snap(const struct nmatch *m, struct nccl_straggle *o)
{
	*o = m->s;
	o->wait_seq = o->wait_missing = o->wait_since_ns = 0;
	o->wait_entered = 0;
	for (int i = 0; i < NCCL_MATCH_RING; i++) {
		const struct mslot *sl = &m->ring[i];
		uint64_t missing = m->s.local & ~sl->entered;

		if (!sl->n || sl->done || !missing || (o->wait_since_ns && sl->seq > o->wait_seq))
			continue;
		o->wait_seq = sl->seq;
		o->wait_missing = missing;
		o->wait_since_ns = sl->first_ns;
		o->wait_entered = sl->n;
	}
}

static int cmp_straggle(const void *a, const void *b)
{
	const struct nccl_straggle *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static bool has_pid(const struct nmatch *m, uint32_t pid)
{
	for (int r = 0; r < NCCL_MATCH_RANKS; r++)
		if (m->s.pid[r] == pid)
			return true;
	return false;
}

/* pid 0: every communicator; else those pid is a rank of. */
static int straggles_snap(struct nccl_agg *a, uint32_t pid, struct nccl_snap_data *out)
{
	size_t n = u64map__size(a->matches), i = 0;
	uint64_t k;
	void *v;

	out->match_full = a->match_full;
	out->match_share = a->match_share;
	out->match_too_large = a->match_too_large;
	out->match_mismatch = a->match_mismatch;
	out->straggles = calloc(n ? n : 1, sizeof(*out->straggles));
	if (!out->straggles)
		return -ENOMEM;
	for (size_t it = 0; i < n && u64map__next(a->matches, &it, &k, &v);)
		if (!pid || has_pid(v, pid))
			straggle_snap(v, &out->straggles[i++]);
	out->nr_straggles = i;
	qsort(out->straggles, i, sizeof(*out->straggles), cmp_straggle);
	return 0;
}

int nccl_agg__snapshot(struct nccl_agg *a, uint32_t pid, struct nccl_snap_data *out)
{
	struct nproc **procs;
	size_t n = proctab__list(a->procs, (void ***)&procs), k = 0;
	int r = 0;

	nccl_snap_data__clear(out);
	out->comm_table_full = a->comm_table_full;
	out->procs = calloc(n ? n : 1, sizeof(*out->procs));
	if (!out->procs)
		return -ENOMEM;
	for (size_t i = 0; i < n && !r; i++) {
		/* contexts and syncs only: a process that never called NCCL is not reported */
		if ((pid && procs[i]->h.pid != pid) || (!procs[i]->calls && !procs[i]->nested))
			continue;
		r = proc_snap(procs[i], &out->procs[k]);
		out->nr_procs = ++k;
		for (size_t j = 0; j < procs[i]->nr_comms; j++) {
			const struct ncomm *c = procs[i]->comms[j];

			/* a split whose shape nothing said (its parent's ranks not all traced here) */
			out->match_no_shape += c->s.made_by == GP_NCCL_CommSplit && c->match != MATCH_ON &&
					       (c->s.nranks < 0 || c->s.rank < 0);
		}
	}
	if (!r)
		r = straggles_snap(a, pid, out);
	if (r || pid)
		return r;
	each_comm(out, derive_split, out);
	each_comm(out, add_rows, out);
	if (out->nr_matrices)
		qsort(out->matrices, out->nr_matrices, sizeof(*out->matrices), cmp_matrix);
	return 0;
}

void nccl_snap_data__clear(struct nccl_snap_data *d)
{
	for (size_t i = 0; d->procs && i < d->nr_procs; i++) {
		for (size_t j = 0; j < d->procs[i].nr_comms; j++) {
			struct nccl_comm_snap *c = &d->procs[i].comms[j];

			free(c->colls);
			free(c->p2p);
			free(c->times);
			free(c->p2p_row);
			free(c->ring_row);
		}
		free(d->procs[i].comms);
	}
	for (size_t i = 0; d->matrices && i < d->nr_matrices; i++) {
		free(d->matrices[i].pid);
		free(d->matrices[i].p2p);
		free(d->matrices[i].ring);
	}
	free(d->procs);
	free(d->matrices);
	free(d->straggles);
	memset(d, 0, sizeof(*d));
}

bool nccl_agg__comm_id(struct nccl_agg *a, uint32_t pid, uint64_t handle, uint64_t *id)
{
	struct nproc *p = proctab__live(a->procs, pid);
	struct ncomm *c = p ? u64map__get(p->by_handle, handle) : NULL;

	if (!c || !c->s.id_known)
		return false;
	*id = c->s.id;
	return true;
}
