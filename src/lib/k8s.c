/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "lib/k8s.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_COMPONENTS 128
#define ID_LEN 64

const char *k8s_runtime__str(enum k8s_runtime r)
{
	switch (r) {
	case K8S_RUNTIME_CONTAINERD:
		return "containerd";
	case K8S_RUNTIME_CRIO:
		return "cri-o";
	case K8S_RUNTIME_DOCKER:
		return "docker";
	case K8S_RUNTIME_PODMAN:
		return "podman";
	default:
		return "";
	}
}

const char *k8s_qos__str(enum k8s_qos q)
{
	switch (q) {
	case K8S_QOS_GUARANTEED:
		return "Guaranteed";
	case K8S_QOS_BURSTABLE:
		return "Burstable";
	case K8S_QOS_BESTEFFORT:
		return "BestEffort";
	default:
		return "";
	}
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t l = strlen(s), n = strlen(suffix);

	return l >= n && !memcmp(s + l - n, suffix, n);
}

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return true;
}

/*
 * A pod UID of n characters: a UUID (8-4-4-4-12, with sep between the groups: '-' in
 * cgroupfs paths, '_' in systemd slice names, which reserve '-'), or 32 hex digits (the
 * hash the kubelet gives static pods). Written to out with '-'.
 */
static bool parse_uid(const char *s, size_t n, char sep, char out[37])
{
	if (n == 32 && is_hex(s, 32)) {
		memcpy(out, s, 32);
		out[32] = '\0';
		return true;
	}
	if (n != 36)
		return false;
	for (size_t i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != sep : !is_hex(s + i, 1))
			return false;
		out[i] = dash ? '-' : s[i];
	}
	out[36] = '\0';
	return true;
}

/* "<prefix><64 hex><suffix>" -> the id. */
static bool id_between(const char *s, const char *prefix, const char *suffix, char out[65])
{
	size_t p = strlen(prefix), q = strlen(suffix);

	if (strlen(s) != p + ID_LEN + q || strncmp(s, prefix, p) || !ends_with(s, suffix) ||
	    !is_hex(s + p, ID_LEN))
		return false;
	memcpy(out, s + p, ID_LEN);
	out[ID_LEN] = '\0';
	return true;
}

/* A container's cgroup as the runtimes name it under systemd (suffix ".scope") or
 * cgroupfs (suffix ""). Conmon (CRI-O's and podman's monitor) is no container. */
static bool container_cgroup(const char *s, const char *suffix, struct k8s_id *out)
{
	static const struct {
		const char *prefix;
		enum k8s_runtime rt;
	} forms[] = {
		{ "cri-containerd-", K8S_RUNTIME_CONTAINERD },
		{ "crio-", K8S_RUNTIME_CRIO },
		{ "docker-", K8S_RUNTIME_DOCKER },
		{ "libpod-", K8S_RUNTIME_PODMAN },
	};
	char id[65];

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		if (id_between(s, forms[i].prefix, suffix, id)) {
			memcpy(out->container_id, id, sizeof(id));
			out->runtime = forms[i].rt;
			return true;
		}
	}
	/* cgroupfs, containerd or Docker: the bare id, which does not tell which */
	if (!*suffix && id_between(s, "", "", id)) {
		memcpy(out->container_id, id, sizeof(id));
		return true;
	}
	return false;
}

/* kubepods[-burstable|-besteffort]-pod<uid>.slice, possibly under a kubelet
 * --cgroup-root slice ("kubelet-kubepods-..." in kind). */
