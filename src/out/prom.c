/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "out/metrics.h"
#include "core/mode.h"
#include "out/prom.h"
#include "lib/u64map.h"
#include "lib/util.h"

_Static_assert(PROM_HIST_SLOTS == GP_HIST_SLOTS, "the BPF histograms' slots");

#define NV_MAX (PROM_HIST_SLOTS + 1) /* a histogram: its slots, then its sum */
#define HIST_LAST 24		     /* the last bucket written before +Inf: le = 2^25 us */

enum fmt { FMT_U64 = 'u', FMT_SECS = 's', FMT_REAL = 'r' };

/* A series of a per-process family: what every process counted into it so far. */
struct series {
	char *labels; /* `a="b",c="d"`, escaped; "" for none */
	int fam;
	char fmt;
	bool shown;   /* written by a scrape once (born_at_zero) */
	bool dead;    /* expired: unlinked from the family's list at the next write */
	uint64_t key;  /* where it hangs in the store's map: a hash that only picks the chain */
	struct series *chain; /* the next series whose labels hash to the same key */
	uint64_t seen_ns; /* the last render a process counted into it */
	double v[NV_MAX];
};

struct fam_list {
	struct series **v;
	size_t n, cap;
};

/* A process's values in a family at the render before: key fam_pid(fam, pid); an exited
 * record's of an estimate family, exited_key(fam, pid) (fold_estimate_exited). */
struct pstate {
	uint64_t gen;
	uint64_t exit_ns; /* under exited_key(): the exited record's (0 unknown: told by comm) */
	char comm[GP_COMM_LEN];
	struct u64map *last; /* own-labels hash -> double[NV_MAX] */
	struct pstate *chain; /* under exited_key(): the next of that (family, PID), by name */
};

struct stamp {
	uint64_t seen_ns;
};

/* A tenant (a cgroup): how many label sets it holds. */
struct tenant {
	char *name;
	size_t n;
	struct tenant *chain; /* the next with the same hash */
};

/* A process label set with series of its own (max_label_sets). */
struct lset {
	char *key;  /* comm="..." and the attribution labels, escaped */
	struct tenant *t;
	uint64_t seen_ns;
	struct lset *chain;
};

struct prom_store {
	struct prom_store_opts o;
	struct u64map *series;   /* hash(fam, labels) -> chain of struct series */
	struct fam_list *fams;   /* per gp_metrics index, creation order */
	size_t nr_fams, live_series;
	struct u64map *pstate;   /* fam_pid(fam, pid) -> struct pstate */
	struct u64map *exited;   /* fam_pid(fam, pid) -> struct exited */
	struct u64map *cap_count; /* hash(fam, base labels) -> count (as a pointer) */
	struct u64map *cap_vals; /* hash(fam, base labels, capped labels) -> struct capval */
	struct u64map *admitted; /* per_process: pid -> struct stamp */
	uint64_t gen;
	struct u64map *sets;     /* hash(key) -> chain of struct lset */
	struct u64map *tenants;  /* hash(cgroup) -> chain of struct tenant */
	size_t nr_sets;
	uint64_t overflow[PROM_OVERFLOW__COUNT];
	bool overflow_logged[PROM_OVERFLOW__COUNT];
	struct u64map *ovpids;   /* pid -> generation: processes counted in overflow, still listed */
};

/* One sample of one process record in this render. */
struct sample {
	char *nc, *cap; /* own labels: not capped, capped (escaped, comma-joined) */
	uint64_t lkey;  /* hash of both */
	double v[NV_MAX];
};

/* A process's samples in one family, this render (key: family, proc pointer). */
struct record {
	int fam;
	const struct gp_snap_pid *proc;
	uint32_t pid;
	bool exited, done;
	bool unnamed; /* no name from its mode nor from the front end: not counted while it runs */
	uint64_t exit_ns; /* the snapshot's: 0 unknown */
	bool own_pid; /* per_process: its series carry its pid */
	int overflow; /* enum prom_overflow + 1: its label set went to comm="other"; 0: not */
	char comm[GP_COMM_LEN];
	char fmt;
	struct sample *s;
	size_t n, cap;
	struct u64map *idx; /* lkey -> index + 1 */
};

struct gauge {
	char *labels;
	int fam;
	char fmt;
	double v;
};

struct famout {
	bool declared;
	uint64_t cap;
	char *buf; /* samples without process labels, written as they come */
	size_t len;
	FILE *f;
	struct u64map *seen;
	struct gauge **g; /* per-process gauges: sums over the live processes */
	size_t ng, capg;
	struct u64map *gidx; /* hash(labels) -> index + 1 */
};

struct prom_out {
	struct prom_store *store;
	bool own_store, folded, failed;
	prom_attr_fn attr;
	void *ctx;
	uint64_t now_ns;
	struct famout *fo;
	size_t nr_fams;
	struct record **recs;
	size_t nr, cap;
	struct u64map *ridx; /* hash(fam, proc pointer), probed on -> index + 1 */
	struct u64map *heirs; /* fam_pid() -> this render's heir of its live state (fold_heirs) */
};

static uint64_t hstr(uint64_t h, const char *s)
{
	return gp_fnv1a(s, strlen(s) + 1, h); /* the NUL too: "a","bc" differs from "ab","c" */
}

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t k = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));

	k ^= k >> 30;
	k *= 0xbf58476d1ce4e5b9ULL;
	k ^= k >> 27;
	k *= 0x94d049bb133111ebULL;
	return k ^ (k >> 31);
}

#define SEED 1469598103934665603ULL

/*
 * A process's key in a family: both numbers whole, so no two (family, PID) share one. It
 * was mix(fam, pid), whose first step (a ^ (b + c + (a << 6) + (a >> 2))) gave (fam, pid)
 * and (fam + 1, pid - 65) one key: under churn one process's counts went into another's
 * (docs/security.md, shares). Hashes elsewhere here only choose where to look; the full key is compared.
 */
static uint64_t fam_pid(int fam, uint32_t pid)
{
	return (uint64_t)(uint32_t)fam << 32 | pid;
}

/*
 * The key of the states of a (family, PID)'s exited records of an estimate family, one per
 * name, chained: fam_pid() with the top bit set (families are few: a fam_pid() key never
 * has it). It was hstr(mix(fam_pid(), 0xe1), comm), whose mix() gave PIDs 77 apart one key
 * (mix's first step again): under churn an exited process took over another's state of the
 * same name and added nothing (launches 397,000 of 401,000 in the daemon's churn test, every
 * drop counter 0), or added the other's count twice.
 */
static uint64_t exited_key(int fam, uint32_t pid)
{
	return fam_pid(fam, pid) | 1ULL << 63;
}

/* The exited records of one (family, PID) still listed: what tells each apart. */
struct exited {
	size_t n, cap;
	struct {
		uint64_t fp, gen;
	} *v;
};

