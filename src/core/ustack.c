/* SPDX-License-Identifier: BSD-3-Clause */
/* ustack: see ustack.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "lib/procpin.h"
#include "lib/pystack.h"
#include "lib/symbolize.h"
#include "lib/u64map.h"
#include "lib/unwind.h"
#include "core/ustack.h"
#include "lib/util.h"

#define CACHE_SLOTS 16384            /* named native frames, direct-mapped by (pid, pc) */
#define MAX_PROCS 4096               /* processes looked at (gp_py_procs holds as many) */
#define WAIT_NS (5ull * 1000000000)  /* how long a python* waits for its libpython */
#define RETRY_NS (2ull * 1000000)    /* between two looks at a waiting process */
#define SWEEP_NS (5ull * 1000000000) /* between two sweeps of exited processes */
#define PIN_REFRESH_NS (100ull * 1000000) /* between two takes of a live process's maps */
#define PIN_MISS_NS (2ull * 1000000)      /* the same, for a pc outside what was kept */
#define PIN_HOLD_NS (60ull * 1000000000)  /* the longest a reader behind holds dead processes' */
#define EVAL_FN "_PyEval_EvalFrameDefault"

enum py_state { PY_UNKNOWN, PY_YES, PY_NO, PY_WAIT, PY_FAILED };

struct pyproc {
	enum py_state state;
	uint64_t deadline_ns, next_ns;
	struct gp_py_proc pp;
};

struct fslot {
	uint64_t pc;
	uint32_t pid;
	bool ret;
	char *text;
};

struct ustack {
	struct symbolizer *sym;
	struct unwinder *uw;
	struct pystack *ps;
	struct procpin *pin; /* maps and files kept while processes live */
	uint64_t next_pin_sweep_ns;
	uint64_t behind_ns; /* since when the reader has been behind (ustack__reader_behind; 0: not) */
	char *proc_root;
	int py_fd;
	struct u64map *procs; /* pid -> struct pyproc */
	uint64_t next_sweep_ns;
	struct fslot *cache;
	char *arena; /* this call's frame texts */
	size_t used;
	struct unwind_frames uf;
	struct ustack_stats st;
	bool said_refused;
	struct ustack_pending *pending; /* ustack__from_copy's */
	struct gp_py_stack *py_scratch;  /* ustack__finish's */
};

struct ustack *ustack__new(struct symbolizer *sym, const char *proc_root, int py_map_fd)
{
	struct ustack *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->sym = sym;
	u->py_fd = py_map_fd;
	u->proc_root = strdup(proc_root ? proc_root : "/proc");
	u->uw = unwinder__new(proc_root);
	u->ps = pystack__new(proc_root);
	u->pin = procpin__new(proc_root);
	u->procs = u64map__new();
	u->cache = calloc(CACHE_SLOTS, sizeof(*u->cache));
	u->arena = malloc((size_t)USTACK_MAX_FRAMES * USTACK_FRAME_MAX);
	u->pending = malloc(sizeof(*u->pending));
	u->py_scratch = malloc(sizeof(*u->py_scratch));
	if (!u->proc_root || !u->uw || !u->ps || !u->pin || !u->procs || !u->cache || !u->arena || !u->pending ||
	    !u->py_scratch) {
		ustack__free(u);
		return NULL;
	}
	unwinder__set_pin(u->uw, u->pin);
	symbolizer__set_pin(u->sym, u->pin);
	return u;
}

void ustack__free(struct ustack *u)
{
	if (!u)
		return;
	for (size_t i = 0; u->cache && i < CACHE_SLOTS; i++)
		free(u->cache[i].text);
	free(u->cache);
	free(u->arena);
	free(u->pending);
	free(u->py_scratch);
	u64map__free_all(u->procs, NULL);
	pystack__free(u->ps);
	unwinder__free(u->uw);
	symbolizer__set_pin(u->sym, NULL);
	procpin__free(u->pin);
	free(u->proc_root);
	free(u);
}