static bool pod_slice(const char *s, struct k8s_id *out)
{
	static const struct {
		const char *tail;
		enum k8s_qos qos;
	} qos[] = {
		{ "kubepods-burstable", K8S_QOS_BURSTABLE },
		{ "kubepods-besteffort", K8S_QOS_BESTEFFORT },
		{ "kubepods", K8S_QOS_GUARANTEED },
	};
	const char *pod = strstr(s, "-pod");
	size_t plen;

	/* the last "-pod": a QoS or root name could contain one, a uid cannot */
	for (const char *p = pod; p; p = strstr(p + 1, "-pod"))
		pod = p;
	if (!pod || !ends_with(s, ".slice"))
		return false;
	plen = (size_t)(pod - s);
	if (!parse_uid(pod + 4, strlen(pod + 4) - 6, '_', out->pod_uid))
		return false;
	for (size_t i = 0; i < 3; i++) {
		size_t t = strlen(qos[i].tail);

		if (plen >= t && !memcmp(pod - t, qos[i].tail, t) && (plen == t || pod[-(long)t - 1] == '-')) {
			out->qos = qos[i].qos;
			return true;
		}
	}
	out->pod_uid[0] = '\0';
	return false;
}

/* systemd's unit name characters; anything else is not a unit we label. */
static bool unit_name(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= sizeof(((struct k8s_id *)0)->unit) ||
	    !(ends_with(s, ".service") || ends_with(s, ".scope")))
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      strchr(":_.@-\\", ch)))
			return false;
	}
	return true;
}

/*
 * The systemd driver: slices from the root, each named after its parent
 * ("a.slice" > "a-b.slice" > "a-b-c.slice"), so a delegated subtree (under a .service)
 * cannot pose as one. relative: the path starts above the reader's cgroup namespace,
 * so the chain's top is not the root and may be any slice, or no slice at all.
 */
static bool parse_systemd(char **c, int m, bool relative, struct k8s_id *out)
{
	bool pod = false;
	int i;

	for (i = 0; i < m && ends_with(c[i], ".slice"); i++) {
		size_t pl = i ? strlen(c[i - 1]) - 6 : 0;

		if (i == 0 && !relative && strchr(c[0], '-'))
			return false;	/* not a top-level slice */
		if (i > 0 && (strncmp(c[i], c[i - 1], pl) || c[i][pl] != '-'))
			return false;	/* broken chain */
		if (pod_slice(c[i], out)) {
			pod = true;
			i++;
			break;
		}
	}
	if (i < m && container_cgroup(c[i], ".scope", out))
		return true;	/* what lies below the container is the container's */
	if (pod)
		return true;	/* the pod's own cgroup, or a runtime we do not know */
	out->runtime = K8S_RUNTIME_NONE;
	if (i < m && unit_name(c[i]) && (i > 0 || !relative)) {
		snprintf(out->unit, sizeof(out->unit), "%s", c[i]);
		return true;
	}
	return false;
}

/* The cgroupfs driver: kubepods[/burstable|/besteffort]/pod<uid>/<id>, at the root or
 * under one --cgroup-root folder; relative paths may start below "kubepods". Docker's
 * own cgroupfs containers: /docker/<id>. */
static bool parse_cgroupfs(char **c, int m, bool relative, struct k8s_id *out)
{
	int i = 0;

	if (!relative && m == 2 && !strcmp(c[0], "docker") && container_cgroup(c[1], "", out)) {
		out->runtime = K8S_RUNTIME_DOCKER;
		return true;
	}
	if (m > 0 && !strcmp(c[0], "kubepods"))
		i = 1;
	else if (!relative && m > 1 && !strcmp(c[1], "kubepods") && !strchr(c[0], '.'))
		i = 2;
	else if (!relative)
		return false;
	if (i < m && !strcmp(c[i], "burstable"))
		out->qos = K8S_QOS_BURSTABLE, i++;
	else if (i < m && !strcmp(c[i], "besteffort"))
		out->qos = K8S_QOS_BESTEFFORT, i++;
	else if (i > 0)
		out->qos = K8S_QOS_GUARANTEED;	/* right under kubepods */
	/* else: relative, starting at the pod: under kubepods or a QoS folder, unknown */
	if (i >= m || strncmp(c[i], "pod", 3) || !parse_uid(c[i] + 3, strlen(c[i] + 3), '-', out->pod_uid)) {
		out->qos = K8S_QOS_NONE;
		out->pod_uid[0] = '\0';
		return false;
	}
	i++;
	if (i < m && !container_cgroup(c[i], "", out))
		out->runtime = K8S_RUNTIME_NONE;
	return true;
}

