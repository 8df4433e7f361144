// SPDX-License-Identifier: LGPL-2.1-or-later
/* libqosjail: blocking client of qosjaild (see include/qosjail.h). */
#include <fcntl.h>
#include <poll.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto.h"
#include "qosjail.h"
#include "util.h"

#define QJ_EXPORT __attribute__((visibility("default")))

struct qj_conn {
	int fd;
	char error[512];
	json_t *events; /* cycle events that arrived while waiting for a reply, oldest first */
};

/* Receives one message that is not an event; events met on the way are queued. */
static int recv_reply(struct qj_conn *c, json_t **ret, int *ret_fd)
{
	for (;;) {
		json_t *m = NULL;
		int r = qj_proto_recv(c->fd, &m, ret_fd);

		if (r < 0)
			return r;
		if (!json_is_object(m) || !json_object_get(m, "event")) {
			*ret = m;
			return 0;
		}
		if (ret_fd && *ret_fd >= 0) {
			(void)close(*ret_fd);
			*ret_fd = -1;
		}
		if (!c->events)
			c->events = json_array();
		if (!c->events || json_array_append_new(c->events, m) < 0)
			return -ENOMEM;
	}
}

QJ_EXPORT const char *qj_version(void)
{
	return QJ_VERSION;
}

/*
 * Sends @req (consumed) with @pass_fd (SCM_RIGHTS; none when negative), waits for the
 * reply.  0 and *ret (if not NULL) or negative errno.
 */
static int call_fd(struct qj_conn *c, json_t *req, int pass_fd, json_t **ret, int *ret_fd)
{
	json_t *reply = NULL;
	const char *msg;
	int fd = -1, r, rr;

	c->error[0] = '\0';
	if (!req)
		return -ENOMEM;
	r = qj_proto_send(c->fd, req, pass_fd);
	json_decref(req);
	/* A refused connection (over a limit) is closed after saying why: read that. */
	if (r < 0 && r != -EPIPE && r != -ECONNRESET)
		return r;
	rr = recv_reply(c, &reply, &fd);
	/* The kernel reports the reset of a closed peer before the message it left queued. */
	if (rr == -ECONNRESET)
		rr = recv_reply(c, &reply, &fd);
	if (rr < 0)
		return r < 0 ? r : rr;
	r = qj_reply_status(reply, &msg);
	if (r < 0) {
		snprintf(c->error, sizeof(c->error), "%s", msg ? msg : "");
		if (fd >= 0)
			(void)close(fd);
		json_decref(reply);
		return r;
	}
	if (ret_fd)
		*ret_fd = fd;
	else if (fd >= 0)
		(void)close(fd);
	if (ret)
		*ret = reply;
	else
		json_decref(reply);
	return 0;
}

/*
 * The generic call: @req's op and fields, encoded by the protocol's op schema
 * (common/proto.c), so a client function is a short wrapper that fills a request.
 */
static int call_op(struct qj_conn *c, const struct qj_request *req, json_t **ret, int *ret_fd)
{
	return call_fd(c, qj_request_encode(req), -1, ret, ret_fd);
}

#define REQ(...) (&(const struct qj_request){ __VA_ARGS__ })

QJ_EXPORT int qj_open(const char *socket_path, struct qj_conn **ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct qj_conn *c;
	int r;

	if (!ret)
		return -EINVAL;
	if (!socket_path)
		socket_path = secure_getenv("QOSJAIL_SOCKET");
	if (!socket_path)
		socket_path = QJ_DEFAULT_SOCKET;
	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, socket_path);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		qj_close(c);
		return r;
	}
	r = call_op(c, REQ(.op = QJ_OP_HELLO, .version = QJ_PROTO_VERSION), NULL, NULL);
	if (r < 0) {
		qj_close(c);
		return r;
	}
	*ret = c;
	return 0;
}

QJ_EXPORT struct qj_conn *qj_close(struct qj_conn *c)
{
	if (!c)
		return NULL;
	if (c->fd >= 0)
		(void)close(c->fd);
	json_decref(c->events);
	free(c);
	return NULL;
}

QJ_EXPORT int qj_fd(const struct qj_conn *c)
{
	return c->fd;
}

QJ_EXPORT const char *qj_last_error(const struct qj_conn *c)
{
	return c->error;
}

