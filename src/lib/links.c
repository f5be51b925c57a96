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
 * link and direction, memory TB/s. A part not listed gets the fastest of each.
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
#define FASTEST_NVLINK_BPS (18 * 50e9) /* NVLink5, 18 links */
#define FASTEST_MEM_BPS 8e12           /* HBM3e of a B200 */
#define FASTEST_PCIE_GTS 64.0          /* PCIe 6.0 */

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

static void fallback(struct bw_links *l)
{
	snprintf(l->host.name, sizeof(l->host.name), "not read here: PCIe 6.0 x16, the fastest");
	l->host.bytes_per_s = bw_links__pcie_rate(FASTEST_PCIE_GTS, 16);
	snprintf(l->peer.name, sizeof(l->peer.name), "not known here: NVLink5 x18, the fastest");
	l->peer.bytes_per_s = FASTEST_NVLINK_BPS;
	snprintf(l->local.name, sizeof(l->local.name), "not known here: 8 TB/s, the fastest GPU memory");
	l->local.bytes_per_s = FASTEST_MEM_BPS;
}

/* One GPU: the fastest PCIe link seen and, when every GPU is a known part, the fastest
 * part's NVLink and memory: a bound for every pair of the node. */
static void add_gpu(struct bw_links *l, int dirfd, bool *unknown_part, double *nvl, double *mem,
		    const struct part **slow)
{
	const struct part *p = part_of((unsigned int)attr_hex(dirfd, "device"));
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
		*unknown_part = true;
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
	bool unknown = false;
	double nvl = 0, mem = 0;
	char path[4096];
	struct dirent *de;
	int dfd;
	DIR *d;

	memset(l, 0, sizeof(*l));
	fallback(l);
	l->host.bytes_per_s = 0; /* the GPUs' links, if any can be read */
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
	if (!l->host.bytes_per_s)
		l->host.bytes_per_s = bw_links__pcie_rate(FASTEST_PCIE_GTS, 16);
	if (unknown || !part)
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
