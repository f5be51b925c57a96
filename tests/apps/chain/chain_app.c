/* SPDX-License-Identifier: BSD-3-Clause */
/* chain_app N: N leaked allocations of 4096 bytes made by libchain.so (found through this
 * program's DT_RUNPATH), whose libcuda is found through libchain's own DT_RUNPATH. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int chain_leak(unsigned int n, size_t size);

int main(int argc, char **argv)
{
	unsigned int n = argc > 1 ? (unsigned int)atoi(argv[1]) : 4;

	if (chain_leak(n, 4096))
		return 1;
	fprintf(stderr, "{\"pid\":%d,\"api\":\"chain\",\"allocs\":%u,\"leaks\":%u,\"leaked_bytes\":%u}\n", (int)getpid(),
		n, n, n * 4096);
	return 0;
}