QJ_EXPORT int qj_hold(struct qj_conn *c, const char *name, const char *reason,
		      uint64_t timeout_usec, unsigned flags)
{
	if (!c || !name || !reason || timeout_usec > INT64_MAX || (flags & ~QJ_HOLD_NONBLOCK))
		return -EINVAL;
	return call_op(c,
		       REQ(.op = QJ_OP_HOLD, .name = name, .reason = reason,
			   .timeout_usec = timeout_usec, .nonblock = flags & QJ_HOLD_NONBLOCK),
		       NULL, NULL);
}

QJ_EXPORT int qj_release(struct qj_conn *c, const char *name)
{
	if (!c || !name)
		return -EINVAL;
	return call_op(c, REQ(.op = QJ_OP_RELEASE, .name = name), NULL, NULL);
}

/* Sends @req; the reply without "ok" as JSON text. */
static int call_text(struct qj_conn *c, const struct qj_request *req, char **ret_json)
{
	json_t *reply = NULL;
	char *s;
	int r;

	if (!c || !ret_json)
		return -EINVAL;
	r = call_op(c, req, &reply, NULL);
	if (r < 0)
		return r;
	(void)json_object_del(reply, "ok");
	s = json_dumps(reply, JSON_COMPACT);
	json_decref(reply);
	if (!s)
		return -ENOMEM;
	*ret_json = s;
	return 0;
}

QJ_EXPORT int qj_status(struct qj_conn *c, char **ret_json)
{
	return call_text(c, REQ(.op = QJ_OP_STATUS), ret_json);
}

QJ_EXPORT int qj_holds(struct qj_conn *c, char **ret_json)
{
	return call_text(c, REQ(.op = QJ_OP_HOLDS), ret_json);
}

QJ_EXPORT int qj_metrics(struct qj_conn *c, char **ret_text)
{
	json_t *reply = NULL;
	const char *text;
	int r;

	if (!c || !ret_text)
		return -EINVAL;
	r = call_op(c, REQ(.op = QJ_OP_METRICS), &reply, NULL);
	if (r < 0)
		return r;
	text = json_string_value(json_object_get(reply, "text"));
	*ret_text = text ? strdup(text) : NULL;
	r = !text ? -EPROTO : *ret_text ? 0 : -ENOMEM;
	json_decref(reply);
	return r;
}

QJ_EXPORT int qj_hold_history(struct qj_conn *c, char **ret_json)
{
	return call_text(c, REQ(.op = QJ_OP_HISTORY), ret_json);
}

QJ_EXPORT int qj_explain(struct qj_conn *c, pid_t pid, char **ret_json)
{
	if (pid <= 0)
		return -EINVAL;
	return call_text(c, REQ(.op = QJ_OP_EXPLAIN, .pid = pid), ret_json);
}

QJ_EXPORT int qj_place(struct qj_conn *c, const char *app, pid_t pid)
{
	if (!c || !app || pid <= 0)
		return -EINVAL;
	return call_op(c, REQ(.op = QJ_OP_PLACE, .app = app, .pid = pid), NULL, NULL);
}

QJ_EXPORT int qj_suspend(struct qj_conn *c)
{
	if (!c)
		return -EINVAL;
	return call_op(c, REQ(.op = QJ_OP_SUSPEND), NULL, NULL);
}

QJ_EXPORT int qj_notify_consent(struct qj_conn *c)
{
	if (!c)
		return -EINVAL;
	return call_op(c, REQ(.op = QJ_OP_NOTIFY), NULL, NULL);
}

QJ_EXPORT int qj_subscribe(struct qj_conn *c, unsigned flags)
{
	if (!c || (flags & ~QJ_SUBSCRIBE_DELAY))
		return -EINVAL;
	return call_op(c, REQ(.op = QJ_OP_SUBSCRIBE, .delay = flags & QJ_SUBSCRIBE_DELAY), NULL,
		       NULL);
}