void ustack__stats(const struct ustack *u, struct ustack_stats *st)
{
	struct procpin_stats ps = { 0 };

	*st = u->st;
	procpin__stats(u->pin, &ps);
	st->kept_procs = ps.procs_kept;
	st->kept_files = ps.files_open;
	st->unkept_files = ps.files_unkept + ps.files_failed;
	st->unkept_procs = ps.procs_unkept;
	{
		struct pystack_copy_stats cs;

		pystack__copy_stats(u->ps, &cs);
		st->py_copies = cs.copies;
		st->py_copies_refused = cs.refused;
		st->py_copies_malformed = cs.malformed;
		st->py_named_from_copy = cs.named;
	}
}

/* One line the first time copies are refused (the limits of pystack.h). */
static void said_refused(struct ustack *u, uint32_t pid, int r)
{
	if (r != -ENOSPC && r != -EEXIST)
		return;
	if (!u->said_refused)
		gp_log(GP_LOG_WARN, "PID %u: a Python code object's copy not kept (%s): frames of code objects "
		       "not kept are named only while their process lives (counted)", pid,
		       r == -ENOSPC ? "16384 copies or 32 MiB of line tables are kept" : "its key is another's");
	u->said_refused = true;
}

void ustack__py_code(struct ustack *u, const struct gp_pycode_event *e)
{
	if (u)
		said_refused(u, e->pid, pystack__add_code(u->ps, (int)e->pid, &e->c));
}

void ustack__py_lines(struct ustack *u, const struct gp_pylines_event *e)
{
	if (u)
		pystack__add_lines(u->ps, (int)e->pid, &e->l);
}

/* ---- what naming frames needs after the process is gone ---- */

/*
 * Keeps pid's maps and files (procpin) while it lives: at its first stack (its start-up
 * libraries are mapped by then; an exec's early maps would not hold them), again when a
 * pc of a stack lies outside what was kept (a library loaded since; that pc's file is
 * opened first) and, at most every PIN_REFRESH_NS, at later stacks. What the unwinder and the symbolizer cached of the
 * process is read again when something new was kept, so that the kept files are open
 * (and their separate debug files found) before the process can go.
 */
static void pin(struct ustack *u, uint32_t pid, const uint64_t *pcs, unsigned int n)
{
	uint64_t taken = procpin__taken_ns(u->pin, (int)pid), kept, t0;
	struct procpin_stats st;
	unsigned int unkept, i;
	int r;

	for (i = 0; i < n && procpin__covers(u->pin, (int)pid, pcs[i]); i++)
		;
	/* a pc outside what was kept: taken again, but not more often than PIN_MISS_NS (a
	 * garbage return address must not cost a read of maps per stack) */
	if (taken && (procpin__gone(u->pin, (int)pid) ||
		      gp_mono_ns() - taken < (i == n ? PIN_REFRESH_NS : PIN_MISS_NS)))
		return;
	t0 = gp_mono_ns();
	procpin__stats(u->pin, &st);
	kept = st.files_kept;
	unkept = procpin__unkept(u->pin, (int)pid);
	r = procpin__take(u->pin, (int)pid, i < n ? pcs[i] : 0);
	if (r == -ENOSPC)
		gp_log(GP_LOG_WARN, "PID %u: its maps and files not kept (%d processes are): its frames are "
		       "named only while it lives", pid, PROCPIN_MAX_PIDS);
	if (r)
		return;
	if (procpin__unkept(u->pin, (int)pid) > unkept) {
		unsigned int per_pid, total;

		procpin__limits(u->pin, &per_pid, &total);
		gp_log(GP_LOG_WARN, "PID %u: %u of the files it maps executable not kept (at most %u a process, "
		       "%u in all, or not openable): frames in them are not named if it exits first", pid,
		       procpin__unkept(u->pin, (int)pid), per_pid, total);
	}
	procpin__stats(u->pin, &st);
	if (!taken || st.files_kept != kept) {
		symbolizer__forget_pid(u->sym, (int)pid);
		unwinder__prepare(u->uw, (int)pid);
		gp_log(GP_LOG_DEBUG, "PID %u: maps and %llu more files kept for after its exit in %.1f ms", pid,
		       (unsigned long long)(st.files_kept - kept), (gp_mono_ns() - t0) / 1e6);
	}
}

