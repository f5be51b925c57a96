/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <microhttpd.h>
#include "http.h"
#include "util.h"
#include "webconfig.h"

/* A connection the guards watch: from its start until its request is answered. */
struct conn {
	struct conn *prev, *next; /* oldest first */
	struct MHD_Connection *c;
	int fd;
	uint64_t start_ns;
	bool answered, shut;
};

struct http {
	struct MHD_Daemon *mhd;
	struct http_limits lim;
	struct webconfig *wc;
	const char *open_path;
	http_handler handler;
	void *ctx;
	struct conn *head, *tail;
	unsigned int nr;
	uint64_t closed_slow, auth_failures;
};

static void unlink_conn(struct http *s, struct conn *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		s->head = k->next;
	if (k->next)
		k->next->prev = k->prev;
	else
		s->tail = k->prev;
	s->nr--;
}

static void on_notify(void *cls, struct MHD_Connection *c, void **socket_ctx,
		      enum MHD_ConnectionNotificationCode code)
{
	struct http *s = cls;
	struct conn *k = *socket_ctx;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (k) {
			unlink_conn(s, k);
			free(k);
			*socket_ctx = NULL;
		}
		return;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return; /* unwatched: libmicrohttpd's own timeout still applies */
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	k->c = c;
	k->fd = ci ? ci->connect_fd : -1;
	k->start_ns = gp_mono_ns();
	k->prev = s->tail;
	if (s->tail)
		s->tail->next = k;
	else
		s->head = k;
	s->tail = k;
	s->nr++;
	*socket_ctx = k;
}

/* Closes a connection under libmicrohttpd: it sees end of file and cleans up itself. */
static void shut(struct http *s, struct conn *k)
{
	if (k->shut || k->fd < 0)
		return;
	shutdown(k->fd, SHUT_RDWR);
	k->shut = true;
	s->closed_slow++;
}

static void guard(struct http *s)
{
	uint64_t now = gp_mono_ns();
	unsigned int open = 0;

	for (struct conn *k = s->head; k; k = k->next)
		open += !k->shut;
	for (struct conn *k = s->head; k; k = k->next) {
		if (k->answered || k->shut)
			continue;
		if (now - k->start_ns > s->lim.header_ns) {
			shut(s, k);
			open--;
		} else if (open + s->lim.reserve > s->lim.max_conns) {
			shut(s, k); /* the oldest unfinished one makes room */
			open--;
		}
	}
}

/* Basic authentication where the web configuration asks for it; a refusal is queued. */
static bool refused(struct http *s, struct MHD_Connection *c, const char *url, enum MHD_Result *ret)
{
	static const char no[] = "unauthorized\n";
	struct MHD_Response *resp;

	if (!s->wc || !webconfig__users(s->wc) || (s->open_path && !strcmp(url, s->open_path)))
		return false;
	if (webconfig__check_auth(s->wc, MHD_lookup_connection_value(c, MHD_HEADER_KIND,
								      MHD_HTTP_HEADER_AUTHORIZATION)) ==
	    WEBCONFIG_AUTH_OK)
		return false;
	s->auth_failures++;
	resp = MHD_create_response_from_buffer(sizeof(no) - 1, (void *)no, MHD_RESPMEM_PERSISTENT);
	*ret = MHD_NO;
	if (!resp)
		return true;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	*ret = MHD_queue_basic_auth_fail_response(c, "gpuprobe", resp);
	MHD_destroy_response(resp);
	return true;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct http *s = cls;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *k = ci ? ci->socket_context : NULL;
	struct http_reply r = { 0 };
	struct MHD_Response *resp;
	enum MHD_Result ret;
	const char *hn, *hv;

	(void)version, (void)upload, (void)con_cls;
	if (k)
		k->answered = true;
	if (*upload_size)
		return MHD_NO; /* no request here has a body */
	if (refused(s, c, url, &ret))
		return ret;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		r = (struct http_reply){ MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
					 strdup("method not allowed\n"), 19 };
	} else {
		s->handler(s->ctx, url, &r);
	}
	if (!r.body)
		return MHD_NO;
	resp = MHD_create_response_from_buffer(r.len, r.body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(r.body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	for (size_t i = 0; s->wc && webconfig__header(s->wc, i, &hn, &hv); i++)
		MHD_add_response_header(resp, hn, hv);
	ret = MHD_queue_response(c, r.status, resp);
	MHD_destroy_response(resp);
	return ret;
}

struct http *http__start(int lfd, int family, const struct http_limits *lim, struct webconfig *wc,
			 const char *open_path, http_handler h, void *ctx, char *err, size_t len)
{
	static const struct MHD_OptionItem none[] = { { MHD_OPTION_END, 0, NULL } };
	struct http *s = calloc(1, sizeof(*s));
	unsigned int flags = MHD_USE_EPOLL | (family == AF_INET6 ? MHD_USE_IPv6 : 0);

	if (!s) {
		close(lfd);
		snprintf(err, len, "out of memory");
		return NULL;
	}
	s->lim = *lim;
	s->wc = wc;
	s->open_path = open_path;
	s->handler = h;
	s->ctx = ctx;
	if (wc)
		flags |= webconfig__mhd_flags(wc);
	s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, lfd,
				  MHD_OPTION_CONNECTION_LIMIT, lim->max_conns,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)(lim->header_ns / 1000000000ULL) + 1,
				  MHD_OPTION_NOTIFY_CONNECTION, on_notify, s,
				  MHD_OPTION_ARRAY, wc ? webconfig__mhd_options(wc) : none, MHD_OPTION_END);
	if (!s->mhd) {
		close(lfd);
		free(s);
		snprintf(err, len, "cannot start the HTTP server%s",
			 wc && webconfig__tls(wc) && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES ?
				 ": this libmicrohttpd has no TLS" : "");
		return NULL;
	}
	return s;
}

int http__poll_fd(struct http *s)
{
	const union MHD_DaemonInfo *ei = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);

	return ei ? ei->epoll_fd : -1;
}

void http__run(struct http *s)
{
	MHD_run(s->mhd);
	guard(s);
}

unsigned int http__port(struct http *s)
{
	const union MHD_DaemonInfo *pi = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);

	return pi ? pi->port : 0;
}

uint64_t http__closed_slow(const struct http *s)
{
	return s->closed_slow;
}

uint64_t http__auth_failures(const struct http *s)
{
	return s->auth_failures;
}

void http__stop(struct http *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->mhd); /* every connection closed: the notifications free them */
	while (s->head) {
		struct conn *k = s->head;

		unlink_conn(s, k);
		free(k);
	}
	free(s);
}