static void free_exited(void *v)
{
	struct exited *e = v;

	free(e->v);
	free(e);
}

static size_t nvals(int fam)
{
	return gp_metrics[fam].type == GP_HISTOGRAM ? NV_MAX : 1;
}

/* ---- the store ---- */

struct prom_store *prom_store__new(const struct prom_store_opts *o)
{
	struct prom_store *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->o = *o;
	while (gp_metrics[s->nr_fams].name)
		s->nr_fams++;
	s->fams = calloc(s->nr_fams, sizeof(*s->fams));
	s->series = u64map__new();
	s->pstate = u64map__new();
	s->exited = u64map__new();
	s->cap_count = u64map__new();
	s->cap_vals = u64map__new();
	s->admitted = u64map__new();
	s->sets = u64map__new();
	s->tenants = u64map__new();
	s->ovpids = u64map__new();
	if (!s->ovpids || !s->fams || !s->series || !s->pstate || !s->exited || !s->cap_count ||
	    !s->cap_vals || !s->admitted || !s->sets || !s->tenants) {
		prom_store__free(s);
		return NULL;
	}
	return s;
}

static void free_series(void *v)
{
	struct series *x = v;

	free(x->labels);
	free(x);
}

static void free_pstate(void *v)
{
	for (struct pstate *ps = v, *next; ps; ps = next) {
		next = ps->chain;
		u64map__free_all(ps->last, NULL);
		free(ps);
	}
}

void prom_store__free(struct prom_store *s)
{
	uint64_t k;
	void *v;

	if (!s)
		return;
	u64map__free(s->series); /* its values are chains: each series is freed from its family's list */
	for (size_t i = 0; s->fams && i < s->nr_fams; i++) {
		for (size_t j = 0; j < s->fams[i].n; j++)
			free_series(s->fams[i].v[j]);
		free(s->fams[i].v);
	}
	free(s->fams);
	u64map__free_all(s->pstate, free_pstate);
	u64map__free_all(s->exited, free_exited);
	u64map__free(s->cap_count);
	u64map__free_all(s->cap_vals, NULL);
	u64map__free_all(s->admitted, NULL);
	for (size_t it = 0; s->sets && u64map__next(s->sets, &it, &k, &v);)
		for (struct lset *x = v, *next; x; x = next) {
			next = x->chain;
			free(x->key);
			free(x);
		}
	u64map__free(s->sets);
	for (size_t it = 0; s->tenants && u64map__next(s->tenants, &it, &k, &v);)
		for (struct tenant *t = v, *next; t; t = next) {
			next = t->chain;
			free(t->name);
			free(t);
		}
	u64map__free(s->tenants);
	u64map__free(s->ovpids);
	free(s);
}

size_t prom_store__series(const struct prom_store *s)
{
	return s ? s->live_series : 0;
}

size_t prom_store__label_sets(const struct prom_store *s)
{
	return s ? s->nr_sets : 0;
}

uint64_t prom_store__overflow(const struct prom_store *s, int reason)
{
	return s && reason >= 0 && reason < PROM_OVERFLOW__COUNT ? s->overflow[reason] : 0;
}

/* ---- one render ---- */

struct prom_out *prom_out__new(struct prom_store *store, prom_attr_fn attr, void *ctx, uint64_t now_ns)
{
	struct prom_out *p = calloc(1, sizeof(*p));
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };

	if (!p)
		return NULL;
	p->store = store;
	if (!store) {
		p->store = prom_store__new(&o);
		p->own_store = true;
	}
	p->attr = attr;
	p->ctx = ctx;
	p->now_ns = now_ns;
	p->ridx = u64map__new();
	p->heirs = u64map__new();
	if (p->store)
		p->fo = calloc(p->store->nr_fams, sizeof(*p->fo));
	if (!p->store || !p->ridx || !p->heirs || !p->fo) {
		prom_out__free(p);
		return NULL;
	}
	p->nr_fams = p->store->nr_fams;
	return p;
}

static void free_record(struct record *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->s[i].nc);
		free(r->s[i].cap);
	}
	free(r->s);
	u64map__free(r->idx);
	free(r);
}

void prom_out__free(struct prom_out *p)
{
	if (!p)
		return;
	for (size_t i = 0; p->fo && i < p->nr_fams; i++) {
		struct famout *fo = &p->fo[i];

		if (fo->f)
			fclose(fo->f);
		free(fo->buf);
		u64map__free(fo->seen);
		for (size_t j = 0; j < fo->ng; j++) {
			free(fo->g[j]->labels);
			free(fo->g[j]);
		}
		free(fo->g);
		u64map__free(fo->gidx);
	}
	free(p->fo);
	for (size_t i = 0; i < p->nr; i++)
		free_record(p->recs[i]);
	free(p->recs);
	u64map__free(p->ridx);
	u64map__free(p->heirs);
	if (p->own_store)
		prom_store__free(p->store);
	free(p);
}

void prom__label_value(FILE *f, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = s ? strlen(s) : 0, i = 0, k, skip;

	/* the exposition format escapes \\, \" and \n; the value must be UTF-8 (a byte that
	 * is not fails the whole scrape) and names what a process chose: a control or bidi
	 * character, or a byte that is not UTF-8, is '?' (gp_sanitize's rule) */
	while (i < n) {
		if (u[i] == '\\' || u[i] == '"' || u[i] == '\n') {
			fputs(u[i] == '\\' ? "\\\\" : u[i] == '"' ? "\\\"" : "\\n", f);
			i++;
			continue;
		}
		k = gp_safe_char(u + i, n - i, false, &skip);
		if (k && k != GP_SAFE_MORE) {
			fwrite(u + i, 1, k, f);
			i += k;
		} else {
			fputc('?', f);
			i += skip;
		}
	}
}

void prom__family(struct prom_out *p, const char *name)
{
	int i = gp_metric__find(name);

	if (i < 0) {
		p->failed = true;
		return;
	}
	p->fo[i].declared = true;
}

void prom__cap(struct prom_out *p, const char *name, uint64_t max)
{
	int i = gp_metric__find(name);

	if (i < 0 || !gp_metrics[i].capped) {
		p->failed = true;
		return;
	}
	p->fo[i].cap = max;
}

/* Whether label name is one of the comma-separated list. */
static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *s = list; s && *s;) {
		size_t len = strcspn(s, ",");

		if (len == n && !strncmp(s, name, n))
			return true;
		s += len + (s[len] == ',');
	}
	return false;
}

/* `k="v"` pairs of kv into a new string; with capped, only those (in) or the others. */
static char *join(const char *const *kv, const char *capped, bool in)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bool first = true;

	if (!f)
		return NULL;
	for (; kv && kv[0]; kv += 2) {
		if (capped && in_list(capped, kv[0]) != in)
			continue;
		fprintf(f, "%s%s=\"", first ? "" : ",", kv[0]);
		prom__label_value(f, kv[1]);
		fputc('"', f);
		first = false;
	}
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static struct famout *declared(struct prom_out *p, const char *name, int *fam)
{
	int i = gp_metric__find(name);

	if (i < 0 || !p->fo[i].declared) {
		p->failed = true;
		return NULL;
	}
	*fam = i;
	return &p->fo[i];
}

