/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the links can carry, so that --bandwidth-util, --nccl and --gpu-time never print a
 * figure the hardware cannot reach as a measurement. Read from sysfs without NVML: each NVIDIA GPU's PCIe link
 * (current_link_speed/_width, and max_link_speed/_width: an idle GPU trains its link down,
 * so the larger of the two is the capability); NVLink is not in sysfs, so its capability
 * comes from the GPU's PCI device id (a table of parts whose NVLink generation and link
 * count NVIDIA publishes). Where nothing is known (no GPU in sysfs, a part not in the table)
 * the limit is unknown (0) and its name says why: no figure is held against a guess, which
 * a part newer than the table would outrun.
 */
#ifndef GP_LINKS_H
#define GP_LINKS_H

#include <stdbool.h>
#include "lib/bandwidth.h"

struct bw_link {
	char name[96];      /* "PCIe 32.0 GT/s x16", "NVLink4 x18 (H200 SXM)", ... */
	double bytes_per_s; /* one direction; 0: unknown (the name says why) */
	bool read_here;     /* from this machine's sysfs (and the parts table) */
};

struct bw_links {
	int gpus;            /* NVIDIA GPUs (PCI display/3D controllers) in sysfs */
	struct bw_link host; /* host <-> GPU: PCIe */
	struct bw_link peer; /* GPU <-> GPU */
	struct bw_link local; /* a copy within one GPU's memory */
};

/* Reads <sysfs_root>/bus/pci/devices (sysfs_root NULL: "/sys"); never fails: what cannot be
 * read is unknown (bytes_per_s 0). */
void bw_links__read(const char *sysfs_root, struct bw_links *out);

/* The capability that bounds a direction: H2D/D2H the host link, peer the GPU link, D2D
 * the GPU's memory; NULL for H2H. */
const struct bw_link *bw_links__for(const struct bw_links *l, enum bw_dir d);

/* What bounds the bus bandwidth (nccl-tests' busbw) of a collective over nranks ranks: the
 * GPUs' peer link (ranks on other hosts go slower still, over their network), one GPU's
 * memory for one rank. */
const struct bw_link *bw_links__for_ranks(const struct bw_links *l, int nranks);

/* Whether a rate (bytes/s) is above what the link can carry: a suspect figure; never
 * against an unknown limit. */
bool bw_links__suspect(const struct bw_link *l, double bytes_per_s);

/* PCIe bytes per second, one direction, of a link at gts GT/s per lane and width lanes
 * (line coding: 8b/10b to 5 GT/s, 128b/130b to 32, 242B/256B FLITs from 64). */
double bw_links__pcie_rate(double gts, int width);

#endif
