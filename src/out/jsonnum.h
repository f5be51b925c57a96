/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Numbers the way people read them. JSON: doubles in the shortest form that reads back to
 * the same double (json-c's default prints 17 digits, 6.7590350000000005e-07 for 6.759035e-07),
 * integral values without an exponent, nanoseconds as exact microseconds. Text: bytes in
 * binary units (KiB, MiB…), durations in ns/us/ms/s (and h/m past a minute), rates in decimal
 * units (kB/s, MB/s, GB/s) as link speeds are quoted.
 */
#ifndef GP_JSONNUM_H
#define GP_JSONNUM_H

#include <stddef.h>
#include <stdint.h>

struct json_object;

/* Longest text num__shortest writes, with its NUL ("-2.2250738585072014e-308"). */
#define NUM_SHORTEST_MAX 32

/* The shortest decimal text that strtod reads back as v: returns its length, or -EDOM for
 * NaN and infinities (JSON has no spelling for them), -ENOSPC if len is too small. */
int num__shortest(double v, char *buf, size_t len);
/* A json-c double that serializes as num__shortest; NULL (JSON null) for NaN/infinities or
 * when out of memory. */
struct json_object *num__json_double(double v);
/* Every double in the tree o (objects and arrays, 64 levels deep) serializes as
 * num__shortest from here on, NaN and infinities as null: renderers build their reports
 * with json_object_new_double, and the writers (gp_json__print, the --trace summary) call
 * this once before printing. */
void num__json_shorten(struct json_object *o);
/* ns / 1000 written exactly ("1234.567", "12"), e.g. Chrome trace "ts"/"dur" in us. */
struct json_object *num__json_us(uint64_t ns);

/* Text for people: "512 B", "1.50 KiB", "12.3 MiB", "1023 MiB", "4.00 GiB"; three
 * significant digits. */
void num__bytes(uint64_t bytes, char *buf, size_t len);
/* "850 ns", "12.5 us", "3.20 ms", "1.25 s", "59.9 s", "2m 05s", "3h 07m"; "-" for a
 * negative or non-finite value (nothing measured). */
void num__seconds(double s, char *buf, size_t len);
/* Bytes per second: "950 B/s", "12.5 MB/s", "52.0 GB/s"; "-" as num__seconds. */
void num__rate(double bytes_per_s, char *buf, size_t len);

#endif