int k8s__parse_cgroup(const char *path, struct k8s_id *out)
{
	char buf[K8S_MAX_PATH + 1], *c[MAX_COMPONENTS], *save = NULL, *tok;
	int n = 0, up = 0;

	memset(out, 0, sizeof(*out));
	if (!path || path[0] != '/' || strlen(path) > K8S_MAX_PATH)
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (n == MAX_COMPONENTS)
			return -EINVAL;
		c[n++] = tok;
	}
	while (up < n && !strcmp(c[up], ".."))
		up++;
	if (!parse_systemd(c + up, n - up, up > 0, out)) {
		memset(out, 0, sizeof(*out));
		if (!parse_cgroupfs(c + up, n - up, up > 0, out))
			memset(out, 0, sizeof(*out));
	}
	return 0;
}

/* "cpu,memory" has "memory"; "memory_x" does not. */
static bool has_controller(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	}
	return false;
}

int k8s__cgroup_of(char *text, char *buf, size_t len)
{
	const char *v2 = NULL, *mem = NULL, *sysd = NULL, *first = NULL, *pick;
	char *save = NULL, *line;
	int err = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c1 = *c2 = '\0';	/* line: hierarchy id, c1 + 1: controllers */
		if (!strcmp(line, "0") && !c1[1])
			v2 = c2 + 1;
		else if (has_controller(c1 + 1, "memory"))
			mem = c2 + 1;
		else if (!strcmp(c1 + 1, "name=systemd"))
			sysd = c2 + 1;
		if (!first)
			first = c2 + 1;
	}
	/* Hybrid hosts: processes the kubelet placed in v1 may sit at "/" in v2. */
	if (v2 && (strcmp(v2, "/") || !mem || !strcmp(mem, "/")))
		pick = v2;
	else
		pick = mem ? mem : sysd ? sysd : first;
	if (!pick)
		err = -ENOENT;
	else if (strlen(pick) >= len)
		err = -ENAMETOOLONG;
	else
		snprintf(buf, len, "%s", pick);
	return err;
}

int k8s__read_cgroup(int pid, char *buf, size_t len)
{
	char path[64], text[65536];
	ssize_t n = 0, r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	while ((size_t)n < sizeof(text) - 1 && (r = read(fd, text + n, sizeof(text) - 1 - (size_t)n)) > 0)
		n += r;
	close(fd);
	text[n] = '\0';
	return k8s__cgroup_of(text, buf, len);
}

int k8s__of_pid(int pid, struct k8s_id *out)
{
	char buf[K8S_MAX_PATH + 1];
	int err = k8s__read_cgroup(pid, buf, sizeof(buf));

	memset(out, 0, sizeof(*out));
	return err ? err : k8s__parse_cgroup(buf, out);
}

/* ---- names from the kubelet's log folders ---- */

struct pod_name {
	char uid[37], ns[64], pod[254], container[64];
};

struct ctr_name {
	char id[65], ns[64], pod[254], container[64];
};

struct k8s_names {
	char *pods_dir, *containers_dir;
	unsigned int min_rescan_ms;
	struct pod_name *pods;
	size_t nr_pods;
	struct ctr_name *ctrs;
	size_t nr_ctrs;
	uint64_t last_scan_ms;
	unsigned long scans;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A DNS label (namespace, container: 63) or subdomain (pod: 253), as the API server
 * validates them: names that are not are no kubelet's. */
static bool dns_name(const char *s, size_t n, size_t max, bool dots)
{
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      (dots && s[i] == '.')))
			return false;
	}
	return true;
}

