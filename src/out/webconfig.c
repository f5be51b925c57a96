/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "out/webconfig.h"

#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <resolv.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <yaml.h>
#include <microhttpd.h>

/* Defined (1) only in the static bundle, whose GnuTLS is stubbed out. */
extern const int gp_no_tls __attribute__((weak));

#define BCRYPT_LEN 60
#define MAX_NAME 256		/* a user name, a header name */
#define MAX_HEADERS 5

struct user {
	char name[MAX_NAME];
	char hash[BCRYPT_LEN + 1];
	bool accepted;		/* mac holds the last password that matched */
	unsigned char mac[16];	/* its SipHash-2-4-128 under the process's random key */
};

struct webconfig {
	char *cert, *key;	/* NUL-terminated PEM, or NULL */
	char priorities[160];
	int min_ver, max_ver;	/* 10..13 */
	bool prefer_server;
	struct MHD_OptionItem opts[4];
	struct user users[WEBCONFIG_MAX_USERS];
	size_t nr_users;
	char dummy[CRYPT_OUTPUT_SIZE];	/* a bcrypt hash no password is tried against */
	struct {
		char name[MAX_NAME], *value;
	} headers[MAX_HEADERS];
	size_t nr_headers;
	struct crypt_data *cd;	/* ~32 KiB of libcrypt scratch, reused */
	uint64_t mac_key[2];	/* random, this process's: accepted passwords are kept as MACs */
};

/* Parsing state: the file, its folder (relative cert paths) and the error line. */
struct ctx {
	const char *path;
	char dir[PATH_MAX];
	char *err;
	size_t errlen;
	bool tls_seen, cert_inline, key_inline;
	char *cert_file, *key_file;
};

__attribute__((format(printf, 3, 4)))
static int fail(struct ctx *c, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n)
		snprintf(c->err, c->errlen, "web config %s:%zu: %s", c->path,
			 (size_t)n->start_mark.line + 1, msg);
	else
		snprintf(c->err, c->errlen, "web config %s: %s", c->path, msg);
	return -EINVAL;
}

/*
 * A directory that only root (or gpuprobe's own user) can change: owned by one of them,
 * and not writable by group or others, unless sticky (others cannot rename what they do
 * not own) or on a read-only mount (a Kubernetes Secret volume is a tmpfs of mode 1777
 * mounted read-only).
 */
static bool safe_dir(const char *dir)
{
	struct statvfs vfs;
	struct stat st;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()))
		return false;
	if (!(st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_mode & S_ISVTX))
		return true;
	return !statvfs(dir, &vfs) && (vfs.f_flag & ST_RDONLY);
}

/* Every directory from / down to the folder of path (absolute or not) is safe. */
static bool safe_dirs(const char *path)
{
	char dir[PATH_MAX], abs[PATH_MAX];
	const char *slash = strrchr(path, '/');
	bool ok;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash == path ? 1 : slash - path), path);
	if (!realpath(dir, abs))
		return false;
	ok = safe_dir("/") && safe_dir(abs);
	for (char *s = strchr(abs + 1, '/'); ok && s; s = strchr(s + 1, '/')) {
		*s = '\0';
		ok = safe_dir(abs);
		*s = '/';
	}
	return ok;
}

/*
 * Opens an admin-named file: not through a symbolic link that someone other than root
 * could have planted or redirected. A link is followed only when it is root's (or ours),
 * sits in a safe folder and resolves through safe folders to a file of root's (or ours):
 * Kubernetes Secret volumes are made of such links (name -> ..data/name).
 */
static int open_admin_file(const char *path, char *why, size_t len)
{
	char real[PATH_MAX];
	struct stat lst, st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);

	if (fd >= 0 || errno != ELOOP) {
		if (fd < 0)
			snprintf(why, len, "%s: %s", path, strerror(errno));
		return fd < 0 ? -errno : fd;
	}
	if (lstat(path, &lst) || (lst.st_uid != 0 && lst.st_uid != geteuid()) ||
	    !realpath(path, real) || !safe_dirs(path) || !safe_dirs(real) ||
	    stat(real, &st) || (st.st_uid != 0 && st.st_uid != geteuid())) {
		snprintf(why, len, "%s: a symbolic link that others than root could change (or to a file of theirs): name the file itself", path);
		return -ELOOP;
	}
	fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		snprintf(why, len, "%s: %s", real, strerror(errno));
	return fd < 0 ? -errno : fd;
}

