/* SPDX-License-Identifier: BSD-3-Clause */
/* BPF hash maps read and pruned from user space, for every mode. */
#ifndef GP_MAPS_H
#define GP_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deletes every key of the hash map fd whose leading __u32 (every key gpuprobe keeps per
 * process starts with the tgid) matches; returns how many, or -errno. Keys are collected
 * first: deleting the key an iteration stands on sends get_next_key back to the start. */
int gp_map__delete_pids(int fd, size_t key_size, bool (*match)(void *ctx, uint32_t pid), void *ctx);
/* Deletes every key for which match(ctx, key) holds; returns how many, or -errno. */
int gp_map__delete_if(int fd, size_t key_size, bool (*match)(void *ctx, const void *key), void *ctx);
/* The same for one pid. */
int gp_map__delete_pid(int fd, size_t key_size, uint32_t pid);

#endif
