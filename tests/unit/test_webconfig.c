/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * src/out/webconfig.c: the exporter toolkit's web configuration file. Certificates and
 * keys are made at test time with openssl (no private key is committed), bcrypt hashes
 * with two independent implementations (htpasswd from apache2-utils: $2y$; mkpasswd from
 * whois, through libxcrypt: $2b$). The last tests start libmicrohttpd with TLS and the
 * auth check, as the daemon will, and hit it with curl over https.
 *
 * `test_webconfig --serve DIR PORT` serves /metrics with DIR/web.yml until killed (for a
 * real Prometheus in tests/integration).
 */
#define _GNU_SOURCE
#include "unit.h"
#include "out/webconfig.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>

static char dir[64];
static char hash_y[128], hash_b[128], hash_slow[128], hash_colon[128];
static char err[1024];

__attribute__((format(printf, 1, 2)))
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* The first line a shell command prints, without its newline. */
__attribute__((format(printf, 3, 4)))
static int sh_out(char *out, size_t len, const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	FILE *p;
	int r;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	out[0] = '\0';
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (!fgets(out, (int)len, p))
		out[0] = '\0';
	out[strcspn(out, "\n")] = '\0';
	r = pclose(p);
	return r;
}

__attribute__((format(printf, 2, 3)))
static void put(const char *name, const char *fmt, ...)
{
	char path[256];
	va_list ap;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

static struct webconfig *load(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return webconfig__load(path, err, sizeof(err));
}

static char *b64(const char *s)
{
	static char out[512];

	sh_out(out, sizeof(out), "printf '%%s' '%s' | base64 -w0", s);
	return out;
}

static char *basic(const char *userpass)
{
	static char hdr[600];

	snprintf(hdr, sizeof(hdr), "Basic %s", b64(userpass));
	return hdr;
}

/* This thread's CPU time: bcrypt is CPU work, and a loaded machine (other test runs)
 * stretches wall time, not this. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Certificates for localhost/127.0.0.1, a second unrelated key, bcrypt hashes. */
static int setup(void)
{
	int r = 0;

	snprintf(dir, sizeof(dir), "/tmp/gp-webconfig-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	r |= sh("cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		"-keyout key.pem -out cert.pem -days 2 -subj /CN=localhost "
		"-addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null", dir);
	r |= sh("cd %s && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 "
		"-out other.pem 2>/dev/null", dir);
	r |= sh("cd %s && openssl pkey -in key.pem -aes256 -passout pass:x -out enc.pem 2>/dev/null", dir);
	r |= sh("cd %s && mkdir -p sub && cp cert.pem key.pem sub/ && ln -s key.pem keylink.pem && "
		"mkfifo fifo.pem", dir);
	/* Links others could change: in a folder anyone may write, to a file in one, owned
	 * by nobody. And the layout of a Kubernetes Secret volume (name -> ..data/name). */
	r |= sh("cd %s && mkdir -p open && chmod 0777 open && ln -s ../key.pem open/keylink.pem && "
		"cp key.pem open/key.pem && ln -s open/key.pem tounsafe.pem && "
		"ln -s key.pem nobodylink.pem && chown -h nobody nobodylink.pem && "
		"mkdir -p secret/..2026_11_22_21_00_00.1 && cp cert.pem secret/..2026_11_22_21_00_00.1/tls.crt && "
		"cp key.pem secret/..2026_11_22_21_00_00.1/tls.key && "
		"printf 'tls_server_config:\\n  cert_file: tls.crt\\n  key_file: tls.key\\n' > secret/..2026_11_22_21_00_00.1/web.yml && "
		"ln -s ..2026_11_22_21_00_00.1 secret/..data && for f in tls.crt tls.key web.yml; do "
		"ln -s ..data/$f secret/$f; done", dir);
	/* htpasswd prints user:hash; the cost 5 keeps the suite fast, 9 is for timing. */
	r |= sh_out(hash_y, sizeof(hash_y), "htpasswd -nbB -C 5 alice 'wonder land' | cut -d: -f2-");
	r |= sh_out(hash_b, sizeof(hash_b), "mkpasswd -m bcrypt -R 5 'b0b'");
	r |= sh_out(hash_slow, sizeof(hash_slow), "mkpasswd -m bcrypt -R 9 'slow'");
	r |= sh_out(hash_colon, sizeof(hash_colon), "mkpasswd -m bcrypt -R 4 'a:b:c'");
	if (r || strncmp(hash_y, "$2y$05$", 7) || strncmp(hash_b, "$2b$05$", 7)) {
		printf("# setup failed (openssl, htpasswd, mkpasswd?): %d %s %s\n", r, hash_y, hash_b);
		return -1;
	}
	put("users.yml", "basic_auth_users:\n  alice: '%s'\n  bob: %s\n  slow: %s\n  colon: %s\n",
	    hash_y, hash_b, hash_slow, hash_colon);
	return 0;
}

static void test_empty_file_means_nothing_asked(void)
{
	struct webconfig *wc;

	put("empty.yml", "# nothing\n");
	wc = load("empty.yml");
	if (!ASSERT_TRUE(wc != NULL, "loaded"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__tls(wc), 0, "no_tls"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__users(wc), 0, "no_users"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__mhd_flags(wc), 0, "no_mhd_flags"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__mhd_options(wc)[0].option, MHD_OPTION_END, "no_mhd_options"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__check_auth(wc, NULL), WEBCONFIG_AUTH_OK, "no_auth_asked"))
		goto cleanup;
cleanup:
	webconfig__free(wc);
	webconfig__free(NULL);
}

static void test_basic_auth_both_hash_flavours(void)
{
	struct webconfig *wc = load("users.yml");

	if (!wc)
		printf("# %s\n", err);
	if (!ASSERT_TRUE(wc != NULL, "loaded"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__users(wc), 4, "users"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__tls(wc), 0, "no_tls"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__check_auth(wc, basic("alice:wonder land")), WEBCONFIG_AUTH_OK, "alice_ok"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__check_auth(wc, basic("bob:b0b")), WEBCONFIG_AUTH_OK, "bob_ok"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__check_auth(wc, basic("colon:a:b:c")), WEBCONFIG_AUTH_OK, "colon_password_ok"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__check_auth(wc, basic("alice:wonder lan")), WEBCONFIG_AUTH_DENIED, "alice_wrong_password"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__check_auth(wc, basic("alice:")), WEBCONFIG_AUTH_DENIED, "alice_empty_password"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__check_auth(wc, basic("bob:wonder land")), WEBCONFIG_AUTH_DENIED, "bob_alice_password"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__check_auth(wc, basic("mallory:b0b")), WEBCONFIG_AUTH_DENIED, "mallory_denied"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__check_auth(wc, basic("Alice:wonder land")), WEBCONFIG_AUTH_DENIED, "user_case_sensitive"))
		goto cleanup;
	/* the scheme is case-insensitive (RFC 9110); the rest is not */
	{
		char h[600];

		snprintf(h, sizeof(h), "basic   %s", b64("bob:b0b"));
		if (!ASSERT_EQ(webconfig__check_auth(wc, h), WEBCONFIG_AUTH_OK, "scheme_case_insensitive"))
			goto cleanup;
	}
cleanup:
	webconfig__free(wc);
}

static void test_malformed_headers_are_missing(void)
{
	struct webconfig *wc = load("users.yml");
	char big[WEBCONFIG_MAX_AUTH + 16];

	if (!ASSERT_TRUE(wc != NULL, "loaded"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__check_auth(wc, NULL), WEBCONFIG_AUTH_MISSING, "no_header"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__check_auth(wc, ""), WEBCONFIG_AUTH_MISSING, "empty_header"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__check_auth(wc, "Bearer abc"), WEBCONFIG_AUTH_MISSING, "bearer"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__check_auth(wc, "Basic"), WEBCONFIG_AUTH_MISSING, "basic_no_credentials"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__check_auth(wc, "Basic !!!!"), WEBCONFIG_AUTH_MISSING, "basic_bad_base64"))
		goto cleanup;
	/* no colon, and a NUL inside the user name */
	if (!ASSERT_EQ(webconfig__check_auth(wc, basic("alice")), WEBCONFIG_AUTH_MISSING, "no_colon"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__check_auth(wc, "Basic YWxpY2UAeDp5"), WEBCONFIG_AUTH_MISSING, "nul_in_user"))
		goto cleanup;
	memset(big, 'A', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "Basic ", 6);
	if (!ASSERT_EQ(webconfig__check_auth(wc, big), WEBCONFIG_AUTH_MISSING, "oversized_header"))
		goto cleanup;
cleanup:
	webconfig__free(wc);
}

/* A right password is checked once with bcrypt, then from the cache; an unknown user
 * costs a bcrypt all the same (no timing oracle on user names). */
static void test_cache_and_unknown_user_cost(void)
{
	struct webconfig *wc = load("users.yml");
	double t0, first, cached, unknown, wrong;
	char right[600], nobody[600], bad[600];

	if (!ASSERT_TRUE(wc != NULL, "loaded"))
		goto cleanup;
	snprintf(right, sizeof(right), "%s", basic("slow:slow"));
	snprintf(nobody, sizeof(nobody), "%s", basic("nobody:slow"));
	snprintf(bad, sizeof(bad), "%s", basic("slow:wrong"));
	t0 = now();
	if (!ASSERT_EQ(webconfig__check_auth(wc, right), WEBCONFIG_AUTH_OK, "right_password_first"))
		goto cleanup;
	first = now() - t0;
	t0 = now();
	if (!ASSERT_EQ(webconfig__check_auth(wc, right), WEBCONFIG_AUTH_OK, "right_password_cached"))
		goto cleanup;
	cached = now() - t0;
	t0 = now();
	if (!ASSERT_EQ(webconfig__check_auth(wc, nobody), WEBCONFIG_AUTH_DENIED, "unknown_user_denied"))
		goto cleanup;
	unknown = now() - t0;
	t0 = now();
	if (!ASSERT_EQ(webconfig__check_auth(wc, bad), WEBCONFIG_AUTH_DENIED, "wrong_password_denied"))
		goto cleanup;
	wrong = now() - t0;
	printf("# bcrypt cost 9, CPU time: first %.1f ms, cached %.3f ms, unknown user %.1f ms, wrong %.1f ms\n",
	       first * 1e3, cached * 1e3, unknown * 1e3, wrong * 1e3);
	if (!ASSERT_TRUE(cached * 10 < first, "cache_faster"))
		goto cleanup;
	if (!ASSERT_TRUE(unknown * 3 > first, "unknown_user_costs_bcrypt"))
		goto cleanup;	/* same cost, within scheduling noise */
	if (!ASSERT_TRUE(wrong * 3 > first, "wrong_password_costs_bcrypt"))
		goto cleanup;		/* a wrong password is not cached */
	/* after a wrong one, the right one still passes */
	if (!ASSERT_EQ(webconfig__check_auth(wc, right), WEBCONFIG_AUTH_OK, "right_password_again"))
		goto cleanup;
cleanup:
	webconfig__free(wc);
}

static void test_tls_relative_paths_and_priorities(void)
{
	struct webconfig *wc;

	put("sub/tls.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n");
	wc = load("sub/tls.yml");
	if (!wc)
		printf("# %s\n", err);
	if (!ASSERT_TRUE(wc != NULL, "loaded"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__tls(wc), 1, "tls"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__mhd_flags(wc), MHD_USE_TLS, "mhd_tls_flag"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(webconfig__cert_pem(wc), "-----BEGIN CERTIFICATE-----", "contains -----BEGIN CERTIFICATE-----"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(webconfig__key_pem(wc), "PRIVATE KEY-----", "contains PRIVATE KEY-----"))
		goto cleanup;
	if (!ASSERT_STR_EQ(webconfig__priorities(wc), "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:%SERVER_PRECEDENCE", "default_priorities"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__mhd_options(wc)[0].option, MHD_OPTION_HTTPS_MEM_CERT, "option_cert"))
		goto cleanup;
	if (!ASSERT_TRUE(webconfig__mhd_options(wc)[0].ptr_value == webconfig__cert_pem(wc), "cert_pem_passed"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__mhd_options(wc)[1].option, MHD_OPTION_HTTPS_MEM_KEY, "option_key"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__mhd_options(wc)[2].option, MHD_OPTION_HTTPS_PRIORITIES, "option_priorities"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__mhd_options(wc)[3].option, MHD_OPTION_END, "options_end"))
		goto cleanup;
	webconfig__free(wc);

	put("tls13.yml", "tls_server_config:\n  cert_file: %s/cert.pem\n  key_file: %s/key.pem\n"
	    "  min_version: TLS13\n  prefer_server_cipher_suites: false\n"
	    "  client_auth_type: NoClientCert\n"
	    "http_server_config:\n  http2: false\n  headers:\n    X-Frame-Options: deny\n"
	    "    Content-Security-Policy: ''\n", dir, dir);
	wc = load("tls13.yml");
	if (!wc)
		printf("# %s\n", err);
	if (!ASSERT_TRUE(wc != NULL, "loaded"))
		goto cleanup;
	if (!ASSERT_STR_EQ(webconfig__priorities(wc), "NORMAL:-VERS-ALL:+VERS-TLS1.3", "tls13_priorities"))
		goto cleanup;
	{
		const char *n, *v;

		if (!ASSERT_TRUE(webconfig__header(wc, 0, &n, &v), "first_header"))
			goto cleanup;
		if (!ASSERT_STR_EQ(n, "X-Frame-Options", "header_name"))
			goto cleanup;
		if (!ASSERT_STR_EQ(v, "deny", "header_value"))
			goto cleanup;
		if (!ASSERT_TRUE(!webconfig__header(wc, 1, &n, &v), "one_header"))
			goto cleanup;	/* blank: unset */
	}
cleanup:
	webconfig__free(wc);
}

/* Every mistake is one line that names the file, the line where there is one, and what. */
static void expect_error(const char *name, const char *body, const char *want)
{
	struct webconfig *wc;

	put(name, "%s", body);
	wc = load(name);
	if (wc) {
		printf("#   %s loaded, expected an error with \"%s\"\n", name, want);
		webconfig__free(wc);
		unit_cur_failed = 1;
		unit_asserts_failed++;
		return;
	}
	if (!strstr(err, want) || strchr(err, '\n') || strncmp(err, "web config ", 11)) {
		printf("#   %s: error \"%s\" lacks \"%s\" (or is not one line)\n", name, err, want);
		unit_cur_failed = 1;
		unit_asserts_failed++;
		return;
	}
	unit_asserts_passed++;
}

static void test_errors_one_line_each(void)
{
	char body[1024];

	expect_error("e1.yml", "basic_auth_user:\n  a: b\n", "e1.yml:1: unknown key basic_auth_user");
	expect_error("e2.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  keyfile: x\n",
		     "e2.yml:4: unknown key tls_server_config.keyfile");
	expect_error("e3.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
		     "  client_auth_type: RequireAndVerifyClientCert\n", "client_auth_type RequireAndVerifyClientCert is not supported");
	expect_error("e4.yml", "tls_server_config:\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
		     "tls_server_config.cipher_suites is not supported by gpuprobe");
	expect_error("e5.yml", "basic_auth_users:\n  alice: secret\n", "e5.yml:2: user alice: not a bcrypt hash");
	expect_error("e6.yml", "basic_auth_users:\n  alice: $1$abcdefgh$abcdefghijklmnopqrstuv\n", "not a bcrypt hash");
	expect_error("e7.yml", "tls_server_config:\n  cert_file: nothere.pem\n  key_file: key.pem\n",
		     "cert_file ");
	expect_error("e7b.yml", "tls_server_config:\n  cert_file: nothere.pem\n  key_file: key.pem\n",
		     "nothere.pem: No such file or directory");
	expect_error("e8.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: open/keylink.pem\n",
		     "open/keylink.pem: a symbolic link that others than root could change");
	expect_error("e8b.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: tounsafe.pem\n",
		     "tounsafe.pem: a symbolic link that others than root could change");
	expect_error("e8c.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: nobodylink.pem\n",
		     "nobodylink.pem: a symbolic link that others than root could change");
	expect_error("e9.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: fifo.pem\n",
		     "fifo.pem: not a regular file");
	expect_error("e10.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: other.pem\n",
		     "refused the certificate and key: GnuTLS failed to setup x509 certificate/key: The certificate and the given key do not match");
	expect_error("e11.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: enc.pem\n",
		     "enc.pem: an encrypted private key");
	expect_error("e12.yml", "tls_server_config:\n  cert_file: cert.pem\n", "needs both a certificate");
	expect_error("e13.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
		     "  min_version: TLS13\n  max_version: TLS12\n", "min_version TLS13 is above max_version TLS12");
	expect_error("e14.yml", "tls_server_config:\n  min_version: SSL3\n", "e14.yml:2: min_version: SSL3 is not one of");
	expect_error("e15.yml", "basic_auth_users:\n  a: [x\n", "e15.yml:");
	expect_error("e16.yml", "basic_auth_users: {}\nbasic_auth_users: {}\n", "e16.yml:2: basic_auth_users given twice");
	expect_error("e17.yml", "- a\n- b\n", "the file: expected a mapping");
	expect_error("e18.yml", "http_server_config:\n  headers:\n    Set-Cookie: x\n", "header Set-Cookie is not one the toolkit allows");
	expect_error("e19.yml", "http_server_config:\n  http2: maybe\n", "http2: expected true or false");
	expect_error("e20.yml", "rate_limit:\n  interval: 1s\n", "rate_limit is not supported");
	expect_error("e21.yml", "tls_server_config:\n  cert_file: key.pem\n  key_file: key.pem\n",
		     "no PEM certificate");
	snprintf(body, sizeof(body), "basic_auth_users:\n  \"a:b\": '%s'\n", hash_b);
	expect_error("e22.yml", body, "user name must be");
	expect_error("e23.yml", "tls_server_config:\n  cert_file: cert.pem\n  cert: x\n  key_file: key.pem\n",
		     "cert and cert_file both given");
	{
		/* over the size cap: refused before parsing */
		char path[256];
		FILE *f;

		snprintf(path, sizeof(path), "%s/big.yml", dir);
		f = fopen(path, "w");
		if (!ASSERT_TRUE(f != NULL, "big_file_written"))
			goto cleanup;
		for (int i = 0; i < WEBCONFIG_MAX_FILE / 8 + 1; i++)
			fputs("# pad  \n", f);
		fclose(f);
		if (!ASSERT_TRUE(load("big.yml") == NULL, "big_refused"))
			goto cleanup;
		if (!ASSERT_STR_CONTAINS(err, "more than the 65536 allowed", "contains more than the 65536 allowed"))
			goto cleanup;
	}
	if (!ASSERT_TRUE(webconfig__load("/nonexistent/web.yml", err, sizeof(err)) == NULL, "missing_file"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "web config /nonexistent/web.yml: No such file or directory", "missing_file_message"))
		goto cleanup;
cleanup:;
}

/* Kubernetes Secret volumes are links (web.yml -> ..data/web.yml, ..data -> ..<time>)
 * in folders of root's: followed. A link of root's in a safe folder too. */
static void test_links_of_root_are_followed(void)
{
	char path[256];
	struct webconfig *wc;

	snprintf(path, sizeof(path), "%s/secret/web.yml", dir);
	wc = webconfig__load(path, err, sizeof(err));
	if (!wc)
		printf("# %s\n", err);
	if (!ASSERT_TRUE(wc != NULL, "secret_links_loaded"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__tls(wc), 1, "secret_tls"))
		goto cleanup;
	webconfig__free(wc);
	put("link.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: keylink.pem\n");
	wc = load("link.yml");
	if (!wc)
		printf("# %s\n", err);
	if (!ASSERT_TRUE(wc != NULL, "key_link_loaded"))
		goto cleanup;
cleanup:
	webconfig__free(wc);
}

static void test_inline_cert_and_key(void)
{
	char cmd[512], body[16384];
	FILE *p;
	size_t n;
	struct webconfig *wc;

	/* the PEM as YAML literal blocks, indented by two */
	snprintf(cmd, sizeof(cmd), "cd %s && { echo 'tls_server_config:'; echo '  cert: |'; sed 's/^/    /' cert.pem; "
		 "echo '  key: |'; sed 's/^/    /' key.pem; }", dir);
	p = popen(cmd, "r");
	if (!ASSERT_TRUE(p != NULL, "pem_read"))
		goto cleanup;
	n = fread(body, 1, sizeof(body) - 1, p);
	pclose(p);
	body[n] = '\0';
	put("inline.yml", "%s", body);
	wc = load("inline.yml");
	if (!wc)
		printf("# %s\n", err);
	if (!ASSERT_TRUE(wc != NULL, "loaded"))
		goto cleanup;
	if (!ASSERT_EQ(webconfig__tls(wc), 1, "inline_tls"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(webconfig__cert_pem(wc), "-----END CERTIFICATE-----\n", "contains -----END CERTIFICATE-----"))
		goto cleanup;
cleanup:
	webconfig__free(wc);
}

/* ---- libmicrohttpd with TLS and the auth check, as the daemon wires them ---- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_len, void **state)
{
	struct webconfig *wc = cls;
	static const char ok[] = "gpuprobe_up 1\n", no[] = "unauthorized\n";
	const char *hdr = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	struct MHD_Response *r;
	enum MHD_Result ret;
	const char *n, *v;

	(void)url, (void)method, (void)version, (void)upload, (void)upload_len, (void)state;
	if (webconfig__check_auth(wc, hdr) != WEBCONFIG_AUTH_OK) {
		r = MHD_create_response_from_buffer(sizeof(no) - 1, (void *)no, MHD_RESPMEM_PERSISTENT);
		ret = MHD_queue_basic_auth_fail_response(conn, "gpuprobe", r);
	} else {
		r = MHD_create_response_from_buffer(sizeof(ok) - 1, (void *)ok, MHD_RESPMEM_PERSISTENT);
		for (size_t i = 0; webconfig__header(wc, i, &n, &v); i++)
			MHD_add_response_header(r, n, v);
		ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	}
	MHD_destroy_response(r);
	return ret;
}

static struct MHD_Daemon *serve(struct webconfig *wc, unsigned short *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons(*port) };
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *i;

	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | webconfig__mhd_flags(wc),
			     0, NULL, NULL, on_request, wc, MHD_OPTION_SOCK_ADDR, &sa,
			     MHD_OPTION_ARRAY, webconfig__mhd_options(wc),
			     MHD_OPTION_CONNECTION_TIMEOUT, 10U, MHD_OPTION_END);
	if (!d)
		return NULL;
	i = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	*port = i ? i->port : 0;
	return d;
}

static int curl_code(const char *args, unsigned short port)
{
	char out[64];

	sh_out(out, sizeof(out), "curl -s -o /dev/null -w '%%{http_code}' --max-time 10 --cacert %s/cert.pem "
	       "%s https://localhost:%u/metrics", dir, args, port);
	return atoi(out);
}

static void test_https_with_basic_auth_curl(void)
{
	struct MHD_Daemon *d = NULL;
	struct webconfig *wc = NULL;
	unsigned short port = 0;
	char out[256];
	int code;

	put("https.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
	    "http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"
	    "basic_auth_users:\n  alice: '%s'\n", hash_y);
	wc = load("https.yml");
	if (!wc)
		printf("# %s\n", err);
	if (!ASSERT_TRUE(wc != NULL, "loaded"))
		goto cleanup;
	if (!ASSERT_EQ(MHD_is_feature_supported(MHD_FEATURE_TLS), MHD_YES, "mhd_has_tls"))
		goto cleanup;
	d = serve(wc, &port);
	if (!d)
		webconfig__free(wc);
	if (!ASSERT_TRUE(d != NULL, "daemon_started"))
		goto cleanup;
	code = curl_code("-u 'alice:wonder land'", port);
	if (!ASSERT_EQ(code, 200, "right_password_200"))
		goto cleanup;
	code = curl_code("-u 'alice:wrong'", port);
	if (!ASSERT_EQ(code, 401, "wrong_password_401"))
		goto cleanup;
	code = curl_code("-u 'eve:wonder land'", port);
	if (!ASSERT_EQ(code, 401, "unknown_user_401"))
		goto cleanup;
	code = curl_code("", port);
	if (!ASSERT_EQ(code, 401, "no_credentials_401"))
		goto cleanup;
	/* the 401 asks for Basic; the 200 carries the configured header */
	sh_out(out, sizeof(out), "curl -s -D - -o /dev/null --cacert %s/cert.pem https://localhost:%u/metrics "
	       "| grep -i '^www-authenticate' | tr -d '\\r'", dir, port);
	if (!ASSERT_STR_EQ(out, "WWW-Authenticate: Basic realm=\"gpuprobe\"", "basic_challenge"))
		goto cleanup;
	sh_out(out, sizeof(out), "curl -s -D - -o /dev/null --cacert %s/cert.pem -u 'alice:wonder land' "
	       "https://localhost:%u/metrics | grep -i '^x-content-type-options' | tr -d '\\r'", dir, port);
	if (!ASSERT_STR_EQ(out, "X-Content-Type-Options: nosniff", "configured_header"))
		goto cleanup;
	sh_out(out, sizeof(out), "curl -s --cacert %s/cert.pem -u 'alice:wonder land' https://localhost:%u/metrics",
	       dir, port);
	if (!ASSERT_STR_EQ(out, "gpuprobe_up 1", "metrics_served"))
		goto cleanup;
	/* TLS is required: plain HTTP gets no answer, TLS 1.1 no handshake (min TLS12) */
	code = curl_code("", port);	/* keeps port warm */
	sh_out(out, sizeof(out), "curl -s -o /dev/null -w '%%{http_code}' --max-time 5 http://localhost:%u/metrics", port);
	if (!ASSERT_STR_EQ(out, "000", "plain_http_refused"))
		goto cleanup;
	sh_out(out, sizeof(out), "curl -s -o /dev/null -w '%%{http_code}' --max-time 5 -k --tls-max 1.1 "
	       "-u 'alice:wonder land' https://localhost:%u/metrics", port);
	if (!ASSERT_STR_EQ(out, "000", "tls11_refused"))
		goto cleanup;
	/* the certificate served is the configured one: verified against it by name */
	code = curl_code("--tlsv1.3 -u 'alice:wonder land'", port);
	if (!ASSERT_EQ(code, 200, "cert_verified_by_name"))
		goto cleanup;
	MHD_stop_daemon(d);
cleanup:
	webconfig__free(wc);
}

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* For a real Prometheus in tests/integration: serve until SIGTERM, print the port. */
static int serve_main(const char *cfg, const char *port_s)
{
	struct webconfig *wc = webconfig__load(cfg, err, sizeof(err));
	unsigned short port = (unsigned short)atoi(port_s);
	struct MHD_Daemon *d;

	if (!wc) {
		fprintf(stderr, "test_webconfig: %s\n", err);
		return 1;
	}
	d = serve(wc, &port);
	if (!d) {
		fprintf(stderr, "test_webconfig: cannot serve on port %s\n", port_s);
		webconfig__free(wc);
		return 1;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	printf("listening on %u\n", port);
	fflush(stdout);
	while (!stop)
		pause();
	MHD_stop_daemon(d);
	webconfig__free(wc);
	return 0;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc == 4 && !strcmp(argv[1], "--serve"))
		return serve_main(argv[2], argv[3]);
	if (setup()) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	RUN_TEST(test_empty_file_means_nothing_asked);
	RUN_TEST(test_basic_auth_both_hash_flavours);
	RUN_TEST(test_malformed_headers_are_missing);
	RUN_TEST(test_cache_and_unknown_user_cost);
	RUN_TEST(test_tls_relative_paths_and_priorities);
	RUN_TEST(test_errors_one_line_each);
	RUN_TEST(test_links_of_root_are_followed);
	RUN_TEST(test_inline_cert_and_key);
	RUN_TEST(test_https_with_basic_auth_curl);
	rc = unit_done();
	sh("rm -rf %s", dir);
	return rc;
}
