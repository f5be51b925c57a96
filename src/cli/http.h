/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon's HTTP server (libmicrohttpd, driven from the daemon's one thread) with the
 * guards that keep it answering under abuse: every connection carries one request
 * ("Connection: close"), whose headers must arrive within a deadline counted from the
 * connection's start — trickling bytes does not reset it, unlike libmicrohttpd's idle
 * timeout — and the oldest unfinished connections are closed before the connection cap is
 * reached, so a new client always finds a slot.
 *
 * With a web configuration (src/out/webconfig.h): TLS through libmicrohttpd's GnuTLS,
 * HTTP basic authentication for every path but one left open (the daemon's /healthz, for
 * liveness probes, which send no credentials), the configured response headers. A
 * password accepted before is a constant-time compare; any other is checked with bcrypt
 * by one thread of its own (nice 10) while its connection waits suspended, at most two
 * at a time: more are answered 429 at once (counted, logged). A flood of wrong passwords
 * thus costs one core at most, never the serving thread (which also reads the ring
 * buffer), so accepted clients and /healthz are answered as fast as without it.
 */
#ifndef GP_HTTP_H
#define GP_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct http;
struct webconfig;

/* The answer to one GET or HEAD: status, content type and body (malloc'ed, taken over). */
struct http_reply {
	unsigned int status;
	const char *type;
	char *body;
	size_t len;
};

typedef void (*http_handler)(void *ctx, const char *url, struct http_reply *out);

struct http_limits {
	unsigned int max_conns;  /* connections at once (libmicrohttpd refuses more) */
	unsigned int reserve;    /* slots kept free by closing the oldest unfinished ones */
	uint64_t header_ns;      /* a request's headers must arrive within this of the connect */
};

/* Serves on the listening socket lfd (taken over, also on failure); wc (NULL: plain
 * HTTP, no authentication) stays the caller's; open_path answers without credentials.
 * NULL with err. */
struct http *http__start(int lfd, int family, const struct http_limits *lim, struct webconfig *wc,
			 const char *open_path, http_handler h, void *ctx, char *err, size_t len);
/* An fd that polls readable when the server has work. */
int http__poll_fd(struct http *s);
/* Serves what is ready and enforces the deadlines; call after poll. */
void http__run(struct http *s);
unsigned int http__port(struct http *s);
/* Connections closed by the guards so far (deadline, eviction). */
uint64_t http__closed_slow(const struct http *s);
/* Requests refused for missing or wrong credentials. */
uint64_t http__auth_failures(const struct http *s);
/* Requests answered 429 because AUTH_QUEUE password checks (bcrypt) were running or waiting. */
uint64_t http__auth_busy(const struct http *s);
void http__stop(struct http *s);

#endif
