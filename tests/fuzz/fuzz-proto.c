// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for the daemon's request decoder: every byte of a request comes from an
 * untrusted client.  Beyond "no crash, no leak, no UB" it checks the decoder's contract:
 * failure is one of the documented errors with a message, *ret untouched; success has a
 * known op, and every string field it hands out is non-empty.  Replies are parsed back the
 * way the client library does.  Build and run with tests/fuzz/run --target proto.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_nonempty(const char *s)
{
	if (s && !s[0])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qj_request sentinel = { .op = _QJ_OP_INVALID, .pid = -42 }, req = sentinel;
	char err[256];
	const char *msg;
	json_t *reply;
	int r;

	memset(err, 'x', sizeof(err));
	r = qj_request_parse(data, size, &req, err, sizeof(err));
	if (r < 0) {
		if (r != -EMSGSIZE && r != -EBADMSG && r != -EOPNOTSUPP && r != -EINVAL)
			abort();
		if (!memchr(err, '\0', sizeof(err)) || !err[0] ||
		    memcmp(&req, &sentinel, sizeof(req)) != 0)
			abort();
		/* Always a reply, even when the message quotes invalid UTF-8 (then as '?'). */
		reply = qj_reply_new_error(r, "%s", err);
		if (!reply || qj_reply_status(reply, &msg) != r || strlen(msg) != strlen(err))
			abort();
		json_decref(reply);
	} else {
		if (r != 0 || req.op < 0 || req.op >= _QJ_OP_MAX || !req.root)
			abort();
		check_nonempty(req.name);
		check_nonempty(req.app);
		check_nonempty(req.path);
		if ((req.op == QJ_OP_HOLD && (!req.name || !req.reason)) ||
		    (req.op == QJ_OP_RELEASE && !req.name) ||
		    ((req.op == QJ_OP_PLACE || req.op == QJ_OP_EXPLAIN) && req.pid <= 0))
			abort();
		qj_request_done(&req);
	}

	/* The same bytes as a reply: the client must classify anything without crashing. */
	reply = json_loadb((const char *)data, size, 0, NULL);
	if (reply) {
		r = qj_reply_status(reply, &msg);
		if (r > 0 || r < -4095)
			abort();
		json_decref(reply);
	}
	return 0;
}