/* A sample without process labels: written at once; a repeated label set is dropped. */
static void direct(struct prom_out *p, struct famout *fo, const char *name, const char *const *kv,
		   const char *suffix, const char *extra, char fmt, double v)
{
	char *l = join(kv, NULL, true);
	uint64_t h;

	if (!l || (!fo->f && !(fo->f = open_memstream(&fo->buf, &fo->len))) ||
	    (!fo->seen && !(fo->seen = u64map__new()))) {
		p->failed = true;
		free(l);
		return;
	}
	h = hstr(hstr(hstr(SEED, suffix), l), extra ? extra : "") | 1;
	if (!u64map__get(fo->seen, h)) {
		if (u64map__put(fo->seen, h, (void *)1))
			p->failed = true;
		fprintf(fo->f, "%s%s", name, suffix);
		if (l[0] || extra)
			fprintf(fo->f, "{%s%s%s}", l, l[0] && extra ? "," : "", extra ? extra : "");
		if (fmt == FMT_U64)
			fprintf(fo->f, " %" PRIu64 "\n", (uint64_t)v);
		else
			fprintf(fo->f, fmt == FMT_SECS ? " %.9f\n" : " %.9g\n", v);
	}
	free(l);
}

/*
 * A record's name: its mode's, else the one the front end knows (the daemon's, read at the
 * process's exec). The same name labels its series and tells its states apart (fold_pass,
 * fold_estimate_exited): a record labelled by the front end's name while its own was "" had
 * its live state under "", and its exited record, named by then, found none of its name and
 * counted the process a second time (the daemon: 63,000 launches of 61,000 on 6.1 in QEMU).
 */
static void name_record(struct prom_out *p, struct record *r, const struct gp_snap_pid *proc)
{
	const char *const *attr;

	memcpy(r->comm, proc->comm, sizeof(r->comm));
	r->comm[GP_COMM_LEN - 1] = '\0';
	attr = !r->comm[0] && p->attr ? p->attr(p->ctx, r->pid) : NULL;
	for (; attr && attr[0]; attr += 2)
		if (!strcmp(attr[0], "comm") && attr[1])
			snprintf(r->comm, sizeof(r->comm), "%s", attr[1]);
	r->unnamed = proc->unnamed && !r->comm[0];
}

static struct record *record_of(struct prom_out *p, int fam, const struct gp_snap_pid *proc, char fmt)
{
	uint64_t k = mix((uint64_t)fam, (uint64_t)(uintptr_t)proc);
	uintptr_t at;
	struct record *r;

	/* the hash picks where to start; a record is the one of this family and process (no
	 * record leaves ridx during a render, so the next key along is free or taken) */
	for (; (at = (uintptr_t)u64map__get(p->ridx, k)); k++)
		if (p->recs[at - 1]->fam == fam && p->recs[at - 1]->proc == proc)
			return p->recs[at - 1];
	if (p->nr == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct record **nv = realloc(p->recs, cap * sizeof(*nv));

		if (!nv)
			return NULL;
		p->recs = nv;
		p->cap = cap;
	}
	r = calloc(1, sizeof(*r));
	if (!r || !(r->idx = u64map__new()) || u64map__put(p->ridx, k, (void *)(uintptr_t)(p->nr + 1))) {
		if (r)
			u64map__free(r->idx);
		free(r);
		return NULL;
	}
	*r = (struct record){ .fam = fam, .proc = proc, .pid = proc->pid, .exited = proc->exited,
			      .exit_ns = proc->exit_ns, .fmt = fmt, .idx = r->idx };
	name_record(p, r, proc);
	p->recs[p->nr++] = r;
	return r;
}

/* A sample of a process: added to its record (the same labels add up). */
static void keep(struct prom_out *p, int fam, const struct gp_snap_pid *proc, const char *const *kv,
		 char fmt, const double *v)
{
	struct record *r = record_of(p, fam, proc, fmt);
	char *nc = join(kv, gp_metrics[fam].capped, false);
	char *cap = gp_metrics[fam].capped ? join(kv, gp_metrics[fam].capped, true) : strdup("");
	uint64_t lkey;
	uintptr_t at;

	if (!r || !nc || !cap)
		goto fail;
	lkey = hstr(hstr(SEED, nc), cap);
	at = (uintptr_t)u64map__get(r->idx, lkey);
	if (!at) {
		if (r->n == r->cap) {
			size_t c = r->cap ? r->cap * 2 : 8;
			struct sample *ns = realloc(r->s, c * sizeof(*ns));

			if (!ns)
				goto fail;
			r->s = ns;
			r->cap = c;
		}
		if (u64map__put(r->idx, lkey, (void *)(uintptr_t)(r->n + 1)))
			goto fail;
		r->s[r->n] = (struct sample){ .nc = nc, .cap = cap, .lkey = lkey };
		at = ++r->n;
		nc = cap = NULL;
	}
	for (size_t i = 0; i < nvals(fam); i++)
		r->s[at - 1].v[i] += v[i];
	free(nc);
	free(cap);
	return;
fail:
	p->failed = true;
	free(nc);
	free(cap);
}

static void sample(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
		   const char *const *kv, char fmt, double v)
{
	int fam;
	struct famout *fo = declared(p, name, &fam);

	if (!fo)
		return;
	if (!(gp_metrics[fam].flags & GP_M_PROCESS) != !proc || gp_metrics[fam].type == GP_HISTOGRAM) {
		p->failed = true; /* a bug: process labels where the table says otherwise */
		return;
	}
	if (proc)
		keep(p, fam, proc, kv, fmt, &v);
	else
		direct(p, fo, name, kv, "", NULL, fmt, v);
}

void prom__u64(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
	       const char *const *labels, uint64_t v)
{
	sample(p, name, proc, labels, FMT_U64, (double)v);
}

void prom__secs(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
		const char *const *labels, double v)
{
	sample(p, name, proc, labels, FMT_SECS, v);
}

void prom__real(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
		const char *const *labels, double v)
{
	sample(p, name, proc, labels, FMT_REAL, v);
}

