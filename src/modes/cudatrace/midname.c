/* SPDX-License-Identifier: BSD-3-Clause */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "gpuprobe.h"
#include "modes/cudatrace/midname.h"
#include "lib/u64map.h"
#include "lib/util.h"

struct layout {
	uint32_t build, uid;
	uint64_t tag;
	unsigned int slot;
	uint64_t votes;
	bool contradicted; /* a known handle of this uid with this tag held another name there */
	bool seeded;       /* from the state file */
	bool hinted;       /* usable as the hints were last made (midname__hints_gen) */
	int told;          /* 0 nothing, 1 usable, 2 contradicted: as last told (take_changed) */
};

/* A handle's object as BPF copied it at the handle's first sight (struct mn_copy, kept):
 * only the strings that could be a name (plausible), each its own allocation. */
struct kept {
	uint32_t build, uid;
	uint64_t q[MN_SLOTS];
	char *str[MN_SLOTS];
	bool had[MN_SLOTS]; /* the copy held a string there (kept only when it could be a name) */
	size_t bytes;
};

/* A handle to name: read when a layout allows (its result kept) */
struct note {
	uint32_t pid, img;
	uint64_t handle;
	char *name;  /* NULL: not read yet */
	bool none;   /* read: no name there */
	bool waited; /* tried while no layout was usable: unnamed for want of one */
	bool unread; /* its name was neither copied nor readable: the process was gone */
	struct kept *cp; /* its object at its first sight; NULL: read live */
};

