/* SPDX-License-Identifier: BSD-3-Clause */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/ncclkern.h"

#define NAME_MAX_LEN 4096

static const char *const protos[] = { "LL128", "LL", "SIMPLE" };
static const char *const redops[] = { "Sum", "Prod", "MinMax", "Min", "Max", "PreMulSum", "SumPostDiv", "Avg" };

/* Kernel type names (both NCCL forms) and the data types that run in them. */
static const struct {
	const char *name, *dtypes;
} types[] = {
	{ "i8", "int8" }, { "u8", "int8 or uint8" }, { "i32", "int32" }, { "u32", "int32 or uint32" },
	{ "i64", "int64" }, { "u64", "int64 or uint64" }, { "f16", "float16" }, { "f32", "float32" },
	{ "f64", "float64" }, { "bf16", "bfloat16" }, { "f8e4m3", "float8e4m3" }, { "f8e5m2", "float8e5m2" },
	{ "int8_t", "int8" }, { "uint8_t", "uint8" }, { "int32_t", "int32" }, { "uint32_t", "uint32" },
	{ "int64_t", "int64" }, { "uint64_t", "uint64" }, { "half", "float16" }, { "float", "float32" },
	{ "double", "float64" }, { "__nv_bfloat16", "bfloat16" }, { "__nv_fp8_e4m3", "float8e4m3" },
	{ "__nv_fp8_e5m2", "float8e5m2" },
};

static bool in(const char *s, const char *const *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, set[i]))
			return true;
	return false;
}

static const char *dtypes_of(const char *t)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(t, types[i].name))
			return types[i].dtypes;
	return NULL;
}

/* The bare name: "_Z<len><name>..." gives <name>; "name(params)" gives name. */
static int bare(const char *name, char *out, size_t len)
{
	size_t n;

	if (!name || strnlen(name, NAME_MAX_LEN + 1) > NAME_MAX_LEN)
		return -EINVAL;
	if (name[0] == '_' && name[1] == 'Z' && isdigit((unsigned char)name[2])) {
		char *end;
		unsigned long l = strtoul(name + 2, &end, 10);

		if (!l || l >= len || strnlen(end, l) < l)
			return -EINVAL;
		memcpy(out, end, l);
		out[l] = '\0';
		return 0;
	}
	n = strcspn(name, "( ");
	if (n >= len)
		return -EINVAL;
	memcpy(out, name, n);
	out[n] = '\0';
	return 0;
}

/* Splits s at '_' into at most max tokens (s is modified). */
static int tokens(char *s, char **tok, int max)
{
	int n = 0;

	for (char *p = s; p && n < max; n++) {
		tok[n] = p;
		p = strchr(p, '_');
		if (p)
			*p++ = '\0';
	}
	return n;
}

/* tok[from..n) joined by '_' into out: a multi-word algorithm (COLLNET_DIRECT, NVLS_TREE). */
static void join(char *out, size_t len, char **tok, int from, int n)
{
	size_t off = 0;

	out[0] = '\0';
	for (int i = from; i < n && off < len; i++)
		off += (size_t)snprintf(out + off, len - off, "%s%s", i > from ? "_" : "", tok[i]);
}

static void set(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src);
}

/* ncclDevKernel_<Op>[_<RedOp>_<Type>]_<Algo...>_<Proto> */
static int decode_dev(char **tok, int n, struct nccl_kernel *k)
{
	int i = 2;

	set(k->op, sizeof(k->op), tok[1]);
	if (!strcmp(tok[1], "Generic") || !strcmp(tok[1], "SendRecv"))
		return n == 2 ? 0 : -EINVAL;
	if (n > 4 && in(tok[2], redops, sizeof(redops) / sizeof(redops[0]))) {
		if (!dtypes_of(tok[3]))
			return -EINVAL;
		set(k->redop, sizeof(k->redop), tok[2]);
		set(k->type, sizeof(k->type), tok[3]);
		set(k->dtypes, sizeof(k->dtypes), dtypes_of(tok[3]));
		i = 4;
	}
	if (n - i < 2 || !in(tok[n - 1], protos, sizeof(protos) / sizeof(protos[0])))
		return -EINVAL;
	join(k->algo, sizeof(k->algo), tok, i, n - 1);
	set(k->proto, sizeof(k->proto), tok[n - 1]);
	return 0;
}

/* ncclKernel_<Op>_<Algo...>_<Proto>_<RedOp>_<Type> (the type may hold '_': uint8_t) */
static int decode_legacy(char **tok, int n, struct nccl_kernel *k)
{
	int p;

	k->legacy = true;
	set(k->op, sizeof(k->op), tok[1]);
	for (p = 2; p < n && !in(tok[p], protos, sizeof(protos) / sizeof(protos[0])); p++)
		;
	if (p == 2 || p + 2 >= n || !in(tok[p + 1], redops, sizeof(redops) / sizeof(redops[0])))
		return -EINVAL;
	join(k->algo, sizeof(k->algo), tok, 2, p);
	set(k->proto, sizeof(k->proto), tok[p]);
	set(k->redop, sizeof(k->redop), tok[p + 1]);
	join(k->type, sizeof(k->type), tok, p + 2, n);
	if (!dtypes_of(k->type))
		return -EINVAL;
	set(k->dtypes, sizeof(k->dtypes), dtypes_of(k->type));
	return 0;
}

int nccl_kernel__decode(const char *name, struct nccl_kernel *out)
{
	char buf[256], *tok[16];
	int n;

	memset(out, 0, sizeof(*out));
	if (bare(name, buf, sizeof(buf)))
		return -EINVAL;
	n = tokens(buf, tok, 16);
	if (n < 2 || !tok[1][0])
		return -EINVAL;
	if (!strcmp(tok[0], "ncclDevKernel"))
		return decode_dev(tok, n, out);
	if (!strcmp(tok[0], "ncclKernel"))
		return decode_legacy(tok, n, out);
	return -EINVAL;
}

int nccl_kernel__describe(const char *name, char *buf, size_t len)
{
	struct nccl_kernel k;

	if (nccl_kernel__decode(name, &k)) {
		if (len)
			buf[0] = '\0';
		return 0;
	}
	if (!strcmp(k.op, "SendRecv"))
		return snprintf(buf, len, "SendRecv: point-to-point, AlltoAll, Gather or Scatter (peers not in the name)");
	if (!strcmp(k.op, "Generic"))
		return snprintf(buf, len, "Generic: any operation (op, type, algorithm and protocol not in the name)");
	return snprintf(buf, len, "%s, %s, %s, %s kernel%s%s", k.op, k.dtypes[0] ? k.dtypes : "no data type",
			k.algo, k.proto,
			!strcmp(k.redop, "Sum") ? "; the call's reduction may be any that runs in the Sum kernel" : "",
			!strcmp(k.proto, "LL") ? "; LL128 and SIMPLE calls run in it too" : "");
}