/* The cumulative buckets, _sum and _count of a histogram's values v. */
static void write_hist(FILE *f, const char *name, const char *labels, const double *v)
{
	const char *sep = labels[0] ? "," : "";
	double cum = 0;

	for (int i = 0; i < PROM_HIST_SLOTS; i++) {
		cum += v[i];
		if (i <= HIST_LAST)
			fprintf(f, "%s_bucket{%s%sle=\"%.10g\"} %.0f\n", name, labels, sep, ldexp(1, i + 1) * 1e-6, cum);
	}
	fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %.0f\n", name, labels, sep, cum);
	fprintf(f, "%s_sum%s%s%s %.9f\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
		v[PROM_HIST_SLOTS]);
	fprintf(f, "%s_count%s%s%s %.0f\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "", cum);
}

void prom__hist(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
		const char *const *labels, const uint64_t *slots, double sum_secs)
{
	double v[NV_MAX];
	int fam;
	struct famout *fo = declared(p, name, &fam);

	if (!fo)
		return;
	if (gp_metrics[fam].type != GP_HISTOGRAM || !(gp_metrics[fam].flags & GP_M_PROCESS) != !proc) {
		p->failed = true;
		return;
	}
	for (int i = 0; i < PROM_HIST_SLOTS; i++)
		v[i] = (double)slots[i];
	v[PROM_HIST_SLOTS] = sum_secs;
	if (proc) {
		keep(p, fam, proc, labels, FMT_SECS, v);
		return;
	}
	{
		char *l = join(labels, NULL, true);

		if (!l || (!fo->f && !(fo->f = open_memstream(&fo->buf, &fo->len)))) {
			free(l);
			p->failed = true;
			return;
		}
		write_hist(fo->f, name, l, v);
		free(l);
	}
}

/* ---- folding a render into the store ---- */

/* per_process: whether pid has (or now gets) a pid label of its own. */
static bool admit(struct prom_out *p, uint32_t pid)
{
	struct prom_store *s = p->store;
	struct stamp *st = u64map__get(s->admitted, pid);

	if (st) {
		st->seen_ns = p->now_ns;
		return true;
	}
	if (u64map__size(s->admitted) >= s->o.max_process_series)
		return false;
	st = calloc(1, sizeof(*st));
	if (!st || u64map__put(s->admitted, pid, st)) {
		free(st);
		p->failed = true;
		return false;
	}
	st->seen_ns = p->now_ns;
	return true;
}

static bool expired(const struct prom_out *p, uint64_t seen_ns);

static struct tenant *tenant_of(struct prom_store *s, const char *name, bool create)
{
	uint64_t h = hstr(SEED, name);
	struct tenant *head = u64map__get(s->tenants, h), *t;

	for (t = head; t; t = t->chain)
		if (!strcmp(t->name, name))
			return t;
	if (!create || !(t = calloc(1, sizeof(*t))) || !(t->name = strdup(name)) || u64map__put(s->tenants, h, t)) {
		if (t)
			free(t->name);
		free(t);
		return NULL;
	}
	t->chain = head;
	return t;
}

static void tenant_put(struct prom_store *s, struct tenant *t)
{
	uint64_t h;
	struct tenant *at;

	if (--t->n)
		return;
	h = hstr(SEED, t->name);
	at = u64map__get(s->tenants, h);
	if (at == t) {
		if (t->chain)
			u64map__put(s->tenants, h, t->chain);
		else
			u64map__del(s->tenants, h);
	} else {
		for (; at && at->chain != t; at = at->chain)
			;
		if (at)
			at->chain = t->chain;
	}
	free(t->name);
	free(t);
}

/*
 * Whether the label set key (of a process in cgroup) has series of its own: 0, or enum
 * prom_overflow + 1 when a cap keeps it out. A set once in stays in while it is used.
 */
static int admit_set(struct prom_out *p, const char *key, const char *cgroup)
{
	static const char *const why[] = {
		[PROM_OVERFLOW_CGROUP] = "a cgroup reached its share of process label sets (--max-label-sets-per-cgroup %zu): "
					 "its new ones are summed under comm=\"other\" of that cgroup (logged once; "
					 "gpuprobe_series_overflow_total{reason=\"cgroup\"} counts them)",
		[PROM_OVERFLOW_TOTAL] = "the series cap of %zu process label sets (--max-label-sets) is reached: new ones "
					"are summed under comm=\"other\" (logged once; "
					"gpuprobe_series_overflow_total{reason=\"total\"} counts them)",
	};
	struct prom_store *s = p->store;
	uint64_t h = hstr(SEED, key);
	struct lset *head, *x;
	struct tenant *t;
	int reason = -1;

	if (!s->o.max_label_sets && !s->o.max_label_sets_per_cgroup)
		return 0;
	head = u64map__get(s->sets, h);
	for (x = head; x; x = x->chain)
		if (!strcmp(x->key, key)) {
			x->seen_ns = p->now_ns;
			return 0;
		}
	t = tenant_of(s, cgroup, false);
	if (s->o.max_label_sets && s->nr_sets >= s->o.max_label_sets)
		reason = PROM_OVERFLOW_TOTAL;
	else if (s->o.max_label_sets_per_cgroup && t && t->n >= s->o.max_label_sets_per_cgroup)
		reason = PROM_OVERFLOW_CGROUP;
	if (reason >= 0) {
		if (!s->overflow_logged[reason])
			gp_log(GP_LOG_WARN, why[reason], reason == PROM_OVERFLOW_TOTAL ? s->o.max_label_sets :
			       s->o.max_label_sets_per_cgroup);
		s->overflow_logged[reason] = true;
		return reason + 1;
	}
	if (!t && !(t = tenant_of(s, cgroup, true)))
		goto nomem;
	x = calloc(1, sizeof(*x));
	if (!x || !(x->key = strdup(key)) || u64map__put(s->sets, h, x)) {
		if (x)
			free(x->key);
		free(x);
		if (!t->n)
			t->n = 1, tenant_put(s, t);
		goto nomem;
	}
	*x = (struct lset){ .key = x->key, .t = t, .seen_ns = p->now_ns, .chain = head };
	t->n++;
	s->nr_sets++;
	return 0;
nomem:
	p->failed = true;
	return PROM_OVERFLOW_TOTAL + 1;
}

/* Label sets nothing counted into for the retention: their places are free again. */
static void sweep_sets(struct prom_out *p)
{
	struct prom_store *s = p->store;
	uint64_t keys[256], k;
	size_t n;
	void *v;

	do {
		n = 0;
		for (size_t it = 0; n < 256 && u64map__next(s->sets, &it, &k, &v);)
			for (struct lset *x = v; x && n < 256; x = x->chain)
				if (expired(p, x->seen_ns)) {
					keys[n++] = k;
					break;
				}
		for (size_t i = 0; i < n; i++) {
			struct lset *head = u64map__get(s->sets, keys[i]), **at = &head, *x;

			while ((x = *at)) {
				if (!expired(p, x->seen_ns)) {
					at = &x->chain;
					continue;
				}
				*at = x->chain;
				tenant_put(s, x->t);
				s->nr_sets--;
				free(x->key);
				free(x);
			}
			if (head)
				u64map__put(s->sets, keys[i], head); /* replaces: no allocation */
			else
				u64map__del(s->sets, keys[i]);
		}
	} while (n == 256);
}

/* The labels of a process: pid (per_process), comm, the attribution labels; past the
 * label sets' cap (admit_set) comm="other" and, past the whole cap, no attribution. */
static char *proc_labels(struct prom_out *p, struct record *r)
{
	const char *const *attr = p->attr ? p->attr(p->ctx, r->pid) : NULL;
	const char *comm = r->comm, *cgroup = "";
	char *buf = NULL, *set = NULL, *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	/* (a record without a name of its own has the front end's: name_record) */
	for (const char *const *a = attr; a && a[0]; a += 2)
		if (!strcmp(a[0], "cgroup") && a[1])
			cgroup = a[1];
	for (int pass = 0; pass < 2; pass++) {
		fputs("comm=\"", f);
		prom__label_value(f, r->overflow ? "other" : comm);
		fputc('"', f);
		for (const char *const *a = attr; r->overflow != PROM_OVERFLOW_TOTAL + 1 && a && a[0]; a += 2) {
			if (!a[1] || !a[1][0] || !strcmp(a[0], "comm"))
				continue;
			fprintf(f, ",%s=\"", a[0]);
			prom__label_value(f, a[1]);
			fputc('"', f);
		}
		if (fflush(f))
			break;
		if (pass || !(r->overflow = admit_set(p, buf, cgroup)))
			break;
		rewind(f); /* past a cap: the set again, as its overflow series */
		fflush(f);
		len = 0;
	}
	if (fclose(f) || !(set = strndup(buf, len))) {
		free(buf);
		return NULL;
	}
	free(buf);
	/* counted once a process: while its records are listed its PID stays known */
	if (r->overflow && !u64map__get(p->store->ovpids, r->pid))
		p->store->overflow[r->overflow - 1]++;
	if (r->overflow && u64map__put(p->store->ovpids, r->pid, (void *)(uintptr_t)p->store->gen))
		p->failed = true;
	if (p->store->o.per_process) {
		r->own_pid = !r->overflow && admit(p, r->pid);
		if (r->own_pid ? asprintf(&out, "pid=\"%" PRIu32 "\",%s", r->pid, set) < 0 :
				 asprintf(&out, "pid=\"other\",%s", set) < 0)
			out = NULL;
		free(set);
		return out;
	}
	return set;
}

/* `cmd="other",ctrl=""` for a family whose capped labels are "cmd,ctrl". */
static char *other_labels(int fam)
{
	const char *s = gp_metrics[fam].capped;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	for (bool first = true; *s; first = false) {
		size_t n = strcspn(s, ",");

		fprintf(f, "%s%.*s=\"%s\"", first ? "" : ",", (int)n, s, first ? "other" : "");
		s += n + (s[n] == ',');
	}
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

struct capval {
	uint64_t base, seen_ns;
};

/* Whether the capped labels cap of series base (the rest of its labels) get their own. */
static bool cap_admits(struct prom_out *p, int fam, const char *base, const char *cap)
{
	struct prom_store *s = p->store;
	uint64_t kb = hstr(mix(SEED, (uint64_t)fam), base), kv = hstr(kb, cap);
	struct capval *cv = u64map__get(s->cap_vals, kv);
	uintptr_t n;

	if (cv) {
		cv->seen_ns = p->now_ns;
		return true;
	}
	n = (uintptr_t)u64map__get(s->cap_count, kb);
	if (p->fo[fam].cap && n >= p->fo[fam].cap)
		return false;
	cv = calloc(1, sizeof(*cv));
	if (!cv || u64map__put(s->cap_vals, kv, cv) || u64map__put(s->cap_count, kb, (void *)(n + 1))) {
		if (cv)
			u64map__del(s->cap_vals, kv);
		free(cv);
		p->failed = true;
		return false;
	}
	*cv = (struct capval){ .base = kb, .seen_ns = p->now_ns };
	return true;
}

/* The full labels of a sample of r: the process's, its own not capped, its capped ones
 * (or "other"). */
static char *sample_labels(struct prom_out *p, const struct record *r, const char *proc,
			   const struct sample *x)
{
	char *base = NULL, *full = NULL, *other = NULL;
	const char *cap = x->cap;

	if (asprintf(&base, "%s%s%s", proc, x->nc[0] && proc[0] ? "," : "", x->nc) < 0)
		return NULL;
	if (cap[0] && !cap_admits(p, r->fam, base, cap))
		cap = other = other_labels(r->fam);
	if (cap && asprintf(&full, "%s%s%s", base, cap[0] && base[0] ? "," : "", cap) < 0)
		full = NULL;
	free(other);
	free(base);
	return full;
}

static struct series *series_of(struct prom_out *p, int fam, const char *labels, char fmt)
{
	struct prom_store *s = p->store;
	uint64_t k = hstr(mix(SEED, (uint64_t)fam), labels);
	struct series *head = u64map__get(s->series, k), *x;
	struct fam_list *fl = &s->fams[fam];

	/* labels a process chose (its comm) may be made to collide with another tenant's:
	 * the chain is walked comparing the whole labels */
	for (x = head; x; x = x->chain)
		if (x->fam == fam && !strcmp(x->labels, labels))
			return x;
	if (fl->n == fl->cap) {
		size_t cap = fl->cap ? fl->cap * 2 : 16;
		struct series **nv = realloc(fl->v, cap * sizeof(*nv));

		if (!nv)
			return NULL;
		fl->v = nv;
		fl->cap = cap;
	}
	x = calloc(1, sizeof(*x));
	if (!x || !(x->labels = strdup(labels)) || u64map__put(s->series, k, x)) {
		if (x)
			free(x->labels);
		free(x);
		return NULL;
	}
	x->chain = head;
	x->fam = fam;
	x->fmt = fmt;
	x->key = k;
	fl->v[fl->n++] = x;
	s->live_series++;
	return x;
}

/* Adds what each sample of r counted since base (NULL: since zero) to its series. An
 * estimate family adds only what passes base (the most the process reported before). */
/*
 * What a process's label sets that are gone from its record had counted (summed per
 * value): a process's counts move between its own label sets (a kernel first counted as
 * "unknown" and named later, from memory or a layout learned meanwhile; a name capped into
 * "other"), and what moved was counted already: the label sets new to its record take it
 * over before they count from zero (else the daemon counts such launches twice).
 */
static void moved_away(const struct record *r, struct u64map *base, size_t n, double *gone)
{
	uint64_t k;
	void *v;

	for (size_t j = 0; j < n; j++)
		gone[j] = 0;
	for (size_t it = 0; base && u64map__next(base, &it, &k, &v);)
		if (!r->idx || !u64map__get(r->idx, k))
			for (size_t j = 0; j < n; j++)
				gone[j] += ((const double *)v)[j];
}

static void route(struct prom_out *p, const struct record *r, const char *proc, struct u64map *base)
{
	size_t n = nvals(r->fam);
	bool est = gp_metrics[r->fam].flags & GP_M_ESTIMATE;
	double gone[NV_MAX];

	moved_away(r, base, n, gone);
	for (size_t i = 0; i < r->n; i++) {
		const struct sample *x = &r->s[i];
		const double *b = base ? u64map__get(base, x->lkey) : NULL;
		char *labels = sample_labels(p, r, proc, x);
		struct series *s = labels ? series_of(p, r->fam, labels, r->fmt) : NULL;
		bool reset = false;
		double took[NV_MAX] = { 0 };

		free(labels);
		if (!s) {
			p->failed = true;
			continue;
		}
		/* a pid series a new process comes into (its PID reused): a counter reset, not
		 * the old process's counts continued */
		if (!base && r->own_pid && s->seen_ns != p->now_ns)
			memset(s->v, 0, sizeof(s->v));
		for (size_t j = 0; b && !est && j < n; j++)
			reset = reset || x->v[j] < b[j];
		for (size_t j = 0; base && !b && j < n; j++) { /* new to a known process */
			took[j] = x->v[j] < gone[j] ? x->v[j] : gone[j];
			gone[j] -= took[j];
		}
		for (size_t j = 0; j < n; j++) {
			double d = x->v[j] - (b && !reset ? b[j] : took[j]);

			if (d > 0 || !est)
				s->v[j] += d;
		}
		s->seen_ns = p->now_ns;
	}
}

/* A gauge sample of a running process: summed by its full labels for this render. */
static void gauge(struct prom_out *p, const struct record *r, const char *proc)
{
	struct famout *fo = &p->fo[r->fam];

	for (size_t i = 0; i < r->n; i++) {
		char *labels = sample_labels(p, r, proc, &r->s[i]);
		uint64_t k = labels ? hstr(SEED, labels) : 0;
		uintptr_t at;

		if (!labels || (!fo->gidx && !(fo->gidx = u64map__new())))
			goto fail;
		/* the hash picks where to start; the gauge is the one with these labels */
		while ((at = (uintptr_t)u64map__get(fo->gidx, k)) && strcmp(fo->g[at - 1]->labels, labels))
			k++;
		if (!at) {
			struct gauge *g = calloc(1, sizeof(*g));
			struct gauge **nv = fo->ng == fo->capg ?
				realloc(fo->g, (fo->capg ? fo->capg * 2 : 16) * sizeof(*nv)) : fo->g;

			if (!g || !nv || u64map__put(fo->gidx, k, (void *)(uintptr_t)(fo->ng + 1))) {
				free(g);
				if (nv)
					fo->g = nv;
				goto fail;
			}
			if (fo->ng == fo->capg)
				fo->capg = fo->capg ? fo->capg * 2 : 16;
			fo->g = nv;
			*g = (struct gauge){ .labels = labels, .fam = r->fam, .fmt = r->fmt };
			labels = NULL;
			fo->g[fo->ng] = g;
			at = ++fo->ng;
		}
		fo->g[at - 1]->v += r->s[i].v[0];
		free(labels);
		continue;
fail:
		free(labels);
		p->failed = true;
	}
}

/* Marks the series of r's samples as counted into now (nothing added). */
static void touch(struct prom_out *p, const struct record *r, const char *proc)
{
	for (size_t i = 0; i < r->n; i++) {
		char *labels = sample_labels(p, r, proc, &r->s[i]);
		struct series *s = labels ? series_of(p, r->fam, labels, r->fmt) : NULL;

		free(labels);
		if (s)
			s->seen_ns = p->now_ns;
		else
			p->failed = true;
	}
}

/* What tells an exited record apart from another of the same PID: its final values. */
static uint64_t fingerprint(const struct record *r)
{
	uint64_t fp = 0;

	for (size_t i = 0; i < r->n; i++) {
		uint64_t h = r->s[i].lkey;

		for (size_t j = 0; j < nvals(r->fam); j++) {
			uint64_t bits;

			memcpy(&bits, &r->s[i].v[j], sizeof(bits));
			h = mix(h, bits);
		}
		fp += h; /* order-free: snapshots need not list samples in one order */
	}
	return fp;
}

static struct pstate *pstate_new(const char *comm)
{
	struct pstate *ps = calloc(1, sizeof(*ps));

	if (ps && !(ps->last = u64map__new())) {
		free(ps);
		return NULL;
	}
	if (ps)
		snprintf(ps->comm, sizeof(ps->comm), "%s", comm);
	return ps;
}

static struct pstate *pstate_at(struct prom_out *p, uint64_t k, bool create)
{
	struct pstate *ps = u64map__get(p->store->pstate, k);

	if (ps || !create)
		return ps;
	ps = pstate_new("");
	if (ps && u64map__put(p->store->pstate, k, ps)) {
		free_pstate(ps);
		return NULL;
	}
	return ps;
}

static struct pstate *pstate_get(struct prom_out *p, const struct record *r, bool create)
{
	return pstate_at(p, fam_pid(r->fam, r->pid), create);
}

/*
 * An exited record: counted once, when first seen exited, from where the process stood
 * at the render before (its live state, taken over) or from zero; later renders that
 * still list it add nothing. Which process a listing is: its exit's time where the mode
 * knows it, else its final values. By values alone, a record listed exited and later with
 * other values (a kernel named after the exit, late records) was counted a second time,
 * whole (the daemon counted 62,000 launches of 61,000 on 6.1 in QEMU), and two processes
 * of one PID with the same counts were one.
 */
static void fold_exited(struct prom_out *p, struct record *r, const char *proc)
{
	struct prom_store *s = p->store;
	uint64_t k = fam_pid(r->fam, r->pid), fp = r->exit_ns ? r->exit_ns : fingerprint(r);
	struct exited *e = u64map__get_new(s->exited, k, sizeof(*e));
	struct pstate *ps;
	size_t i;

	if (!e) {
		p->failed = true;
		return;
	}
	for (i = 0; i < e->n && e->v[i].fp != fp; i++)
		;
	if (i < e->n) {
		touch(p, r, proc);
	} else {
		if (e->n == e->cap) {
			size_t cap = e->cap ? e->cap * 2 : 2;
			void *nv = realloc(e->v, cap * sizeof(*e->v));

			if (!nv) {
				p->failed = true; /* not counted now: counted at the next render */
				return;
			}
			e->v = nv;
			e->cap = cap;
		}
		e->v[e->n++].fp = fp;
		ps = pstate_get(p, r, false);
		route(p, r, proc, ps ? ps->last : NULL);
		if (ps)
			free_pstate(u64map__del(s->pstate, k));
	}
	e->v[i].gen = s->gen;
}

static bool not_in_record(void *r, uint64_t key, void *v)
{
	(void)v;
	return !((const struct record *)r)->idx || !u64map__get(((const struct record *)r)->idx, key);
}

/* The label sets gone from a process's record: route() handed what they had counted to
 * the new ones, so they are no base any more. */
static void forget_moved(const struct record *r, struct u64map *last)
{
	u64map__delete_if(last, not_in_record, (void *)r, free);
}

/* A running process's record: what it counted since the render before. */
static void fold_state(struct prom_out *p, struct record *r, const char *proc, struct pstate *ps)
{
	size_t n = nvals(r->fam);
	bool est = gp_metrics[r->fam].flags & GP_M_ESTIMATE;

	if (!ps) {
		p->failed = true;
		return;
	}
	if (ps->gen == p->store->gen)
		return; /* two running records of one PID in one family: cannot be; not counted twice */
	route(p, r, proc, ps->gen ? ps->last : NULL); /* NULL: a process first seen */
	ps->gen = p->store->gen;
	memcpy(ps->comm, r->comm, sizeof(ps->comm));
	for (size_t i = 0; i < r->n; i++) {
		double *b = u64map__get(ps->last, r->s[i].lkey);

		if (!b) {
			b = calloc(NV_MAX, sizeof(*b));
			if (!b || u64map__put(ps->last, r->s[i].lkey, b)) {
				free(b);
				p->failed = true;
				continue;
			}
		}
		for (size_t j = 0; j < n; j++)
			if (!est || r->s[i].v[j] > b[j])
				b[j] = r->s[i].v[j];
	}
	forget_moved(r, ps->last);
}

/* A running process's record: what it counted since the render before. */
static void fold_live(struct prom_out *p, struct record *r, const char *proc)
{
	fold_state(p, r, proc, pstate_get(p, r, true));
}

/* The exited record of an estimate family that a state under exited_key() is of: by its
 * exit's time where the mode knows it (a name may change between listings: an exited record
 * the front end named, later named by its own exit record), else by its name. */
static bool same_exited(const struct pstate *ps, const struct record *r)
{
	return r->exit_ns ? ps->exit_ns == r->exit_ns : !ps->exit_ns && !strcmp(ps->comm, r->comm);
}

#define HEIR_NONE ((uintptr_t)1) /* a running record of the PID is listed: it keeps its state */

/*
 * An exited record of an estimate family: its estimate may still move (finished at the
 * budget's next boundary), so it is folded as a running one's while it is listed, from a
 * state of its own (same_exited): the live state of its PID when it is first seen exited,
 * if that state has its name (the same process, as fold_exited takes it over) or, whatever
 * its name, if no record of the PID runs in this render and it is the PID's latest exit
 * here (the process renamed itself, or was named only by its exit record: from zero, it was
 * counted twice); else from zero. Where a record runs under the PID and the names differ,
 * the live state is left to it: the image an exec started, or a new process of a reused PID.
 */
static void fold_estimate_exited(struct prom_out *p, struct record *r, const char *proc)
{
	uint64_t kl = fam_pid(r->fam, r->pid), kx = exited_key(r->fam, r->pid);
	struct pstate *ps = u64map__get(p->store->pstate, kx), *live;
	bool fresh = false;

	while (ps && !same_exited(ps, r))
		ps = ps->chain;
	if (!ps && (live = pstate_at(p, kl, false)) && live->gen != p->store->gen &&
	    (!strcmp(live->comm, r->comm) || (uintptr_t)u64map__get(p->heirs, kl) == (uintptr_t)r)) {
		u64map__del(p->store->pstate, kl);
		ps = live;
		fresh = true;
	} else if (!ps) {
		ps = pstate_new(r->comm);
		fresh = true;
	}
	if (ps && fresh) { /* new under kx: ahead of the others there */
		ps->exit_ns = r->exit_ns;
		ps->chain = u64map__get(p->store->pstate, kx);
		if (u64map__put(p->store->pstate, kx, ps)) { /* only when kx had none */
			ps->chain = NULL;
			free_pstate(ps);
			ps = NULL;
		}
	}
	fold_state(p, r, proc, ps);
}

/* Per (family, PID) of this render, the exited record that may take the live state whatever
 * its name (fold_estimate_exited): the one that exited last; HEIR_NONE where a record runs. */
static void fold_heirs(struct prom_out *p)
{
	for (size_t i = 0; i < p->nr; i++) {
		struct record *r = p->recs[i];
		uint64_t k = fam_pid(r->fam, r->pid);
		uintptr_t at = (uintptr_t)u64map__get(p->heirs, k);
		const struct record *h = at > HEIR_NONE ? (const struct record *)at : NULL;

		if (at == HEIR_NONE || (r->exited && h && h->exit_ns >= r->exit_ns))
			continue;
		if (u64map__put(p->heirs, k, r->exited ? (void *)r : (void *)HEIR_NONE))
			p->failed = true; /* no heir: an exited record of another name counts from zero */
	}
}

/* A running record with no name yet (its process was gone before it could be read, its exit
 * record still to come): not counted under an empty name, where its counts would stay once
 * it is named (the daemon: 56,000 launches of 61,000 under the churn's name, the rest under
 * comm=""); its state, if it has one, is kept for the render that names it. */
static void defer_unnamed(struct prom_out *p, const struct record *r)
{
	struct pstate *ps = pstate_get(p, r, false);

	if (ps)
		ps->gen = p->store->gen;
}

/*
 * Pass 0: exited records of a process whose name matches its live state (the record
 * that state was taken from, most likely); pass 1: the other exited ones; pass 2: the
 * running ones (their state is theirs once the exited records took the old one over).
 */
static void fold_pass(struct prom_out *p, int pass)
{
	for (size_t i = 0; i < p->nr; i++) {
		struct record *r = p->recs[i];
		bool gaugef = gp_metrics[r->fam].type == GP_GAUGE;
		struct pstate *ps;
		char *proc;

		if (r->done || (pass == 2) == r->exited || (gaugef && pass != 2))
			continue;
		if (pass < 2) {
			ps = pstate_get(p, r, false);
			if ((pass == 0) != (ps && !strcmp(ps->comm, r->comm)))
				continue;
		}
		r->done = true;
		if (r->unnamed && !r->exited) {
			defer_unnamed(p, r);
			continue;
		}
		proc = proc_labels(p, r);
		if (!proc) {
			p->failed = true;
			continue;
		}
		if (gaugef)
			gauge(p, r, proc);
		else if (r->exited && (gp_metrics[r->fam].flags & GP_M_ESTIMATE))
			fold_estimate_exited(p, r, proc);
		else if (r->exited)
			fold_exited(p, r, proc);
		else
			fold_live(p, r, proc);
		free(proc);
	}
}

static bool expired(const struct prom_out *p, uint64_t seen_ns)
{
	uint64_t keep = p->store->o.retention_ns;

	return seen_ns < p->now_ns && p->now_ns - seen_ns > keep;
}

static bool stamp_expired(void *p, uint64_t key, void *v)
{
	(void)key;
	return expired(p, ((struct stamp *)v)->seen_ns);
}

/* Forgets, in m, the entries expired (their stamp). */
static void sweep(struct prom_out *p, struct u64map *m, void (*free_v)(void *))
{
	u64map__delete_if(m, stamp_expired, p, free_v);
}

/* Exited records not listed in this render: forgotten. */
static void sweep_exited(struct prom_out *p)
{
	struct u64map *m = p->store->exited;
	uint64_t keys[256], k;
	size_t n;
	void *v;

	do {
		n = 0;
		for (size_t it = 0; n < 256 && u64map__next(m, &it, &k, &v);) {
			struct exited *e = v;
			size_t keep = 0;

			for (size_t i = 0; i < e->n; i++)
				if (e->v[i].gen == p->store->gen)
					e->v[keep++] = e->v[i];
			e->n = keep;
			if (!keep)
				keys[n++] = k;
		}
		for (size_t i = 0; i < n; i++)
			free_exited(u64map__del(m, keys[i]));
	} while (n == 256);
}

static bool ovpid_unlisted(void *p, uint64_t key, void *v)
{
	(void)key;
	return (uintptr_t)v != ((struct prom_out *)p)->store->gen;
}

/* Processes counted in overflow and no longer listed: forgotten. */
static void sweep_ovpids(struct prom_out *p)
{
	u64map__delete_if(p->store->ovpids, ovpid_unlisted, p, NULL);
}

/* The states not listed in this render go: a chain's one by one (the entry keeps its
 * head in place, the next copied into it), the entry with the last. */
static bool pstate_unlisted(void *p, uint64_t key, void *v)
{
	uint64_t gen = ((struct prom_out *)p)->store->gen;
	struct pstate *ps = v, **at = &ps->chain, *x;

	(void)key;
	while ((x = *at)) {
		if (x->gen == gen) {
			at = &x->chain;
			continue;
		}
		*at = x->chain;
		x->chain = NULL;
		free_pstate(x);
	}
	if (ps->gen == gen || !ps->chain)
		return ps->gen != gen;
	x = ps->chain;
	u64map__free_all(ps->last, NULL);
	*ps = *x;
	free(x);
	return false;
}

static void sweep_pstates(struct prom_out *p)
{
	u64map__delete_if(p->store->pstate, pstate_unlisted, p, free_pstate);
}

static void sweep_caps(struct prom_out *p)
{
	struct prom_store *s = p->store;
	uint64_t keys[256], k;
	size_t n;
	void *v;

	do {
		n = 0;
		for (size_t it = 0; n < 256 && u64map__next(s->cap_vals, &it, &k, &v);)
			if (expired(p, ((struct capval *)v)->seen_ns))
				keys[n++] = k;
		for (size_t i = 0; i < n; i++) {
			struct capval *cv = u64map__del(s->cap_vals, keys[i]);
			uintptr_t c = (uintptr_t)u64map__get(s->cap_count, cv->base);

			if (c > 1)
				u64map__put(s->cap_count, cv->base, (void *)(c - 1)); /* replaces: no allocation */
			else
				u64map__del(s->cap_count, cv->base);
			free(cv);
		}
	} while (n == 256);
}

/* Takes x out of its key's chain. */
static void unchain(struct prom_store *s, struct series *x)
{
	struct series *at = u64map__get(s->series, x->key);

	if (at == x) {
		if (x->chain)
			u64map__put(s->series, x->key, x->chain); /* replaces: no allocation */
		else
			u64map__del(s->series, x->key);
		return;
	}
	for (; at && at->chain != x; at = at->chain)
		;
	if (at)
		at->chain = x->chain;
}

/* Series nothing counted into for the retention: gone. */
static void sweep_series(struct prom_out *p)
{
	struct prom_store *s = p->store;

	for (size_t f = 0; f < s->nr_fams; f++) {
		struct fam_list *fl = &s->fams[f];
		size_t keep = 0;

		for (size_t i = 0; i < fl->n; i++) {
			struct series *x = fl->v[i];

			if (!expired(p, x->seen_ns)) {
				fl->v[keep++] = x;
				continue;
			}
			unchain(s, x);
			free_series(x);
			s->live_series--;
		}
		fl->n = keep;
	}
}

int prom_out__fold(struct prom_out *p)
{
	struct prom_store *s = p->store;

	if (p->folded)
		return p->failed ? -ENOMEM : 0;
	p->folded = true;
	s->gen++;
	sweep_sets(p); /* first: a place freed by the retention is there for this render */
	fold_heirs(p);
	for (int pass = 0; pass < 3; pass++)
		fold_pass(p, pass);
	sweep_pstates(p);
	sweep_exited(p);
	sweep_ovpids(p);
	sweep_caps(p);
	sweep(p, s->admitted, free);
	sweep_series(p);
	return p->failed ? -ENOMEM : 0;
}

static void write_value(FILE *f, char fmt, double v)
{
	if (fmt == FMT_U64)
		fprintf(f, " %" PRIu64 "\n", (uint64_t)v);
	else
		fprintf(f, fmt == FMT_SECS ? " %.9f\n" : " %.9g\n", v);
}

static void write_series(FILE *f, const char *name, struct series *x, bool born_at_zero)
{
	static const double zeros[NV_MAX];
	const double *v = born_at_zero && !x->shown ? zeros : x->v;

	x->shown = true;
	if (gp_metrics[x->fam].type == GP_HISTOGRAM) {
		write_hist(f, name, x->labels, v);
		return;
	}
	fprintf(f, "%s%s%s%s", name, x->labels[0] ? "{" : "", x->labels, x->labels[0] ? "}" : "");
	write_value(f, x->fmt, v[0]);
}

static void write_family(struct prom_out *p, int fam, FILE *f)
{
	const struct gp_metric *m = &gp_metrics[fam];
	struct famout *fo = &p->fo[fam];

	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, gp_metric__type_name(m->type));
	if ((m->flags & GP_M_PROCESS) && m->type == GP_GAUGE) {
		for (size_t i = 0; i < fo->ng; i++) {
			fprintf(f, "%s{%s}", m->name, fo->g[i]->labels);
			write_value(f, fo->g[i]->fmt, fo->g[i]->v);
		}
	} else if (m->flags & GP_M_PROCESS) {
		struct fam_list *fl = &p->store->fams[fam];

		for (size_t i = 0; i < fl->n; i++)
			write_series(f, m->name, fl->v[i], p->store->o.born_at_zero);
	}
	if (fo->f && fclose(fo->f))
		p->failed = true;
	fo->f = NULL;
	if (fo->buf)
		fwrite(fo->buf, 1, fo->len, f);
}

int prom_out__write(struct prom_out *p, FILE *f)
{
	int r = prom_out__fold(p);

	for (size_t i = 0; i < p->nr_fams; i++)
		if (p->fo[i].declared)
			write_family(p, (int)i, f);
	if (r || p->failed)
		return -ENOMEM;
	return ferror(f) ? -EIO : 0;
}
