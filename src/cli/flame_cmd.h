/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GP_FLAME_CMD_H
#define GP_FLAME_CMD_H

/* gpuprobe flame: argv[0] is "flame"; returns the exit status (0, 1 error, 2 usage). */
int flame__main(int argc, char **argv);

#endif
