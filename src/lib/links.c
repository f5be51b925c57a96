/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/links.h"

#define NVIDIA 0x10de

/*
 * NVLink and memory of the parts NVIDIA publishes them for (data sheets): links, GB/s per
 * link and direction, memory TB/s. A part not listed has no known NVLink or memory limit.
 */
static const struct part {
	unsigned int id;
	const char *name;
	int gen, links;
	double link_gbs, mem_tbs;
} parts[] = {
	{ 0x20b0, "A100 SXM4 40GB", 3, 12, 25, 1.555 },
	{ 0x20b2, "A100 SXM4 80GB", 3, 12, 25, 2.039 },
	{ 0x20b3, "A100 SXM 64GB", 3, 12, 25, 2.039 },
	{ 0x2330, "H100 SXM5 80GB", 4, 18, 25, 3.35 },
	{ 0x2335, "H200 SXM 141GB", 4, 18, 25, 4.8 },
	{ 0x2342, "GH200", 4, 18, 25, 4.9 },
	{ 0x2901, "B200", 5, 18, 50, 8.0 },
};

double bw_links__pcie_rate(double gts, int width)
{
	double coding = gts <= 5.0 ? 8.0 / 10.0 : gts <= 32.0 ? 128.0 / 130.0 : 242.0 / 256.0;

	if (gts <= 0 || width <= 0)
		return 0;
	return gts * 1e9 * width * coding / 8.0;
}

/* One line of a sysfs attribute, at most len - 1 bytes. */
static int read_attr(int dirfd, const char *name, char *buf, size_t len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static unsigned long attr_hex(int dirfd, const char *name)
{
	char buf[32];

	return read_attr(dirfd, name, buf, sizeof(buf)) ? 0 : strtoul(buf, NULL, 16);
}

/* "32.0 GT/s PCIe" x "16", the larger of current and max. */
static double link_rate(int dirfd, double *gts, int *width)
{
	static const char *const speed[2] = { "current_link_speed", "max_link_speed" };
	static const char *const lanes[2] = { "current_link_width", "max_link_width" };
	double best = 0;
	char buf[64];

	for (int i = 0; i < 2; i++) {
		double g = 0, r;
		int w = 0;

		if (!read_attr(dirfd, speed[i], buf, sizeof(buf)))
			g = strtod(buf, NULL);
		if (!read_attr(dirfd, lanes[i], buf, sizeof(buf)))
			w = (int)strtol(buf, NULL, 10);
		if (g > 1000 || w > 64) /* not a PCIe link */
			continue;
		r = bw_links__pcie_rate(g, w);
		if (r > best) {
			best = r;
			*gts = g;
			*width = w;
		}
	}
	return best;
}

static const struct part *part_of(unsigned int id)
{
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (parts[i].id == id)
			return &parts[i];
	return NULL;
}

/* Nothing known: a limit of 0 says so (bw_links__suspect holds nothing against it). A
 * "fastest link there is" would be a guess that the next part outruns. */
static void unknown_links(struct bw_links *l)
{
	snprintf(l->host.name, sizeof(l->host.name), "unknown: no NVIDIA GPU's PCIe link in sysfs");
	snprintf(l->peer.name, sizeof(l->peer.name), "unknown: no NVIDIA GPU in sysfs");
	snprintf(l->local.name, sizeof(l->local.name), "unknown: no NVIDIA GPU in sysfs");
}

/* One GPU: the fastest PCIe link seen and, when every GPU is a known part, the fastest
 * part's NVLink and memory: a bound for every pair of the node. The first part not in the
 * table is named (*unknown_id). */
static void add_gpu(struct bw_links *l, int dirfd, unsigned int *unknown_id, double *nvl, double *mem,
		    const struct part **slow)
{
	unsigned int id = (unsigned int)attr_hex(dirfd, "device");
	const struct part *p = part_of(id);
	double gts = 0, r;
	int w = 0;

	l->gpus++;
	r = link_rate(dirfd, &gts, &w);
	if (r > l->host.bytes_per_s) {
		l->host.bytes_per_s = r;
		l->host.read_here = true;
		snprintf(l->host.name, sizeof(l->host.name), "PCIe %.1f GT/s x%d", gts, w);
	}
	if (!p) {
		if (!*unknown_id)
			*unknown_id = id ? id : 0xffff;
		return;
	}
	if (p->links * p->link_gbs * 1e9 > *nvl) {
		*nvl = p->links * p->link_gbs * 1e9;
		*slow = p;
	}
	if (p->mem_tbs * 1e12 > *mem)
		*mem = p->mem_tbs * 1e12;
}

void bw_links__read(const char *sysfs_root, struct bw_links *l)
{
	const struct part *part = NULL;
	unsigned int unknown = 0;
	double nvl = 0, mem = 0;
	char path[4096];
	struct dirent *de;
	int dfd;
	DIR *d;

	memset(l, 0, sizeof(*l));
	unknown_links(l);
	snprintf(path, sizeof(path), "%s/bus/pci/devices", sysfs_root ? sysfs_root : "/sys");
	d = opendir(path);
	for (int n = 0; d && (de = readdir(d)) && n < 4096; n++) {
		unsigned long cls;

		if (de->d_name[0] == '.')
			continue;
		dfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			continue;
		cls = attr_hex(dfd, "class");
		/* display (0x0300) and 3D (0x0302) controllers: not the NVSwitches (bridges) */
		if (attr_hex(dfd, "vendor") == NVIDIA && (cls >> 16) == 0x03)
			add_gpu(l, dfd, &unknown, &nvl, &mem, &part);
		close(dfd);
	}
	if (d)
		closedir(d);
	if (l->gpus && !l->host.bytes_per_s)
		snprintf(l->host.name, sizeof(l->host.name), "unknown: no GPU's PCIe link speed readable in sysfs");
	if (unknown) {
		/* NVLink is not in sysfs: a part whose data sheet is not in the table has no
		 * limit here, and one unknown GPU leaves the node's pairs unbounded */
		snprintf(l->peer.name, sizeof(l->peer.name), "unknown: GPU 0x%04x not in the parts table (NVLink not in sysfs)",
			 unknown);
		snprintf(l->local.name, sizeof(l->local.name), "unknown: GPU 0x%04x not in the parts table", unknown);
		return;
	}
	if (!part)
		return;
	snprintf(l->peer.name, sizeof(l->peer.name), "NVLink%d x%d (%s, by PCI device id)", part->gen, part->links,
		 part->name);
	l->peer.bytes_per_s = nvl;
	l->peer.read_here = true;
	snprintf(l->local.name, sizeof(l->local.name), "%.3g TB/s memory (%s)", mem / 1e12, part->name);
	l->local.bytes_per_s = mem;
	l->local.read_here = true;
}

const struct bw_link *bw_links__for(const struct bw_links *l, enum bw_dir d)
{
	switch (d) {
	case BW_H2D:
	case BW_D2H:
		return &l->host;
	case BW_PEER:
		return &l->peer;
	case BW_D2D:
		return &l->local;
	default:
		return NULL;
	}
}

const struct bw_link *bw_links__for_ranks(const struct bw_links *l, int nranks)
{
	return bw_links__for(l, nranks == 1 ? BW_D2D : BW_PEER);
}

bool bw_links__suspect(const struct bw_link *l, double bytes_per_s)
{
	return l && l->bytes_per_s > 0 && bytes_per_s > l->bytes_per_s;
}