QJ_EXPORT int qj_event_next(struct qj_conn *c, int timeout_ms, char **ret_json)
{
	struct pollfd p;
	json_t *m = NULL;
	int fd = -1, r;

	if (!c || !ret_json)
		return -EINVAL;
	if (json_array_size(c->events) > 0) {
		m = json_incref(json_array_get(c->events, 0));
		(void)json_array_remove(c->events, 0);
	} else {
		p = (struct pollfd){ .fd = c->fd, .events = POLLIN };
		r = poll(&p, 1, timeout_ms);
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		r = qj_proto_recv(c->fd, &m, &fd);
		if (r < 0)
			return r;
		if (fd >= 0)
			(void)close(fd);
		if (!json_is_object(m) || !json_object_get(m, "event")) {
			json_decref(m);
			return -EPROTO; /* a reply nobody waits for */
		}
	}
	*ret_json = json_dumps(m, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(m);
	return *ret_json ? 0 : -ENOMEM;
}

QJ_EXPORT int qj_ready(struct qj_conn *c, uint64_t cycle)
{
	if (!c || cycle == 0 || cycle > INT64_MAX)
		return -EINVAL;
	return call_op(c, REQ(.op = QJ_OP_READY, .cycle = cycle), NULL, NULL);
}

QJ_EXPORT int qj_reload(struct qj_conn *c, const char *path)
{
	if (!c)
		return -EINVAL;
	return call_op(c, REQ(.op = QJ_OP_RELOAD, .path = path), NULL, NULL);
}

QJ_EXPORT int qj_kill_log_open(struct qj_conn *c, int *ret_fd)
{
	int fd = -1, r;

	if (!c || !ret_fd)
		return -EINVAL;
	r = call_op(c, REQ(.op = QJ_OP_LOG), NULL, &fd);
	if (r < 0)
		return r;
	if (fd < 0)
		return -EPROTO;
	*ret_fd = fd;
	return 0;
}

/* What a spawned child reports through its pipe; nothing (EOF) means it exec'd. */
struct spawn_report {
	int stage; /* SPAWN_NOT_JAILED or SPAWN_EXEC */
	int err;
};
enum { SPAWN_NOT_JAILED, SPAWN_EXEC };

static void report(int fd, int stage, int err)
{
	struct spawn_report rep = { .stage = stage, .err = err };

	(void)!write(fd, &rep, sizeof(rep));
}

/* Reads until EOF or @size - 1 bytes into @buf (NUL-terminated); syscalls only. */
static ssize_t read_all(int fd, char *buf, size_t size)
{
	size_t n = 0;
	ssize_t k;

	while (n < size - 1) {
		k = read(fd, buf + n, size - 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		n += (size_t)k;
	}
	buf[n] = '\0';
	return (ssize_t)n;
}

/* Whether the "0::" line of /proc/self/cgroup is exactly @want; syscalls only. */
static bool in_cgroup(const char *want)
{
	char have[8192];
	const char *line;
	size_t len = strlen(want);
	int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read_all(fd, have, sizeof(have));
	(void)close(fd);
	if (n <= 0)
		return false;
	for (line = have; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, "0::", 3) == 0)
			return strncmp(line + 3, want, len) == 0 &&
			       (line[3 + len] == '\n' || line[3 + len] == '\0');
	return false;
}

/*
 * The child of a handover: waits until the parent writes the cgroup the daemon placed it
 * in (EOF without one: refused, it exits), checks its own /proc/self/cgroup says the
 * same, then execs.  Syscalls only: the caller may have other threads.
 */
static _Noreturn void handover_child(int go, int rep, char *const argv[])
{
	char want[4096];

	if (read_all(go, want, sizeof(want)) <= 0)
		_exit(127);
	if (!in_cgroup(want)) {
		report(rep, SPAWN_NOT_JAILED, EPERM);
		_exit(127);
	}
	execvp(argv[0], argv);
	report(rep, SPAWN_EXEC, errno);
	_exit(127);
}

/* Waits for the child's report: 0 once it exec'd, else the error (the child is reaped). */
static int child_outcome(struct qj_conn *c, int rep, pid_t pid, const char *argv0,
			 const char *cgroup)
{
	struct spawn_report r = {};
	ssize_t n;

	do
		n = read(rep, &r, sizeof(r));
	while (n < 0 && errno == EINTR);
	if (n != sizeof(r))
		return 0;
	(void)waitpid(pid, NULL, 0);
	if (r.stage == SPAWN_NOT_JAILED) {
		snprintf(c->error, sizeof(c->error),
			 "not executed: the child is not in the jail's cgroup %s",
			 cgroup ? cgroup : "");
		return -EIO;
	}
	snprintf(c->error, sizeof(c->error), "cannot execute %s: %s", argv0, strerror(r.err));
	return -r.err;
}

/* clone3() with @flags (CLONE_PIDFD and maybe CLONE_INTO_CGROUP @cgroup_fd). */
static long clone_child(uint64_t flags, int cgroup_fd, int *ret_pidfd)
{
	struct clone_args args = {};

	args.flags = flags | CLONE_PIDFD;
	args.pidfd = (uint64_t)(uintptr_t)ret_pidfd;
	args.exit_signal = SIGCHLD;
	if (flags & CLONE_INTO_CGROUP)
		args.cgroup = (uint64_t)cgroup_fd;
	return syscall(SYS_clone3, &args, sizeof(args));
}

/*
 * For a caller that may not clone3() into the jail (issue 28): a child that waits, its
 * pidfd passed to the daemon (spawn with "child"), which checks it is our own child and
 * moves it; the child execs only once its own /proc/self/cgroup names the jail.
 */
static int spawn_handover(struct qj_conn *c, const char *app, char *const argv[], pid_t *ret_pid,
			  int *ret_pidfd)
{
	_cleanup_close_ int go_r = -EBADF, go_w = -EBADF, rep_r = -EBADF, rep_w = -EBADF;
	int pidfd = -1, p[2], r;
	json_t *reply = NULL;
	const char *cgroup;
	long pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	go_r = p[0];
	go_w = p[1];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	rep_r = p[0];
	rep_w = p[1];
	pid = clone_child(0, -1, &pidfd);
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		(void)close(go_w);
		(void)close(rep_r);
		handover_child(go_r, rep_w, argv);
	}
	(void)close(TAKE_FD(go_r));
	(void)close(TAKE_FD(rep_w));
	r = call_fd(c, qj_request_encode(REQ(.op = QJ_OP_SPAWN, .app = app, .child = true)), pidfd,
		    &reply, NULL);
	cgroup = reply ? json_string_value(json_object_get(reply, "cgroup")) : NULL;
	if (r >= 0 && !cgroup)
		r = -EPROTO;
	if (r >= 0 && write(go_w, cgroup, strlen(cgroup)) != (ssize_t)strlen(cgroup))
		r = -EIO;
	(void)close(TAKE_FD(go_w)); /* EOF: the child execs, or exits when told nothing */
	if (r >= 0)
		r = child_outcome(c, rep_r, (pid_t)pid, argv[0], cgroup);
	else
		(void)waitpid((pid_t)pid, NULL, 0);
	json_decref(reply);
	if (r < 0) {
		(void)close(pidfd);
		return r;
	}
	*ret_pid = (pid_t)pid;
	if (ret_pidfd)
		*ret_pidfd = pidfd;
	else
		(void)close(pidfd);
	return 0;
}