/* One regular file, never blocking on a FIFO, at most max bytes: NUL-terminated in *out. */
static int read_file(const char *path, size_t max, char **out, char *why, size_t len)
{
	char *buf = NULL;
	struct stat st;
	size_t n = 0;
	ssize_t r = 0;
	int fd = -1, err = 0;

	fd = open_admin_file(path, why, len);
	if (fd < 0) {
		err = fd;
		fd = -1;
		goto cleanup;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		err = -EINVAL;
		snprintf(why, len, "%s: not a regular file", path);
		goto cleanup;
	}
	if ((size_t)st.st_size > max) {
		err = -EFBIG;
		snprintf(why, len, "%s: %lld bytes, more than the %zu allowed", path,
			 (long long)st.st_size, max);
		goto cleanup;
	}
	buf = malloc(max + 1);
	if (!buf) {
		err = -ENOMEM;
		snprintf(why, len, "%s: out of memory", path);
		goto cleanup;
	}
	/* Read to EOF, not st_size: the file may grow; one byte past max is an error. */
	while (n <= max && (r = read(fd, buf + n, max + 1 - n)) > 0)
		n += (size_t)r;
	if (r < 0 || n > max) {
		err = r < 0 ? -errno : -EFBIG;
		snprintf(why, len, "%s: %s", path, r < 0 ? strerror(errno) : "grew past the size allowed");
		goto cleanup;
	}
	buf[n] = '\0';
	if (n == 0 || strlen(buf) != n) {
		err = -EINVAL;
		snprintf(why, len, "%s: %s", path, n ? "contains a NUL byte" : "empty");
		goto cleanup;
	}
	*out = buf;
	buf = NULL;
cleanup:
	free(buf);
	if (fd >= 0)
		close(fd);
	return err;
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int want_scalar(struct ctx *c, const yaml_node_t *n, const char *key, const char **out)
{
	*out = scalar(n);
	if (!*out)
		return fail(c, n, "%s: expected a string", key);
	return 0;
}

static int want_bool(struct ctx *c, const yaml_node_t *n, const char *key, bool *out)
{
	const char *s = scalar(n);

	if (s && !strcmp(s, "true"))
		*out = true;
	else if (s && !strcmp(s, "false"))
		*out = false;
	else
		return fail(c, n, "%s: expected true or false", key);
	return 0;
}

static int tls_version(struct ctx *c, const yaml_node_t *n, const char *key, int *out)
{
	static const char *names[] = { "TLS10", "TLS11", "TLS12", "TLS13" };
	const char *s = scalar(n);

	for (int i = 0; s && i < 4; i++) {
		if (!strcmp(s, names[i])) {
			*out = 10 + i;
			return 0;
		}
	}
	return fail(c, n, "%s: %s is not one of TLS10, TLS11, TLS12, TLS13", key, s ? s : "(not a string)");
}

/* A duplicate key would make the file mean two things: refuse it. */
static int check_dups(struct ctx *c, yaml_document_t *doc, const yaml_node_t *map)
{
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(doc, p->key));

		if (!k)
			return fail(c, yaml_document_get_node(doc, p->key), "keys must be strings");
		for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
			if (!strcmp(k, scalar(yaml_document_get_node(doc, q->key))))
				return fail(c, yaml_document_get_node(doc, p->key), "%s given twice", k);
		}
	}
	return 0;
}

/* Each key/value node pair of a mapping. */
#define FOR_PAIRS(doc, map, kn, vn)                                                        \
	for (yaml_node_pair_t *p_ = (map)->data.mapping.pairs.start;                      \
	     p_ < (map)->data.mapping.pairs.top &&                                        \
	     ((kn) = yaml_document_get_node((doc), p_->key),                               \
	      (vn) = yaml_document_get_node((doc), p_->value), 1);                         \
	     p_++)

