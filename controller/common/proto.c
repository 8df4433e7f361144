// SPDX-License-Identifier: LGPL-2.1-or-later
/* Message encode/decode for the qosjaild protocol (see proto.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"
#include "util.h"

static const char *const op_names[_QJ_OP_MAX] = {
	[QJ_OP_HELLO] = "hello",     [QJ_OP_HOLD] = "hold",	  [QJ_OP_RELEASE] = "release",
	[QJ_OP_STATUS] = "status",   [QJ_OP_HOLDS] = "holds",	  [QJ_OP_PLACE] = "place",
	[QJ_OP_SPAWN] = "spawn",     [QJ_OP_LOG] = "log",	  [QJ_OP_RELOAD] = "reload",
	[QJ_OP_SUSPEND] = "suspend", [QJ_OP_EXPLAIN] = "explain", [QJ_OP_NOTIFY] = "notify",
	[QJ_OP_METRICS] = "metrics", [QJ_OP_HISTORY] = "history", [QJ_OP_SUBSCRIBE] = "subscribe",
	[QJ_OP_READY] = "ready",
};

/* Fields each op accepts besides "op"; 'R' required, 'O' optional. */
struct field {
	const char *key;
	int type; /* JSON_STRING, JSON_INTEGER, JSON_TRUE (any boolean) */
	char need;
};

static const struct field op_fields[_QJ_OP_MAX][4] = {
	[QJ_OP_HELLO] = { { "version", JSON_INTEGER, 'R' } },
	[QJ_OP_HOLD] = { { "name", JSON_STRING, 'R' },
			 { "reason", JSON_STRING, 'R' },
			 { "timeout_usec", JSON_INTEGER, 'O' },
			 { "nonblock", JSON_TRUE, 'O' } },
	[QJ_OP_RELEASE] = { { "name", JSON_STRING, 'R' } },
	[QJ_OP_PLACE] = { { "app", JSON_STRING, 'R' }, { "pid", JSON_INTEGER, 'R' } },
	[QJ_OP_SPAWN] = { { "app", JSON_STRING, 'R' }, { "child", JSON_TRUE, 'O' } },
	[QJ_OP_RELOAD] = { { "path", JSON_STRING, 'O' } },
	[QJ_OP_EXPLAIN] = { { "pid", JSON_INTEGER, 'R' } },
	[QJ_OP_SUBSCRIBE] = { { "delay", JSON_TRUE, 'O' } },
	[QJ_OP_READY] = { { "cycle", JSON_INTEGER, 'R' } },
};

const char *qj_op_to_string(enum qj_op op)
{
	return op >= 0 && op < _QJ_OP_MAX ? op_names[op] : NULL;
}

enum qj_op qj_op_from_string(const char *s)
{
	for (int i = 0; s && i < _QJ_OP_MAX; i++)
		if (strcmp(op_names[i], s) == 0)
			return (enum qj_op)i;
	return _QJ_OP_INVALID;
}

static const struct field *find_field(enum qj_op op, const char *key)
{
	for (size_t i = 0; i < ARRAY_SIZE(op_fields[op]) && op_fields[op][i].key; i++)
		if (strcmp(op_fields[op][i].key, key) == 0)
			return &op_fields[op][i];
	return NULL;
}

static bool type_ok(const json_t *v, int type)
{
	if (type == JSON_TRUE)
		return json_is_boolean(v);
	return (int)json_typeof(v) == type;
}

static const char *type_name(int type)
{
	return type == JSON_STRING ? "a string" : type == JSON_INTEGER ? "an integer" : "a boolean";
}