void ustack__pin(struct ustack *u, uint32_t pid)
{
	if (u && pid)
		pin(u, pid, NULL, 0);
}

void ustack__reader_behind(struct ustack *u, bool behind)
{
	if (u && !behind)
		u->behind_ns = 0;
	else if (u && !u->behind_ns)
		u->behind_ns = gp_mono_ns();
}

/* Processes gone for SWEEP_NS without an exit record (never allocated, or not followed):
 * what they kept goes. Not while the reader is behind (PIN_HOLD_NS at most): a process
 * kept at its first allocation call (ustack__pin) may be gone for seconds before the
 * reader gets to its stacks, and its exit record, which lets it go, comes after them. */
static void sweep_pins(struct ustack *u, uint64_t now)
{
	int gone[256];
	size_t n;

	if (now < u->next_pin_sweep_ns || (u->behind_ns && now - u->behind_ns < PIN_HOLD_NS))
		return;
	u->next_pin_sweep_ns = now + SWEEP_NS;
	n = procpin__dead(u->pin, now, SWEEP_NS, gone, 256);
	for (size_t i = 0; i < n; i++)
		ustack__forget(u, (uint32_t)gone[i], 0);
}

/* ---- CPython processes ---- */

/* Whether the process runs a python* executable (a string read: nothing is opened). */
static bool exe_is_python(const struct ustack *u, uint32_t pid)
{
	char path[64], link[4096];
	const char *base;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%u/exe", u->proc_root, pid);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = '\0';
	base = strrchr(link, '/');
	return !strncmp(base ? base + 1 : link, "python", 6);
}

static void inspect(struct ustack *u, uint32_t pid, struct pyproc *p)
{
	char ver[32] = "", why[256] = "";
	uint64_t now = gp_mono_ns();
	int r;

	u->st.inspected++;
	r = pystack__inspect(u->ps, (int)pid, &p->pp, ver, sizeof(ver), why, sizeof(why));
	if (!r && bpf_map_update_elem(u->py_fd, &pid, &p->pp, BPF_ANY) == 0) {
		p->state = PY_YES;
		u->st.python_procs++;
		gp_log(GP_LOG_DEBUG, "PID %u: CPython %s: Python frames on", pid, ver);
		return;
	}
	if (!r) {
		p->state = PY_FAILED;
		gp_log(GP_LOG_WARN, "PID %u: CPython %s: no Python frames (the BPF map is full)", pid, ver);
		return;
	}
	/* a python* between its exec and the mapping of its libpython: look again */
	if (r == -ENOENT && (p->state == PY_WAIT ? now < p->deadline_ns : exe_is_python(u, pid))) {
		if (p->state != PY_WAIT)
			p->deadline_ns = now + WAIT_NS;
		p->state = PY_WAIT;
		p->next_ns = now + RETRY_NS;
		return;
	}
	p->state = r == -ENOENT || r == -ESRCH ? PY_NO : PY_FAILED;
	if (p->state == PY_FAILED)
		gp_log(GP_LOG_WARN, "PID %u: no Python frames: %s", pid, why);
}

static void drop_proc(struct ustack *u, uint32_t pid)
{
	struct pyproc *p = u64map__del(u->procs, pid);

	if (p && p->state == PY_YES)
		bpf_map_delete_elem(u->py_fd, &pid);
	free(p);
}

