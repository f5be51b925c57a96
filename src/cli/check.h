/* SPDX-License-Identifier: BSD-3-Clause */
/* gpuprobe check: a preflight, one "ok|warn|fail <item>: <detail>" line per item. */
#ifndef GP_CHECK_H
#define GP_CHECK_H

/* argv[0] is "check"; returns 1 when any line is fail, 2 on bad usage, else 0. */
int check__main(int argc, char **argv);

#endif
