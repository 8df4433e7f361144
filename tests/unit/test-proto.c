// SPDX-License-Identifier: LGPL-2.1-or-later
/* Decoding of every request kind, good and bad (table-driven). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto.h"
#include "util.h"

struct bad_case {
	const char *text;
	int error;
	const char *message_part;
};

static const struct bad_case bad_cases[] = {
	{ "{\"op\":", -EBADMSG, "invalid JSON" },
	{ "not json", -EBADMSG, "invalid JSON" },
	{ "[1,2]", -EBADMSG, "not a JSON object" },
	{ "{\"op\":\"hold\",\"op\":\"hold\"}", -EBADMSG, "invalid JSON" },
	{ "{}", -EINVAL, "missing field \"op\"" },
	{ "{\"op\":7}", -EINVAL, "\"op\" must be a string" },
	{ "{\"op\":\"fly\"}", -EOPNOTSUPP, "unknown op \"fly\"" },
	{ "{\"op\":\"hold\",\"reason\":\"r\"}", -EINVAL, "missing field \"name\"" },
	{ "{\"op\":\"hold\",\"name\":\"n\"}", -EINVAL, "missing field \"reason\"" },
	{ "{\"op\":\"hold\",\"name\":3,\"reason\":\"r\"}", -EINVAL, "\"name\" must be a string" },
	{ "{\"op\":\"hold\",\"name\":\"n\",\"reason\":\"r\",\"timeout_usec\":\"5s\"}", -EINVAL,
	  "must be an integer" },
	{ "{\"op\":\"hold\",\"name\":\"n\",\"reason\":\"r\",\"timeout_usec\":-1}", -EINVAL,
	  ">= 0" },
	{ "{\"op\":\"hold\",\"name\":\"n\",\"reason\":\"r\",\"nonblock\":1}", -EINVAL,
	  "must be a boolean" },
	{ "{\"op\":\"hold\",\"name\":\"\",\"reason\":\"r\"}", -EINVAL, "empty string" },
	{ "{\"op\":\"release\",\"name\":\"n\",\"color\":\"red\"}", -EINVAL,
	  "unknown field \"color\"" },
	{ "{\"op\":\"place\",\"app\":\"a\"}", -EINVAL, "missing field \"pid\"" },
	{ "{\"op\":\"place\",\"app\":\"a\",\"pid\":0}", -EINVAL, "positive pid" },
	{ "{\"op\":\"place\",\"app\":\"a\",\"pid\":1.5}", -EINVAL, "must be an integer" },
	{ "{\"op\":\"spawn\"}", -EINVAL, "missing field \"app\"" },
	{ "{\"op\":\"hello\"}", -EINVAL, "missing field \"version\"" },
	{ "{\"op\":\"status\",\"verbose\":true}", -EINVAL, "unknown field" },
	{ "{\"op\":\"reload\",\"path\":[]}", -EINVAL, "must be a string" },
};

static void test_request_parse_bad(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad_cases); i++) {
		struct qj_request r;
		char err[256];
		int e;

		e = qj_request_parse(bad_cases[i].text, strlen(bad_cases[i].text), &r, err,
				     sizeof(err));
		if (e != bad_cases[i].error || !strstr(err, bad_cases[i].message_part))
			fail_msg("case %zu (%s): got %d \"%s\"", i, bad_cases[i].text, e, err);
	}
}

static void test_request_parse_oversize(void **state)
{
	size_t n = QJ_PROTO_MAX_MSG + 1;
	char *buf = malloc(n);
	struct qj_request r;
	char err[256];

	(void)state;
	assert_non_null(buf);
	memset(buf, ' ', n);
	assert_int_equal(qj_request_parse(buf, n, &r, err, sizeof(err)), -EMSGSIZE);
	assert_non_null(strstr(err, "exceeds"));
	free(buf);
}

static void test_request_parse_good(void **state)
{
	static const char hold[] = "{\"op\":\"hold\",\"name\":\"net\",\"reason\":\"dl\","
				   "\"timeout_usec\":5000000,\"nonblock\":true}";
	static const char place[] = "{\"op\":\"place\",\"app\":\"game\",\"pid\":1234}";
	static const char hello[] = "{\"op\":\"hello\",\"version\":1}";
	struct qj_request r;
	char err[256];

	(void)state;
	assert_int_equal(qj_request_parse(hold, strlen(hold), &r, err, sizeof(err)), 0);
	assert_int_equal(r.op, QJ_OP_HOLD);
	assert_string_equal(r.name, "net");
	assert_string_equal(r.reason, "dl");
	assert_int_equal(r.timeout_usec, 5000000);
	assert_true(r.nonblock);
	qj_request_done(&r);

	assert_int_equal(qj_request_parse(place, strlen(place), &r, err, sizeof(err)), 0);
	assert_int_equal(r.op, QJ_OP_PLACE);
	assert_string_equal(r.app, "game");
	assert_int_equal(r.pid, 1234);
	qj_request_done(&r);

	assert_int_equal(qj_request_parse(hello, strlen(hello), &r, err, sizeof(err)), 0);
	assert_int_equal(r.version, 1);
	qj_request_done(&r);

	for (int op = 0; op < _QJ_OP_MAX; op++)
		assert_int_equal(qj_op_from_string(qj_op_to_string(op)), op);
}

/*
 * The client encodes by the same op schema the daemon parses by: every op of the
 * protocol, with every field of struct qj_request set, goes out with its own fields
 * only and parses back to the same values.  An empty reason passes the parser (the
 * hold handler answers it), as an empty name does not.
 */
