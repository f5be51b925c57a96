/* SPDX-License-Identifier: BSD-3-Clause */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "midname.h"
#include "u64map.h"

#define MN_LAYOUTS 16 /* distinct (tag, slot) layouts tracked: a driver has one per kind */

struct layout {
	uint64_t tag;
	unsigned int slot;
	uint64_t votes;
	bool contradicted; /* a known handle with this tag held another name there */
};

/* A handle to name: read when a layout allows (its result kept) */
struct note {
	uint32_t pid, img;
	uint64_t handle;
	char *name; /* NULL: not read yet */
	bool none;  /* read: no name there */
};

struct midname {
	mn_read_fn read;
	void *ctx;
	struct layout l[MN_LAYOUTS];
	int n;
	struct midname_stats st;
	struct u64map *notes; /* note_key -> struct note */
};

struct midname *midname__new(mn_read_fn read, void *ctx)
{
	struct midname *m = calloc(1, sizeof(*m));

	if (m && !(m->notes = u64map__new())) {
		free(m);
		return NULL;
	}
	if (m) {
		m->read = read;
		m->ctx = ctx;
	}
	return m;
}

static void note_free(void *v)
{
	if (v)
		free(((struct note *)v)->name);
	free(v);
}

void midname__free(struct midname *m)
{
	if (!m)
		return;
	u64map__free_all(m->notes, note_free);
	free(m);
}

/* A user-space pointer (x86-64 and arm64 user halves), not NULL, not a small integer. */
static bool user_ptr(uint64_t v)
{
	return v >= 0x10000 && v < (1ULL << 47);
}

/* A symbol name as compilers emit them: printable, no spaces at the ends, starting like
 * an identifier or a mangled name. */
static bool plausible(const char *s, size_t n)
{
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == '$' || s[0] == '.'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isprint((unsigned char)s[i]))
			return false;
	return s[n - 1] != ' ';
}

/* The NUL-terminated string at addr, at most len - 1 bytes, read page-wise (a name may
 * end just before an unmapped page). 0, or -ENOENT when it does not end in time. */
static int read_str(struct midname *m, uint32_t pid, uint64_t addr, char *buf, size_t len)
{
	size_t got = 0;

	while (got + 1 < len) {
		size_t page_left = 4096 - ((addr + got) & 4095), want = len - 1 - got;
		long r;
		char *nul;

		if (want > page_left)
			want = page_left;
		r = m->read(m->ctx, pid, addr + got, buf + got, want);
		if (r <= 0)
			return r < 0 ? (int)r : -ENOENT;
		nul = memchr(buf + got, '\0', (size_t)r);
		if (nul)
			return 0;
		got += (size_t)r;
	}
	return -ENOENT;
}

static struct layout *layout_of(struct midname *m, uint64_t tag, unsigned int slot)
{
	for (int i = 0; i < m->n; i++)
		if (m->l[i].tag == tag && m->l[i].slot == slot)
			return &m->l[i];
	if (m->n == MN_LAYOUTS)
		return NULL;
	m->l[m->n] = (struct layout){ .tag = tag, .slot = slot };
	return &m->l[m->n++];
}

static void notes_retry(struct midname *m);

void midname__learn(struct midname *m, uint32_t pid, uint64_t handle, const char *mangled)
{
	uint64_t q[MN_SLOTS];
	size_t want = strlen(mangled) + 1;
	char *s = malloc(want);
	bool voted = false;

	if (!s || want > MN_MAX_NAME || m->read(m->ctx, pid, handle, q, sizeof(q)) != (long)sizeof(q)) {
		free(s);
		return;
	}
	for (unsigned int j = 1; j < MN_SLOTS; j++) {
		struct layout *l;

		if (!user_ptr(q[j]) || m->read(m->ctx, pid, q[j], s, want) != (long)want || memcmp(s, mangled, want))
			continue;
		l = layout_of(m, q[0], j);
		if (l) {
			l->votes++;
			voted = true;
		}
	}
	/* a layout of this tag that this handle does not follow is not a rule */
	for (int i = 0; i < m->n; i++) {
		if (m->l[i].tag != q[0])
			continue;
		if (!user_ptr(q[m->l[i].slot]) || m->read(m->ctx, pid, q[m->l[i].slot], s, want) != (long)want ||
		    memcmp(s, mangled, want))
			m->l[i].contradicted = true;
	}
	free(s);
	if (voted) {
		m->st.learned++;
		notes_retry(m);
	} else {
		m->st.unlearned++;
	}
}

