/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "modes/ioctl/ioctl.h"

struct name_num {
	uint32_t num;
	const char *name;
};

#define NV_ESC(name, nr) { nr, #name },
static const struct name_num nv_escs[] = {
#include "modes/ioctl/nv_ioctls.def"
};
#define UVM_IOCTL(name, nr) { nr, #name },
static const struct name_num uvm_ioctls[] = {
#include "modes/ioctl/nv_ioctls.def"
};
#define NV_CTRL(name, cmd) { cmd, #name },
static const struct name_num nv_ctrls[] = {
#include "modes/ioctl/nv_ioctls.def"
};
struct driver {
	const char *name;
	int kind;
};
#define NV_DRIVER(name, kind) { name, kind },
static const struct driver drivers[] = {
#include "modes/ioctl/nv_ioctls.def"
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The tables have tens of entries and are read at report time only. */
static const char *lookup(const struct name_num *t, size_t n, uint32_t num)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].num == num)
			return t[i].name;
	return NULL;
}

bool ioctl__is_rm_control(uint32_t cmd)
{
	return ((cmd >> 8) & 0xff) == GP_NV_IOCTL_TYPE && (cmd & 0xff) == GP_NV_ESC_RM_CONTROL;
}

const char *ioctl__cmd_name(int kind, uint32_t cmd)
{
	/* 'F' requests and UVM's plain numbers never overlap, so ANY can try both */
	if ((kind == IOC_KIND_NV || kind == IOC_KIND_ANY) && ((cmd >> 8) & 0xff) == GP_NV_IOCTL_TYPE)
		return lookup(nv_escs, ARRAY_LEN(nv_escs), cmd & 0xff);
	if (kind == IOC_KIND_UVM || kind == IOC_KIND_ANY)
		return lookup(uvm_ioctls, ARRAY_LEN(uvm_ioctls), cmd);
	return NULL;
}

const char *ioctl__ctrl_name(uint32_t ctrl_cmd)
{
	return lookup(nv_ctrls, ARRAY_LEN(nv_ctrls), ctrl_cmd);
}

int ioctl__add_major(struct ioc_major *m, int n, int max, uint32_t major, int kind, const char *name)
{
	for (int i = 0; i < n; i++)
		if (m[i].major == major)
			return n;
	if (n >= max || major == 0)
		return n;
	m[n].major = major;
	m[n].kind = kind;
	m[n].name[0] = 0;
	if (name)
		strncat(m[n].name, name, sizeof(m[n].name) - 1);
	return n + 1;
}

int ioctl__parse_devices(FILE *f, struct ioc_major *out, int max)
{
	char line[256], name[128];
	bool chr = false;
	unsigned int major;
	int n = 0;

	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Character devices:", 18)) {
			chr = true;
			continue;
		}
		if (!strncmp(line, "Block devices:", 14))
			chr = false;
		if (!chr || sscanf(line, " %u %127s", &major, name) != 2)
			continue;
		for (size_t i = 0; i < ARRAY_LEN(drivers); i++) {
			if (strcmp(name, drivers[i].name))
				continue;
			/* "nvidia" and "nvidiactl" share 195: the first name stays */
			n = ioctl__add_major(out, n, max, major, drivers[i].kind, name);
			break;
		}
	}
	return n;
}

void ioctl__node_name(const struct ioc_major *m, uint32_t minor, char *buf, size_t len)
{
	const char *d = m ? m->name : "";

	if (m && m->kind == IOC_KIND_NV) {
		if (minor == 255)
			snprintf(buf, len, "/dev/nvidiactl");
		else if (minor == 254)
			snprintf(buf, len, "/dev/nvidia-modeset");
		else
			snprintf(buf, len, "/dev/nvidia%u", minor);
	} else if (m && m->kind == IOC_KIND_UVM) {
		snprintf(buf, len, minor == 0 ? "/dev/nvidia-uvm" : minor == 1 ? "/dev/nvidia-uvm-tools" :
			 "/dev/nvidia-uvm (minor %u)", minor);
	} else if (m && !strcmp(d, "nvidia-nvlink")) {
		snprintf(buf, len, "/dev/nvidia-nvlink");
	} else if (m && !strcmp(d, "nvidia-nvswitch")) {
		if (minor == 255)
			snprintf(buf, len, "/dev/nvidia-nvswitchctl");
		else
			snprintf(buf, len, "/dev/nvidia-nvswitch%u", minor);
	} else if (m && !strcmp(d, "nvidia-caps")) {
		snprintf(buf, len, "/dev/nvidia-caps/nvidia-cap%u", minor);
	} else {
		snprintf(buf, len, "/dev/char/%u:%u", m ? m->major : 0, minor);
	}
}

struct row {
	struct gp_ioctl_key k;
	struct gp_ioctl_stat st;
};

struct ioctl_agg {
	struct ioc_major majors[GP_IOCTL_MAX_MAJORS];
	int nr_majors;
	struct row *rows;
	size_t nr_rows, cap_rows;
	struct ioc_proc *procs;
	size_t nr_procs;
};