static int want_map(struct ctx *c, yaml_document_t *doc, const yaml_node_t *n, const char *key)
{
	if (!n || n->type != YAML_MAPPING_NODE)
		return fail(c, n, "%s: expected a mapping", key);
	return check_dups(c, doc, n);
}

static int dup_str(struct ctx *c, const yaml_node_t *n, const char *s, char **out)
{
	*out = strdup(s);
	return *out ? 0 : fail(c, n, "out of memory");
}

static int parse_tls(struct webconfig *wc, struct ctx *c, yaml_document_t *doc, yaml_node_t *map)
{
	yaml_node_t *k, *v;
	const char *s;
	int err;

	if ((err = want_map(c, doc, map, "tls_server_config")))
		return err;
	c->tls_seen = true;
	FOR_PAIRS(doc, map, k, v) {
		const char *key = scalar(k);

		if (!strcmp(key, "cert_file") || !strcmp(key, "key_file")) {
			char **dst = key[0] == 'c' ? &c->cert_file : &c->key_file;

			if ((err = want_scalar(c, v, key, &s)))
				return err;
			if (!*s)
				return fail(c, v, "%s is empty", key);
			if (s[0] == '/')
				err = dup_str(c, v, s, dst);
			else if (asprintf(dst, "%s/%s", c->dir, s) < 0)
				err = fail(c, v, "out of memory"), *dst = NULL;
		} else if (!strcmp(key, "cert") || !strcmp(key, "key")) {
			char **dst = key[0] == 'c' ? &wc->cert : &wc->key;

			if ((err = want_scalar(c, v, key, &s)))
				return err;
			if (strlen(s) > WEBCONFIG_MAX_PEM)
				return fail(c, v, "%s: longer than %d bytes", key, WEBCONFIG_MAX_PEM);
			err = dup_str(c, v, s, dst);
			*(key[0] == 'c' ? &c->cert_inline : &c->key_inline) = true;
		} else if (!strcmp(key, "min_version")) {
			err = tls_version(c, v, key, &wc->min_ver);
		} else if (!strcmp(key, "max_version")) {
			err = tls_version(c, v, key, &wc->max_ver);
		} else if (!strcmp(key, "prefer_server_cipher_suites")) {
			err = want_bool(c, v, key, &wc->prefer_server);
		} else if (!strcmp(key, "client_auth_type")) {
			if ((err = want_scalar(c, v, key, &s)))
				return err;
			if (strcmp(s, "NoClientCert"))
				return fail(c, v, "client_auth_type %s is not supported by gpuprobe (only NoClientCert): use basic_auth_users", s);
		} else if (!strcmp(key, "client_ca_file") || !strcmp(key, "client_ca") ||
			   !strcmp(key, "client_allowed_sans") || !strcmp(key, "cipher_suites") ||
			   !strcmp(key, "curve_preferences")) {
			return fail(c, k, "tls_server_config.%s is not supported by gpuprobe", key);
		} else {
			return fail(c, k, "unknown key tls_server_config.%s", key);
		}
		if (err)
			return err;
	}
	return 0;
}

static int parse_http(struct webconfig *wc, struct ctx *c, yaml_document_t *doc, yaml_node_t *map)
{
	static const char *known[MAX_HEADERS] = { "Content-Security-Policy", "X-Frame-Options",
		"X-Content-Type-Options", "X-XSS-Protection", "Strict-Transport-Security" };
	yaml_node_t *k, *v, *hk, *hv;
	int err;

	if ((err = want_map(c, doc, map, "http_server_config")))
		return err;
	FOR_PAIRS(doc, map, k, v) {
		const char *key = scalar(k);
		bool b;

		if (!strcmp(key, "http2")) {
			if ((err = want_bool(c, v, key, &b)))
				return err;
			continue;
		}
		if (strcmp(key, "headers"))
			return fail(c, k, "unknown key http_server_config.%s", key);
		if ((err = want_map(c, doc, v, "headers")))
			return err;
		FOR_PAIRS(doc, v, hk, hv) {
			const char *name = scalar(hk), *val;
			size_t i;

			for (i = 0; i < MAX_HEADERS && strcmp(name, known[i]); i++)
				;
			if (i == MAX_HEADERS)
				return fail(c, hk, "header %s is not one the toolkit allows", name);
			if ((err = want_scalar(c, hv, name, &val)))
				return err;
			if (strpbrk(val, "\r\n") || strlen(val) > 4096)
				return fail(c, hv, "header %s: a line break or over 4096 bytes", name);
			if (!*val)	/* "Unset if blank" */
				continue;
			snprintf(wc->headers[wc->nr_headers].name, MAX_NAME, "%s", name);
			if ((err = dup_str(c, hv, val, &wc->headers[wc->nr_headers].value)))
				return err;
			wc->nr_headers++;
		}
	}
	return 0;
}

