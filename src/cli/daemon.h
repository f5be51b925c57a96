/* SPDX-License-Identifier: BSD-3-Clause */
/* gpuprobe daemon: every CUDA process on the node, as Prometheus metrics over HTTP. */
#ifndef GP_DAEMON_H
#define GP_DAEMON_H

/* argv[0] is "daemon"; returns the process exit status. */
int daemon__main(int argc, char **argv);

#endif