/* Processes gone without an exit record: out of the table and the BPF map. */
static void sweep(struct ustack *u)
{
	uint32_t gone[256];
	uint64_t pid;
	size_t n = 0;
	void *v;

	for (size_t it = 0; n < 256 && u64map__next(u->procs, &it, &pid, &v);)
		if (kill((pid_t)pid, 0) && errno == ESRCH)
			gone[n++] = (uint32_t)pid;
	/* what was kept to name their frames stays for records still in the ring (sweep_pins) */
	for (size_t i = 0; i < n; i++)
		ustack__gone(u, gone[i]);
}

static struct pyproc *proc_of(struct ustack *u, uint32_t pid)
{
	struct pyproc *p = u64map__get(u->procs, pid);

	if (p)
		return p;
	if (u64map__size(u->procs) >= MAX_PROCS) {
		sweep(u);
		if (u64map__size(u->procs) >= MAX_PROCS)
			return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (p && u64map__put(u->procs, pid, p)) {
		free(p);
		p = NULL;
	}
	return p;
}

void ustack__watch(struct ustack *u, uint32_t pid)
{
	struct pyproc *p;

	if (!u || u->py_fd < 0 || !pid)
		return;
	p = proc_of(u, pid);
	if (p && (p->state == PY_UNKNOWN || p->state == PY_WAIT))
		inspect(u, pid, p);
}

/* pid's maps and files were kept after ts_ns (CLOCK_MONOTONIC): by a process or image that
 * began after an event of that time, read late (ustack__pin). */
static bool kept_since(const struct ustack *u, uint32_t pid, uint64_t ts_ns)
{
	uint64_t taken = procpin__taken_ns(u->pin, (int)pid);

	return ts_ns && taken > ts_ns;
}

void ustack__exec(struct ustack *u, uint32_t pid, bool followed, uint64_t ts_ns)
{
	if (!u)
		return;
	ustack__forget(u, pid, ts_ns);
	if (followed || exe_is_python(u, pid))
		ustack__watch(u, pid);
}

void ustack__fork(struct ustack *u, uint32_t parent, uint32_t child, uint64_t ts_ns)
{
	struct pyproc *pp, *cp;

	if (!u)
		return;
	/* a new process: whatever an old one of this PID kept is not its (what the child
	 * kept itself, its first allocation's pin read before this record, is) */
	if (!kept_since(u, child, ts_ns))
		procpin__release(u->pin, (int)child);
	if (u->py_fd < 0)
		return;
	pp = u64map__get(u->procs, parent);
	if (!pp || pp->state != PY_YES) {
		ustack__watch(u, child);
		return;
	}
	/* the same address space: the parent's offsets, at once (no file read) */
	cp = proc_of(u, child);
	if (cp && bpf_map_update_elem(u->py_fd, &child, &pp->pp, BPF_ANY) == 0) {
		cp->pp = pp->pp;
		cp->state = PY_YES;
		u->st.python_procs++;
	}
}

size_t ustack__tick(struct ustack *u)
{
	uint64_t now = gp_mono_ns(), pid;
	size_t waiting = 0;
	void *v;

	if (u)
		sweep_pins(u, now);
	if (!u || u->py_fd < 0)
		return 0;
	for (size_t it = 0; u64map__next(u->procs, &it, &pid, &v);) {
		struct pyproc *p = v;

		if (p->state == PY_WAIT && now >= p->next_ns)
			inspect(u, (uint32_t)pid, p);
		waiting += p->state == PY_WAIT;
	}
	if (now >= u->next_sweep_ns) {
		sweep(u);
		u->next_sweep_ns = now + SWEEP_NS;
	}
	return waiting;
}

void ustack__forget(struct ustack *u, uint32_t pid, uint64_t ts_ns)
{
	if (!u || kept_since(u, pid, ts_ns))
		return;
	ustack__gone(u, pid);
	procpin__release(u->pin, (int)pid);
	pystack__forget_copies(u->ps, (int)pid);
}

void ustack__gone(struct ustack *u, uint32_t pid)
{
	if (!u)
		return;
	drop_proc(u, pid);
	pystack__forget_pid(u->ps, (int)pid);
	unwinder__forget_pid(u->uw, (int)pid);
	for (size_t i = 0; i < CACHE_SLOTS; i++) {
		if (u->cache[i].text && u->cache[i].pid == pid) {
			free(u->cache[i].text);
			u->cache[i].text = NULL;
		}
	}
}

/* ---- frames ---- */

/* The text of a frame into this call's arena (cut at USTACK_FRAME_MAX). */
static const char *keep(struct ustack *u, const char *s)
{
	size_t n = strnlen(s, USTACK_FRAME_MAX - 1), cap = (size_t)USTACK_MAX_FRAMES * USTACK_FRAME_MAX;
	char *d;

	if (u->used + n + 1 > cap)
		return "[...]";
	d = u->arena + u->used;
	memcpy(d, s, n);
	d[n] = '\0';
	u->used += n + 1;
	return d;
}

/* "0x7f.. (lib)" with a name from libdwfl: "name+0x1a (lib)". */
static void name_from_dwfl(struct ustack *u, uint32_t pid, uint64_t pc, char *buf, size_t len)
{
	char name[USTACK_FRAME_MAX], rest[USTACK_FRAME_MAX];
	const char *lib = strstr(buf, " (");
	size_t n;

	if (!lib || unwinder__symbol(u->uw, (int)pid, pc, name, sizeof(name)))
		return;
	snprintf(rest, sizeof(rest), "%s", lib);
	n = strnlen(name, len - 1);
	memcpy(buf, name, n);
	snprintf(buf + n, len - n, "%s", rest);
}

/*
 * "func+0x1a (lib) at file.c:42"; ret: a return address (its line is the call's). Where
 * DWARF says functions were inlined at pc, one line a frame, innermost first:
 * "inlined [inlined] (lib) at file.c:8\n...\nfunc+0x1a (lib) at file.c:28".
 */
static void name_native(struct ustack *u, uint32_t pid, uint64_t pc, bool ret, char *buf,
			size_t len, bool *unresolved)
{
	struct unwind_loc locs[UNWIND_MAX_INLINE];
	char real[USTACK_FRAME_MAX], name[USTACK_FRAME_MAX];
	const char *lib;
	size_t n = 0;
	int r, nl;

	r = symbolizer__format(u->sym, (int)pid, pc, real, sizeof(real));
	*unresolved = r < 0;
	if (r < 0) {
		snprintf(buf, len, "%s", real);
		return;
	}
	if (r == 1)
		name_from_dwfl(u, pid, pc, real, sizeof(real));
	nl = unwinder__inlines(u->uw, (int)pid, ret ? pc - 1 : pc, locs, UNWIND_MAX_INLINE);
	lib = strstr(real, " (");
	buf[0] = '\0';
	for (int i = 0; i + 1 < nl && n < len; i++) {
		symbolize__demangle(locs[i].func, name, sizeof(name));
		n += (size_t)snprintf(buf + n, len - n, "%.*s [inlined]%s at %s:%d\n", USTACK_FRAME_MAX / 2, name,
				      lib ? lib : "", locs[i].file, locs[i].line);
	}
	if (n < len && nl > 0)
		snprintf(buf + n, len - n, "%s at %s:%d", real, locs[nl - 1].file, locs[nl - 1].line);
	else if (n < len)
		snprintf(buf + n, len - n, "%s", real);
}

/* The frame texts of pc: one, or several with inlined functions (lines of one text). */
static const char *native(struct ustack *u, uint32_t pid, uint64_t pc, bool ret, bool *unresolved)
{
	uint64_t h = (pc ^ ((uint64_t)pid << 40) ^ ret) * 0x9E3779B97F4A7C15ull;
	struct fslot *s = &u->cache[(h >> 32) % CACHE_SLOTS];
	char buf[USTACK_FRAME_MAX * UNWIND_MAX_INLINE];

	*unresolved = false;
	if (s->text && s->pc == pc && s->pid == pid && s->ret == ret)
		return s->text;
	name_native(u, pid, pc, ret, buf, sizeof(buf), unresolved);
	/* a bare address is not kept: maps read again (or kept ones) may name it later */
	if (!*unresolved && strncmp(buf, "0x", 2)) {
		char *t = strdup(buf);

		if (t) {
			free(s->text);
			*s = (struct fslot){ .pc = pc, .pid = pid, .ret = ret, .text = t };
			return t;
		}
	}
	return keep(u, buf);
}

static bool is_eval(const char *s)
{
	size_t n = sizeof(EVAL_FN) - 1;

	return !strncmp(s, EVAL_FN, n) && (s[n] == '+' || s[n] == '.');
}

size_t ustack__interleave(const bool *is_ev, size_t nn, const bool *py_entry, size_t np,
			  bool native_partial, int *order, size_t cap, unsigned int *flags)
{
	size_t start[USTACK_MAX_FRAMES + 1], runs = 0, evals = 0, w = 0, g = 0;

	if (np > USTACK_MAX_FRAMES)
		np = USTACK_MAX_FRAMES;
	/* runs of the interpreter loop: each ends at its entry frame, innermost first */
	for (size_t k = 0; k < np; k++)
		if (k == 0 || py_entry[k - 1])
			start[runs++] = k;
	start[runs] = np;
	for (size_t i = 0; i < nn; i++)
		evals += is_ev[i];
	if (runs > evals && !native_partial) {
		/* the loop's frames are not named (or not all): the Python frames follow */
		if (np)
			*flags |= USTACK_PY_AFTER;
		for (size_t i = 0; i < nn && w < cap; i++)
			order[w++] = (int)i;
		for (size_t k = 0; k < np && w < cap; k++)
			order[w++] = -1 - (int)k;
		return w;
	}
	for (size_t i = 0; i < nn && w < cap; i++) {
		if (!is_ev[i] || g >= runs) {
			order[w++] = (int)i;
			continue;
		}
		for (size_t k = start[g]; k < start[g + 1] && w < cap; k++)
			order[w++] = -1 - (int)k;
		g++;
	}
	/* a partial native stack: the outer runs lie beyond it, in order */
	for (; g < runs; g++)
		for (size_t k = start[g]; k < start[g + 1] && w < cap; k++)
			order[w++] = -1 - (int)k;
	return w;
}

/* Python frame k's text; a process not known to pystack (evicted, forked) is looked at.
 * A frame left unnamed, or named without its line, says so in *flags. */
static const char *py_frame(struct ustack *u, uint32_t pid, const struct gp_py_frame *f, unsigned int *flags)
{
	char buf[USTACK_FRAME_MAX];
	struct gp_py_proc pp;
	int r = pystack__format(u->ps, (int)pid, f, buf, sizeof(buf));

	if (r == -ENOENT && f->code &&
	    !pystack__inspect(u->ps, (int)pid, &pp, NULL, 0, NULL, 0))
		r = pystack__format(u->ps, (int)pid, f, buf, sizeof(buf));
	if (r < 0) {
		*flags |= USTACK_PY_UNNAMED;
		u->st.py_unnamed++;
	} else if (r == PYSTACK_NO_LINE) {
		*flags |= USTACK_PY_NO_LINE;
	}
	return keep(u, buf);
}

static unsigned int unwind_flags(unsigned int f)
{
	return (f & UNWIND_TRUNCATED ? USTACK_TRUNCATED : 0) | (f & UNWIND_STOPPED ? USTACK_STOPPED : 0) |
	       (f & UNWIND_TOO_DEEP ? USTACK_TOO_DEEP : 0) | (f & UNWIND_NO_STACK ? USTACK_NO_STACK : 0);
}

/* The texts of a record's Python frames: read first, before anything slower, because a
 * code object may die soon after the call (a module's, once the script has run). */
struct pytexts {
	unsigned int n, flags;
	const char *text[GP_PY_MAX_FRAMES];
	bool entry[GP_PY_MAX_FRAMES];
};

static void py_texts(struct ustack *u, uint32_t pid, const struct gp_py_stack *py, struct pytexts *pt)
{
	pt->n = py && py->status == GP_PY_OK ? py->nr : 0;
	pt->flags = 0;
	if (pt->n > GP_PY_MAX_FRAMES)
		pt->n = GP_PY_MAX_FRAMES;
	for (unsigned int k = 0; k < pt->n; k++) {
		pt->text[k] = py_frame(u, pid, &py->frames[k], &pt->flags);
		pt->entry[k] = py->frames[k].flags & GP_PY_FRAME_ENTRY;
	}
}

/* Native frames (named, inlined functions expanded) and Python frames into out, in
 * their merged order. */
static void merge(struct ustack *u, uint32_t pid, const uint64_t *pcs, unsigned int nn,
		  const struct pytexts *pt, struct ustack_frames *out)
{
	const char *nat[USTACK_MAX_FRAMES];
	bool ev[USTACK_MAX_FRAMES], unresolved = false, un;
	int order[USTACK_MAX_FRAMES];
	size_t n, ne = 0;

	if (nn > UNWIND_MAX_FRAMES + 1)
		nn = UNWIND_MAX_FRAMES + 1;
	for (unsigned int i = 0; i < nn && ne < USTACK_MAX_FRAMES; i++) {
		const char *t = native(u, pid, pcs[i], i > 0, &un);

		unresolved |= un;
		/* one frame a line (a cached text stays whole: its lines are copied out) */
		while (ne < USTACK_MAX_FRAMES) {
			const char *nl = strchr(t, '\n');
			char line[USTACK_FRAME_MAX];

			if (!nl) {
				nat[ne++] = keep(u, t);
				break;
			}
			snprintf(line, sizeof(line), "%.*s", (int)(nl - t), t);
			nat[ne++] = keep(u, line);
			t = nl + 1;
		}
	}
	if (ne == USTACK_MAX_FRAMES)
		out->flags |= USTACK_TOO_DEEP;
	for (size_t i = 0; i < ne; i++)
		ev[i] = is_eval(nat[i]);
	if (unresolved)
		out->flags |= USTACK_UNRESOLVED;
	/* gone, and what would have named it was not all kept: say why */
	if ((out->flags & (USTACK_UNRESOLVED | USTACK_STOPPED)) && procpin__unkept(u->pin, (int)pid))
		out->flags |= USTACK_UNKEPT;
	n = ustack__interleave(ev, ne, pt->entry, pt->n, out->flags & USTACK_PARTIAL, order, USTACK_MAX_FRAMES,
			       &out->flags);
	for (size_t i = 0; i < n; i++)
		out->frames[i] = order[i] >= 0 ? nat[order[i]] : pt->text[-1 - order[i]];
	out->nr = (unsigned int)n;
	out->nr_py = pt->n;
	u->st.stacks++;
	u->st.native_frames += ne;
	u->st.py_frames += pt->n;
	u->st.unresolved += unresolved;
}

int ustack__unwind_copy(struct ustack *u, const struct gp_stack_event *e, struct ustack_pending *pd)
{
	struct pyproc *p = u->py_fd >= 0 ? u64map__get(u->procs, e->pid) : NULL;
	uint64_t ip;
	int r;

	/* not seen before (node-wide, a -p --tree descendant started late), or still waiting
	 * for its libpython: looked at now, for the next allocations */
	if (u->py_fd >= 0 && (!p || p->state == PY_WAIT)) {
		ustack__watch(u, e->pid);
		p = u64map__get(u->procs, e->pid);
	}
	ip = e->copy.regs.ip;
	pin(u, e->pid, &ip, 1);
	r = unwinder__unwind(u->uw, (int)e->pid, &e->copy, &u->uf);
	/* stopped at a return address in no mapping kept: a library loaded since? kept, and
	 * the stack walked again */
	if (!r && u->uf.stop_pc && !procpin__covers(u->pin, (int)e->pid, u->uf.stop_pc)) {
		uint64_t stop = u->uf.stop_pc;

		pin(u, e->pid, &stop, 1);
		if (procpin__covers(u->pin, (int)e->pid, stop))
			r = unwinder__unwind(u->uw, (int)e->pid, &e->copy, &u->uf);
	}
	if (r) { /* the process is gone: the probed pc, unnamed */
		u->uf.nr = 1;
		u->uf.pcs[0] = e->copy.regs.ip;
		u->uf.flags = UNWIND_STOPPED;
	}
	pd->pid = e->pid;
	pd->err = r;
	pd->flags = unwind_flags(u->uf.flags);
	if (e->py.truncated)
		pd->flags |= USTACK_PY_TRUNCATED;
	/* a Python process whose frames were not read at this call */
	if ((e->py.status != GP_PY_OK && e->py.status != GP_PY_NOT_PYTHON) ||
	    (e->py.status == GP_PY_NOT_PYTHON && p && p->state == PY_YES))
		pd->flags |= USTACK_PY_UNREAD;
	pd->nr = u->uf.nr < USTACK_PENDING_PCS ? u->uf.nr : USTACK_PENDING_PCS;
	memcpy(pd->pcs, u->uf.pcs, pd->nr * sizeof(pd->pcs[0]));
	pd->py_status = e->py.status;
	pd->nr_py = e->py.status == GP_PY_OK && e->py.nr <= GP_PY_MAX_FRAMES ? e->py.nr : 0;
	memcpy(pd->py, e->py.frames, pd->nr_py * sizeof(pd->py[0]));
	/* every file this stack went through kept: a pc outside them takes them again */
	pin(u, e->pid, u->uf.pcs, u->uf.nr);
	return r;
}

int ustack__finish(struct ustack *u, const struct ustack_pending *pd, struct ustack_frames *out)
{
	struct gp_py_stack *py = u->py_scratch;
	struct pytexts pt;

	memset(out, 0, offsetof(struct ustack_frames, frames));
	u->used = 0;
	py->status = pd->nr_py ? GP_PY_OK : GP_PY_NOT_PYTHON;
	py->nr = pd->nr_py;
	memcpy(py->frames, pd->py, pd->nr_py * sizeof(pd->py[0]));
	py_texts(u, pd->pid, py, &pt);
	out->flags = pd->flags | pt.flags;
	merge(u, pd->pid, pd->pcs, pd->nr, &pt, out);
	return pd->err;
}

int ustack__from_copy(struct ustack *u, const struct gp_stack_event *e, struct ustack_frames *out)
{
	int r = ustack__unwind_copy(u, e, u->pending);

	ustack__finish(u, u->pending, out);
	return r;
}

int ustack__from_pcs(struct ustack *u, uint32_t pid, const __u64 *pcs, unsigned int n,
		     struct ustack_frames *out)
{
	uint64_t v[GP_MAX_STACK];

	memset(out, 0, offsetof(struct ustack_frames, frames));
	u->used = 0;
	if (n > GP_MAX_STACK)
		n = GP_MAX_STACK;
	if (n == GP_MAX_STACK)
		out->flags |= USTACK_TOO_DEEP;
	struct pytexts none = { 0 };

	for (unsigned int i = 0; i < n; i++) {
		/* a walk that went past code without frame pointers reads a saved "return
		 * address" that is none (0, the low page, or an address on the stack or in
		 * data): a bare 0x0 or 0x7ffd... frame says nothing, the walk's end does */
		if (pcs[i] < 4096 || (i > 0 && symbolizer__in_code(u->sym, (int)pid, pcs[i]) == 0)) {
			out->flags |= USTACK_FP_END;
			out->flags &= ~USTACK_TOO_DEEP;
			n = i;
			break;
		}
		v[i] = pcs[i];
	}
	pin(u, pid, v, n);
	merge(u, pid, v, n, &none, out);
	return 0;
}
