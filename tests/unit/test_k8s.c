/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * src/lib/k8s.c: pod, container, runtime, QoS and unit from cgroup paths as the
 * kubelet (both cgroup drivers), the runtimes and systemd name them; names from a
 * kubelet-style log tree made at test time.
 *
 * `test_k8s --pid PID [--pods DIR] [--containers DIR]` prints what k8s.c tells of a live
 * process as one JSON object (tests/integration/test_k8s_cgroups.py).
 */
#define _GNU_SOURCE
#include "unit.h"
#include "lib/k8s.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define UID_D "0e9c9f4a-6c2d-4b8e-9f3a-2d1c0b9a8e7f"	/* as the API server writes it */
#define UID_U "0e9c9f4a_6c2d_4b8e_9f3a_2d1c0b9a8e7f"	/* as systemd slice names carry it */
#define STATIC_UID "5d6c1b0b8f4e2a1d9c7b6a5f4e3d2c1b"	/* a static pod's: a hash */
#define CID "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"

struct want {
	const char *path;
	const char *pod_uid, *container_id;
	enum k8s_runtime runtime;
	enum k8s_qos qos;
	const char *unit;
};

static const struct want cases[] = {
	/* systemd driver, the three runtimes and QoS classes */
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_U ".slice/cri-containerd-" CID ".scope",
	  UID_D, CID, K8S_RUNTIME_CONTAINERD, K8S_QOS_BURSTABLE, "" },
	{ "/kubepods.slice/kubepods-pod" UID_U ".slice/crio-" CID ".scope",
	  UID_D, CID, K8S_RUNTIME_CRIO, K8S_QOS_GUARANTEED, "" },
	{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_U ".slice/docker-" CID ".scope",
	  UID_D, CID, K8S_RUNTIME_DOCKER, K8S_QOS_BESTEFFORT, "" },
	/* crun's sub-cgroup, and anything a container makes below its own cgroup */
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_U ".slice/crio-" CID ".scope/container",
	  UID_D, CID, K8S_RUNTIME_CRIO, K8S_QOS_BURSTABLE, "" },
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_U ".slice/cri-containerd-" CID
	  ".scope/kubepods.slice/kubepods-pod11111111_2222_3333_4444_555555555555.slice/cri-containerd-"
	  "0000000000000000000000000000000000000000000000000000000000000000.scope",
	  UID_D, CID, K8S_RUNTIME_CONTAINERD, K8S_QOS_BURSTABLE, "" },
	/* CRI-O's monitor and the pod's own cgroup: the pod, no container */
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_U ".slice/crio-conmon-" CID ".scope",
	  UID_D, "", K8S_RUNTIME_NONE, K8S_QOS_BURSTABLE, "" },
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_U ".slice",
	  UID_D, "", K8S_RUNTIME_NONE, K8S_QOS_BURSTABLE, "" },
	/* a static pod's uid is 32 hex digits */
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" STATIC_UID ".slice/cri-containerd-" CID ".scope",
	  STATIC_UID, CID, K8S_RUNTIME_CONTAINERD, K8S_QOS_BURSTABLE, "" },
	/* kind: kubelet --cgroup-root=/kubelet under systemd */
	{ "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod"
	  UID_U ".slice/cri-containerd-" CID ".scope", UID_D, CID, K8S_RUNTIME_CONTAINERD, K8S_QOS_BESTEFFORT, "" },
	/* cgroupfs driver */
	{ "/kubepods/burstable/pod" UID_D "/" CID, UID_D, CID, K8S_RUNTIME_NONE, K8S_QOS_BURSTABLE, "" },
	{ "/kubepods/pod" UID_D "/" CID, UID_D, CID, K8S_RUNTIME_NONE, K8S_QOS_GUARANTEED, "" },
	{ "/kubepods/besteffort/pod" UID_D "/crio-" CID, UID_D, CID, K8S_RUNTIME_CRIO, K8S_QOS_BESTEFFORT, "" },
	{ "/kubepods/besteffort/pod" UID_D "/crio-conmon-" CID, UID_D, "", K8S_RUNTIME_NONE, K8S_QOS_BESTEFFORT, "" },
	{ "/kubepods/burstable/pod" UID_D, UID_D, "", K8S_RUNTIME_NONE, K8S_QOS_BURSTABLE, "" },
	{ "/kubelet/kubepods/burstable/pod" UID_D "/" CID, UID_D, CID, K8S_RUNTIME_NONE, K8S_QOS_BURSTABLE, "" },
	{ "/kubepods/burstable/pod" STATIC_UID "/" CID, STATIC_UID, CID, K8S_RUNTIME_NONE, K8S_QOS_BURSTABLE, "" },
	/* read from inside a private cgroup namespace (gpuprobe in a pod) */
	{ "/../../../kubepods-besteffort.slice/kubepods-besteffort-pod" UID_U ".slice/cri-containerd-" CID ".scope",
	  UID_D, CID, K8S_RUNTIME_CONTAINERD, K8S_QOS_BESTEFFORT, "" },
	{ "/../../kubepods-burstable-pod" UID_U ".slice/cri-containerd-" CID ".scope",
	  UID_D, CID, K8S_RUNTIME_CONTAINERD, K8S_QOS_BURSTABLE, "" },
	{ "/../cri-containerd-" CID ".scope", "", CID, K8S_RUNTIME_CONTAINERD, K8S_QOS_NONE, "" },
	{ "/../../burstable/pod" UID_D "/" CID, UID_D, CID, K8S_RUNTIME_NONE, K8S_QOS_BURSTABLE, "" },
	{ "/../../../kubepods/pod" UID_D "/crio-" CID, UID_D, CID, K8S_RUNTIME_CRIO, K8S_QOS_GUARANTEED, "" },
	/* a sibling pod of the reader's: its QoS folder is above the namespace, unknown */
	{ "/../../pod" UID_D "/" CID, UID_D, CID, K8S_RUNTIME_NONE, K8S_QOS_NONE, "" },
	/* containers outside Kubernetes */
	{ "/system.slice/docker-" CID ".scope", "", CID, K8S_RUNTIME_DOCKER, K8S_QOS_NONE, "" },
	{ "/docker/" CID, "", CID, K8S_RUNTIME_DOCKER, K8S_QOS_NONE, "" },
	{ "/machine.slice/libpod-" CID ".scope", "", CID, K8S_RUNTIME_PODMAN, K8S_QOS_NONE, "" },
	{ "/machine.slice/libpod-" CID ".scope/container", "", CID, K8S_RUNTIME_PODMAN, K8S_QOS_NONE, "" },
	{ "/machine.slice/libpod-conmon-" CID ".scope", "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "libpod-conmon-" CID ".scope" },
	/* plain systemd units: the outermost service or scope */
	{ "/system.slice/nvidia-persistenced.service", "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "nvidia-persistenced.service" },
	{ "/system.slice/system-getty.slice/getty@tty1.service", "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "getty@tty1.service" },
	{ "/user.slice/user-1000.slice/session-3.scope", "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "session-3.scope" },
	{ "/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/vte-spawn-1.scope",
	  "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "user@1000.service" },
	{ "/system.slice/slurmstepd.scope/job_42/step_0/user/task_0", "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "slurmstepd.scope" },
	{ "/system.slice/system-foo\\x2dbar.slice/foo\\x2dbar@1.service", "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE,
	  "foo\\x2dbar@1.service" },
	/* pods where the kubelet does not put them: a delegated subtree posing as one */
	{ "/user.slice/user-1000.slice/user@1000.service/kubepods.slice/kubepods-pod" UID_U ".slice/cri-containerd-" CID ".scope",
	  "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "user@1000.service" },
	{ "/system.slice/evil.service/kubepods-burstable-pod" UID_U ".slice/cri-containerd-" CID ".scope",
	  "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "evil.service" },
	{ "/kubepods.slice/evil-kubepods-pod" UID_U ".slice/cri-containerd-" CID ".scope", "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "" },
	{ "/kubepods-burstable-pod" UID_U ".slice/cri-containerd-" CID ".scope", "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "" },
	{ "/user.slice/user-1000.slice/user@1000.service/kubepods/burstable/pod" UID_D "/" CID,
	  "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "user@1000.service" },
	{ "/a/b/kubepods/burstable/pod" UID_D "/" CID, "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "" },
	{ "/tmp.slice/kubepods/burstable/pod" UID_D "/" CID, "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "" },
	/* near misses */
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0E9C9F4A_6C2D_4B8E_9F3A_2D1C0B9A8E7F.slice",
	  "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "" },
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_D ".slice", "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "" },
	{ "/kubepods/burstable/pod" UID_U "/" CID, "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "" },
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_U ".slice/cri-containerd-" CID "0.scope",
	  UID_D, "", K8S_RUNTIME_NONE, K8S_QOS_BURSTABLE, "" },
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podxyz.slice", "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "" },
	{ "/kubepods.slice", "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "" },
	{ "/", "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "" },
	{ "/system.slice/bad unit.service", "", "", K8S_RUNTIME_NONE, K8S_QOS_NONE, "" },
	{ "//kubepods//burstable//pod" UID_D "//" CID "/", UID_D, CID, K8S_RUNTIME_NONE, K8S_QOS_BURSTABLE, "" },
};

static void test_path_shapes(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct want *w = &cases[i];
		struct k8s_id id;

		memset(&id, 0x55, sizeof(id));	/* everything must be set or cleared */
		if (!ASSERT_EQ(k8s__parse_cgroup(w->path, &id), 0, "parse_shape"))
			goto cleanup;
		if (strcmp(id.pod_uid, w->pod_uid) || strcmp(id.container_id, w->container_id) ||
		    id.runtime != w->runtime || id.qos != w->qos || strcmp(id.unit, w->unit) ||
		    id.ns[0] || id.pod[0] || id.container[0]) {
			printf("#   %s\n#   got pod_uid=%s container_id=%s runtime=%s qos=%s unit=%s\n"
			       "#   want pod_uid=%s container_id=%s runtime=%s qos=%s unit=%s\n", w->path,
			       id.pod_uid, id.container_id, k8s_runtime__str(id.runtime), k8s_qos__str(id.qos),
			       id.unit, w->pod_uid, w->container_id, k8s_runtime__str(w->runtime),
			       k8s_qos__str(w->qos), w->unit);
			if (!ASSERT_TRUE(!"case above", "shape_fields"))
				goto cleanup;
		}
		unit_asserts_passed++;
	}
	printf("# %zu path shapes\n", sizeof(cases) / sizeof(cases[0]));
cleanup:;
}

static void test_bad_paths(void)
{
	char big[K8S_MAX_PATH + 8], deep[1024];
	struct k8s_id id;

	if (!ASSERT_EQ(k8s__parse_cgroup(NULL, &id), -EINVAL, "null_path"))
		goto cleanup;
	if (!ASSERT_EQ(k8s__parse_cgroup("", &id), -EINVAL, "empty_path"))
		goto cleanup;
	if (!ASSERT_EQ(k8s__parse_cgroup("kubepods/pod" UID_D "/" CID, &id), -EINVAL, "relative_path"))
		goto cleanup;
	memset(big, 'a', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	if (!ASSERT_EQ(k8s__parse_cgroup(big, &id), -EINVAL, "overlong_path"))
		goto cleanup;
	deep[0] = '\0';
	for (int i = 0; i < 200; i++)
		strcat(deep, "/a");
	if (!ASSERT_EQ(k8s__parse_cgroup(deep, &id), -EINVAL, "too_deep_path"))
		goto cleanup;
	if (!ASSERT_EQ(id.pod_uid[0], 0, "refused_path_clears_uid"))
		goto cleanup;
	if (!ASSERT_STR_EQ(k8s_runtime__str(K8S_RUNTIME_CRIO), "cri-o", "runtime_name"))
		goto cleanup;
	if (!ASSERT_STR_EQ(k8s_qos__str(K8S_QOS_BESTEFFORT), "BestEffort", "qos_name"))
		goto cleanup;
	if (!ASSERT_STR_EQ(k8s_qos__str(K8S_QOS_NONE), "", "no_qos_name"))
		goto cleanup;
cleanup:;
}

static void test_own_process(void)
{
	char buf[K8S_MAX_PATH + 1], small[2];
	struct k8s_id id;

	if (!ASSERT_EQ(k8s__read_cgroup(getpid(), buf, sizeof(buf)), 0, "read_own_cgroup"))
		goto cleanup;
	if (!ASSERT_EQ(buf[0], '/', "own_cgroup_absolute"))
		goto cleanup;
	if (!ASSERT_EQ(k8s__of_pid(getpid(), &id), 0, "own_pod_id"))
		goto cleanup;
	if (!ASSERT_EQ(k8s__read_cgroup(0x7ffffff0, buf, sizeof(buf)), -ENOENT, "read_gone_pid"))
		goto cleanup;
	if (!ASSERT_EQ(k8s__of_pid(0x7ffffff0, &id), -ENOENT, "gone_pid_id"))
		goto cleanup;
	if (strlen(buf) >= 2)
		if (!ASSERT_EQ(k8s__read_cgroup(getpid(), small, sizeof(small)), -ENAMETOOLONG, "small_buffer"))
			goto cleanup;
cleanup:;
}

static void pick(const char *text, int want_rc, const char *want)
{
	char t[1024], buf[256] = "";

	snprintf(t, sizeof(t), "%s", text);
	if (!ASSERT_EQ(k8s__cgroup_of(t, buf, sizeof(buf)), want_rc, "cgroup_line_rc"))
		goto cleanup;
	if (!want_rc)
		if (!ASSERT_STR_EQ(buf, want, "cgroup_line"))
			goto cleanup;
cleanup:;
}

/* Which line of /proc/PID/cgroup: v2 unless a hybrid host left it at "/". */
static void test_cgroup_file_lines(void)
{
	pick("0::/kubepods.slice/a.scope\n", 0, "/kubepods.slice/a.scope");
	pick("12:pids:/x\n4:cpu,memory:/kubepods/burstable/pod" UID_D "/" CID "\n1:name=systemd:/y\n0::/\n",
	     0, "/kubepods/burstable/pod" UID_D "/" CID);
	pick("4:memory:/m\n1:name=systemd:/s\n0::/kubepods.slice/b.scope\n", 0, "/kubepods.slice/b.scope");
	pick("4:memory:/\n0::/\n", 0, "/");
	pick("5:memory_x:/no\n1:name=systemd:/sd\n", 0, "/sd");
	pick("7:cpuset:/first\n", 0, "/first");
	pick("garbage\n\n", -ENOENT, "");
	pick("0::/a/very/long/path/" CID CID CID CID "\n", -ENAMETOOLONG, "");
}

/* ---- names ---- */

static char root[64];

__attribute__((format(printf, 1, 2)))
static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

#define UID2 "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
#define UID3 "11111111-2222-3333-4444-555555555555"
#define UID4 "99999999-8888-7777-6666-555555555555"
#define CID2 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define CID3 "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

/* A kubelet log tree: a two-container pod with links, a one-container pod without,
 * a pod with an init container and no links; and things no kubelet makes. */
static int make_tree(void)
{
	snprintf(root, sizeof(root), "/tmp/gp-k8s-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	return sh("cd %s && mkdir -p pods containers && cd pods && "
		  "mkdir -p ml-team_trainer-7f9c_" UID_D "/trainer ml-team_trainer-7f9c_" UID_D "/sidecar && "
		  "touch ml-team_trainer-7f9c_" UID_D "/trainer/0.log && "
		  "mkdir -p default_solo.pod-1_" UID2 "/cuda && "
		  "mkdir -p kube-system_two-ctr_" UID3 "/init-a kube-system_two-ctr_" UID3 "/main && "
		  "mkdir -p 'BAD_name_" UID4 "' x_y && mkfifo fifo_pod_" UID4 " && "
		  "ln -s /etc default_linked_" UID4 " && "
		  "cd ../containers && "
		  "ln -s ../pods/ml-team_trainer-7f9c_" UID_D "/trainer/0.log trainer-7f9c_ml-team_trainer-" CID ".log && "
		  "ln -s /dev/null trainer-7f9c_ml-team_sidecar-" CID3 ".log && "
		  "ln -s /dev/null 'bad_ns_ctr-" CID2 "'.log && touch not-a-link.log",
		  root);
}

static struct k8s_id ask(struct k8s_names *n, const char *uid, const char *cid, int *rc)
{
	struct k8s_id id;

	memset(&id, 0, sizeof(id));
	snprintf(id.pod_uid, sizeof(id.pod_uid), "%s", uid);
	snprintf(id.container_id, sizeof(id.container_id), "%s", cid);
	*rc = k8s_names__lookup(n, &id);
	return id;
}

static void test_names_from_log_tree(void)
{
	char pods[128], ctrs[128];
	struct k8s_names *n;
	struct k8s_id id;
	int rc;

	snprintf(pods, sizeof(pods), "%s/pods", root);
	snprintf(ctrs, sizeof(ctrs), "%s/containers", root);
	n = k8s_names__new(pods, ctrs, 0);
	if (!ASSERT_TRUE(n != NULL, "names_new"))
		goto cleanup;
	/* the link names the container of a two-container pod */
	id = ask(n, UID_D, CID, &rc);
	if (!ASSERT_EQ(rc, 0, "linked_rc"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.ns, "ml-team", "linked_ns"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.pod, "trainer-7f9c", "linked_pod"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.container, "trainer", "linked_container"))
		goto cleanup;
	id = ask(n, UID_D, CID3, &rc);
	if (!ASSERT_EQ(rc, 0, "second_link_rc"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.container, "sidecar", "second_link_container"))
		goto cleanup;
	/* an id without a link in a two-container pod: pod known, container not */
	id = ask(n, UID_D, CID2, &rc);
	if (!ASSERT_EQ(rc, 0, "unlinked_rc"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.pod, "trainer-7f9c", "unlinked_pod"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.container, "", "unlinked_no_container"))
		goto cleanup;
	/* a one-container pod's folder names its container */
	id = ask(n, UID2, CID2, &rc);
	if (!ASSERT_EQ(rc, 0, "solo_rc"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.ns, "default", "solo_ns"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.pod, "solo.pod-1", "solo_pod"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.container, "cuda", "solo_container"))
		goto cleanup;
	/* no container id (the pod's own cgroup): no container name */
	id = ask(n, UID2, "", &rc);
	if (!ASSERT_EQ(rc, 0, "pod_cgroup_rc"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.container, "", "pod_cgroup_no_container"))
		goto cleanup;
	/* an init container makes two folders: no guess */
	id = ask(n, UID3, CID2, &rc);
	if (!ASSERT_EQ(rc, 0, "init_container_rc"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.pod, "two-ctr", "init_container_pod"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.container, "", "init_container_no_guess"))
		goto cleanup;
	/* names no kubelet writes, a FIFO and a symlink: not pods */
	id = ask(n, UID4, "", &rc);
	if (!ASSERT_EQ(rc, -ENOENT, "not_kubelet_names_rc"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.pod, "", "not_kubelet_names_pod"))
		goto cleanup;
	/* a container link whose namespace or pod disagrees with the uid's is not used */
	id = ask(n, UID2, CID, &rc);
	if (!ASSERT_EQ(rc, 0, "disagreeing_link_rc"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.container, "cuda", "disagreeing_link_unused"))
		goto cleanup;
	/* not a pod at all */
	id = ask(n, "", CID, &rc);
	if (!ASSERT_EQ(rc, -ENOENT, "not_a_pod_rc"))
		goto cleanup;
cleanup:
	k8s_names__free(n);
	k8s_names__free(NULL);
}

static void test_names_rescan_throttle(void)
{
	char pods[128], ctrs[128];
	struct k8s_names *slow, *fast;
	struct k8s_id id;
	unsigned long s0;
	int rc;

	snprintf(pods, sizeof(pods), "%s/pods", root);
	snprintf(ctrs, sizeof(ctrs), "%s/containers", root);
	slow = k8s_names__new(pods, ctrs, 3600 * 1000);
	fast = k8s_names__new(pods, ctrs, 0);
	if (!ASSERT_TRUE(slow && fast, "names_new"))
		goto cleanup;
	id = ask(slow, UID_D, CID, &rc);
	id = ask(fast, UID_D, CID, &rc);
	if (!ASSERT_EQ(k8s_names__scans(slow), 1, "first_scan"))
		goto cleanup;
	/* hits never rescan */
	for (int i = 0; i < 100; i++)
		id = ask(slow, UID_D, CID, &rc);
	if (!ASSERT_EQ(k8s_names__scans(slow), 1, "hits_no_rescan"))
		goto cleanup;
	/* a pod that appears later: found by the fast one, not before the slow one may rescan */
	sh("mkdir -p %s/pods/late_newpod_" UID4 "/c", root);
	id = ask(slow, UID4, "", &rc);
	if (!ASSERT_EQ(rc, -ENOENT, "late_pod_slow_rc"))
		goto cleanup;
	if (!ASSERT_EQ(k8s_names__scans(slow), 1, "slow_no_rescan"))
		goto cleanup;
	s0 = k8s_names__scans(fast);
	id = ask(fast, UID4, CID2, &rc);
	if (!ASSERT_EQ(rc, 0, "late_pod_fast_rc"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.pod, "newpod", "late_pod_name"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.container, "c", "late_container_name"))
		goto cleanup;
	if (!ASSERT_EQ(k8s_names__scans(fast), s0 + 1, "fast_rescans"))
		goto cleanup;
	sh("rm -rf %s/pods/late_newpod_" UID4, root);
cleanup:
	k8s_names__free(slow);
	k8s_names__free(fast);
}

static void test_names_without_folders(void)
{
	struct k8s_names *n = k8s_names__new("/nonexistent/pods", "/nonexistent/containers", 0);
	struct k8s_id id;
	int rc;

	if (!ASSERT_TRUE(n != NULL, "names_new"))
		goto cleanup;
	id = ask(n, UID_D, CID, &rc);
	if (!ASSERT_EQ(rc, -ENOENT, "no_folders_rc"))
		goto cleanup;
	if (!ASSERT_STR_EQ(id.pod_uid, UID_D, "uid_kept"))
		goto cleanup;	/* the uid label stays */
	if (!ASSERT_STR_EQ(id.ns, "", "no_ns"))
		goto cleanup;
	if (!ASSERT_EQ(k8s_names__scans(n), 1, "one_scan"))
		goto cleanup;
cleanup:
	k8s_names__free(n);
}

/* For tests/integration: what k8s.c tells of a live process, as JSON. */
static int pid_main(int argc, char **argv)
{
	const char *pods = NULL, *ctrs = NULL;
	char path[K8S_MAX_PATH + 1] = "";
	struct k8s_names *n = NULL;
	struct json_object *o;
	struct k8s_id id;
	int pid = 0, rc;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--pid"))
			pid = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--pods"))
			pods = argv[i + 1];
		else if (!strcmp(argv[i], "--containers"))
			ctrs = argv[i + 1];
	}
	rc = k8s__read_cgroup(pid, path, sizeof(path));
	if (!rc)
		rc = k8s__parse_cgroup(path, &id);
	if (rc) {
		fprintf(stderr, "test_k8s: pid %d: %s\n", pid, strerror(-rc));
		return 1;
	}
	if (pods || ctrs) {
		n = k8s_names__new(pods, ctrs, 0);
		k8s_names__lookup(n, &id);
	}
	o = json_object_new_object();
	json_object_object_add(o, "cgroup", json_object_new_string(path));
	json_object_object_add(o, "pod_uid", json_object_new_string(id.pod_uid));
	json_object_object_add(o, "container_id", json_object_new_string(id.container_id));
	json_object_object_add(o, "runtime", json_object_new_string(k8s_runtime__str(id.runtime)));
	json_object_object_add(o, "qos", json_object_new_string(k8s_qos__str(id.qos)));
	json_object_object_add(o, "unit", json_object_new_string(id.unit));
	json_object_object_add(o, "namespace", json_object_new_string(id.ns));
	json_object_object_add(o, "pod", json_object_new_string(id.pod));
	json_object_object_add(o, "container", json_object_new_string(id.container));
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	k8s_names__free(n);
	return 0;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc > 2 && !strcmp(argv[1], "--pid"))
		return pid_main(argc, argv);
	RUN_TEST(test_path_shapes);
	RUN_TEST(test_bad_paths);
	RUN_TEST(test_own_process);
	RUN_TEST(test_cgroup_file_lines);
	if (make_tree()) {
		printf("not ok - cannot make the log tree\n");
		return 1;
	}
	RUN_TEST(test_names_from_log_tree);
	RUN_TEST(test_names_rescan_throttle);
	RUN_TEST(test_names_without_folders);
	rc = unit_done();
	sh("rm -rf %s", root);
	return rc;
}
