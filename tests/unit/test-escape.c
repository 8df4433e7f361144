// SPDX-License-Identifier: LGPL-2.1-or-later
/* The one escaping helper: invalid UTF-8 for JSON, controls and more for terminals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "escape.h"

static void check(const char *in, unsigned flags, const char *want)
{
	char *got = qj_escape(in, flags);

	assert_non_null(got);
	assert_string_equal(got, want);
	assert_int_equal(qj_escape_buf(in, flags, NULL, 0), strlen(want));
	free(got);
}

static void test_escape_utf8_only_invalid_bytes(void **state)
{
	(void)state;
	check("", QJ_ESCAPE_UTF8, "");
	check("qj-busy", QJ_ESCAPE_UTF8, "qj-busy");
	/* Valid UTF-8 and controls stay: JSON escapes controls itself. */
	check("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\x1b[31m\\", QJ_ESCAPE_UTF8,
	      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\x1b[31m\\");
	check("bad\xff\xfe", QJ_ESCAPE_UTF8, "bad\\xff\\xfe");
	check("\x80x", QJ_ESCAPE_UTF8, "\\x80x"); /* stray continuation */
	check("\xc3", QJ_ESCAPE_UTF8, "\\xc3"); /* cut short at the end */
	check("\xe2\x82z", QJ_ESCAPE_UTF8, "\\xe2\\x82z"); /* cut short before z */
	check("\xc0\xaf", QJ_ESCAPE_UTF8, "\\xc0\\xaf"); /* overlong '/' */
	check("\xed\xa0\x80", QJ_ESCAPE_UTF8, "\\xed\\xa0\\x80"); /* surrogate */
	check("\xf4\x90\x80\x80", QJ_ESCAPE_UTF8, "\\xf4\\x90\\x80\\x80"); /* > U+10FFFF */
}

static void test_escape_terminal(void **state)
{
	(void)state;
	check("plain text, caf\xc3\xa9", QJ_ESCAPE_TERMINAL, "plain text, caf\xc3\xa9");
	check("\x1b[2J\x1b]0;owned\x07", QJ_ESCAPE_TERMINAL, "\\e[2J\\e]0;owned\\x07");
	check("a\nroot  1  0  sshd\r\t", QJ_ESCAPE_TERMINAL, "a\\nroot  1  0  sshd\\r\\t");
	check("\x7f\x01", QJ_ESCAPE_TERMINAL, "\\x7f\\x01");
	/* C1 CSI (U+009B) acts like ESC [ on some terminals. */
	check("\xc2\x9b"
	      "31m",
	      QJ_ESCAPE_TERMINAL, "\\u009b31m");
	/* Bidi override and line separator: reordered or split display. */
	check("txt.\xe2\x80\xae"
	      "exe",
	      QJ_ESCAPE_TERMINAL, "txt.\\u202eexe");
	check("a\xe2\x80\xa8"
	      "b",
	      QJ_ESCAPE_TERMINAL, "a\\u2028b");
	/* The backslash is doubled so an escape cannot be faked. */
	check("\\e[31m", QJ_ESCAPE_TERMINAL, "\\\\e[31m");
	check("bad\xff", QJ_ESCAPE_TERMINAL, "bad\\xff");
}

static void test_escape_buf_cuts_between_escapes(void **state)
{
	char buf[8];

	(void)state;
	/* "ab" + "\e" + "cd" needs 6: a 5-byte buffer holds "ab\e" and the NUL. */
	assert_int_equal(qj_escape_buf("ab\x1b"
				       "cd",
				       QJ_ESCAPE_TERMINAL, buf, 5),
			 6);
	assert_string_equal(buf, "ab\\e");
	assert_int_equal(qj_escape_buf("ab\x1b"
				       "cd",
				       QJ_ESCAPE_TERMINAL, buf, 4),
			 6);
	assert_string_equal(buf, "ab");
	/* A multi-byte character is not split either. */
	assert_int_equal(qj_escape_buf("x\xe2\x82\xac", QJ_ESCAPE_UTF8, buf, 4), 4);
	assert_string_equal(buf, "x");
	assert_int_equal(qj_escape_buf("xyz", QJ_ESCAPE_UTF8, buf, 1), 3);
	assert_string_equal(buf, "");
}

static void test_json_string_escaped(void **state)
{
	json_t *j;

	(void)state;
	assert_null(json_string("bad\xff")); /* what made records and listings vanish */
	j = qj_json_string_escaped("bad\xff");
	assert_non_null(j);
	assert_string_equal(json_string_value(j), "bad\\xff");
	json_decref(j);
	j = qj_json_string_escaped("caf\xc3\xa9");
	assert_string_equal(json_string_value(j), "caf\xc3\xa9");
	json_decref(j);
	j = qj_json_string_escaped(NULL);
	assert_true(json_is_null(j));
	json_decref(j);
}

/* What qosjailctl does to a reply before printing it: every string, nested too. */
static void test_json_escape_strings(void **state)
{
	json_t *j = json_pack("{s:s,s:[{s:s,s:i}],s:{s:s}}", "state", "awake", "holds", "name",
			      "\x1b[2Jx", "pid", 7, "last", "error", "a\nb");

	(void)state;
	assert_non_null(j);
	assert_int_equal(qj_json_escape_strings(j, QJ_ESCAPE_TERMINAL), 0);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "awake");
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(j, "holds"), 0), "name")),
			    "\\e[2Jx");
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(json_object_get(j, "holds"), 0), "pid")),
			 7);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "last"), "error")),
			    "a\\nb");
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape_utf8_only_invalid_bytes),
		cmocka_unit_test(test_escape_terminal),
		cmocka_unit_test(test_escape_buf_cuts_between_escapes),
		cmocka_unit_test(test_json_string_escaped),
		cmocka_unit_test(test_json_escape_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
