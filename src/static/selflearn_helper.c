/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * For the static bundle only (make bundle): the self-learning child (selflearn.h) as a
 * dynamically linked program of its own. Static glibc cannot host the driver, so a
 * statically linked gpuprobe keeps this program in its image (selflearn_blob.S), writes it
 * to a memory file in its forked child and starts it from there: the host's dynamic loader
 * and C library load libcuda as in any CUDA program.
 *
 *   gpuprobe-selflearn REAL   (descriptor 3: the pipe its answer goes to)
 *
 * REAL is the path gpuprobe checked (selflearn__safe) before the fork.
 */
#include <unistd.h>
#include "modes/cudatrace/selflearn.h"

int main(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] != '/')
		return 2;
	selflearn__child(argv[1], 3);
	_exit(0); /* no dlclose of the driver, no atexit handlers */
}
