/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The web configuration file of the Prometheus exporter toolkit (node_exporter's
 * --web.config.file), for gpuprobe daemon --web-config FILE: TLS through libmicrohttpd's
 * GnuTLS, HTTP basic authentication with bcrypt hashes through libcrypt (libxcrypt).
 *
 * Supported keys (anything else is one error line naming the key and its line):
 *   tls_server_config: cert_file, key_file (relative paths are relative to the config
 *     file's folder, as in the toolkit), or cert, key inline; min_version, max_version
 *     (TLS10..TLS13, default TLS12..TLS13); client_auth_type: NoClientCert only;
 *     prefer_server_cipher_suites (bool). The toolkit's client certificates, cipher_suites,
 *     curve_preferences and client_allowed_sans are refused by name rather than ignored:
 *     a security setting that silently does nothing is worse than an error.
 *   http_server_config: http2 (accepted; libmicrohttpd speaks HTTP/1.1 only), headers
 *     (the toolkit's five security headers, added to every response by the caller).
 *   basic_auth_users: user: bcrypt hash ($2a$, $2b$, $2y$).
 *
 * Files (the config, cert_file, key_file) are read bounded, regular files only, never
 * blocking. A symbolic link is followed only if root (or gpuprobe's user) owns it and
 * everything it goes through: a Kubernetes Secret volume (web.yml -> ..data/web.yml on
 * a read-only tmpfs) passes, a link in a folder others may write does not.
 *
 * The file is read once (the daemon decides when to reload). Not thread-safe: call
 * webconfig__check_auth, __begin_auth and __end_auth from one thread (libmicrohttpd's
 * external-select loop) or lock; only webconfig__verify may run on another.
 */
#ifndef GP_WEBCONFIG_H
#define GP_WEBCONFIG_H

#include <stdbool.h>
#include <stddef.h>

struct webconfig;
struct MHD_OptionItem;

/* Caps on what the config names: bounded reads, never a surprise allocation. */
#define WEBCONFIG_MAX_FILE   (64 * 1024)	/* the YAML file */
#define WEBCONFIG_MAX_PEM    (1024 * 1024)	/* a certificate chain or a key */
#define WEBCONFIG_MAX_USERS  64
#define WEBCONFIG_MAX_AUTH   1024		/* an Authorization header value */

enum webconfig_auth {
	WEBCONFIG_AUTH_OK = 0,	/* no users configured, or the credentials are right */
	WEBCONFIG_AUTH_MISSING,	/* users configured, no usable Basic credentials sent */
	WEBCONFIG_AUTH_DENIED,	/* unknown user or wrong password */
	WEBCONFIG_AUTH_PENDING,	/* only bcrypt can tell (webconfig__begin_auth) */
};

/* A password check that needs bcrypt (webconfig__begin_auth .. __end_auth). */
struct webconfig_check;

/*
 * Reads and checks path. On error returns NULL with one line in err, starting with the
 * file name (and line, where the YAML has one). TLS material is checked by starting a
 * libmicrohttpd daemon without a socket, so a key that does not match its certificate
 * is refused here, at start-up, not at the first scrape.
 */
struct webconfig *webconfig__load(const char *path, char *err, size_t errlen);
void webconfig__free(struct webconfig *wc);

bool webconfig__tls(const struct webconfig *wc);
/* NUL-terminated PEM, or NULL without TLS: MHD_OPTION_HTTPS_MEM_CERT / _KEY. */
const char *webconfig__cert_pem(const struct webconfig *wc);
const char *webconfig__key_pem(const struct webconfig *wc);
/* The GnuTLS priority string made of min_version/max_version: MHD_OPTION_HTTPS_PRIORITIES. */
const char *webconfig__priorities(const struct webconfig *wc);

/* What the daemon ORs into MHD_start_daemon's flags (MHD_USE_TLS or 0) and passes as
 * MHD_OPTION_ARRAY (the TLS options, ended by MHD_OPTION_END; valid until __free). */
unsigned int webconfig__mhd_flags(const struct webconfig *wc);
const struct MHD_OptionItem *webconfig__mhd_options(const struct webconfig *wc);

/* Number of basic_auth_users; 0: no authentication asked. */
size_t webconfig__users(const struct webconfig *wc);
/*
 * The value of a request's Authorization header (NULL if it had none) against
 * basic_auth_users. A known user's password is checked with crypt_rn and compared in
 * constant time; an unknown user costs the same bcrypt work (a dummy hash of the highest
 * cost configured), so timing does not tell which users exist. An accepted password is
 * remembered per user, so a scraper costs one bcrypt, not one per scrape (the toolkit
 * caches too). Answer 401 with WWW-Authenticate: Basic to anything but _OK.
 */
enum webconfig_auth webconfig__check_auth(struct webconfig *wc, const char *authorization);

/*
 * webconfig__check_auth in three steps, so that bcrypt (~0.25 s at cost 12) runs off the
 * thread that serves and reads the ring buffer. begin: everything but bcrypt, on the
 * serving thread: _OK (no users, or the password accepted before, compared in constant
 * time), _MISSING, _DENIED (malformed), or _PENDING with *out, a check holding copies of
 * what bcrypt needs. verify: bcrypt, on any thread (touches only *ck; one thread per
 * check). end: on the serving thread again; remembers an accepted password, frees ck.
 */
enum webconfig_auth webconfig__begin_auth(struct webconfig *wc, const char *authorization,
					  struct webconfig_check **out);
bool webconfig__verify(struct webconfig_check *ck);
enum webconfig_auth webconfig__end_auth(struct webconfig_check *ck, bool ok);

/* http_server_config.headers: the i-th (name, value), false past the last. */
bool webconfig__header(const struct webconfig *wc, size_t i, const char **name,
		       const char **value);

#endif