static const struct layout *usable(const struct midname *m, uint64_t tag)
{
	const struct layout *best = NULL;

	for (int i = 0; i < m->n; i++) {
		const struct layout *l = &m->l[i];

		if (l->tag != tag || l->contradicted || l->votes < MN_MIN_VOTES)
			continue;
		if (best) /* two slots hold the name for every known handle: ambiguous, use none */
			return NULL;
		best = l;
	}
	return best;
}

int midname__ready(const struct midname *m)
{
	for (int i = 0; i < m->n; i++)
		if (usable(m, m->l[i].tag))
			return 1;
	return 0;
}

int midname__resolve(struct midname *m, uint32_t pid, uint64_t handle, char *buf, size_t len)
{
	const struct layout *l;
	uint64_t q[MN_SLOTS];
	long r;
	int e;

	if (!midname__ready(m))
		return -EAGAIN;
	if (len > MN_MAX_NAME)
		len = MN_MAX_NAME;
	r = m->read(m->ctx, pid, handle, q, sizeof(q));
	if (r != (long)sizeof(q))
		return r < 0 ? (int)r : -ENOENT;
	l = usable(m, q[0]);
	if (!l)
		return -EAGAIN; /* nothing learned for this kind (yet) */
	e = user_ptr(q[l->slot]) ? read_str(m, pid, q[l->slot], buf, len) : -ENOENT;
	if (!e && !plausible(buf, strlen(buf)))
		e = -ENOENT;
	if (e)
		m->st.rejected++;
	else
		m->st.resolved++;
	return e;
}

struct midname_stats midname__stats(const struct midname *m)
{
	return m->st;
}

static uint64_t note_key(uint32_t pid, uint64_t handle)
{
	return handle ^ ((uint64_t)pid << 47); /* user pointers stay below 2^47 */
}

/* The note of (pid, img, handle), made when absent and make is set; NULL when another
 * handle holds its key or the table is full (then it is read on demand). */
static struct note *note_get(struct midname *m, uint32_t pid, uint32_t img, uint64_t handle, bool make)
{
	struct note *n = u64map__get(m->notes, note_key(pid, handle));

	if (n && n->pid == pid && n->img == img && n->handle == handle)
		return n;
	if (n || !make || u64map__size(m->notes) >= MN_MAX_NOTES)
		return NULL;
	n = calloc(1, sizeof(*n));
	if (!n || u64map__put(m->notes, note_key(pid, handle), n)) {
		free(n);
		return NULL;
	}
	*n = (struct note){ .pid = pid, .img = img, .handle = handle };
	return n;
}

/* Reads a note's name if a layout allows: -EAGAIN when none does yet. */
static int note_read(struct midname *m, struct note *n)
{
	char buf[MN_MAX_NAME];
	int r;

	if (n->name || n->none)
		return 0;
	r = midname__resolve(m, n->pid, n->handle, buf, sizeof(buf));
	if (r == -EAGAIN)
		return r;
	if (!r)
		n->name = strdup(buf);
	n->none = !n->name;
	return 0;
}

static void notes_retry(struct midname *m)
{
	uint64_t k;
	void *v;

	for (size_t it = 0; u64map__next(m->notes, &it, &k, &v);)
		note_read(m, v);
}

void midname__note(struct midname *m, uint32_t pid, uint32_t img, uint64_t handle)
{
	struct note *n = note_get(m, pid, img, handle, true);

	if (n)
		note_read(m, n);
}

int midname__name(struct midname *m, uint32_t pid, uint32_t img, uint64_t handle, char *buf, size_t len)
{
	struct note *n = note_get(m, pid, img, handle, true);

	if (!n)
		return midname__resolve(m, pid, handle, buf, len);
	if (note_read(m, n))
		return -EAGAIN;
	if (!n->name)
		return -ENOENT;
	snprintf(buf, len, "%s", n->name);
	return 0;
}

void midname__forget(struct midname *m, uint32_t pid, const uint32_t *img)
{
	uint64_t doomed[256], k;
	size_t n;
	void *v;

	do {
		n = 0;
		for (size_t it = 0; n < 256 && u64map__next(m->notes, &it, &k, &v);)
			if (((struct note *)v)->pid == pid && (!img || ((struct note *)v)->img == *img))
				doomed[n++] = k;
		for (size_t i = 0; i < n; i++)
			note_free(u64map__del(m->notes, doomed[i]));
	} while (n == 256);
}