static void copy_n(char *dst, const char *src, size_t n)
{
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* "<ns>_<pod>_<uid>" */
static bool pod_dir_name(const char *s, struct pod_name *p)
{
	const char *a = strchr(s, '_'), *b = strrchr(s, '_');

	if (!a || a == b || !dns_name(s, (size_t)(a - s), 63, false) ||
	    !dns_name(a + 1, (size_t)(b - a - 1), 253, true) ||
	    !parse_uid(b + 1, strlen(b + 1), '-', p->uid))
		return false;
	copy_n(p->ns, s, (size_t)(a - s));
	copy_n(p->pod, a + 1, (size_t)(b - a - 1));
	return true;
}

/* "<pod>_<ns>_<container>-<64 hex>.log" */
static bool ctr_link_name(const char *s, struct ctr_name *c)
{
	const char *a = strchr(s, '_'), *b = a ? strchr(a + 1, '_') : NULL;
	size_t n = strlen(s), cl;

	if (!b || strchr(b + 1, '_') || n < 4 + ID_LEN + 1 + 1 || !ends_with(s, ".log"))
		return false;
	if (s[n - 4 - ID_LEN - 1] != '-' || !is_hex(s + n - 4 - ID_LEN, ID_LEN))
		return false;
	cl = (size_t)(s + n - 4 - ID_LEN - 1 - (b + 1));
	if (!dns_name(s, (size_t)(a - s), 253, true) || !dns_name(a + 1, (size_t)(b - a - 1), 63, false) ||
	    !dns_name(b + 1, cl, 63, false))
		return false;
	copy_n(c->pod, s, (size_t)(a - s));
	copy_n(c->ns, a + 1, (size_t)(b - a - 1));
	copy_n(c->container, b + 1, cl);
	copy_n(c->id, s + n - 4 - ID_LEN, ID_LEN);
	return true;
}

static bool is_dir_entry(int dfd, const struct dirent *de)
{
	struct stat st;

	if (de->d_type != DT_UNKNOWN)
		return de->d_type == DT_DIR;
	return !fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode);
}

/* The one container folder of a pod's log folder, or "" if there are none or several. */
static void only_container(int pods_fd, const char *name, char out[64])
{
	int fd = openat(pods_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	int seen = 0, found = 0;

	out[0] = '\0';
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) && seen++ < 256) {
		size_t n = strlen(de->d_name);

		if (de->d_name[0] == '.' || !is_dir_entry(fd, de) || !dns_name(de->d_name, n, 63, false))
			continue;
		if (found++ == 0)
			copy_n(out, de->d_name, n);
	}
	if (found != 1)
		out[0] = '\0';
	closedir(d);
}

static int cmp_pod(const void *a, const void *b)
{
	return strcmp(((const struct pod_name *)a)->uid, ((const struct pod_name *)b)->uid);
}

static int cmp_ctr(const void *a, const void *b)
{
	return strcmp(((const struct ctr_name *)a)->id, ((const struct ctr_name *)b)->id);
}

/* Reads a folder's names into a fresh array of item-sized records; a folder that cannot
 * be opened gives none. */
static void *scan(const char *dir, size_t item, bool want_dirs, size_t *count,
		  bool (*parse)(int dfd, const char *name, void *rec))
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	char *arr = NULL, *grown;
	size_t n = 0, cap = 0, seen = 0;
	struct dirent *de;

	*count = 0;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((de = readdir(d)) && seen++ < K8S_MAX_ENTRIES) {
		if (de->d_name[0] == '.' || (want_dirs && !is_dir_entry(fd, de)))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			grown = realloc(arr, cap * item);
			if (!grown)
				break;
			arr = grown;
		}
		memset(arr + n * item, 0, item);
		if (parse(fd, de->d_name, arr + n * item))
			n++;
	}
	closedir(d);
	*count = n;
	return arr;
}

