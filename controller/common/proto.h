/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The qosjaild wire protocol: one JSON object per SOCK_SEQPACKET message,
 * at most QJ_PROTO_MAX_MSG bytes.  Requests carry "op"; every reply carries
 * "ok": true plus op-specific fields, or "ok": false, "error" (errno name),
 * "errno" (number) and "message".  The first request must be
 * {"op":"hello","version":1}.  Shared by the daemon and libqosjail; pure
 * except for qj_proto_send()/qj_proto_recv(), which a client uses blocking.
 */
#ifndef QJ_PROTO_H
#define QJ_PROTO_H

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define QJ_PROTO_VERSION 1
#define QJ_PROTO_MAX_MSG (64 * 1024)

enum qj_op {
	QJ_OP_HELLO,
	QJ_OP_HOLD,
	QJ_OP_RELEASE,
	QJ_OP_STATUS,
	QJ_OP_HOLDS,
	QJ_OP_PLACE,
	QJ_OP_SPAWN,
	QJ_OP_LOG,
	QJ_OP_RELOAD,
	QJ_OP_SUSPEND,
	QJ_OP_EXPLAIN,
	QJ_OP_NOTIFY, /* the caller consents to the notify rung (SIGXCPU) */
	QJ_OP_METRICS, /* the daemon's counters, Prometheus text exposition format */
	QJ_OP_HISTORY, /* hold names' recent active periods (the timeline) */
	QJ_OP_SUBSCRIBE, /* cycle events on this connection; "delay": a delay hold */
	QJ_OP_READY, /* a delay hold is done with "cycle" */
	_QJ_OP_MAX,
	_QJ_OP_INVALID = -EINVAL,
};

/* A decoded request.  String pointers are borrowed from ->root. */
struct qj_request {
	enum qj_op op;
	json_t *root;
	int version; /* hello */
	const char *name; /* hold, release */
	const char *reason; /* hold */
	uint64_t timeout_usec; /* hold; 0 = none */
	bool nonblock; /* hold: EAGAIN instead of waiting while the jail is quiesced */
	const char *app; /* place, spawn */
	/* spawn: place the caller's waiting child, whose pidfd comes with the message */
	bool child;
	pid_t pid; /* place, explain */
	const char *path; /* reload; NULL = the running policy's file */
	bool delay; /* subscribe: take a delay hold */
	uint64_t cycle; /* ready */
};

/*
 * Decodes and validates one message.  Returns 0, or -EMSGSIZE (too long),
 * -EBADMSG (not JSON, not an object), -EOPNOTSUPP (unknown op), -EINVAL
 * (missing field, wrong type, unknown field, bad value); @err then says what.
 */
int qj_request_parse(const void *buf, size_t len, struct qj_request *ret, char *err,
		     size_t err_len);
void qj_request_done(struct qj_request *r);
/*
 * The message of @r (its op and the fields its op has that are set; ->root unused),
 * encoded by the same schema that parses it.  NULL on OOM or an unknown op.
 */
json_t *qj_request_encode(const struct qj_request *r);

const char *qj_op_to_string(enum qj_op op);
enum qj_op qj_op_from_string(const char *s);

/* {"ok":true} to add fields to; NULL on OOM. */
json_t *qj_reply_new_ok(void);
/* {"ok":false,"error":NAME,"errno":N,"message":...}; @error is a negative errno. */
json_t *qj_reply_new_error(int error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Compact encoding of @msg into a malloc()ed buffer.  -EMSGSIZE when it
 * exceeds QJ_PROTO_MAX_MSG, -ENOMEM.
 */
int qj_proto_encode(const json_t *msg, char **ret, size_t *ret_len);

/* Room for the SCM_RIGHTS message of one passed fd. */
union qj_fd_control {
	struct cmsghdr h;
	char buf[CMSG_SPACE(sizeof(int))];
};

/* Points @mh's control data at @control, filled to pass @fd (SCM_RIGHTS). */
void qj_proto_attach_fd(struct msghdr *mh, union qj_fd_control *control, int fd);

/*
 * The first fd passed with a received message (@mh's SCM_RIGHTS data), or -1; any
 * further ones are closed, so a peer cannot make the receiver hold fds it never uses.
 */
int qj_proto_take_fd(struct msghdr *mh);

/*
 * Client side, blocking: sends @msg (with @pass_fd as SCM_RIGHTS when >= 0),
 * receives one message (and at most one passed fd into *ret_fd, -1 if none).
 */
int qj_proto_send(int fd, const json_t *msg, int pass_fd);
int qj_proto_recv(int fd, json_t **ret, int *ret_fd);

/*
 * Interprets a reply: 0 when "ok" is true, else the negative errno it carries
 * (-EPROTO when malformed).  *ret_message (borrowed, may be NULL) gets "message".
 */
int qj_reply_status(const json_t *reply, const char **ret_message);

#endif
