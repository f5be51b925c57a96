/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where the dynamic linker will find a library for a program gpuprobe is about to start:
 * the program's own DT_RPATH / DT_RUNPATH ($ORIGIN expanded), LD_LIBRARY_PATH, and those of
 * every object of its DT_NEEDED chain, as ld.so searches them for a DT_NEEDED entry or a
 * dlopen("libcuda.so.1") made from that object (the CUDA runtime's way to reach the
 * driver). A libcuda found only there (a program linked -Wl,-rpath to a driver copy, a
 * wheel's folder named by RUNPATH) is then probed before the program runs, so its first
 * calls are seen. Bounded: LDPATH_MAX_OBJECTS objects, each read through safe_elf_begin.
 */
#ifndef GP_LDPATH_H
#define GP_LDPATH_H

#include <stddef.h>

#define LDPATH_MAX_OBJECTS 256

/* cmd: the command as execvp takes it (argv[0] searched in PATH when it has no slash).
 * cb gets each existing regular file named `name` in a folder the loader would search
 * for the program or one of its objects, before the default folders (which the caller
 * resolves itself); a file may come more than once. Returns the number of objects read,
 * or -errno when the program itself cannot be found or read (a script: -ENOEXEC). */
int ldpath__find(const char *cmd, const char *name, void (*cb)(void *ctx, const char *path), void *ctx);

#endif