static bool parse_pod_entry(int dfd, const char *name, void *rec)
{
	struct pod_name *p = rec;

	if (!pod_dir_name(name, p))
		return false;
	only_container(dfd, name, p->container);
	return true;
}

static bool parse_ctr_entry(int dfd, const char *name, void *rec)
{
	(void)dfd;
	return ctr_link_name(name, rec);
}

static void rescan(struct k8s_names *n)
{
	free(n->pods);
	free(n->ctrs);
	n->pods = scan(n->pods_dir, sizeof(struct pod_name), true, &n->nr_pods, parse_pod_entry);
	n->ctrs = scan(n->containers_dir, sizeof(struct ctr_name), false, &n->nr_ctrs, parse_ctr_entry);
	if (n->pods)
		qsort(n->pods, n->nr_pods, sizeof(*n->pods), cmp_pod);
	if (n->ctrs)
		qsort(n->ctrs, n->nr_ctrs, sizeof(*n->ctrs), cmp_ctr);
	n->last_scan_ms = now_ms();
	n->scans++;
}

struct k8s_names *k8s_names__new(const char *pods_dir, const char *containers_dir,
				 unsigned int min_rescan_ms)
{
	struct k8s_names *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->pods_dir = strdup(pods_dir ? pods_dir : "/var/log/pods");
	n->containers_dir = strdup(containers_dir ? containers_dir : "/var/log/containers");
	n->min_rescan_ms = min_rescan_ms;
	if (!n->pods_dir || !n->containers_dir) {
		k8s_names__free(n);
		return NULL;
	}
	return n;
}

void k8s_names__free(struct k8s_names *n)
{
	if (!n)
		return;
	free(n->pods_dir);
	free(n->containers_dir);
	free(n->pods);
	free(n->ctrs);
	free(n);
}

unsigned long k8s_names__scans(const struct k8s_names *n)
{
	return n ? n->scans : 0;
}

/* 2: the pod and, if the id has a container, its name; 1: the pod only; 0: nothing. */
static int find(struct k8s_names *n, struct k8s_id *id)
{
	struct ctr_name ck, *c = NULL;
	struct pod_name pk, *p = NULL;

	if (id->container_id[0] && n->ctrs) {
		memcpy(ck.id, id->container_id, sizeof(ck.id));
		c = bsearch(&ck, n->ctrs, n->nr_ctrs, sizeof(*c), cmp_ctr);
	}
	if (n->pods) {
		memcpy(pk.uid, id->pod_uid, sizeof(pk.uid));
		p = bsearch(&pk, n->pods, n->nr_pods, sizeof(*p), cmp_pod);
	}
	if (!p)
		return 0;
	memcpy(id->ns, p->ns, sizeof(id->ns));
	memcpy(id->pod, p->pod, sizeof(id->pod));
	/* the link names the container; a one-container pod's folder does too */
	if (c && !strcmp(c->ns, p->ns) && !strcmp(c->pod, p->pod))
		memcpy(id->container, c->container, sizeof(id->container));
	else if (id->container_id[0])
		memcpy(id->container, p->container, sizeof(id->container));
	return !id->container_id[0] || id->container[0] ? 2 : 1;
}

int k8s_names__lookup(struct k8s_names *n, struct k8s_id *id)
{
	int found;

	id->ns[0] = id->pod[0] = id->container[0] = '\0';
	if (!n || !id->pod_uid[0])
		return -ENOENT;
	found = find(n, id);
	/* A miss (a new pod, or a new container of a known one) rescans, not too often. */
	if (found < 2 && (!n->scans || now_ms() - n->last_scan_ms >= n->min_rescan_ms)) {
		rescan(n);
		id->ns[0] = id->pod[0] = id->container[0] = '\0';
		found = find(n, id);
	}
	return found ? 0 : -ENOENT;
}
