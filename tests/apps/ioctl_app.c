/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ioctl_app: nvidia ioctl request numbers issued on a device node the test chooses
 * (default /dev/null, which fails every one with ENOTTY), known numbers of times, for
 * --ioctl (mapped with --ioctl-dev MAJOR):
 *   NV_ESC_RM_CONTROL   _IOWR('F', 0x2A, 32): N with NVOS54 cmd 0x20800110
 *                       (NV2080_CTRL_CMD_GPU_GET_NAME_STRING), 3 with cmd 0x2080beef
 *   NV_ESC_RM_ALLOC     _IOWR('F', 0x2B, 48): N/2
 *   NV_ESC_RM_FREE      _IOWR('F', 0x29, 16): N/5
 *   NV_ESC_CARD_INFO    _IOWR('F', 200, 4):   2
 *   UVM_INITIALIZE      0x30000001:           1
 *   UVM_REGISTER_GPU    37:                   4
 *   unknown             0x12345678:           5
 * With --fork a child process issues the same set too (another tgid: followed in
 * -- CMD mode, not with -p PID alone). With --wait the ioctls come after READY and SIGUSR1.
 * The ground truth is one JSON line on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

static const char usage[] = "[--dev PATH] [--n N] [--fork] [--wait]";

struct nvos54 { /* NVOS54_PARAMETERS (nvos.h) */
	unsigned int hClient, hObject, cmd, flags;
	unsigned long long params;
	unsigned int paramsSize, status;
};

struct req {
	unsigned int cmd, ctrl;
	const char *name, *ctrl_name;
	unsigned long long calls, errors;
};

static unsigned long long n = 10;

static void issue(int fd, struct req *r)
{
	struct nvos54 p = { .hClient = 0xc1d00001, .hObject = 0x5c000002, .cmd = r->ctrl };
	char buf[64] = {};

	for (unsigned long long i = 0; i < r->calls; i++)
		if (ioctl(fd, r->cmd, r->ctrl ? (void *)&p : (void *)buf) < 0)
			r->errors++;
}

int main(int argc, char **argv)
{
	const char *dev = "/dev/null";
	int do_fork = 0, wait = 0, fd, status;
	pid_t child = -1;
	struct stat st;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dev") && i + 1 < argc)
			dev = argv[++i];
		else if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n = app_parse_u64("--n", argv[++i]);
		else if (!strcmp(argv[i], "--fork"))
			do_fork = 1;
		else if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else
			app_usage_error(argv[0], usage, "unknown argument %s", argv[i]);
	}
	struct req reqs[] = {
		{ _IOWR('F', 0x2A, struct nvos54), 0x20800110, "NV_ESC_RM_CONTROL",
		  "NV2080_CTRL_CMD_GPU_GET_NAME_STRING", n, 0 },
		{ _IOWR('F', 0x2A, struct nvos54), 0x2080beef, "NV_ESC_RM_CONTROL", NULL, 3, 0 },
		{ _IOC(_IOC_READ | _IOC_WRITE, 'F', 0x2B, 48), 0, "NV_ESC_RM_ALLOC", NULL, n / 2, 0 },
		{ _IOC(_IOC_READ | _IOC_WRITE, 'F', 0x29, 16), 0, "NV_ESC_RM_FREE", NULL, n / 5, 0 },
		{ _IOC(_IOC_READ | _IOC_WRITE, 'F', 200, 4), 0, "NV_ESC_CARD_INFO", NULL, 2, 0 },
		{ 0x30000001, 0, "UVM_INITIALIZE", NULL, 1, 0 },
		{ 37, 0, "UVM_REGISTER_GPU", NULL, 4, 0 },
		{ 0x12345678, 0, NULL, NULL, 5, 0 },
	};
	size_t nr = sizeof(reqs) / sizeof(reqs[0]);

	if (wait)
		app_block_signal();
	fd = open(dev, O_RDWR);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "ioctl_app: %s: %s\n", dev, strerror(errno));
		return 1;
	}
	if (wait)
		app_wait_ready();
	if (do_fork) {
		child = fork();
		if (child == 0) {
			for (size_t i = 0; i < nr; i++)
				issue(fd, &reqs[i]);
			_exit(0);
		}
		waitpid(child, &status, 0);
		for (size_t i = 0; i < nr; i++) /* the parent counts its own below */
			reqs[i].errors = 0;
	}
	for (size_t i = 0; i < nr; i++)
		issue(fd, &reqs[i]);
	close(fd);

	fprintf(stderr, "{\"api\":\"ioctl\",\"pid\":%d,\"child_pid\":%d,\"dev\":\"%s\",\"major\":%u,\"minor\":%u,\"commands\":[",
		(int)getpid(), (int)child, dev, major(st.st_rdev), minor(st.st_rdev));
	for (size_t i = 0; i < nr; i++) {
		fprintf(stderr, "%s{\"cmd\":\"0x%x\",\"name\":", i ? "," : "", reqs[i].cmd);
		fprintf(stderr, reqs[i].name ? "\"%s\"" : "%snull", reqs[i].name ? reqs[i].name : "");
		if (reqs[i].ctrl)
			fprintf(stderr, ",\"ctrl_cmd\":\"0x%x\"", reqs[i].ctrl);
		else
			fprintf(stderr, ",\"ctrl_cmd\":null");
		fprintf(stderr, ",\"ctrl_name\":");
		fprintf(stderr, reqs[i].ctrl_name ? "\"%s\"" : "%snull", reqs[i].ctrl_name ? reqs[i].ctrl_name : "");
		fprintf(stderr, ",\"calls\":%llu,\"errors\":%llu}", reqs[i].calls, reqs[i].errors);
	}
	fprintf(stderr, "]}\n");
	return 0;
}
