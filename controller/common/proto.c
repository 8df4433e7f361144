// SPDX-License-Identifier: LGPL-2.1-or-later
/* Message encode/decode for the qosjaild protocol (see proto.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"
#include "util.h"

/*
 * One field of a request: its key, how it is decoded and checked, and where it goes in
 * struct qj_request.  Integers out of [min, max] are refused with @range, except a
 * version, which reads as -1 (hello answers an unsupported version itself).
 */
enum kind { STR, BOOL, U64, PID, VERSION };

struct field {
	const char *key;
	enum kind kind;
	bool required;
	size_t offset;
	json_int_t min, max;
	const char *range;
};

/* A string of at least @min bytes (an empty name, app or path is refused here). */
#define F_STR(k, m, req, lo)                                                                      \
	{                                                                                         \
		.key = k, .kind = STR, .required = req, .offset = offsetof(struct qj_request, m), \
		.min = lo                                                                         \
	}
#define F_BOOL(k, m)                                                             \
	{                                                                        \
		.key = k, .kind = BOOL, .offset = offsetof(struct qj_request, m) \
	}
#define F_INT(k, type, m, req, lo, hi, why)                                                        \
	{                                                                                          \
		.key = k, .kind = type, .required = req, .offset = offsetof(struct qj_request, m), \
		.min = lo, .max = hi, .range = why                                                 \
	}

static const struct field f_name = F_STR("name", name, true, 1);
static const struct field f_reason = F_STR("reason", reason, true, 0);
static const struct field f_app = F_STR("app", app, true, 1);
static const struct field f_path = F_STR("path", path, false, 1);
static const struct field f_nonblock = F_BOOL("nonblock", nonblock);
static const struct field f_child = F_BOOL("child", child);
static const struct field f_delay = F_BOOL("delay", delay);
static const struct field f_version = F_INT("version", VERSION, version, true, 1, 999, NULL);
static const struct field f_timeout =
	F_INT("timeout_usec", U64, timeout_usec, false, 0, INT64_MAX, "must be >= 0");
static const struct field f_pid =
	F_INT("pid", PID, pid, true, 1, INT32_MAX, "must be a positive pid");
static const struct field f_cycle =
	F_INT("cycle", U64, cycle, true, 1, INT64_MAX, "must be a positive cycle id");

#define QJ_OP_MAX_FIELDS 4

/* The protocol's ops: each one's name and the fields it accepts besides "op". */
static const struct op_schema {
	const char *name;
	const struct field *fields[QJ_OP_MAX_FIELDS];
} ops[_QJ_OP_MAX] = {
	[QJ_OP_HELLO] = { .name = "hello", .fields = { &f_version } },
	[QJ_OP_HOLD] = { .name = "hold",
			 .fields = { &f_name, &f_reason, &f_timeout, &f_nonblock } },
	[QJ_OP_RELEASE] = { .name = "release", .fields = { &f_name } },
	[QJ_OP_STATUS] = { .name = "status" },
	[QJ_OP_HOLDS] = { .name = "holds" },
	[QJ_OP_PLACE] = { .name = "place", .fields = { &f_app, &f_pid } },
	[QJ_OP_SPAWN] = { .name = "spawn", .fields = { &f_app, &f_child } },
	[QJ_OP_LOG] = { .name = "log" },
	[QJ_OP_RELOAD] = { .name = "reload", .fields = { &f_path } },
	[QJ_OP_SUSPEND] = { .name = "suspend" },
	[QJ_OP_EXPLAIN] = { .name = "explain", .fields = { &f_pid } },
	[QJ_OP_NOTIFY] = { .name = "notify" },
	[QJ_OP_METRICS] = { .name = "metrics" },
	[QJ_OP_HISTORY] = { .name = "history" },
	[QJ_OP_SUBSCRIBE] = { .name = "subscribe", .fields = { &f_delay } },
	[QJ_OP_READY] = { .name = "ready", .fields = { &f_cycle } },
};

const char *qj_op_to_string(enum qj_op op)
{
	return op >= 0 && op < _QJ_OP_MAX ? ops[op].name : NULL;
}

enum qj_op qj_op_from_string(const char *s)
{
	for (int i = 0; s && i < _QJ_OP_MAX; i++)
		if (ops[i].name && strcmp(ops[i].name, s) == 0)
			return (enum qj_op)i;
	return _QJ_OP_INVALID;
}

static const struct field *find_field(enum qj_op op, const char *key)
{
	for (size_t i = 0; i < QJ_OP_MAX_FIELDS && ops[op].fields[i]; i++)
		if (strcmp(ops[op].fields[i]->key, key) == 0)
			return ops[op].fields[i];
	return NULL;
}

