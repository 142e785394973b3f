/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prometheus metrics over HTTP, shared by dustgw and dust-gen: the text
 * exposition format's helpers, ADDR:PORT parsing, and a responder that
 * answers GET (or HEAD) /metrics one connection at a time. No DPDK: the
 * caller runs prom_serve_once in a loop on a thread of its own, or has
 * prom_thread_start do that with the thread maker it passes.
 */
#ifndef PROMSERVE_H
#define PROMSERVE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>

/**
 * Parse "ADDR:PORT" (IPv4, or "[IPv6]:PORT"; PORT 1..65535) into ss.
 * 0 or -EINVAL, with the reason in err ("'s': why").
 */
int prom_addr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len, char *err,
                    size_t errlen);
/** Bind and listen on addr: the socket, or -errno with the reason in err. */
int prom_listen(const char *addr, char *err, size_t errlen);

/** Writes the exposition of every metric to f (the body of one scrape). */
typedef void prom_write_fn(FILE *f, void *arg);
/**
 * Wait up to poll_ms for a connection on the listening fd and answer it:
 * GET or HEAD /metrics gets write's text; anything else 400, 404, 405 or
 * 431. Returns after one connection or the wait.
 */
void prom_serve_once(int fd, int poll_ms, prom_write_fn *write, void *arg);

/**
 * A thread answering scrapes on a listening socket until stopped: fd is the
 * caller's (from prom_listen), the rest prom_thread_start's. It polls every
 * poll_ms, which bounds how long prom_thread_stop waits.
 */
struct prom_thread {
	int fd;
	int poll_ms;
	prom_write_fn *write;
	void *arg;
	pthread_t tid;
	_Atomic bool stop;
	bool running;
};
/**
 * The signature of pthread_create with a name, as rte_ctrl_thread_create
 * has: the DPDK apps start the thread off the lcores' CPUs with it.
 */
typedef int prom_thread_create_fn(pthread_t *tid, const char *name, const pthread_attr_t *attr,
                                  void *(*start)(void *), void *arg);
/**
 * Start t's thread with create: 0, or -rc where create returned rc, after
 * "PROG: cannot start the prometheus thread: ..." on stderr.
 */
int prom_thread_start(struct prom_thread *t, prom_thread_create_fn *create, const char *prog,
                      const char *name, int poll_ms, prom_write_fn *write, void *arg);
/** Stop and join the thread if it was started, then close t->fd. */
void prom_thread_stop(struct prom_thread *t);

/** "# HELP" and "# TYPE" lines of a metric family. */
void prom_family(FILE *f, const char *name, const char *type, const char *help);
/** A gauge family with one unlabelled sample. */
void prom_gauge(FILE *f, const char *name, const char *help, double v);
/** A label value with \, " and newline escaped. */
void prom_label_value(FILE *f, const char *v);
/** A sample value: an integer when v is one, else 6 decimals. */
void prom_value(FILE *f, double v);

#endif /* PROMSERVE_H */