/* $2a$/$2b$/$2y$, a two-digit cost, 53 characters of bcrypt's base64. */
static bool bcrypt_shaped(const char *h)
{
	if (strlen(h) != BCRYPT_LEN || h[0] != '$' || h[1] != '2' || !strchr("aby", h[2]) ||
	    h[3] != '$' || h[4] < '0' || h[4] > '3' || h[5] < '0' || h[5] > '9' || h[6] != '$')
		return false;
	for (const char *p = h + 7; *p; p++) {
		if (!(*p == '.' || *p == '/' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9')))
			return false;
	}
	return crypt_checksalt(h) == CRYPT_SALT_OK;
}

static int parse_users(struct webconfig *wc, struct ctx *c, yaml_document_t *doc, yaml_node_t *map)
{
	yaml_node_t *k, *v;
	int err;

	if (map->type == YAML_SCALAR_NODE && !*scalar(map))
		return 0;	/* "basic_auth_users:" with nothing: no authentication */
	if ((err = want_map(c, doc, map, "basic_auth_users")))
		return err;
	FOR_PAIRS(doc, map, k, v) {
		const char *user = scalar(k), *hash;
		struct user *u;

		if (wc->nr_users == WEBCONFIG_MAX_USERS)
			return fail(c, k, "more than %d users", WEBCONFIG_MAX_USERS);
		if (!*user || strlen(user) >= MAX_NAME || strchr(user, ':'))
			return fail(c, k, "user name must be 1-%d bytes without ':'", MAX_NAME - 1);
		if ((err = want_scalar(c, v, user, &hash)))
			return err;
		if (!bcrypt_shaped(hash))
			return fail(c, v, "user %s: not a bcrypt hash ($2a$, $2b$ or $2y$, 60 characters; make one with htpasswd -nBC 10 \"\" | tr -d ':\\n')", user);
		u = &wc->users[wc->nr_users++];
		snprintf(u->name, sizeof(u->name), "%s", user);
		memcpy(u->hash, hash, BCRYPT_LEN + 1);
	}
	return 0;
}

static int parse(struct webconfig *wc, struct ctx *c, const char *text)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root, *k, *v;
	bool parser_ok = false, doc_ok = false;
	int err = 0;

	if (!yaml_parser_initialize(&parser)) {
		err = fail(c, NULL, "out of memory");
		goto cleanup;
	}
	parser_ok = true;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(c->err, c->errlen, "web config %s:%zu: %s %s", c->path,
			 (size_t)parser.problem_mark.line + 1, parser.problem ? parser.problem : "YAML error",
			 parser.context ? parser.context : "");
		err = -EINVAL;
		goto cleanup;
	}
	doc_ok = true;
	root = yaml_document_get_root_node(&doc);
	if (!root || (root->type == YAML_SCALAR_NODE && !*scalar(root)))
		goto cleanup;	/* an empty file: no TLS, no users, as in the toolkit */
	if ((err = want_map(c, &doc, root, "the file")))
		goto cleanup;
	FOR_PAIRS(&doc, root, k, v) {
		const char *key = scalar(k);

		if (!strcmp(key, "tls_server_config") && scalar(v) && !*scalar(v))
			continue;	/* "tls_server_config:" with nothing: no TLS */
		if (!strcmp(key, "tls_server_config"))
			err = parse_tls(wc, c, &doc, v);
		else if (!strcmp(key, "http_server_config"))
			err = parse_http(wc, c, &doc, v);
		else if (!strcmp(key, "basic_auth_users"))
			err = parse_users(wc, c, &doc, v);
		else if (!strcmp(key, "rate_limit"))
			err = fail(c, k, "rate_limit is not supported by gpuprobe");
		else
			err = fail(c, k, "unknown key %s", key);
		if (err)
			goto cleanup;
	}
cleanup:
	if (doc_ok)
		yaml_document_delete(&doc);
	if (parser_ok)
		yaml_parser_delete(&parser);
	return err;
}

