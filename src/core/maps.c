/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "core/maps.h"

#define MAX_KEY 256

int gp_map__delete_if(int fd, size_t key_size, bool (*match)(void *ctx, const void *key), void *ctx)
{
	char key[MAX_KEY], next[MAX_KEY];
	char *doomed = NULL;
	size_t n = 0, cap = 0;
	void *prev = NULL;
	int deleted = 0;

	if (!key_size || key_size > MAX_KEY)
		return -EINVAL;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		if (match(ctx, next)) {
			if (n == cap) {
				size_t c = cap ? cap * 2 : 64;
				char *d = realloc(doomed, c * key_size);

				if (!d)
					break; /* the rest go next time */
				doomed = d;
				cap = c;
			}
			memcpy(doomed + n++ * key_size, next, key_size);
		}
		memcpy(key, next, key_size);
		prev = key;
	}
	for (size_t i = 0; i < n; i++)
		deleted += bpf_map_delete_elem(fd, doomed + i * key_size) == 0;
	free(doomed);
	return deleted;
}

struct pid_match {
	bool (*match)(void *ctx, uint32_t pid);
	void *ctx;
};

static bool key_pid_matches(void *ctx, const void *key)
{
	struct pid_match *m = ctx;
	uint32_t pid;

	memcpy(&pid, key, sizeof(pid));
	return m->match(m->ctx, pid);
}

int gp_map__delete_pids(int fd, size_t key_size, bool (*match)(void *ctx, uint32_t pid), void *ctx)
{
	struct pid_match m = { match, ctx };

	if (key_size < sizeof(uint32_t))
		return -EINVAL;
	return gp_map__delete_if(fd, key_size, key_pid_matches, &m);
}

static bool same_pid(void *ctx, uint32_t pid)
{
	return pid == *(uint32_t *)ctx;
}

int gp_map__delete_pid(int fd, size_t key_size, uint32_t pid)
{
	return gp_map__delete_pids(fd, key_size, same_pid, &pid);
}
