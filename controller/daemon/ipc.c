// SPDX-License-Identifier: LGPL-2.1-or-later
/* Unix SOCK_SEQPACKET server for qosjaild (see ipc.h). */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ipc.h"
#include "log.h"
#include "proc.h"
#include "proto.h"
#include "util.h"

/*
 * Requests read from one client per dispatch.  One: epoll is level-triggered, so a
 * client with more queued comes back in the next round (fair to the others), and a
 * synchronous client (the common case) costs no extra recvmsg() returning EAGAIN.
 */
#define READS_PER_DISPATCH 1

/* Out of fds, the listener retries after this even when no client went away. */
#define LISTEN_RETRY_USEC (1 * USEC_PER_SEC)
/* At most one warning about refused connections per this interval. */
#define REFUSAL_LOG_USEC (10 * USEC_PER_SEC)

struct qj_ipc_out {
	char *buf;
	size_t len;
	int fd;
};

struct qj_ipc {
	struct qj_event_source source;
	int epoll_fd;
	int fd;
	char *path;
	const struct qj_ipc_ops *ops;
	void *userdata;
	uint64_t next_id;
	struct qj_ipc_client *clients;
	struct qj_ipc_client *dead;
	size_t n_clients;
	size_t max_clients; /* non-root connections */
	size_t max_clients_per_uid;
	int reserve_fd; /* /dev/null, given up to refuse one connection when out of fds */
	bool paused; /* the listener is out of epoll: out of fds */
	uint64_t resume_usec;
	uint64_t refusal_log_usec;
	uint64_t n_refused; /* since the last warning */
	char buf[QJ_PROTO_MAX_MSG + 1];
};

static void client_update_events(struct qj_ipc_client *c)
{
	struct epoll_event ev = { .data.ptr = &c->source };

	if (c->dead)
		return;
	if (!c->paused)
		ev.events |= EPOLLIN;
	if (c->n_out > 0)
		ev.events |= EPOLLOUT;
	if (ev.events == c->events)
		return;
	if (epoll_ctl(c->server->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->events = ev.events;
}

static void out_free(struct qj_ipc_out *o)
{
	free(o->buf);
	if (o->fd >= 0)
		(void)close(o->fd);
}

void qj_ipc_disconnect(struct qj_ipc_client *c)
{
	struct qj_ipc *s = c->server;

	if (c->dead)
		return;
	c->dead = true;
	(void)epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	if (s->ops->on_disconnect)
		s->ops->on_disconnect(s->userdata, c);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->n_clients--;
	c->next = s->dead;
	c->prev = NULL;
	s->dead = c;
}

static void client_free(struct qj_ipc_client *c)
{
	for (size_t i = 0; i < c->n_out; i++)
		out_free(&c->out[i]);
	free(c->out);
	if (c->pidfd >= 0)
		(void)close(c->pidfd);
	(void)close(c->fd);
	free(c);
}

static void listener_resume(struct qj_ipc *s)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &s->source };

	if (!s->paused)
		return;
	if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->fd, &ev) < 0) {
		log_warning("Cannot resume listening: %m, retrying later");
		s->resume_usec = now_usec(CLOCK_MONOTONIC) + LISTEN_RETRY_USEC;
		return;
	}
	s->paused = false;
	s->resume_usec = USEC_INFINITY;
	if (s->reserve_fd < 0)
		s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	log_info("Accepting connections again (%zu clients)", s->n_clients);
}

void qj_ipc_reap(struct qj_ipc *s)
{
	bool freed = s->dead != NULL;

	while (s->dead) {
		struct qj_ipc_client *c = s->dead;

		s->dead = c->next;
		client_free(c);
	}
	if (freed)
		listener_resume(s);
}

uint64_t qj_ipc_resume_usec(const struct qj_ipc *s)
{
	return s->paused ? s->resume_usec : USEC_INFINITY;
}

void qj_ipc_on_timer(struct qj_ipc *s, uint64_t now)
{
	if (s->paused && s->resume_usec <= now)
		listener_resume(s);
}

void qj_ipc_set_limits(struct qj_ipc *s, size_t max_total, size_t max_per_uid)
{
	s->max_clients = max_total;
	s->max_clients_per_uid = max_per_uid;
}