QJ_EXPORT int qj_spawn(struct qj_conn *c, const char *app, char *const argv[], pid_t *ret_pid,
		       int *ret_pidfd)
{
	_cleanup_close_ int cgroup_fd = -EBADF, pipe_r = -EBADF, pipe_w = -EBADF;
	int pidfd = -1, pipefd[2], r;
	long pid;

	if (!c || !app || !argv || !argv[0] || !ret_pid)
		return -EINVAL;
	r = call_op(c, REQ(.op = QJ_OP_SPAWN, .app = app), NULL, &cgroup_fd);
	if (r < 0)
		return r;
	if (cgroup_fd < 0)
		return -EPROTO;
	/* The child reports a failed exec through this pipe; CLOEXEC closes it on success. */
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pipe_r = pipefd[0];
	pipe_w = pipefd[1];
	/* Created in the jail at once where we may (root, a delegated jail); else handed over. */
	pid = clone_child(CLONE_INTO_CGROUP, cgroup_fd, &pidfd);
	if (pid < 0 && (errno == EACCES || errno == EPERM))
		return spawn_handover(c, app, argv, ret_pid, ret_pidfd);
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		(void)close(pipe_r);
		execvp(argv[0], argv);
		report(pipe_w, SPAWN_EXEC, errno);
		_exit(127);
	}
	(void)close(TAKE_FD(pipe_w));
	r = child_outcome(c, pipe_r, (pid_t)pid, argv[0], NULL);
	if (r < 0) {
		(void)close(pidfd);
		return r;
	}
	*ret_pid = (pid_t)pid;
	if (ret_pidfd)
		*ret_pidfd = pidfd;
	else
		(void)close(pidfd);
	return 0;
}
