/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "cli/listen.h"

/* "ADDR:PORT" or "[V6ADDR]:PORT" -> host and port strings; 0 or -EINVAL with a reason. */
static int parse_spec(const char *spec, char *host, size_t hlen, const char **port, char *err, size_t len)
{
	const char *colon;
	char *end;
	long p;

	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');

		if (!close || close[1] != ':' || close - spec - 1 >= (long)hlen || close == spec + 1) {
			snprintf(err, len, "invalid --listen %s: expected [IPV6]:PORT", spec);
			return -EINVAL;
		}
		snprintf(host, hlen, "%.*s", (int)(close - spec - 1), spec + 1);
		colon = close + 1;
	} else {
		colon = strrchr(spec, ':');
		if (!colon || colon == spec || (size_t)(colon - spec) >= hlen) {
			snprintf(err, len, "invalid --listen %s: expected ADDR:PORT, e.g. 127.0.0.1:9464", spec);
			return -EINVAL;
		}
		snprintf(host, hlen, "%.*s", (int)(colon - spec), spec);
		if (strchr(host, ':')) {
			snprintf(err, len, "invalid --listen %s: IPv6 addresses go in brackets, e.g. [::1]:9464", spec);
			return -EINVAL;
		}
	}
	*port = colon + 1;
	errno = 0;
	p = strtol(*port, &end, 10);
	if (errno || end == *port || *end || p < 0 || p > 65535) {
		snprintf(err, len, "invalid --listen %s: bad port %s", spec, *port);
		return -EINVAL;
	}
	return 0;
}

int listen__open(const char *spec, int *family, char *err, size_t len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV },
			*ai = NULL;
	char host[256];
	const char *port;
	int fd = -1, one = 1, r;

	r = parse_spec(spec, host, sizeof(host), &port, err, len);
	if (r)
		return r;
	r = getaddrinfo(host, port, &hints, &ai);
	if (r) {
		snprintf(err, len, "invalid --listen %s: %s", spec, gai_strerror(r));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		r = -errno;
		snprintf(err, len, "cannot listen on %s: %s", spec, strerror(-r));
		goto cleanup;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
		r = -errno;
		snprintf(err, len, "cannot listen on %s: %s", spec, strerror(-r));
		goto cleanup;
	}
	*family = ai->ai_family;
	r = fd;
	fd = -1;
cleanup:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return r;
}