static int load_pem(struct ctx *c, const char *file, char **out, const char *what)
{
	char why[PATH_MAX + 128];
	int err = read_file(file, WEBCONFIG_MAX_PEM, out, why, sizeof(why));

	return err ? fail(c, NULL, "%s %s", what, why) : 0;
}

static enum MHD_Result no_requests(void *cls, struct MHD_Connection *conn, const char *url,
				   const char *method, const char *version, const char *upload,
				   size_t *upload_len, void **state)
{
	(void)cls, (void)conn, (void)url, (void)method, (void)version, (void)upload,
		(void)upload_len, (void)state;
	return MHD_NO;
}

/* libmicrohttpd's first message (GnuTLS's reason), one line, for the error. */
static void keep_first(void *cls, const char *fmt, va_list ap)
{
	char *why = cls;

	if (!why[0]) {
		vsnprintf(why, 256, fmt, ap);
		for (char *p = why; *p; p++) {
			if (*p == '\n' || *p == '\r')
				*p = *(p + 1) ? ' ' : '\0';
		}
	}
}

/* TLS material: present in pairs, shaped like PEM, accepted by libmicrohttpd's GnuTLS. */
static int check_tls(struct webconfig *wc, struct ctx *c)
{
	struct MHD_Daemon *probe;
	char why[256] = "";
	int err = 0;

	if (c->cert_file && c->cert_inline)
		return fail(c, NULL, "tls_server_config: cert and cert_file both given");
	if (c->key_file && c->key_inline)
		return fail(c, NULL, "tls_server_config: key and key_file both given");
	if (c->cert_file && (err = load_pem(c, c->cert_file, &wc->cert, "cert_file")))
		return err;
	if (c->key_file && (err = load_pem(c, c->key_file, &wc->key, "key_file")))
		return err;
	if (!wc->cert || !wc->key)
		return fail(c, NULL, "tls_server_config needs both a certificate (cert_file) and a key (key_file)");
	if (!strstr(wc->cert, "-----BEGIN CERTIFICATE-----"))
		return fail(c, NULL, "%s: no PEM certificate (-----BEGIN CERTIFICATE-----)",
			    c->cert_file ? c->cert_file : "cert");
	if (!strstr(wc->key, "-----BEGIN ") || !strstr(wc->key, "PRIVATE KEY-----"))
		return fail(c, NULL, "%s: no PEM private key (-----BEGIN ... PRIVATE KEY-----)",
			    c->key_file ? c->key_file : "key");
	if (strstr(wc->key, "ENCRYPTED"))
		return fail(c, NULL, "%s: an encrypted private key: gpuprobe takes unencrypted keys (as the toolkit)",
			    c->key_file ? c->key_file : "key");
	if (wc->min_ver > wc->max_ver)
		return fail(c, NULL, "min_version TLS%d is above max_version TLS%d", wc->min_ver, wc->max_ver);
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
		return fail(c, NULL, "this libmicrohttpd was built without TLS");

	/* NORMAL, less every version, plus the allowed ones: GnuTLS's own syntax. */
	snprintf(wc->priorities, sizeof(wc->priorities), "NORMAL:-VERS-ALL");
	for (int v = wc->max_ver; v >= wc->min_ver; v--) {
		size_t l = strlen(wc->priorities);

		snprintf(wc->priorities + l, sizeof(wc->priorities) - l, ":+VERS-TLS1.%d", v - 10);
	}
	if (wc->prefer_server)
		strcat(wc->priorities, ":%SERVER_PRECEDENCE");
	wc->opts[0] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, wc->cert };
	wc->opts[1] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, wc->key };
	wc->opts[2] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0, wc->priorities };
	wc->opts[3] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };

	/* The static bundle's libmicrohttpd has GnuTLS stubbed out (src/static/mhd_notls.c),
	 * which would crash rather than fail: refused by name. */
	if (&gp_no_tls && gp_no_tls)
		return fail(c, NULL, "this gpuprobe has no TLS (the static bundle): use the dynamically "
			    "linked build (make bundle's dyn/) or the package for tls_server_config");
	/* A daemon with no socket loads the credentials as the real one will: a key that is
	 * not the certificate's, or a PEM GnuTLS cannot read, fails here. */
	probe = MHD_start_daemon(MHD_USE_TLS | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG, 0, NULL, NULL,
				 no_requests, NULL, MHD_OPTION_EXTERNAL_LOGGER, keep_first, why,
				 MHD_OPTION_ARRAY, wc->opts, MHD_OPTION_END);
	if (!probe)
		return fail(c, NULL, "libmicrohttpd refused the certificate and key: %s",
			    why[0] ? why : "no reason given");
	MHD_stop_daemon(probe);
	return 0;
}

