/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's Unix SOCK_SEQPACKET server: non-blocking, one message per
 * request, SO_PEERCRED/SO_PEERGROUPS identity taken at accept, a bounded
 * output queue per client (a client that never reads is disconnected, the
 * others keep being served).  What a request means is the daemon's business:
 * ipc.c hands raw messages to ops->on_message.
 */
#ifndef QJ_IPC_H
#define QJ_IPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "loop.h"

/* Output queue bound per client: messages and bytes. */
#define QJ_IPC_MAX_QUEUE 256
#define QJ_IPC_MAX_QUEUE_BYTES (1024 * 1024)
#define QJ_IPC_MAX_GROUPS 64

struct qj_ipc;

struct qj_ipc_client {
	struct qj_event_source source;
	struct qj_ipc *server;
	int fd;
	uint64_t id; /* unique for the daemon's lifetime, never 0 */
	pid_t pid;
	/*
	 * The peer process, taken at accept (SO_PEERPIDFD, else pidfd_open() of the
	 * SO_PEERCRED pid while that process still runs); negative errno when none:
	 * -ESRCH when the connecting process had already exited.
	 */
	int pidfd;
	uid_t uid;
	gid_t gid;
	gid_t groups[QJ_IPC_MAX_GROUPS]; /* primary first, then supplementary */
	size_t n_groups;
	char comm[17];
	bool hello; /* handshake done */
	void *userdata; /* the daemon's per-client state */

	/* private to ipc.c */
	int passed_fd; /* passed with the message being handled (qj_ipc_take_fd) */
	bool paused;
	bool dead;
	uint32_t events;
	struct qj_ipc_out *out;
	size_t n_out;
	size_t out_bytes;
	struct qj_ipc_client *prev, *next;
};

struct qj_ipc_ops {
	/* A client was accepted (identity filled in); optional. */
	void (*on_connect)(void *userdata, struct qj_ipc_client *c);
	/* One complete message (at most QJ_PROTO_MAX_MSG + 1 bytes; more means oversize). */
	void (*on_message)(void *userdata, struct qj_ipc_client *c, const char *buf, size_t len,
			   bool truncated);
	/* The client is gone (EOF, error, or disconnected by us); c is freed afterwards. */
	void (*on_disconnect)(void *userdata, struct qj_ipc_client *c);
};

/*
 * Binds @path (replacing a stale socket), mode 0666 (the policy decides who
 * may do what), and registers it with @epoll_fd.
 */
int qj_ipc_new(int epoll_fd, const char *path, const struct qj_ipc_ops *ops, void *userdata,
	       struct qj_ipc **ret);
/* Disconnects everyone, unlinks the socket. */
struct qj_ipc *qj_ipc_free(struct qj_ipc *s);

/*
 * Queues @msg for @c (with @pass_fd as SCM_RIGHTS when >= 0; it is dup'ed, the
 * caller keeps its copy).  Sends at once when possible.  A full queue
 * disconnects the client: returns -ENOBUFS then.
 */
int qj_ipc_send(struct qj_ipc_client *c, const json_t *msg, int pass_fd);
/*
 * Bytes sent to @c that it has not read: queued here, and in the socket (SIOCOUTQ,
 * which counts the kernel's accounting size of each message, not just its text).
 */
size_t qj_ipc_unread_bytes(const struct qj_ipc_client *c);
/*
 * The fd passed (SCM_RIGHTS) with the message being handled, now the caller's to close;
 * negative when none came.  One fd a message; any not taken is closed after the handler.
 */
int qj_ipc_take_fd(struct qj_ipc_client *c);
/* Stops (or resumes) reading requests from @c: a reply is deferred. */
void qj_ipc_pause(struct qj_ipc_client *c, bool paused);
/* Disconnects @c after the current dispatch. */
void qj_ipc_disconnect(struct qj_ipc_client *c);
/* Frees clients disconnected during the last dispatch; call after each epoll batch. */
void qj_ipc_reap(struct qj_ipc *s);

/*
 * Connections at once: @max_total over all uids (root's count), @max_per_uid for one uid;
 * root is never refused (it is bounded by the fd limit only).  A connection over a limit gets an
 * error message (EUSERS) and is closed at once.
 */
void qj_ipc_set_limits(struct qj_ipc *s, size_t max_total, size_t max_per_uid);
/*
 * While out of file descriptors the listener is paused (taken out of epoll): it resumes
 * when a client goes, or at this time (CLOCK_MONOTONIC; USEC_INFINITY when not paused)
 * through qj_ipc_on_timer().
 */
uint64_t qj_ipc_resume_usec(const struct qj_ipc *s);
void qj_ipc_on_timer(struct qj_ipc *s, uint64_t now_usec);

size_t qj_ipc_n_clients(const struct qj_ipc *s);
/* False once @c is disconnected (it stays allocated until qj_ipc_reap()). */
bool qj_ipc_alive(const struct qj_ipc_client *c);
/* Iteration over live clients. */
struct qj_ipc_client *qj_ipc_first(struct qj_ipc *s);
struct qj_ipc_client *qj_ipc_next(struct qj_ipc_client *c);

#endif
