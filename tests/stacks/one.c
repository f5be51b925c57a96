/* SPDX-License-Identifier: BSD-3-Clause */
/* A library with nothing in it: test_kept_files_limit maps 300 copies of it. */
int one(void);

int one(void)
{
	return 1;
}