/* A hash of the highest configured cost that no password is checked against: unknown
 * users pay the same bcrypt as known ones. */
static int make_dummy(struct webconfig *wc, struct ctx *c)
{
	char salt[CRYPT_GENSALT_OUTPUT_SIZE];
	unsigned long cost = 4;

	for (size_t i = 0; i < wc->nr_users; i++) {
		unsigned long uc = (unsigned long)(wc->users[i].hash[4] - '0') * 10 +
				   (unsigned long)(wc->users[i].hash[5] - '0');
		if (uc > cost)
			cost = uc;
	}
	if (!crypt_gensalt_rn("$2b$", cost, NULL, 0, salt, sizeof(salt)) ||
	    !crypt_rn("gpuprobe: no such user", salt, wc->cd, sizeof(*wc->cd)))
		return fail(c, NULL, "libcrypt cannot make a bcrypt hash of cost %lu", cost);
	snprintf(wc->dummy, sizeof(wc->dummy), "%s", wc->cd->output);
	return 0;
}

struct webconfig *webconfig__load(const char *path, char *err, size_t errlen)
{
	struct ctx c = { .path = path, .err = err, .errlen = errlen };
	struct webconfig *wc = NULL;
	char *text = NULL, why[PATH_MAX + 128];
	const char *slash;
	int r;

	err[0] = '\0';
	wc = calloc(1, sizeof(*wc));
	if (wc)
		wc->cd = calloc(1, sizeof(*wc->cd));
	if (!wc || !wc->cd) {
		r = fail(&c, NULL, "out of memory");
		goto cleanup;
	}
	if (getrandom(wc->mac_key, sizeof(wc->mac_key), 0) != sizeof(wc->mac_key)) {
		r = fail(&c, NULL, "no random key for the password cache: %s", strerror(errno));
		goto cleanup;
	}
	wc->min_ver = 12;
	wc->max_ver = 13;
	wc->prefer_server = true;
	wc->opts[0].option = MHD_OPTION_END;
	slash = strrchr(path, '/');
	if (!slash)
		snprintf(c.dir, sizeof(c.dir), ".");
	else
		snprintf(c.dir, sizeof(c.dir), "%.*s", (int)(slash == path ? 1 : slash - path), path);
	if ((r = read_file(path, WEBCONFIG_MAX_FILE, &text, why, sizeof(why)))) {
		snprintf(err, errlen, "web config %s", why);
		goto cleanup;
	}
	if ((r = parse(wc, &c, text)))
		goto cleanup;
	if (c.tls_seen && (r = check_tls(wc, &c)))
		goto cleanup;
	if (wc->nr_users && (r = make_dummy(wc, &c)))
		goto cleanup;
cleanup:
	free(text);
	free(c.cert_file);
	free(c.key_file);
	if (r) {
		webconfig__free(wc);
		wc = NULL;
	}
	return wc;
}