/* Sends queued messages until the socket would block.  Negative errno on a dead peer. */
static int client_flush(struct qj_ipc_client *c)
{
	size_t done = 0;
	int r = 0;

	while (done < c->n_out) {
		struct qj_ipc_out *o = &c->out[done];
		union qj_fd_control control;
		struct iovec iov = { .iov_base = o->buf, .iov_len = o->len };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t k;

		if (o->fd >= 0)
			qj_proto_attach_fd(&mh, &control, o->fd);
		k = sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				r = -errno;
			break;
		}
		c->out_bytes -= o->len;
		out_free(o);
		done++;
	}
	if (done > 0) {
		memmove(c->out, c->out + done, (c->n_out - done) * sizeof(*c->out));
		c->n_out -= done;
	}
	client_update_events(c);
	return r;
}

size_t qj_ipc_unread_bytes(const struct qj_ipc_client *c)
{
	int outq = 0;

	/* SIOCOUTQ of a Unix socket: what the peer has not read yet, in kernel memory. */
	if (ioctl(c->fd, SIOCOUTQ, &outq) < 0 || outq < 0)
		outq = 0;
	return c->out_bytes + (size_t)outq;
}

int qj_ipc_send(struct qj_ipc_client *c, const json_t *msg, int pass_fd)
{
	struct qj_ipc_out o = { .fd = -EBADF };
	int r;

	if (c->dead)
		return -ECONNRESET;
	if (c->n_out >= QJ_IPC_MAX_QUEUE || c->out_bytes >= QJ_IPC_MAX_QUEUE_BYTES) {
		log_warning("Client pid %d (%s) does not read its replies, disconnecting", c->pid,
			    c->comm);
		qj_ipc_disconnect(c);
		return -ENOBUFS;
	}
	r = qj_proto_encode(msg, &o.buf, &o.len);
	if (r < 0)
		return r;
	if (pass_fd >= 0) {
		o.fd = fcntl(pass_fd, F_DUPFD_CLOEXEC, 3);
		if (o.fd < 0) {
			r = -errno;
			free(o.buf);
			return r;
		}
	}
	if (!c->out || (c->n_out & (c->n_out - 1)) == 0) {
		size_t n = c->n_out ? c->n_out * 2 : 1;
		struct qj_ipc_out *v = reallocarray(c->out, n, sizeof(*v));

		if (!v) {
			out_free(&o);
			return -ENOMEM;
		}
		c->out = v;
	}
	c->out[c->n_out++] = o;
	c->out_bytes += o.len;
	r = client_flush(c);
	if (r < 0) {
		log_debug_errno(r, "Client pid %d gone while sending: %m", c->pid);
		qj_ipc_disconnect(c);
	}
	return r;
}

void qj_ipc_pause(struct qj_ipc_client *c, bool paused)
{
	c->paused = paused;
	client_update_events(c);
}

static void qj_ipc_close_passed_fd(struct qj_ipc_client *c)
{
	if (c->passed_fd >= 0)
		(void)close(c->passed_fd);
	c->passed_fd = -EBADF;
}

int qj_ipc_take_fd(struct qj_ipc_client *c)
{
	int fd = c->passed_fd;

	c->passed_fd = -EBADF;
	return fd;
}

static void client_read(struct qj_ipc_client *c)
{
	struct qj_ipc *s = c->server;

	for (int i = 0; i < READS_PER_DISPATCH && !c->paused && !c->dead; i++) {
		struct iovec iov = { .iov_base = s->buf, .iov_len = sizeof(s->buf) };
		union qj_fd_control control;
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = control.buf,
				     .msg_controllen = sizeof(control.buf) };
		ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			log_debug("Client pid %d: receive failed: %m", c->pid);
			qj_ipc_disconnect(c);
			return;
		}
		/* A passed fd lives for this message only: what the handler does not take is closed. */
		c->passed_fd = qj_proto_take_fd(&mh);
		if (n == 0) {
			qj_ipc_close_passed_fd(c);
			qj_ipc_disconnect(c);
			return;
		}
		s->ops->on_message(s->userdata, c, s->buf, (size_t)n,
				   (mh.msg_flags & MSG_TRUNC) || (size_t)n > QJ_PROTO_MAX_MSG);
		qj_ipc_close_passed_fd(c);
	}
}