struct ioctl_agg *ioctl_agg__new(const struct ioc_major *majors, int n)
{
	struct ioctl_agg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	if (n > GP_IOCTL_MAX_MAJORS)
		n = GP_IOCTL_MAX_MAJORS;
	memcpy(a->majors, majors, (size_t)n * sizeof(*majors));
	a->nr_majors = n;
	return a;
}

static void free_procs(struct ioctl_agg *a)
{
	for (size_t i = 0; i < a->nr_procs; i++) {
		for (size_t d = 0; d < a->procs[i].nr_devs; d++)
			free(a->procs[i].devs[d].cmds);
		free(a->procs[i].devs);
	}
	free(a->procs);
	a->procs = NULL;
	a->nr_procs = 0;
}

void ioctl_agg__free(struct ioctl_agg *a)
{
	if (!a)
		return;
	free_procs(a);
	free(a->rows);
	free(a);
}

void ioctl_agg__begin(struct ioctl_agg *a)
{
	free_procs(a);
	a->nr_rows = 0;
}

int ioctl_agg__add(struct ioctl_agg *a, const struct gp_ioctl_key *k, const struct gp_ioctl_stat *st)
{
	if (a->nr_rows == a->cap_rows) {
		size_t cap = a->cap_rows ? a->cap_rows * 2 : 256;
		struct row *r = realloc(a->rows, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		a->rows = r;
		a->cap_rows = cap;
	}
	a->rows[a->nr_rows].k = *k;
	a->rows[a->nr_rows].st = *st;
	a->nr_rows++;
	return 0;
}

#define CMP(x, y) do { if ((x) != (y)) return (x) < (y) ? -1 : 1; } while (0)

static int row_cmp(const void *pa, const void *pb)
{
	const struct gp_ioctl_key *a = &((const struct row *)pa)->k, *b = &((const struct row *)pb)->k;

	CMP(a->pid, b->pid);
	CMP(a->major, b->major);
	CMP(a->minor, b->minor);
	CMP(a->cmd, b->cmd);
	CMP(a->ctrl_cmd, b->ctrl_cmd);
	return 0;
}

static int cmd_cmp(const void *pa, const void *pb)
{
	const struct ioc_cmd *a = pa, *b = pb;

	CMP(b->st.calls, a->st.calls);
	CMP(a->cmd, b->cmd);
	CMP(a->ctrl_cmd, b->ctrl_cmd);
	return 0;
}

static const struct ioc_major *major_of(const struct ioctl_agg *a, uint32_t major)
{
	for (int i = 0; i < a->nr_majors; i++)
		if (a->majors[i].major == major)
			return &a->majors[i];
	return NULL;
}

/* Rows sorted by key group into processes, devices and commands in one pass. */
int ioctl_agg__end(struct ioctl_agg *a)
{
	size_t i = 0;

	free_procs(a);
	if (!a->nr_rows)
		return 0;
	if (a->nr_rows) /* qsort(NULL, 0) is undefined */
		qsort(a->rows, a->nr_rows, sizeof(*a->rows), row_cmp);
	a->procs = calloc(a->nr_rows, sizeof(*a->procs));
	if (!a->procs)
		return -ENOMEM;
	while (i < a->nr_rows) {
		struct ioc_proc *p = &a->procs[a->nr_procs++];
		size_t pend = i;

		while (pend < a->nr_rows && a->rows[pend].k.pid == a->rows[i].k.pid)
			pend++;
		p->pid = a->rows[i].k.pid;
		p->devs = calloc(pend - i, sizeof(*p->devs));
		if (!p->devs)
			return -ENOMEM;
		while (i < pend) {
			struct ioc_dev *d = &p->devs[p->nr_devs++];
			const struct ioc_major *m = major_of(a, a->rows[i].k.major);
			size_t dend = i;

			while (dend < pend && a->rows[dend].k.major == a->rows[i].k.major &&
			       a->rows[dend].k.minor == a->rows[i].k.minor)
				dend++;
			d->major = a->rows[i].k.major;
			d->minor = a->rows[i].k.minor;
			d->driver = m ? m->name : "";
			ioctl__node_name(m, d->minor, d->node, sizeof(d->node));
			d->cmds = calloc(dend - i, sizeof(*d->cmds));
			if (!d->cmds)
				return -ENOMEM;
			for (; i < dend; i++) {
				struct ioc_cmd *c = &d->cmds[d->nr_cmds++];
				const struct row *r = &a->rows[i];

				c->cmd = r->k.cmd;
				c->ctrl_cmd = r->k.ctrl_cmd;
				c->name = ioctl__cmd_name(m ? m->kind : IOC_KIND_ANY, c->cmd);
				c->ctrl_name = c->ctrl_cmd ? ioctl__ctrl_name(c->ctrl_cmd) : NULL;
				c->st = r->st;
				d->calls += r->st.calls;
				d->errors += r->st.errors;
				if (c->name)
					p->decoded += r->st.calls;
			}
			qsort(d->cmds, d->nr_cmds, sizeof(*d->cmds), cmd_cmp);
			p->calls += d->calls;
			p->errors += d->errors;
		}
	}
	return 0;
}

size_t ioctl_agg__procs(struct ioctl_agg *a, struct ioc_proc **out)
{
	*out = a->procs;
	return a->nr_procs;
}