static void free_secret(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void webconfig__free(struct webconfig *wc)
{
	if (!wc)
		return;
	free(wc->cert);
	free_secret(wc->key);
	for (size_t i = 0; i < wc->nr_headers; i++)
		free(wc->headers[i].value);
	if (wc->cd)
		explicit_bzero(wc->cd, sizeof(*wc->cd));
	free(wc->cd);
	explicit_bzero(wc, sizeof(*wc));
	free(wc);
}

bool webconfig__tls(const struct webconfig *wc)
{
	return wc && wc->cert;
}

const char *webconfig__cert_pem(const struct webconfig *wc)
{
	return wc ? wc->cert : NULL;
}

const char *webconfig__key_pem(const struct webconfig *wc)
{
	return wc ? wc->key : NULL;
}

const char *webconfig__priorities(const struct webconfig *wc)
{
	return webconfig__tls(wc) ? wc->priorities : NULL;
}

unsigned int webconfig__mhd_flags(const struct webconfig *wc)
{
	return webconfig__tls(wc) ? MHD_USE_TLS : 0;
}

const struct MHD_OptionItem *webconfig__mhd_options(const struct webconfig *wc)
{
	static const struct MHD_OptionItem none[] = { { MHD_OPTION_END, 0, NULL } };

	return wc ? wc->opts : none;
}

size_t webconfig__users(const struct webconfig *wc)
{
	return wc ? wc->nr_users : 0;
}

bool webconfig__header(const struct webconfig *wc, size_t i, const char **name, const char **value)
{
	if (!wc || i >= wc->nr_headers)
		return false;
	*name = wc->headers[i].name;
	*value = wc->headers[i].value;
	return true;
}

/* Equal bytes and lengths, in time that depends on the lengths only. */
static bool ct_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	unsigned char d = alen != blen;

	for (size_t i = 0; i < alen && i < blen; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                         \
	do {                                                                             \
		v0 += v1, v1 = ROTL(v1, 13), v1 ^= v0, v0 = ROTL(v0, 32);                 \
		v2 += v3, v3 = ROTL(v3, 16), v3 ^= v2;                                    \
		v0 += v3, v3 = ROTL(v3, 21), v3 ^= v0;                                    \
		v2 += v1, v1 = ROTL(v1, 17), v1 ^= v2, v2 = ROTL(v2, 32);                 \
	} while (0)

/*
 * SipHash-2-4 with 128 bits out (Aumasson and Bernstein): what the cache keeps of an
 * accepted password, under a key drawn at load, so the process never holds an accepted
 * password after its request, and a guess is compared in constant time to a MAC no one
 * outside can compute.
 */
static void siphash128(const uint64_t k[2], const char *in, size_t len, unsigned char out[16])
{
	uint64_t v0 = 0x736f6d6570736575ULL ^ k[0], v1 = 0x646f72616e646f6dULL ^ k[1] ^ 0xee;
	uint64_t v2 = 0x6c7967656e657261ULL ^ k[0], v3 = 0x7465646279746573ULL ^ k[1];
	uint64_t b = (uint64_t)len << 56, m;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&m, in + i, 8); /* little-endian hosts (x86-64, arm64): the reference's order */
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t j = 0; i + j < len; j++)
		b |= (uint64_t)(unsigned char)in[i + j] << (8 * j);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xee;
	for (int r = 0; r < 4; r++)
		SIPROUND;
	m = v0 ^ v1 ^ v2 ^ v3;
	memcpy(out, &m, 8);
	v1 ^= 0xdd;
	for (int r = 0; r < 4; r++)
		SIPROUND;
	m = v0 ^ v1 ^ v2 ^ v3;
	memcpy(out + 8, &m, 8);
}

/* A password only bcrypt can judge: checked off the serving thread (webconfig__verify). */
struct webconfig_check {
	struct user *u;			/* NULL: an unknown user, checked against the dummy */
	unsigned char mac[16];		/* the password's, for the cache */
	char hash[CRYPT_OUTPUT_SIZE];	/* the user's hash, or the dummy */
	char *pass;
	struct crypt_data *cd;		/* ~32 KiB of libcrypt scratch of its own */
};