int qj_request_parse(const void *buf, size_t len, struct qj_request *ret, char *err, size_t err_len)
{
	struct qj_request r = { .op = _QJ_OP_INVALID };
	json_error_t jerr;
	const char *key;
	json_t *v, *op;
	int e = -EINVAL;

	err[0] = '\0';
	if (len > QJ_PROTO_MAX_MSG) {
		snprintf(err, err_len, "message of %zu bytes exceeds the limit of %d", len,
			 QJ_PROTO_MAX_MSG);
		return -EMSGSIZE;
	}
	r.root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!r.root) {
		snprintf(err, err_len, "invalid JSON at byte %d: %s", jerr.position, jerr.text);
		return -EBADMSG;
	}
	if (!json_is_object(r.root)) {
		snprintf(err, err_len, "message is not a JSON object");
		e = -EBADMSG;
		goto fail;
	}
	op = json_object_get(r.root, "op");
	if (!op) {
		snprintf(err, err_len, "missing field \"op\"");
		goto fail;
	}
	if (!json_is_string(op)) {
		snprintf(err, err_len, "field \"op\" must be a string");
		goto fail;
	}
	r.op = qj_op_from_string(json_string_value(op));
	if (r.op < 0) {
		snprintf(err, err_len, "unknown op \"%.64s\"", json_string_value(op));
		e = -EOPNOTSUPP;
		goto fail;
	}

	json_object_foreach (r.root, key, v) {
		const struct field *f;

		if (strcmp(key, "op") == 0)
			continue;
		f = find_field(r.op, key);
		if (!f) {
			snprintf(err, err_len, "%s: unknown field \"%.64s\"", op_names[r.op], key);
			goto fail;
		}
		if (!type_ok(v, f->type)) {
			snprintf(err, err_len, "%s: field \"%s\" must be %s", op_names[r.op], key,
				 type_name(f->type));
			goto fail;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(op_fields[r.op]) && op_fields[r.op][i].key; i++)
		if (op_fields[r.op][i].need == 'R' &&
		    !json_object_get(r.root, op_fields[r.op][i].key)) {
			snprintf(err, err_len, "%s: missing field \"%s\"", op_names[r.op],
				 op_fields[r.op][i].key);
			goto fail;
		}

	r.name = json_string_value(json_object_get(r.root, "name"));
	r.reason = json_string_value(json_object_get(r.root, "reason"));
	r.app = json_string_value(json_object_get(r.root, "app"));
	r.path = json_string_value(json_object_get(r.root, "path"));
	r.nonblock = json_is_true(json_object_get(r.root, "nonblock"));
	r.delay = json_is_true(json_object_get(r.root, "delay"));
	r.child = json_is_true(json_object_get(r.root, "child"));
	v = json_object_get(r.root, "cycle");
	if (v) {
		if (json_integer_value(v) <= 0) {
			snprintf(err, err_len,
				 "ready: field \"cycle\" must be a positive cycle id");
			goto fail;
		}
		r.cycle = (uint64_t)json_integer_value(v);
	}
	v = json_object_get(r.root, "version");
	if (v)
		r.version = json_integer_value(v) > 0 && json_integer_value(v) < 1000 ?
				    (int)json_integer_value(v) :
				    -1;
	v = json_object_get(r.root, "timeout_usec");
	if (v) {
		if (json_integer_value(v) < 0) {
			snprintf(err, err_len, "hold: field \"timeout_usec\" must be >= 0");
			goto fail;
		}
		r.timeout_usec = (uint64_t)json_integer_value(v);
	}
	v = json_object_get(r.root, "pid");
	if (v) {
		if (json_integer_value(v) <= 0 || json_integer_value(v) > INT32_MAX) {
			snprintf(err, err_len, "%s: field \"pid\" must be a positive pid",
				 op_names[r.op]);
			goto fail;
		}
		r.pid = (pid_t)json_integer_value(v);
	}
	if ((r.name && !r.name[0]) || (r.app && !r.app[0]) || (r.path && !r.path[0])) {
		snprintf(err, err_len, "%s: empty string field", op_names[r.op]);
		goto fail;
	}
	*ret = r;
	return 0;
fail:
	json_decref(r.root);
	return e;
}

