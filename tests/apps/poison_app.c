/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * poison_app: a hostile process that teaches a tracer a wrong kernel-handle layout. Every
 * handle object a process shows a tracer is its own memory, and so is its stack: it
 * launches a forged "CUfunction" (the driver's tag at +0, a decoy name at +8, its name at
 * +24: slot 3) from a function named like nvcc's host stub of that name, so a tracer that
 * learns from host stubs reads "slot 3 holds the name" (the driver refuses the launch; the
 * lesson is taken at the launch's entry). It prints POISONED, waits for SIGUSR1 (the
 * tracer reads its memory meanwhile) and exits. Ground truth: one JSON line on stderr.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

static const char decoy[] = "_Z5decoyv", name[] = "_Z6stubbyv";
static uint64_t forged[8];
static CUresult rc;

__attribute__((noinline)) void __device_stub__Z6stubbyv(void)
{
	rc = cuLaunchKernel((CUfunction)(void *)forged, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
}

int main(void)
{
	app_block_signal();
	app_cuda_init();
	forged[0] = 0x0000000100000001ull; /* a CUfunction's tag */
	forged[1] = (uint64_t)(uintptr_t)decoy;
	forged[3] = (uint64_t)(uintptr_t)name;
	__device_stub__Z6stubbyv();
	app_wait_for_signal("POISONED");
	fprintf(stderr, "{\"pid\":%d,\"api\":\"poison\",\"launch_rc\":%d,\"slot\":3,\"name\":\"%s\"}\n", (int)getpid(),
		(int)rc, name);
	return 0;
}
