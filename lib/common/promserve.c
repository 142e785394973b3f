/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prometheus metrics over HTTP (promserve.h): the exposition helpers, the
 * listen address, a minimal HTTP/1.1 responder for GET /metrics, and the
 * thread that runs it until stopped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "promserve.h"

enum {
	PROM_REQ_MAX = 4096, /* request line and headers; more is refused (431) */
	PROM_IO_TIMEOUT_S = 2,
};

/* ---- Exposition ---------------------------------------------------------- */

void prom_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void prom_value(FILE *f, double v)
{
	if (v >= 0 && v < 0x1p63 && v == (double)(uint64_t)v)
		fprintf(f, "%" PRIu64, (uint64_t)v);
	else
		fprintf(f, "%.6f", v);
}

void prom_gauge(FILE *f, const char *name, const char *help, double v)
{
	prom_family(f, name, "gauge", help);
	fprintf(f, "%s ", name);
	prom_value(f, v);
	fputc('\n', f);
}

void prom_label_value(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

/* ---- Address ------------------------------------------------------------- */

static int addr_fail(char *err, size_t errlen, const char *s, const char *why)
{
	snprintf(err, errlen, "'%s': %s", s, why);
	return -EINVAL;
}

int prom_addr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len, char *err,
                    size_t errlen)
{
	const char *colon = strrchr(s, ':');
	char host[INET6_ADDRSTRLEN + 2];
	size_t hl = colon ? (size_t)(colon - s) : 0;
	unsigned long port;
	char *end;

	if (!colon || hl == 0 || hl >= sizeof(host))
		return addr_fail(err, errlen, s,
		                 "want ADDR:PORT, e.g. 127.0.0.1:9464 or [::1]:9464");
	memcpy(host, s, hl);
	host[hl] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || colon[1] == '-' || port < 1 || port > 65535)
		return addr_fail(err, errlen, s, "port wants 1..65535");
	memset(ss, 0, sizeof(*ss));
	if (host[0] == '[' && host[hl - 1] == ']') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		host[hl - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
			return addr_fail(err, errlen, s, "not an IPv6 address in brackets");
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		*len = sizeof(*a);
		return 0;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;

	if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
		return addr_fail(err, errlen, s, "not an IPv4 address (IPv6: [ADDR]:PORT)");
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	*len = sizeof(*a);
	return 0;
}

int prom_listen(const char *addr, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1, fd, rc;

	rc = prom_addr_parse(addr, &ss, &len, err, errlen);
	if (rc != 0)
		return rc;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", addr, strerror(-rc));
		return rc;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 16) != 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", addr, strerror(-rc));
		close(fd);
		return rc;
	}
	return fd;
}

/* ---- HTTP ---------------------------------------------------------------- */

static void send_all(int fd, const char *b, size_t n)
{
	while (n) {
		ssize_t r = send(fd, b, n, MSG_NOSIGNAL);

		if (r <= 0)
			return;
		b += r;
		n -= (size_t)r;
	}
}

static void reply(int fd, const char *status, const char *extra, const char *ctype,
                  const char *body, size_t len, bool head)
{
	char hdr[512];
	int n = snprintf(hdr, sizeof(hdr),
	                 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
	                 "Connection: close\r\n\r\n",
	                 status, ctype, len, extra);

	send_all(fd, hdr, (size_t)n);
	if (!head)
		send_all(fd, body, len);
}

static void reply_error(int fd, const char *status, const char *extra)
{
	char body[128];
	int n = snprintf(body, sizeof(body), "%s\n", status);

	reply(fd, status, extra, "text/plain; charset=utf-8", body, (size_t)n, false);
}

/* Up to the blank line ending the headers; the length read, or -1. */
static ssize_t read_request(int fd, char *req)
{
	size_t n = 0;

	while (n < PROM_REQ_MAX) {
		ssize_t r = recv(fd, req + n, PROM_REQ_MAX - n, 0);

		if (r <= 0)
			return -1;
		n += (size_t)r;
		req[n] = '\0';
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			return (ssize_t)n;
	}
	return PROM_REQ_MAX + 1;
}

static void serve_metrics(int fd, prom_write_fn *write, void *arg, bool head)
{
	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);

	if (!f) {
		reply_error(fd, "500 Internal Server Error", "");
		return;
	}
	write(f, arg);
	if (fclose(f) != 0)
		reply_error(fd, "500 Internal Server Error", "");
	else
		reply(fd, "200 OK", "", "text/plain; version=0.0.4; charset=utf-8", body, len,
		      head);
	free(body);
}

/* The status line of a request that is not a valid GET or HEAD of /metrics. */
static const char *check_request(const char *req, bool *head)
{
	char method[8], target[64], version[16];

	if (sscanf(req, "%7s %63s %15s", method, target, version) != 3 ||
	    strncmp(version, "HTTP/1.", 7) != 0)
		return "400 Bad Request";
	*head = !strcmp(method, "HEAD");
	if (strcmp(method, "GET") != 0 && !*head)
		return "405 Method Not Allowed";
	if (strcmp(target, "/metrics") != 0 && strncmp(target, "/metrics?", 9) != 0)
		return "404 Not Found";
	return NULL;
}

static void serve(int fd, prom_write_fn *write, void *arg)
{
	const struct timeval tv = {.tv_sec = PROM_IO_TIMEOUT_S};
	char req[PROM_REQ_MAX + 1];
	const char *bad;
	bool head = false;
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	n = read_request(fd, req);
	if (n < 0)
		return;
	bad = n > PROM_REQ_MAX ? "431 Request Header Fields Too Large" : check_request(req, &head);
	if (bad)
		reply_error(fd, bad, !strncmp(bad, "405", 3) ? "Allow: GET, HEAD\r\n" : "");
	else
		serve_metrics(fd, write, arg, head);
}

void prom_serve_once(int fd, int poll_ms, prom_write_fn *write, void *arg)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	int c;

	if (poll(&pfd, 1, poll_ms) <= 0)
		return;
	c = accept(fd, NULL, NULL);
	if (c < 0)
		return;
	serve(c, write, arg);
	close(c);
}

static void *prom_thread_loop(void *arg)
{
	struct prom_thread *t = arg;

	while (!atomic_load(&t->stop))
		prom_serve_once(t->fd, t->poll_ms, t->write, t->arg);
	return NULL;
}

int prom_thread_start(struct prom_thread *t, prom_thread_create_fn *create, const char *prog,
                      const char *name, int poll_ms, prom_write_fn *write, void *arg)
{
	int rc;

	t->poll_ms = poll_ms;
	t->write = write;
	t->arg = arg;
	rc = create(&t->tid, name, NULL, prom_thread_loop, t);
	if (rc != 0) {
		fprintf(stderr, "%s: cannot start the prometheus thread: %s\n", prog, strerror(rc));
		return -rc;
	}
	t->running = true;
	return 0;
}

void prom_thread_stop(struct prom_thread *t)
{
	if (t->running) {
		atomic_store(&t->stop, true);
		pthread_join(t->tid, NULL);
		t->running = false;
	}
	close(t->fd);
}