struct midname {
	mn_read_fn read;
	mn_who_fn who;
	void *ctx;
	bool changed;
	struct layout l[MN_LAYOUTS];
	int n;
	struct midname_stats st;
	struct u64map *notes; /* note_key -> struct note */
	size_t kept_bytes;    /* of the notes' copies: at most MN_COPY_BYTES */
	uint64_t hints_gen;   /* moves when the usable layouts may have changed */
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

static void kept_free(struct kept *k)
{
	for (unsigned int s = 0; k && s < MN_SLOTS; s++)
		free(k->str[s]);
	free(k);
}

static void note_free(void *v)
{
	if (v) {
		free(((struct note *)v)->name);
		kept_free(((struct note *)v)->cp);
	}
	free(v);
}

/* The midname whose notes are being freed (u64map's free callback has no context). */
static struct midname *freeing;

static void note_free_counted(void *v)
{
	if (v && ((struct note *)v)->cp && freeing)
		freeing->kept_bytes -= ((struct note *)v)->cp->bytes;
	note_free(v);
}

void midname__free(struct midname *m)
{
	if (!m)
		return;
	u64map__free_all(m->notes, note_free);
	free(m);
}

/* A user-space pointer (GP_USER_ADDR_BITS: x86-64's 2^47, arm64's 2^48), not NULL, not a
 * small integer. */
static bool user_ptr(uint64_t v)
{
	return v >= 0x10000 && v < (1ULL << GP_USER_ADDR_BITS);
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

void midname__set_who(struct midname *m, mn_who_fn who)
{
	m->who = who;
}

/* pid's build and uid; without a way to tell, all processes are one (build 0, uid 0). */
static void who(struct midname *m, uint32_t pid, uint32_t *build, uint32_t *uid)
{
	*build = 0;
	*uid = 0;
	if (m->who && m->who(m->ctx, pid, build, uid)) {
		*build = 0;
		*uid = UINT32_MAX;
	}
}

static struct layout *find(struct midname *m, uint32_t build, uint64_t tag, unsigned int slot, uint32_t uid)
{
	for (int i = 0; i < m->n; i++)
		if (m->l[i].build == build && m->l[i].tag == tag && m->l[i].slot == slot && m->l[i].uid == uid)
			return &m->l[i];
	return NULL;
}

/* The entry, made when absent: NULL (counted) when the table or the uid's share is full,
 * so one user's forged handles cannot crowd out the layouts of the others. */
static struct layout *layout_of(struct midname *m, uint32_t build, uint64_t tag, unsigned int slot, uint32_t uid)
{
	struct layout *l = find(m, build, tag, slot, uid);
	int mine = 0;

	if (l)
		return l;
	for (int i = 0; i < m->n; i++)
		mine += m->l[i].build == build && m->l[i].uid == uid;
	if (m->n == MN_LAYOUTS || mine >= MN_PER_UID || uid == UINT32_MAX) {
		m->st.full++;
		return NULL;
	}
	m->l[m->n] = (struct layout){ .build = build, .uid = uid, .tag = tag, .slot = slot };
	return &m->l[m->n++];
}

static bool ok(const struct layout *l)
{
	return l && !l->contradicted && l->votes >= MN_MIN_VOTES;
}

/* Whether slot is the rule of tag in build for a process of uid (midname.h: whose lessons
 * it may use). */
static bool trusted(const struct midname *m, uint32_t build, uint64_t tag, unsigned int slot, uint32_t uid)
{
	const struct layout *own = NULL, *root = NULL;

	for (int i = 0; i < m->n; i++) {
		const struct layout *l = &m->l[i];

		if (l->build != build || l->tag != tag || l->slot != slot)
			continue;
		if (l->uid == uid)
			own = l;
		if (l->uid == 0)
			root = l;
	}
	if ((own && own->contradicted) || (root && root->contradicted))
		return false;
	/* no "several users agree": whoever holds two uids (a container's root can setuid)
	 * would be several users */
	return ok(own) || ok(root);
}

/* The one slot usable for (build, tag) by uid: 0 when none, or when two are (ambiguous). */
static unsigned int usable(const struct midname *m, uint32_t build, uint64_t tag, uint32_t uid)
{
	unsigned int best = 0;

	for (unsigned int s = 1; s < MN_SLOTS; s++) {
		if (!trusted(m, build, tag, s, uid))
			continue;
		if (best) /* two slots hold the name for every known handle: ambiguous, use none */
			return 0;
		best = s;
	}
	return best;
}

/* Something to save: an entry of a known build that became usable or broke. */
static void mark(struct midname *m, struct layout *l)
{
	int now = l->contradicted ? 2 : l->votes >= MN_MIN_VOTES;

	if (ok(l) != l->hinted) { /* the hints change only when a layout's use does */
		l->hinted = ok(l);
		m->hints_gen++;
	}
	if (l->build && now != l->told) {
		l->told = now;
		m->changed = true;
	}
}

void midname__seed(struct midname *m, const struct mn_layout *s)
{
	struct layout *l;

	if (!s->build || !s->slot || s->slot >= MN_SLOTS)
		return;
	l = layout_of(m, s->build, s->tag, s->slot, s->uid);
	if (!l || l->contradicted)
		return;
	if (l->votes < MN_MIN_VOTES)
		l->votes = MN_MIN_VOTES;
	l->seeded = true;
	l->told = 1; /* in the file already */
	m->st.seeded++;
	if (!l->hinted) {
		l->hinted = true;
		m->hints_gen++;
	}
}

size_t midname__export(const struct midname *m, struct mn_layout *out, size_t cap)
{
	size_t n = 0;

	for (int i = 0; i < m->n && n < cap; i++) {
		const struct layout *l = &m->l[i];

		if (l->build && (l->contradicted || l->votes >= MN_MIN_VOTES))
			out[n++] = (struct mn_layout){ .build = l->build, .uid = l->uid, .tag = l->tag,
						       .slot = l->slot, .contradicted = l->contradicted };
	}
	return n;
}

int midname__take_changed(struct midname *m)
{
	bool c = m->changed;

	m->changed = false;
	return c;
}

static void notes_retry(struct midname *m);

/* A handle's object, as read live or as BPF copied it: its qwords, and whether the
 * string slot s points to is exactly `want` bytes equal to mangled and its NUL. */
struct view {
	struct midname *m;
	uint32_t pid;
	const struct mn_copy *c; /* NULL: the process's memory */
	char *scratch;           /* want bytes, for a live read */
};

/* 1: it is; 0: it is not; -1: not known (a copy without that slot's string, BPF could not
 * read it: a page not present then; and the process's memory no longer has it). */
static int view_holds(const struct view *v, const uint64_t *q, unsigned int s, const char *mangled, size_t want)
{
	long r;

	if (!user_ptr(q[s]))
		return 0;
	if (v->c && v->c->str[s])
		return strnlen(v->c->str[s], want) + 1 == want && !memcmp(v->c->str[s], mangled, want);
	r = v->m->read(v->m->ctx, v->pid, q[s], v->scratch, want);
	if (v->c && r < 0)
		return -1;
	return r == (long)want && !memcmp(v->scratch, mangled, want);
}

/* The votes of one known handle (its object q, seen through v) for (build, uid). */
static void learn_from(struct midname *m, const struct view *v, const uint64_t *q, uint32_t build, uint32_t uid,
		       const char *mangled, size_t want)
{
	bool voted = false;

	for (unsigned int j = 1; j < MN_SLOTS; j++) {
		struct layout *l;

		if (view_holds(v, q, j, mangled, want) != 1)
			continue;
		l = layout_of(m, build, q[0], j, uid);
		if (l) {
			l->votes++;
			voted = true;
			mark(m, l);
			if (l->votes == MN_MIN_VOTES && !l->seeded)
				gp_log(GP_LOG_DEBUG, "kernel-handle layout (build %u, tag 0x%" PRIx64 ", slot %u, uid %u) learned from a handle %s",
				       build, q[0], j, uid, v->c ? "copied at its first sight" : "read live");
		}
	}
	/* a layout of this tag that this handle does not follow is not a rule (for its uid) */
	for (unsigned int slot = 1; slot < MN_SLOTS; slot++) {
		struct layout *l;
		bool known = false;

		for (int i = 0; i < m->n && !known; i++)
			known = m->l[i].build == build && m->l[i].tag == q[0] && m->l[i].slot == slot;
		if (!known || view_holds(v, q, slot, mangled, want) != 0)
			continue;
		l = layout_of(m, build, q[0], slot, uid);
		if (l && !l->contradicted) {
			l->contradicted = true;
			mark(m, l);
			gp_log(GP_LOG_DEBUG, "kernel-handle layout (build %u, tag 0x%" PRIx64 ", slot %u, uid %u) contradicted: a handle %s named (%zu bytes) does not hold its name there",
			       build, q[0], slot, uid, v->c ? "copied and" : "read live and", want - 1);
		}
	}
	if (voted) {
		m->st.learned++;
		notes_retry(m);
	} else {
		m->st.unlearned++;
	}
}

void midname__learn(struct midname *m, uint32_t pid, uint64_t handle, const char *mangled)
{
	uint64_t q[MN_SLOTS];
	size_t want = strlen(mangled) + 1;
	char *s = malloc(want);
	struct view v = { m, pid, NULL, s };
	uint32_t build, uid;

	if (!s || want > MN_MAX_NAME || m->read(m->ctx, pid, handle, q, sizeof(q)) != (long)sizeof(q)) {
		free(s);
		return;
	}
	who(m, pid, &build, &uid);
	learn_from(m, &v, q, build, uid, mangled, want);
	free(s);
}

void midname__learn_copy(struct midname *m, uint32_t pid, const char *mangled, const struct mn_copy *c)
{
	size_t want = strlen(mangled) + 1;
	char *s = malloc(want);
	struct view v = { m, pid, c, s };

	if (s && c->obj_ok && want <= MN_MAX_NAME && c->uid != UINT32_MAX) {
		m->st.learned_copy++;
		learn_from(m, &v, c->q, c->build, c->uid, mangled, want);
	}
	free(s);
}

int midname__ready(const struct midname *m)
{
	for (int i = 0; i < m->n; i++)
		if (usable(m, m->l[i].build, m->l[i].tag, m->l[i].uid))
			return 1;
	return 0;
}

int midname__resolve(struct midname *m, uint32_t pid, uint64_t handle, char *buf, size_t len)
{
	uint64_t q[MN_SLOTS];
	uint32_t build, uid;
	unsigned int slot;
	long r;
	int e;

	if (!m->n)
		return -EAGAIN;
	if (len > MN_MAX_NAME)
		len = MN_MAX_NAME;
	r = m->read(m->ctx, pid, handle, q, sizeof(q));
	if (r != (long)sizeof(q))
		return -ESRCH; /* the handle's object is unreadable (the process may be gone) */
	who(m, pid, &build, &uid);
	slot = usable(m, build, q[0], uid);
	if (!slot)
		return -EAGAIN; /* nothing learned for this build and kind (yet) */
	e = user_ptr(q[slot]) ? read_str(m, pid, q[slot], buf, len) : -ENOENT;
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
	return handle ^ ((uint64_t)pid << GP_USER_ADDR_BITS); /* user pointers stay below */
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

/* A note's name from its copy: as midname__resolve, the object and the string being
 * those BPF copied at the handle's first sight; -ENODATA when the string of the slot the
 * layout names was not copied (the process's memory may still have it). */
static int resolve_copy(struct midname *m, const struct kept *k, char *buf, size_t len)
{
	unsigned int slot = usable(m, k->build, k->q[0], k->uid);

	if (!slot)
		return -EAGAIN;
	if (!k->str[slot] && !k->had[slot])
		return -ENODATA;
	if (!k->str[slot]) { /* copied, and not a symbol name */
		m->st.rejected++;
		return -ENOENT;
	}
	if (strlen(k->str[slot]) >= len || !plausible(k->str[slot], strlen(k->str[slot]))) {
		m->st.rejected++;
		return -ENOENT;
	}
	snprintf(buf, len, "%s", k->str[slot]);
	m->st.resolved++;
	m->st.from_copy++;
	return 0;
}

static void drop_kept(struct midname *m, struct note *n)
{
	if (n->cp)
		m->kept_bytes -= n->cp->bytes;
	kept_free(n->cp);
	n->cp = NULL;
}

/* Reads a note's name if a layout allows: -EAGAIN when none does yet. */
static int note_read(struct midname *m, struct note *n)
{
	char buf[MN_MAX_NAME];
	int r = -ENODATA;

	if (n->name || n->none)
		return 0;
	if (n->cp)
		r = resolve_copy(m, n->cp, buf, sizeof(buf));
	if (r == -ENODATA)
		r = midname__resolve(m, n->pid, n->handle, buf, sizeof(buf));
	/* a handle noted while no layout was usable, whose process is gone by the report:
	 * still unnamed for want of a layout, not "read and found none" */
	if (r == -EAGAIN || (r == -ESRCH && n->waited && !n->cp)) {
		if (!n->waited && n->cp)
			gp_log(GP_LOG_DEBUG, "PID %u handle 0x%" PRIx64 ": no usable layout for its copy (build %u, tag 0x%" PRIx64 ", uid %u; strings copied at slots %s%s%s%s%s%s%s)",
			       n->pid, n->handle, n->cp->build, n->cp->q[0], n->cp->uid, n->cp->had[1] ? "1" : "-",
			       n->cp->had[2] ? "2" : "-", n->cp->had[3] ? "3" : "-", n->cp->had[4] ? "4" : "-",
			       n->cp->had[5] ? "5" : "-", n->cp->had[6] ? "6" : "-", n->cp->had[7] ? "7" : "-");
		n->waited = true;
		return -EAGAIN;
	}
	if (!r)
		n->name = strdup(buf);
	n->none = !n->name;
	/* neither copied nor readable now: the process went before its name was read */
	n->unread = r == -ESRCH;
	m->st.unread += n->unread;
	drop_kept(m, n);
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

/* What of a copy a note keeps: the qwords, and the strings that could be a name; NULL
 * when that would pass MN_COPY_BYTES (counted: the note is then read live). */
static struct kept *keep_copy(struct midname *m, const struct mn_copy *c)
{
	struct kept *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->build = c->build;
	k->uid = c->uid;
	memcpy(k->q, c->q, sizeof(k->q));
	k->bytes = sizeof(*k);
	for (unsigned int s = 1; s < MN_SLOTS; s++) {
		size_t n = c->str[s] ? strnlen(c->str[s], MN_MAX_NAME) : 0;

		k->had[s] = c->str[s] != NULL;
		if (!n || n == MN_MAX_NAME || !plausible(c->str[s], n))
			continue;
		k->str[s] = strndup(c->str[s], n);
		k->bytes += n + 1;
		if (!k->str[s]) {
			kept_free(k);
			return NULL;
		}
	}
	if (m->kept_bytes + k->bytes > MN_COPY_BYTES) {
		m->st.copies_dropped++;
		kept_free(k);
		return NULL;
	}
	m->kept_bytes += k->bytes;
	return k;
}

void midname__note_copy(struct midname *m, uint32_t pid, uint32_t img, uint64_t handle, const struct mn_copy *c)
{
	struct note *n = note_get(m, pid, img, handle, true);

	if (!n)
		return;
	m->st.copied++;
	if (c->obj_ok && c->uid != UINT32_MAX && !n->cp && !n->name && !n->none)
		n->cp = keep_copy(m, c);
	note_read(m, n);
}

size_t midname__hints(const struct midname *m, struct mn_hint *out, size_t cap)
{
	size_t n = 0;

	for (int i = 0; i < m->n; i++) {
		const struct layout *l = &m->l[i];
		size_t j;

		if (!ok(l))
			continue;
		for (j = 0; j < n && !(out[j].tag == l->tag && out[j].uid == l->uid); j++)
			;
		if (j == n) {
			if (n == cap)
				continue;
			out[n++] = (struct mn_hint){ .tag = l->tag, .uid = l->uid };
		}
		out[j].mask |= 1u << l->slot;
	}
	return n;
}

uint64_t midname__hints_gen(const struct midname *m)
{
	return m->hints_gen;
}

int midname__name(struct midname *m, uint32_t pid, uint32_t img, uint64_t handle, char *buf, size_t len)
{
	struct note *n = note_get(m, pid, img, handle, true);

	int r;

	if (!n) {
		r = midname__resolve(m, pid, handle, buf, len);
		return r == -EAGAIN ? -ENODATA : r;
	}
	if (note_read(m, n))
		return -ENODATA;
	if (!n->name)
		return n->unread ? -ESRCH : -ENOENT;
	snprintf(buf, len, "%s", n->name);
	return 0;
}

struct whose { uint32_t pid; const uint32_t *img; };

static bool of_whose(void *ctx, uint64_t key, void *v)
{
	const struct whose *w = ctx;

	(void)key;
	return ((struct note *)v)->pid == w->pid && (!w->img || ((struct note *)v)->img == *w->img);
}

void midname__forget(struct midname *m, uint32_t pid, const uint32_t *img)
{
	struct whose w = { pid, img };

	freeing = m;
	u64map__delete_if(m->notes, of_whose, &w, note_free_counted);
	freeing = NULL;
}