static void client_dispatch(struct qj_event_source *src, uint32_t events)
{
	struct qj_ipc_client *c = (struct qj_ipc_client *)src;

	if (c->dead)
		return;
	if (events & EPOLLOUT) {
		int r = client_flush(c);

		if (r < 0) {
			qj_ipc_disconnect(c);
			return;
		}
	}
	if (events & EPOLLIN)
		client_read(c);
	else if (events & (EPOLLHUP | EPOLLERR))
		qj_ipc_disconnect(c);
}

static void read_comm(pid_t pid, char *comm, size_t size)
{
	char path[64];
	_cleanup_close_ int fd = -EBADF;
	ssize_t n;

	snprintf(comm, size, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, comm, size - 1);
	if (n <= 0) {
		snprintf(comm, size, "?");
		return;
	}
	comm[n] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

/*
 * The peer's pidfd: from the kernel where it can say (6.5+: the socket pins the peer's
 * struct pid, no pid reuse), else pidfd_open() of the SO_PEERCRED pid, trusted only
 * when the process that pid names now is not an exited one; see docs/decisions.md.
 */
static int peer_pidfd(int fd, pid_t pid)
{
	int pidfd = -EBADF;
	socklen_t len = sizeof(pidfd);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0) {
		if (!qj_pidfd_exited(pidfd))
			return pidfd;
		(void)close(pidfd);
		return -ESRCH;
	}
	if (errno != ENOPROTOOPT)
		return -ESRCH; /* 6.5-6.15 refuse with EINVAL once the peer is reaped */
	pidfd = pidfd_open(pid, 0);
	return pidfd >= 0 ? pidfd : -errno;
}

/* Answers a connection we will not serve with an error, then closes it. */
static void refuse(struct qj_ipc *s, int fd, int error, const char *why, uid_t uid)
{
	json_t *msg = qj_reply_new_error(error, "%s", why);
	uint64_t t = now_usec(CLOCK_MONOTONIC);
	char *text = NULL;
	size_t len;

	if (msg && qj_proto_encode(msg, &text, &len) >= 0)
		(void)send(fd, text, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	free(text);
	json_decref(msg);
	/* Closing with the peer's request unread would make its recv() fail with ECONNRESET. */
	while (recv(fd, s->buf, sizeof(s->buf), MSG_DONTWAIT) > 0)
		;
	(void)close(fd);
	/* A flood of refusals must not become a flood of log lines. */
	s->n_refused++;
	if (t - s->refusal_log_usec >= REFUSAL_LOG_USEC || !s->refusal_log_usec) {
		log_warning("Refused a connection of uid %d: %s (%" PRIu64
			    " refused since the last such message)",
			    uid, why, s->n_refused);
		s->refusal_log_usec = t;
		s->n_refused = 0;
	}
}

/* Over its limits?  The message for refuse(), or NULL. */
static const char *over_limit(struct qj_ipc *s, uid_t uid)
{
	size_t n = 0;

	if (uid == 0)
		return NULL;
	if (s->max_clients && s->n_clients >= s->max_clients)
		return "too many connections to qosjaild (limits.clients)";
	/* Linear, but bounded by limits.clients: a few microseconds at the default. */
	for (struct qj_ipc_client *c = s->clients; c; c = c->next)
		n += c->uid == uid;
	if (s->max_clients_per_uid && n >= s->max_clients_per_uid)
		return "too many connections of this uid (limits.clients_per_uid)";
	return NULL;
}

/*
 * Out of fds: accept4() would fail with EMFILE at once again (it fails so even with an
 * empty backlog), and the level-triggered listener would spin.  The reserve fd is given up to take one waiting connection and
 * tell it why; the listener leaves epoll until a client goes (or a second passes).
 */
static void listener_pause(struct qj_ipc *s, int error)
{
	int fd;

	if (s->reserve_fd >= 0) {
		(void)close(s->reserve_fd);
		s->reserve_fd = -EBADF;
		fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0)
			refuse(s, fd, -error, "qosjaild is out of file descriptors, try later", 0);
		s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	(void)epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->fd, NULL);
	s->paused = true;
	s->resume_usec = now_usec(CLOCK_MONOTONIC) + LISTEN_RETRY_USEC;
	log_warning_errno(-error, "Cannot accept connections: %m; paused until a client goes");
}