static bool type_ok(const json_t *v, enum kind kind)
{
	return kind == STR  ? json_is_string(v) :
	       kind == BOOL ? json_is_boolean(v) :
			      json_is_integer(v);
}

static const char *type_name(enum kind kind)
{
	return kind == STR ? "a string" : kind == BOOL ? "a boolean" : "an integer";
}

/* Stores @v (of the right type) as @f says; -EINVAL with @err filled when out of range. */
static int decode_field(enum qj_op op, const struct field *f, const json_t *v, struct qj_request *r,
			char *err, size_t err_len)
{
	char *at = (char *)r + f->offset;
	json_int_t n = json_is_integer(v) ? json_integer_value(v) : 0;
	bool in_range = n >= f->min && n <= f->max;

	switch (f->kind) {
	case STR:
		*(const char **)at = json_string_value(v);
		if (f->min > 0 && !json_string_value(v)[0]) {
			snprintf(err, err_len, "%s: empty string field", ops[op].name);
			return -EINVAL;
		}
		return 0;
	case BOOL:
		*(bool *)at = json_is_true(v);
		return 0;
	case VERSION:
		*(int *)at = in_range ? (int)n : -1;
		return 0;
	case U64:
	case PID:
		if (!in_range) {
			snprintf(err, err_len, "%s: field \"%s\" %s", ops[op].name, f->key,
				 f->range);
			return -EINVAL;
		}
		if (f->kind == PID)
			*(pid_t *)at = (pid_t)n;
		else
			*(uint64_t *)at = (uint64_t)n;
		return 0;
	}
	return -EINVAL;
}

/* The fields of @r's op in @r->root, checked and decoded by the op's schema. */
static int decode_fields(struct qj_request *r, char *err, size_t err_len)
{
	const struct op_schema *o = &ops[r->op];
	const char *key;
	json_t *v;
	int e;

	json_object_foreach (r->root, key, v) {
		const struct field *f;

		if (strcmp(key, "op") == 0)
			continue;
		f = find_field(r->op, key);
		if (!f) {
			snprintf(err, err_len, "%s: unknown field \"%.64s\"", o->name, key);
			return -EINVAL;
		}
		if (!type_ok(v, f->kind)) {
			snprintf(err, err_len, "%s: field \"%s\" must be %s", o->name, key,
				 type_name(f->kind));
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < QJ_OP_MAX_FIELDS && o->fields[i]; i++) {
		v = json_object_get(r->root, o->fields[i]->key);
		if (!v && o->fields[i]->required) {
			snprintf(err, err_len, "%s: missing field \"%s\"", o->name,
				 o->fields[i]->key);
			return -EINVAL;
		}
		if (v && (e = decode_field(r->op, o->fields[i], v, r, err, err_len)) < 0)
			return e;
	}
	return 0;
}

int qj_request_parse(const void *buf, size_t len, struct qj_request *ret, char *err, size_t err_len)
{
	struct qj_request r = { .op = _QJ_OP_INVALID };
	json_error_t jerr;
	json_t *op;
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
	e = decode_fields(&r, err, err_len);
	if (e < 0)
		goto fail;
	*ret = r;
	return 0;
fail:
	json_decref(r.root);
	return e;
}

json_t *qj_request_encode(const struct qj_request *r)
{
	json_t *m;

	if (r->op < 0 || r->op >= _QJ_OP_MAX)
		return NULL;
	m = json_pack("{s:s}", "op", ops[r->op].name);
	for (size_t i = 0; m && i < QJ_OP_MAX_FIELDS && ops[r->op].fields[i]; i++) {
		const struct field *f = ops[r->op].fields[i];
		const char *at = (const char *)r + f->offset;
		json_t *v = NULL;

		/* Defaults are left out: every byte costs the daemon's parser time. */
		if (f->kind == STR && *(const char *const *)at)
			v = json_string(*(const char *const *)at);
		else if (f->kind == BOOL && *(const bool *)at)
			v = json_true();
		else if (f->kind == U64 && *(const uint64_t *)at)
			v = json_integer((json_int_t) * (const uint64_t *)at);
		else if (f->kind == PID && *(const pid_t *)at)
			v = json_integer(*(const pid_t *)at);
		else if (f->kind == VERSION && *(const int *)at)
			v = json_integer(*(const int *)at);
		else
			continue;
		if (!v || json_object_set_new(m, f->key, v) < 0) {
			json_decref(m);
			m = NULL;
		}
	}
	return m;
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