void qj_request_done(struct qj_request *r)
{
	json_decref(r->root);
	r->root = NULL;
}

json_t *qj_reply_new_ok(void)
{
	return json_pack("{s:b}", "ok", 1);
}

json_t *qj_reply_new_error(int error, const char *fmt, ...)
{
	const char *name = strerrorname_np(-error);
	json_t *probe;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/*
	 * Messages may quote what the client sent (jansson's error text does), and a JSON
	 * string must be UTF-8: rather than no reply, one with the non-ASCII bytes as '?'.
	 */
	probe = json_string(msg);
	if (!probe)
		for (char *p = msg; *p; p++)
			if ((unsigned char)*p >= 0x80)
				*p = '?';
	json_decref(probe);
	return json_pack("{s:b,s:s,s:i,s:s}", "ok", 0, "error", name ? name : "EIO", "errno",
			 -error, "message", msg);
}

int qj_proto_encode(const json_t *msg, char **ret, size_t *ret_len)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	size_t n;

	if (!s)
		return -ENOMEM;
	n = strlen(s);
	if (n > QJ_PROTO_MAX_MSG) {
		free(s);
		return -EMSGSIZE;
	}
	*ret = s;
	*ret_len = n;
	return 0;
}

void qj_proto_attach_fd(struct msghdr *mh, union qj_fd_control *control, int fd)
{
	struct cmsghdr *c;

	memset(control, 0, sizeof(*control));
	mh->msg_control = control->buf;
	mh->msg_controllen = sizeof(control->buf);
	c = CMSG_FIRSTHDR(mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
}

int qj_proto_send(int fd, const json_t *msg, int pass_fd)
{
	union qj_fd_control control;
	_cleanup_free_ char *s = NULL;
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	size_t n;
	int r;

	r = qj_proto_encode(msg, &s, &n);
	if (r < 0)
		return r;
	iov = (struct iovec){ .iov_base = s, .iov_len = n };
	if (pass_fd >= 0)
		qj_proto_attach_fd(&mh, &control, pass_fd);
	for (;;) {
		ssize_t k = sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (k >= 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

int qj_proto_take_fd(struct msghdr *mh)
{
	int passed = -1;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t i = 0; i < k; i++) {
				int f;

				memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				if (passed < 0)
					passed = f;
				else
					(void)close(f);
			}
		}
	return passed;
}

int qj_proto_recv(int fd, json_t **ret, int *ret_fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} control;
	_cleanup_free_ char *buf = malloc(QJ_PROTO_MAX_MSG + 1);
	struct iovec iov = { .iov_base = buf, .iov_len = QJ_PROTO_MAX_MSG + 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = control.buf,
			     .msg_controllen = sizeof(control.buf) };
	int passed = -1;
	json_t *j;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
		if (n >= 0)
			break;
		if (errno != EINTR)
			return -errno;
	}
	passed = qj_proto_take_fd(&mh);
	if (n == 0) {
		if (passed >= 0)
			(void)close(passed);
		return -ECONNRESET;
	}
	if ((mh.msg_flags & MSG_TRUNC) || n > QJ_PROTO_MAX_MSG)
		j = NULL;
	else
		j = json_loadb(buf, (size_t)n, 0, NULL);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		if (passed >= 0)
			(void)close(passed);
		return -EBADMSG;
	}
	*ret = j;
	if (ret_fd)
		*ret_fd = passed;
	else if (passed >= 0)
		(void)close(passed);
	return 0;
}

int qj_reply_status(const json_t *reply, const char **ret_message)
{
	json_t *ok = json_object_get(reply, "ok");
	json_int_t e;

	if (ret_message)
		*ret_message = json_string_value(json_object_get(reply, "message"));
	if (!json_is_boolean(ok))
		return -EPROTO;
	if (json_is_true(ok))
		return 0;
	e = json_integer_value(json_object_get(reply, "errno"));
	return e > 0 && e < 4096 ? -(int)e : -EPROTO;
}
