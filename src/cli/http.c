/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <microhttpd.h>
#include "cli/http.h"
#include "lib/util.h"
#include "out/webconfig.h"

/* A connection the guards watch: from its start until its request is answered. */
struct conn {
	struct conn *prev, *next; /* oldest first */
	struct MHD_Connection *c;
	int fd;
	uint64_t start_ns;
	bool answered, shut;
};

/* A request whose password only bcrypt can judge: its connection suspended meanwhile. */
struct auth_job {
	struct auth_job *next;
	struct MHD_Connection *c;
	struct webconfig_check *ck;
	bool done, ok;
};

/* At most this many password checks at once (one running, the others waiting): more are
 * answered 429 at once, so a flood of wrong passwords costs one core at most and never
 * the serving thread's time. */
#define AUTH_QUEUE 2

struct http {
	struct MHD_Daemon *mhd;
	int epfd, evfd; /* the fd the caller polls: libmicrohttpd's and the checker's */
	pthread_t checker;
	bool checker_on, quit;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct auth_job *todo, *finished; /* under lock */
	unsigned int queued;              /* jobs suspended: serving thread only */
	uint64_t auth_busy, busy_logged_ns;
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

/* The password checker: bcrypt off the serving thread, at a lower priority (nice 10), so
 * neither the ring buffer's reader nor the answers to accepted clients wait for it. */
static void *checker(void *arg)
{
	struct http *s = arg;
	uint64_t one = 1;

	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	pthread_mutex_lock(&s->lock);
	while (!s->quit) {
		struct auth_job *j = s->todo;

		if (!j) {
			pthread_cond_wait(&s->cond, &s->lock);
			continue;
		}
		s->todo = j->next;
		pthread_mutex_unlock(&s->lock);
		j->ok = webconfig__verify(j->ck);
		pthread_mutex_lock(&s->lock);
		j->done = true;
		j->next = s->finished;
		s->finished = j;
		if (write(s->evfd, &one, sizeof(one)) < 0) {
			/* the counter is full: the serving thread is woken already */
		}
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Checked passwords: their requests go on (the access handler is called again). */
static void resume_checked(struct http *s)
{
	struct auth_job *j;
	uint64_t n;

	if (read(s->evfd, &n, sizeof(n)) < 0) {
		/* EAGAIN: nothing checked since the last call */
	}
	pthread_mutex_lock(&s->lock);
	j = s->finished;
	s->finished = NULL;
	pthread_mutex_unlock(&s->lock);
	for (; j; j = j->next)
		MHD_resume_connection(j->c);
}

/* Every connection still waiting for its check, resumed (the checker stopped). */
static void resume_all(struct http *s)
{
	struct auth_job *lists[] = { s->todo, s->finished };

	s->todo = s->finished = NULL;
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		for (struct auth_job *j = lists[i]; j; j = j->next)
			MHD_resume_connection(j->c);
}

/* A request the checks are too busy for: 429 at once, counted, logged (once a minute). */
static enum MHD_Result busy(struct http *s, struct MHD_Connection *c)
{
	static const char msg[] = "too many password checks at once: retry\n";
	struct MHD_Response *resp = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
	uint64_t now = gp_mono_ns();
	enum MHD_Result ret;

	s->auth_busy++;
	if (!s->busy_logged_ns || now - s->busy_logged_ns > 60000000000ULL) {
		gp_log(GP_LOG_WARN, "http: %u password checks (bcrypt) already running or waiting: refusing more with 429 "
		       "(%llu so far; gpuprobe_http_auth_busy_total)", s->queued, (unsigned long long)s->auth_busy);
		s->busy_logged_ns = now;
	}
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	ret = MHD_queue_response(c, MHD_HTTP_TOO_MANY_REQUESTS, resp);
	MHD_destroy_response(resp);
	return ret;
}

/*
 * A request ended without its handler taking its check back (the client went away while
 * it waited, or the server stops): the check's place is given back, or a client that
 * hangs up would keep it for ever and every later check be refused.
 */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct http *s = cls;
	struct auth_job *j = *con_cls;

	(void)c, (void)toe;
	if (!j)
		return;
	*con_cls = NULL;
	s->queued--;
	webconfig__end_auth(j->ck, false);
	free(j);
}

/*
 * Basic authentication where the web configuration asks for it. true: refused (401
 * queued), parked while the checker thread runs bcrypt (the connection suspended), or
 * answered 429 (too many checks at once); *ret says what to return. A password accepted
 * before is a constant-time compare and never waits.
 */
static bool refused(struct http *s, struct MHD_Connection *c, const char *url, void **con_cls,
		    enum MHD_Result *ret)
{
	static const char no[] = "unauthorized\n";
	struct auth_job *j = *con_cls;
	struct webconfig_check *ck = NULL;
	enum webconfig_auth a;
	struct MHD_Response *resp;

	if (!s->wc || !webconfig__users(s->wc) || (s->open_path && !strcmp(url, s->open_path)))
		return false;
	if (j) { /* back from the checker */
		*con_cls = NULL;
		s->queued--;
		a = webconfig__end_auth(j->ck, j->ok);
		free(j);
	} else {
		a = webconfig__begin_auth(s->wc, MHD_lookup_connection_value(c, MHD_HEADER_KIND,
									      MHD_HTTP_HEADER_AUTHORIZATION), &ck);
	}
	if (a == WEBCONFIG_AUTH_PENDING) {
		if (s->queued >= AUTH_QUEUE || !s->checker_on || !(j = calloc(1, sizeof(*j)))) {
			webconfig__end_auth(ck, false);
			*ret = busy(s, c);
			return true;
		}
		*j = (struct auth_job){ .c = c, .ck = ck };
		s->queued++;
		*con_cls = j;
		MHD_suspend_connection(c);
		pthread_mutex_lock(&s->lock);
		j->next = s->todo;
		s->todo = j;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
		*ret = MHD_YES;
		return true;
	}
	if (a == WEBCONFIG_AUTH_OK)
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

	(void)version, (void)upload;
	if (k)
		k->answered = true;
	if (*upload_size)
		return MHD_NO; /* no request here has a body */
	if (refused(s, c, url, con_cls, &ret))
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
	unsigned int flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | (family == AF_INET6 ? MHD_USE_IPv6 : 0);
	const union MHD_DaemonInfo *ei;
	struct epoll_event ev = { .events = EPOLLIN };

	if (!s) {
		close(lfd);
		snprintf(err, len, "out of memory");
		return NULL;
	}
	s->lim = *lim;
	s->wc = wc;
	s->epfd = s->evfd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->open_path = open_path;
	s->handler = h;
	s->ctx = ctx;
	if (wc)
		flags |= webconfig__mhd_flags(wc);
	s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, lfd,
				  MHD_OPTION_CONNECTION_LIMIT, lim->max_conns,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)(lim->header_ns / 1000000000ULL) + 1,
				  MHD_OPTION_NOTIFY_CONNECTION, on_notify, s,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				  MHD_OPTION_ARRAY, wc ? webconfig__mhd_options(wc) : none, MHD_OPTION_END);
	if (!s->mhd) {
		close(lfd);
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->cond);
		free(s);
		snprintf(err, len, "cannot start the HTTP server%s",
			 wc && webconfig__tls(wc) && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES ?
				 ": this libmicrohttpd has no TLS" : "");
		return NULL;
	}
	/* one fd for the caller's poll: libmicrohttpd's epoll fd and the checker's eventfd */
	ei = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!ei || s->epfd < 0 || s->evfd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, ei->epoll_fd, &ev) ||
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->evfd, &ev)) {
		snprintf(err, len, "cannot start the HTTP server: %s", strerror(errno));
		http__stop(s);
		return NULL;
	}
	if (wc && webconfig__users(wc)) {
		int r = pthread_create(&s->checker, NULL, checker, s);

		if (r) {
			snprintf(err, len, "cannot start the password checker thread: %s", strerror(r));
			http__stop(s);
			return NULL;
		}
		s->checker_on = true;
	}
	return s;
}

int http__poll_fd(struct http *s)
{
	return s->epfd;
}

void http__run(struct http *s)
{
	resume_checked(s);
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

uint64_t http__auth_busy(const struct http *s)
{
	return s->auth_busy;
}

void http__stop(struct http *s)
{
	if (!s)
		return;
	if (s->checker_on) {
		pthread_mutex_lock(&s->lock);
		s->quit = true;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->checker, NULL);
	}
	/* checks not made or not collected: their connections are suspended, and
	 * libmicrohttpd aborts the process when it is stopped with one suspended ("called
	 * while we have suspended connections": a SIGTERM while a password was checked);
	 * resumed, they close with the server, whose completion notices free them
	 * (on_completed) */
	resume_all(s);
	if (s->mhd)
		MHD_stop_daemon(s->mhd); /* every connection closed: the notifications free them */
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->evfd >= 0)
		close(s->evfd);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	while (s->head) {
		struct conn *k = s->head;

		unlink_conn(s, k);
		free(k);
	}
	free(s);
}
