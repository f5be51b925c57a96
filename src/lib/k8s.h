/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Kubernetes and container attribution from a process's cgroup path, for labels:
 * pod_uid, container_id, runtime, QoS class, or the systemd unit of a process outside
 * any container; and pod name, namespace and container name from the kubelet's log
 * folders (/var/log/pods, /var/log/containers), which need no credentials.
 *
 * Paths the kubelet makes, both cgroup drivers (docs/kubernetes.md has the full list):
 *   systemd:  /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid, _ for ->.slice/
 *             cri-containerd-<id>.scope | crio-<id>.scope | docker-<id>.scope
 *             (guaranteed pods: /kubepods.slice/kubepods-pod<uid>.slice/...)
 *   cgroupfs: /kubepods/burstable/pod<uid>/<id> (containerd, Docker) | crio-<id>
 *             (guaranteed pods: /kubepods/pod<uid>/<id>)
 * A reader in a private cgroup namespace (gpuprobe in a pod) sees paths relative to its
 * own cgroup, "/../../kubepods-besteffort.slice/...": the leading ".." are understood.
 *
 * Trust: a cgroup path is partly chosen by whoever may create cgroups, and a user with a
 * delegated subtree (rootless containers, user@UID.service) may name one
 * "kubepods-...-pod<uid>.slice". A pod is recognised only where the kubelet puts it: at
 * the root of the hierarchy (or above the reader's namespace), under an unbroken chain
 * of systemd slices or the cgroupfs "kubepods" folders; anything below a container's own
 * cgroup keeps that container's attribution.
 */
#ifndef GP_K8S_H
#define GP_K8S_H

#include <stdbool.h>
#include <stddef.h>

enum k8s_runtime {
	K8S_RUNTIME_NONE = 0,	/* no container, or one whose runtime the path does not tell */
	K8S_RUNTIME_CONTAINERD,
	K8S_RUNTIME_CRIO,
	K8S_RUNTIME_DOCKER,
	K8S_RUNTIME_PODMAN,
};

enum k8s_qos {
	K8S_QOS_NONE = 0,	/* not a pod */
	K8S_QOS_GUARANTEED,
	K8S_QOS_BURSTABLE,
	K8S_QOS_BESTEFFORT,
};

#define K8S_MAX_PATH 4096

struct k8s_id {
	char pod_uid[37];	/* 8-4-4-4-12 lower-case hex, "" outside a pod */
	char container_id[65];	/* the runtime's 64 hex digits, "" if none */
	enum k8s_runtime runtime;
	enum k8s_qos qos;
	char unit[256];		/* the systemd service or scope outside any container, or "" */
	/* From k8s_names__lookup, "" where unknown: */
	char ns[64];		/* a DNS label */
	char pod[254];		/* a DNS subdomain */
	char container[64];	/* a DNS label */
};

const char *k8s_runtime__str(enum k8s_runtime r);	/* "containerd", "cri-o", "docker", "podman", "" */
const char *k8s_qos__str(enum k8s_qos q);		/* "Guaranteed", "Burstable", "BestEffort", "" */

/*
 * Parses a cgroup path ("0::" line of /proc/PID/cgroup, without "0::"). Fills what the
 * path tells and clears the rest. Returns 0, or -EINVAL for a path that is not absolute,
 * longer than K8S_MAX_PATH or has more than 128 components (nothing is filled).
 */
int k8s__parse_cgroup(const char *path, struct k8s_id *out);

/*
 * The cgroup path of pid from /proc/PID/cgroup: the cgroup v2 "0::" line, unless it is
 * "/" on a hybrid host where the v1 "memory" hierarchy (which the kubelet manages) says
 * more. Returns 0, -ENOENT (no such process or no line) or -ENAMETOOLONG.
 */
int k8s__read_cgroup(int pid, char *buf, size_t len);
/* The same choice made on the text of a /proc/PID/cgroup file (modified in place). */
int k8s__cgroup_of(char *text, char *buf, size_t len);

/* Both of the above. */
int k8s__of_pid(int pid, struct k8s_id *out);

/*
 * Names from the kubelet's log folders, cached: /var/log/containers/
 * <pod>_<ns>_<container>-<id>.log links give all three names of a container id (the
 * links are never followed); /var/log/pods/<ns>_<pod>_<uid>/<container>/ give namespace
 * and pod name of a pod uid, and the container name when the pod has one container. A
 * miss rescans both folders, at most once per min_rescan_ms; each scan reads at most
 * K8S_MAX_ENTRIES entries per folder. A folder that is missing (not mounted) is no
 * error: lookups then find nothing and labels keep the uid and id only.
 */
#define K8S_MAX_ENTRIES 16384

struct k8s_names;

struct k8s_names *k8s_names__new(const char *pods_dir, const char *containers_dir,
				 unsigned int min_rescan_ms);
void k8s_names__free(struct k8s_names *n);
/* Fills id->ns, pod, container from id->pod_uid/container_id; 0 if the pod was found,
 * -ENOENT if not (id's names are then ""). */
int k8s_names__lookup(struct k8s_names *n, struct k8s_id *id);
/* How many times the folders were scanned (tests, the daemon's own metrics). */
unsigned long k8s_names__scans(const struct k8s_names *n);

#endif