static void listener_dispatch(struct qj_event_source *src, uint32_t events)
{
	struct qj_ipc *s = (struct qj_ipc *)src;

	for (;;) {
		struct qj_ipc_client *c;
		struct ucred cred;
		socklen_t len = sizeof(cred);
		gid_t groups[QJ_IPC_MAX_GROUPS];
		socklen_t glen = sizeof(groups);
		struct epoll_event ev;
		int fd;

		const char *why;

		fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				listener_pause(s, errno);
			else if (errno != EAGAIN)
				log_warning("Failed to accept a connection: %m, ignoring");
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
			log_warning("SO_PEERCRED failed: %m, dropping the connection");
			(void)close(fd);
			continue;
		}
		why = over_limit(s, cred.uid);
		if (why) {
			refuse(s, fd, -EUSERS, why, cred.uid);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			log_error("Out of memory, dropping a connection");
			(void)close(fd);
			continue;
		}
		c->source.dispatch = client_dispatch;
		c->server = s;
		c->fd = fd;
		c->passed_fd = -EBADF;
		c->id = ++s->next_id;
		c->pid = cred.pid;
		c->uid = cred.uid;
		c->gid = cred.gid;
		c->groups[c->n_groups++] = cred.gid;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0)
			for (size_t i = 0;
			     i < glen / sizeof(gid_t) && c->n_groups < QJ_IPC_MAX_GROUPS; i++)
				c->groups[c->n_groups++] = groups[i];
		c->pidfd = peer_pidfd(fd, cred.pid);
		read_comm(c->pid, c->comm, sizeof(c->comm));
		ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &c->source };
		if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			log_warning("epoll_ctl failed: %m, dropping the connection");
			client_free(c);
			continue;
		}
		c->events = EPOLLIN;
		c->next = s->clients;
		if (s->clients)
			s->clients->prev = c;
		s->clients = c;
		s->n_clients++;
		log_debug("Client %" PRIu64 " connected: pid %d uid %d (%s)%s", c->id, c->pid,
			  c->uid, c->comm, c->pidfd >= 0 ? "" : ", no pidfd");
		if (s->ops->on_connect)
			s->ops->on_connect(s->userdata, c);
	}
}

int qj_ipc_new(int epoll_fd, const char *path, const struct qj_ipc_ops *ops, void *userdata,
	       struct qj_ipc **ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev;
	struct qj_ipc *s;
	mode_t old_umask;
	int r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->source.dispatch = listener_dispatch;
	s->epoll_fd = epoll_fd;
	s->ops = ops;
	s->userdata = userdata;
	s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	s->resume_usec = USEC_INFINITY;
	s->path = strdup(path);
	s->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (!s->path || s->fd < 0) {
		r = s->path ? -errno : -ENOMEM;
		goto fail;
	}
	(void)unlink(path);
	/*
	 * The mode comes from the umask at bind(): no chmod(path) afterwards, which
	 * would follow a symlink put in the socket's place.  Single-threaded here.
	 */
	old_umask = umask(0111);
	r = bind(s->fd, (struct sockaddr *)&sa, sizeof(sa));
	(void)umask(old_umask);
	if (r < 0 || listen(s->fd, SOMAXCONN) < 0) {
		r = -errno;
		goto fail;
	}
	ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &s->source };
	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, s->fd, &ev) < 0) {
		r = -errno;
		goto fail;
	}
	*ret = s;
	return 0;
fail:
	if (s->fd >= 0)
		(void)close(s->fd);
	if (s->reserve_fd >= 0)
		(void)close(s->reserve_fd);
	free(s->path);
	free(s);
	return r;
}

struct qj_ipc *qj_ipc_free(struct qj_ipc *s)
{
	if (!s)
		return NULL;
	while (s->clients)
		qj_ipc_disconnect(s->clients);
	qj_ipc_reap(s);
	if (!s->paused)
		(void)epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->fd, NULL);
	(void)close(s->fd);
	if (s->reserve_fd >= 0)
		(void)close(s->reserve_fd);
	(void)unlink(s->path);
	free(s->path);
	free(s);
	return NULL;
}

size_t qj_ipc_n_clients(const struct qj_ipc *s)
{
	return s->n_clients;
}

bool qj_ipc_alive(const struct qj_ipc_client *c)
{
	return !c->dead;
}

struct qj_ipc_client *qj_ipc_first(struct qj_ipc *s)
{
	return s->clients;
}

struct qj_ipc_client *qj_ipc_next(struct qj_ipc_client *c)
{
	return c->next;
}
