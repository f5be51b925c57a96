/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "mode.h"
#include "prom.h"
#include "u64map.h"

#define MAX_FAMILIES 128

struct family {
	const char *name, *type, *help;
	char *buf; /* the sample lines */
	size_t len;
	FILE *f;
	struct u64map *seen; /* hashes of label sets */
};

struct prom_out {
	prom_container_fn container;
	void *ctx;
	struct u64map *live;
	struct family fam[MAX_FAMILIES];
	int nr;
	bool failed;
};

struct prom_out *prom_out__new(prom_container_fn container, void *ctx)
{
	struct prom_out *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->container = container;
	p->ctx = ctx;
	p->live = u64map__new();
	if (!p->live) {
		free(p);
		return NULL;
	}
	return p;
}

void prom_out__free(struct prom_out *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->nr; i++) {
		if (p->fam[i].f)
			fclose(p->fam[i].f);
		free(p->fam[i].buf);
		u64map__free(p->fam[i].seen);
	}
	u64map__free(p->live);
	free(p);
}

void prom_out__live(struct prom_out *p, uint32_t pid)
{
	if (u64map__put(p->live, pid, (void *)1))
		p->failed = true;
}

bool prom_out__shadowed(const struct prom_out *p, uint32_t pid, bool exited)
{
	return exited && u64map__get(p->live, pid);
}

void prom__label_value(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

void prom__family(struct prom_out *p, const char *name, const char *type, const char *help)
{
	struct family *fm;

	if (p->nr >= MAX_FAMILIES) {
		p->failed = true;
		return;
	}
	fm = &p->fam[p->nr];
	*fm = (struct family){ .name = name, .type = type, .help = help };
	fm->f = open_memstream(&fm->buf, &fm->len);
	fm->seen = u64map__new();
	if (!fm->f || !fm->seen)
		p->failed = true;
	p->nr++;
}

static struct family *find(struct prom_out *p, const char *name)
{
	for (int i = p->nr - 1; i >= 0; i--)
		if (!strcmp(p->fam[i].name, name))
			return &p->fam[i];
	return NULL;
}

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h | 1; /* never 0: u64map keys are anything, values must be non-NULL */
}

/* The "{...}" of a sample into buf (a memstream); false when it repeats a label set. */
static bool labels(struct prom_out *p, struct family *fm, const struct gp_snap_pid *proc,
		   const char *const *kv, char **buf, size_t *len)
{
	FILE *f = open_memstream(buf, len);
	bool first = true;
	uint64_t h;

	if (!f) {
		p->failed = true;
		return false;
	}
	if (proc) {
		const char *c = p->container ? p->container(p->ctx, proc->pid) : NULL;

		fprintf(f, "{pid=\"%" PRIu32 "\",comm=\"", proc->pid);
		prom__label_value(f, proc->comm);
		fputs("\",container=\"", f);
		prom__label_value(f, c ? c : "");
		fputc('"', f);
		first = false;
	}
	for (; kv && kv[0]; kv += 2) {
		fprintf(f, "%s%s=\"", first ? "{" : ",", kv[0]);
		prom__label_value(f, kv[1]);
		fputc('"', f);
		first = false;
	}
	if (!first)
		fputc('}', f);
	if (fclose(f)) {
		p->failed = true;
		return false;
	}
	h = fnv1a(*buf, *len);
	if (u64map__get(fm->seen, h))
		return false;
	if (u64map__put(fm->seen, h, (void *)1))
		p->failed = true;
	return true;
}

static void sample(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
		   const char *const *kv, const char *fmt, uint64_t u, double d, bool real)
{
	struct family *fm = find(p, name);
	char *l = NULL;
	size_t n = 0;

	if (!fm || !fm->f) {
		p->failed = true;
		return;
	}
	if (labels(p, fm, proc, kv, &l, &n)) {
		fprintf(fm->f, "%s%s ", name, l);
		if (real)
			fprintf(fm->f, fmt, d);
		else
			fprintf(fm->f, "%" PRIu64, u);
		fputc('\n', fm->f);
	}
	free(l);
}

void prom__u64(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
	       const char *const *labels, uint64_t v)
{
	sample(p, name, proc, labels, NULL, v, 0, false);
}

void prom__secs(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
		const char *const *labels, double v)
{
	sample(p, name, proc, labels, "%.9f", 0, v, true);
}

void prom__real(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
		const char *const *labels, double v)
{
	sample(p, name, proc, labels, "%.9g", 0, v, true);
}

int prom_out__write(struct prom_out *p, FILE *f)
{
	for (int i = 0; i < p->nr; i++) {
		struct family *fm = &p->fam[i];

		if (fm->f && fclose(fm->f))
			p->failed = true;
		fm->f = NULL;
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fm->name, fm->help, fm->name, fm->type);
		if (fm->buf)
			fwrite(fm->buf, 1, fm->len, f);
	}
	if (p->failed)
		return -ENOMEM;
	return ferror(f) ? -EIO : 0;
}