static void free_check(struct webconfig_check *ck)
{
	if (!ck)
		return;
	free_secret(ck->pass);
	if (ck->cd)
		explicit_bzero(ck->cd, sizeof(*ck->cd));
	free(ck->cd);
	free(ck);
}

enum webconfig_auth webconfig__begin_auth(struct webconfig *wc, const char *authorization,
					  struct webconfig_check **out)
{
	unsigned char raw[WEBCONFIG_MAX_AUTH];
	enum webconfig_auth res = WEBCONFIG_AUTH_MISSING;
	struct webconfig_check *ck = NULL;
	struct user *u = NULL;
	unsigned char mac[16];
	char *colon, *pass;
	size_t plen;
	int n;

	*out = NULL;
	if (!wc || !wc->nr_users)
		return WEBCONFIG_AUTH_OK;
	if (!authorization || strlen(authorization) >= WEBCONFIG_MAX_AUTH ||
	    strncasecmp(authorization, "Basic ", 6))
		return WEBCONFIG_AUTH_MISSING;
	authorization += 6;
	while (*authorization == ' ')
		authorization++;
	n = b64_pton(authorization, raw, sizeof(raw) - 1);
	if (n <= 0)
		goto cleanup;
	raw[n] = '\0';
	colon = memchr(raw, ':', (size_t)n);
	if (!colon || strlen((char *)raw) != (size_t)n)
		goto cleanup;	/* RFC 7617: user ':' password, no NUL */
	*colon = '\0';
	pass = colon + 1;
	plen = strlen(pass);
	for (size_t i = 0; i < wc->nr_users; i++) {
		if (!strcmp(wc->users[i].name, (char *)raw))
			u = &wc->users[i];
	}
	res = WEBCONFIG_AUTH_DENIED;
	siphash128(wc->mac_key, pass, plen, mac);
	if (u && u->accepted && ct_equal((char *)u->mac, sizeof(u->mac), (char *)mac, sizeof(mac))) {
		res = WEBCONFIG_AUTH_OK;
		goto cleanup;
	}
	ck = calloc(1, sizeof(*ck));
	if (!ck || !(ck->cd = calloc(1, sizeof(*ck->cd))) || !(ck->pass = strdup(pass))) {
		free_check(ck);
		goto cleanup;	/* out of memory: refused, never let through */
	}
	ck->u = u;
	memcpy(ck->mac, mac, sizeof(mac));
	snprintf(ck->hash, sizeof(ck->hash), "%s", u ? u->hash : wc->dummy);
	*out = ck;
	res = WEBCONFIG_AUTH_PENDING;
cleanup:
	explicit_bzero(raw, sizeof(raw));
	explicit_bzero(mac, sizeof(mac));
	return res;
}

bool webconfig__verify(struct webconfig_check *ck)
{
	const char *out = crypt_rn(ck->pass, ck->hash, ck->cd, sizeof(*ck->cd));
	bool ok = out && ck->u && ct_equal(out, strlen(out), ck->hash, strlen(ck->hash));

	explicit_bzero(ck->cd->input, sizeof(ck->cd->input));
	return ok;
}

enum webconfig_auth webconfig__end_auth(struct webconfig_check *ck, bool ok)
{
	if (!ck)
		return WEBCONFIG_AUTH_DENIED;
	if (ok) {
		memcpy(ck->u->mac, ck->mac, sizeof(ck->mac)); /* the next request is a compare */
		ck->u->accepted = true;
	}
	free_check(ck);
	return ok ? WEBCONFIG_AUTH_OK : WEBCONFIG_AUTH_DENIED;
}

enum webconfig_auth webconfig__check_auth(struct webconfig *wc, const char *authorization)
{
	struct webconfig_check *ck;
	enum webconfig_auth res = webconfig__begin_auth(wc, authorization, &ck);

	if (res != WEBCONFIG_AUTH_PENDING)
		return res;
	return webconfig__end_auth(ck, webconfig__verify(ck));
}