static void test_schema_round_trip(void **state)
{
	const struct qj_request all = { .version = 1,
					.name = "n",
					.reason = "",
					.timeout_usec = 5,
					.nonblock = true,
					.app = "a",
					.child = true,
					.pid = 42,
					.path = "/p",
					.delay = true,
					.cycle = 7 };

	(void)state;
	for (int op = 0; op < _QJ_OP_MAX; op++) {
		struct qj_request in = all, out;
		json_t *m;
		char *text, err[256];
		size_t n;

		in.op = (enum qj_op)op;
		m = qj_request_encode(&in);
		assert_non_null(m);
		assert_int_equal(qj_proto_encode(m, &text, &n), 0);
		json_decref(m);
		if (qj_request_parse(text, n, &out, err, sizeof(err)) != 0)
			fail_msg("op %s: %s does not parse back: %s", qj_op_to_string(op), text,
				 err);
		assert_int_equal(out.op, op);
		assert_true(!out.name || strcmp(out.name, "n") == 0);
		assert_true(!out.reason || strcmp(out.reason, "") == 0);
		assert_true(!out.app || strcmp(out.app, "a") == 0);
		assert_true(!out.path || strcmp(out.path, "/p") == 0);
		assert_true(out.version == 0 || out.version == 1);
		assert_true(out.timeout_usec == 0 || out.timeout_usec == 5);
		assert_true(out.pid == 0 || out.pid == 42);
		assert_true(out.cycle == 0 || out.cycle == 7);
		if (op == QJ_OP_HOLD)
			assert_true(out.name && out.reason && out.timeout_usec && out.nonblock);
		qj_request_done(&out);
		free(text);
	}
	assert_null(qj_request_encode(&(struct qj_request){ .op = _QJ_OP_MAX }));
}

static void test_reply_error_and_status(void **state)
{
	json_t *e = qj_reply_new_error(-EPERM, "uid %d may not %s", 1000, "reload");
	json_t *ok = qj_reply_new_ok();
	const char *msg;
	char *s;
	size_t n;

	(void)state;
	assert_int_equal(qj_proto_encode(e, &s, &n), 0);
	assert_string_equal(s, "{\"ok\":false,\"error\":\"EPERM\",\"errno\":1,"
			       "\"message\":\"uid 1000 may not reload\"}");
	free(s);
	assert_int_equal(qj_reply_status(e, &msg), -EPERM);
	assert_string_equal(msg, "uid 1000 may not reload");
	assert_int_equal(qj_reply_status(ok, &msg), 0);
	json_decref(e);
	json_decref(ok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_parse_bad),
		cmocka_unit_test(test_request_parse_oversize),
		cmocka_unit_test(test_request_parse_good),
		cmocka_unit_test(test_schema_round_trip),
		cmocka_unit_test(test_reply_error_and_status),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
