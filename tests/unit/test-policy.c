// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Policy language v1: value syntax, every error class (tests/policy/bad/NAME.yaml against
 * NAME.expected, exactly), dumps of good policies (tests/policy/good/NAME.yaml against
 * NAME.json, and the dump parsed back), the example policies, matching and access.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct qj_policy *, qj_policy_free);

static const char *source_dir(void)
{
	const char *d = getenv("QJ_SOURCE_DIR");

	return d ? d : ".";
}

static char *read_file(const char *path, size_t *ret_len)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0;
	FILE *m;

	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	assert_non_null(m);
	for (int c; (c = fgetc(f)) != EOF;)
		fputc(c, m);
	fclose(m);
	if (ret_len)
		*ret_len = len;
	return buf;
}

static char *dump(const struct qj_policy *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	assert_non_null(m);
	assert_int_equal(qj_policy_dump_json(p, m), 0);
	fclose(m);
	return buf;
}

static struct qj_policy *parse_ok(const char *text)
{
	struct qj_policy *p = NULL;
	struct qj_diags d = {};
	int r = qj_policy_parse("t.yaml", text, strlen(text), &d, &p);

	if (r < 0)
		qj_diags_print(&d, stderr);
	assert_int_equal(r, 0);
	assert_int_equal(d.n, 0);
	qj_diags_done(&d);
	return p;
}

/* Parses @text expecting failure; returns the printed diagnostics. */
static char *parse_bad(const char *name, const char *text, size_t len)
{
	struct qj_policy *sentinel = (struct qj_policy *)&sentinel, *p = sentinel;
	struct qj_diags d = {};
	char *buf = NULL;
	size_t blen = 0;
	FILE *m;

	assert_int_equal(qj_policy_parse(name, text, len, &d, &p), -EINVAL);
	assert_ptr_equal(p, sentinel); /* nothing applied */
	assert_true(d.n > 0 && d.n <= QJ_POLICY_MAX_DIAGS);
	m = open_memstream(&buf, &blen);
	assert_non_null(m);
	qj_diags_print(&d, m);
	fclose(m);
	qj_diags_done(&d);
	return buf;
}

/* ---- value syntax ----------------------------------------------------------------------- */

static void test_parse_duration_table(void **state)
{
	static const struct {
		const char *s;
		int r;
		uint64_t usec;
	} cases[] = {
		{ "250ms", 0, 250000 },
		{ "5s", 0, 5000000 },
		{ "2m", 0, 120000000 },
		{ "2min", 0, 120000000 },
		{ "1h", 0, 3600000000ULL },
		{ "10us", 0, 10 },
		{ "0", 0, 0 },
		{ "0s", 0, 0 },
		{ "1.5s", 0, 1500000 },
		{ "0.25ms", 0, 250 },
		{ "007s", 0, 7000000 },
		{ "5", -EINVAL, 0 },
		{ "", -EINVAL, 0 },
		{ "s", -EINVAL, 0 },
		{ "5 s", -EINVAL, 0 },
		{ " 5s", -EINVAL, 0 },
		{ "-1s", -EINVAL, 0 },
		{ "+1s", -EINVAL, 0 },
		{ "1d", -EINVAL, 0 },
		{ "1S", -EINVAL, 0 },
		{ "1.s", -EINVAL, 0 },
		{ ".5s", -EINVAL, 0 },
		{ "1.5us", -EINVAL, 0 },
		{ "1.0000000001s", -EINVAL, 0 },
		{ "5sec", -EINVAL, 0 },
		{ "18446744073709551615us", 0, UINT64_MAX },
		{ "18446744073709551616us", -ERANGE, 0 },
		{ "99999999999999999999h", -ERANGE, 0 },
		{ "5124095576h", 0, 5124095576ULL * 3600000000ULL },
		{ "5124095577h", -ERANGE, 0 },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint64_t v = 12345;
		int r = qj_parse_duration(cases[i].s, &v);

		if (r != cases[i].r)
			fail_msg("'%s': got %d, want %d", cases[i].s, r, cases[i].r);
		if (r == 0 && v != cases[i].usec)
			fail_msg("'%s': got %" PRIu64 ", want %" PRIu64, cases[i].s, v,
				 cases[i].usec);
		if (r < 0)
			assert_int_equal(v, 12345); /* untouched */
	}
	assert_int_equal(qj_parse_duration(NULL, &(uint64_t){ 0 }), -EINVAL);
}

static void test_parse_size_table(void **state)
{
	static const struct {
		const char *s;
		int r;
		uint64_t bytes;
	} cases[] = {
		{ "0", 0, 0 },
		{ "4096", 0, 4096 },
		{ "64K", 0, 65536 },
		{ "64k", 0, 65536 },
		{ "10M", 0, 10485760 },
		{ "1G", 0, 1073741824 },
		{ "10MB", -EINVAL, 0 },
		{ "10m", -EINVAL, 0 },
		{ "1.5M", -EINVAL, 0 },
		{ "M", -EINVAL, 0 },
		{ "", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "17179869184G", -ERANGE, 0 },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint64_t v = 0;
		int r = qj_parse_size(cases[i].s, &v);

		if (r != cases[i].r)
			fail_msg("'%s': got %d, want %d", cases[i].s, r, cases[i].r);
		if (r == 0)
			assert_int_equal(v, cases[i].bytes);
	}
}

static void test_strings_roundtrip(void **state)
{
	(void)state;
	for (int i = 0; i < _QJ_BACKEND_MAX; i++)
		assert_int_equal(qj_backend_from_string(qj_backend_to_string(i)), i);
	for (int i = 0; i < _QJ_ACTION_MAX; i++)
		assert_int_equal(qj_action_from_string(qj_action_to_string(i)), i);
	for (int i = 0; i < _QJ_TRUST_MAX; i++)
		assert_int_equal(qj_trust_from_string(qj_trust_to_string(i)), i);
	assert_int_equal(qj_action_from_string("XCPU"), QJ_ACTION_SIGXCPU);
	assert_int_equal(qj_action_from_string("sigkill"), QJ_ACTION_SIGKILL);
	assert_int_equal(qj_action_from_string("FREEZE"), QJ_ACTION_FREEZE);
	assert_int_equal(qj_action_from_string("SIGHUP"), _QJ_ACTION_INVALID);
	assert_int_equal(qj_action_from_string("SIG"), _QJ_ACTION_INVALID);
	assert_int_equal(qj_backend_from_string("Qos"), _QJ_BACKEND_INVALID);
	assert_int_equal(qj_backend_from_string(NULL), _QJ_BACKEND_INVALID);
	assert_null(qj_backend_to_string(_QJ_BACKEND_MAX));
	assert_null(qj_action_to_string(_QJ_ACTION_INVALID));
}

/* The rung table: one entry per action, its spellings found again, its defaults used. */
static void test_action_table(void **state)
{
	struct qj_policy *def = NULL;

	(void)state;
	for (int i = 0; i < _QJ_ACTION_MAX; i++) {
		const struct qj_action_info *a = qj_action_info(i);

		assert_non_null(a);
		assert_string_equal(a->name, qj_action_to_string(i));
		assert_non_null(a->default_rung_name);
		assert_true(a->default_grace_usec > 0);
		if (a->old_log_name)
			assert_int_equal(qj_action_from_string(a->old_log_name), i);
		/* A rung that strikes has a group form; a notification has neither. */
		if (a->strike)
			assert_true(a->group);
		if (a->needs_handler) {
			assert_false(a->strike);
			assert_false(a->group);
		}
	}
	assert_null(qj_action_info(_QJ_ACTION_MAX));
	assert_null(qj_action_info(_QJ_ACTION_INVALID));
	assert_string_equal(qj_action_to_string(QJ_ACTION_SIGSTOP), "SIGSTOP");
	assert_string_equal(qj_action_to_string(QJ_ACTION_FREEZE), "freeze");
	assert_true(qj_action_info(QJ_ACTION_SIGXCPU)->needs_handler);
	assert_int_equal(qj_action_info(QJ_ACTION_SIGTERM)->confirm_usec, 0);
	assert_true(qj_action_info(QJ_ACTION_SIGKILL)->confirm_usec > 0);
	/* Each signal rung's own signal, pending, is the wait the engine excuses. */
	assert_true(qj_action_info(QJ_ACTION_SIGXCPU)->pending_mask & (1ULL << (SIGXCPU - 1)));
	assert_true(qj_action_info(QJ_ACTION_SIGSTOP)->pending_mask & (1ULL << (SIGSTOP - 1)));
	assert_true(qj_action_info(QJ_ACTION_SIGTERM)->pending_mask & (1ULL << (SIGTERM - 1)));
	assert_true(qj_action_info(QJ_ACTION_SIGKILL)->pending_mask & (1ULL << (SIGKILL - 1)));
	assert_int_equal(qj_action_info(QJ_ACTION_FREEZE)->pending_mask, 0);
	assert_int_equal(qj_policy_new_default(&def), 0);
	for (size_t i = 0; i < def->n_rungs; i++) {
		const struct qj_action_info *a = qj_action_info(def->rungs[i].action);

		assert_string_equal(def->rungs[i].name, a->default_rung_name);
		assert_int_equal(def->rungs[i].grace_usec, a->default_grace_usec);
	}
	qj_policy_free(def);
}

/* ---- error classes: tests/policy/bad/ --------------------------------------------------- */

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void test_bad_policies_exact_diagnostics(void **state)
{
	_cleanup_free_ char *dir = NULL;
	struct dirent **names;
	int n, checked = 0;

	(void)state;
	assert_true(asprintf(&dir, "%s/tests/policy/bad", source_dir()) > 0);
	n = scandir(dir, &names, NULL, alphasort);
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *path = NULL, *exp_path = NULL, *rel = NULL, *text = NULL,
				    *expected = NULL, *got = NULL;
		size_t len;

		if (!has_suffix(names[i]->d_name, ".yaml")) {
			free(names[i]);
			continue;
		}
		assert_true(asprintf(&path, "%s/%s", dir, names[i]->d_name) > 0);
		assert_true(asprintf(&rel, "tests/policy/bad/%s", names[i]->d_name) > 0);
		assert_true(asprintf(&exp_path, "%.*s.expected", (int)(strlen(path) - 5), path) >
			    0);
		text = read_file(path, &len);
		assert_non_null(text);
		expected = read_file(exp_path, NULL);
		if (!expected)
			fail_msg("%s: missing %s", rel, exp_path);
		got = parse_bad(rel, text, len);
		if (strcmp(got, expected) != 0)
			fail_msg("%s: diagnostics differ\n--- expected\n%s--- got\n%s", rel,
				 expected, got);
		checked++;
		free(names[i]);
	}
	free(names);
	assert_true(checked >= 20);
}

/* The file the demo shows must exist and fail with a wrong-type message. */
static void test_bad_wrong_type_present(void **state)
{
	_cleanup_free_ char *path = NULL, *expected = NULL;

	(void)state;
	assert_true(asprintf(&path, "%s/tests/policy/bad/wrong-type.expected", source_dir()) > 0);
	expected = read_file(path, NULL);
	assert_non_null(expected);
	assert_non_null(strstr(expected, "apps[2].match.exe: expected a string, got a list"));
}

static void test_oversize_buffer(void **state)
{
	_cleanup_free_ char *text = malloc(QJ_POLICY_MAX_BYTES + 1), *got = NULL;

	(void)state;
	assert_non_null(text);
	memset(text, '#', QJ_POLICY_MAX_BYTES + 1);
	memcpy(text, "version: 1\n", 11);
	got = parse_bad("big.yaml", text, QJ_POLICY_MAX_BYTES + 1);
	assert_string_equal(
		got,
		"big.yaml:1:1: the file is larger than 1 MiB (1048576 bytes), the limit for a policy\n");
}

static void test_exactly_max_bytes_is_fine(void **state)
{
	_cleanup_free_ char *text = malloc(QJ_POLICY_MAX_BYTES);
	_cleanup_(qj_policy_freep) struct qj_policy *p = NULL;
	struct qj_diags d = {};

	(void)state;
	assert_non_null(text);
	memset(text, '#', QJ_POLICY_MAX_BYTES);
	memcpy(text, "version: 1\n", 11);
	assert_int_equal(qj_policy_parse("max.yaml", text, QJ_POLICY_MAX_BYTES, &d, &p), 0);
	assert_non_null(p);
	qj_diags_done(&d);
}

static void test_diag_cap(void **state)
{
	_cleanup_free_ char *text = NULL, *got = NULL;
	size_t len = 0, lines = 0;
	FILE *m = open_memstream(&text, &len);

	(void)state;
	fprintf(m, "version: 1\n");
	for (int i = 0; i < 500; i++)
		fprintf(m, "k%d: 1\n", i);
	fclose(m);
	got = parse_bad("cap.yaml", text, len);
	for (const char *s = got; *s; s++)
		lines += *s == '\n';
	assert_int_equal(lines, QJ_POLICY_MAX_DIAGS);
	assert_non_null(strstr(got, "cap.yaml:101:1: too many errors; 401 more not shown\n"));
}

static void test_load_errors(void **state)
{
	struct qj_policy *p = NULL;
	struct qj_diags d = {};

	(void)state;
	assert_int_equal(qj_policy_load("/nonexistent/qosjail.yaml", &d, &p), -ENOENT);
	assert_int_equal(qj_policy_load("/", &d, &p), -EISDIR);
	assert_null(p);
	assert_int_equal(d.n, 0);
	qj_diags_done(&d);
}

static void test_empty_input(void **state)
{
	_cleanup_free_ char *got = NULL;

	(void)state;
	got = parse_bad("e.yaml", NULL, 0);
	assert_string_equal(
		got,
		"e.yaml:1:1: empty policy; a policy is a mapping that starts with 'version: 1'\n");
}

/* ---- good policies ---------------------------------------------------------------------- */

static void check_good(const char *path, const char *json_path)
{
	_cleanup_(qj_policy_freep) struct qj_policy *p = NULL, *again = NULL;
	_cleanup_free_ char *text = NULL, *expected = NULL, *got = NULL, *got2 = NULL;
	struct qj_diags d = {};
	size_t len;

	text = read_file(path, &len);
	assert_non_null(text);
	if (qj_policy_parse(path, text, len, &d, &p) < 0) {
		qj_diags_print(&d, stderr);
		fail_msg("%s: does not parse", path);
	}
	qj_diags_done(&d);
	got = dump(p);
	if (json_path) {
		expected = read_file(json_path, NULL);
		if (!expected)
			fail_msg("%s: missing", json_path);
		if (strcmp(got, expected) != 0)
			fail_msg("%s: dump differs\n--- expected\n%s--- got\n%s", path, expected,
				 got);
	}
	/* The dump is itself a policy (JSON is YAML): parsing it back changes nothing. */
	if (qj_policy_parse("dump.json", got, strlen(got), &d, &again) < 0) {
		qj_diags_print(&d, stderr);
		fail_msg("%s: dump does not parse back", path);
	}
	qj_diags_done(&d);
	got2 = dump(again);
	assert_string_equal(got, got2);
}

static void test_good_policies_dump_roundtrip(void **state)
{
	_cleanup_free_ char *dir = NULL;
	struct dirent **names;
	int n, checked = 0;

	(void)state;
	assert_true(asprintf(&dir, "%s/tests/policy/good", source_dir()) > 0);
	n = scandir(dir, &names, NULL, alphasort);
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *path = NULL, *json = NULL;

		if (has_suffix(names[i]->d_name, ".yaml")) {
			assert_true(asprintf(&path, "%s/%s", dir, names[i]->d_name) > 0);
			assert_true(asprintf(&json, "%.*s.json", (int)(strlen(path) - 5), path) >
				    0);
			check_good(path, json);
			checked++;
		}
		free(names[i]);
	}
	free(names);
	assert_true(checked >= 4);
}

static void test_example_policies_valid(void **state)
{
	static const char *const files[] = { "demo", "phone", "laptop", "kiosk" };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		_cleanup_free_ char *path = NULL;

		assert_true(asprintf(&path, "%s/policies/%s.yaml", source_dir(), files[i]) > 0);
		check_good(path, NULL);
	}
}

static void test_default_is_minimal(void **state)
{
	_cleanup_(qj_policy_freep) struct qj_policy *def = NULL, *min = NULL;
	_cleanup_free_ char *a = NULL, *b = NULL;

	(void)state;
	assert_int_equal(qj_policy_new_default(&def), 0);
	min = parse_ok("version: 1\n");
	a = dump(def);
	b = dump(min);
	assert_string_equal(a, b);
	assert_int_equal(def->n_rungs, 4);
	assert_int_equal(def->rungs[0].action, QJ_ACTION_SIGXCPU);
	assert_int_equal(def->rungs[3].grace_usec, 1 * USEC_PER_SEC);
	assert_int_equal(def->strike_rung, 1);
	assert_true(def->busy_threshold > 0.049 && def->busy_threshold < 0.051);
	assert_int_equal(def->timer_slack_nsec, 50000000);
	assert_int_equal(def->log_max_bytes, 10 << 20);
}

static void test_parse_fields(void **state)
{
	_cleanup_(qj_policy_freep) struct qj_policy *p =
		parse_ok("version: 1\n"
			 "suspend: { backend: dry-run, idle_delay: 1.5s }\n"
			 "jail: { busy_threshold: 12.5%, timer_slack: 2ms }\n"
			 "escalation:\n"
			 "  ladder: [ { action: STOP }, { name: ice, action: freeze, grace: 0 } ]\n"
			 "apps: [ { name: t, trust: trusted }, { name: j } ]\n"
			 "log: { max_size: 64K }\n");

	(void)state;
	assert_string_equal(p->source, "t.yaml");
	assert_int_equal(p->backend, QJ_BACKEND_DRY_RUN);
	assert_int_equal(p->idle_delay_usec, 1500000);
	assert_true(p->busy_threshold > 0.1249 && p->busy_threshold < 0.1251);
	assert_int_equal(p->timer_slack_nsec, 2000000);
	assert_int_equal(p->n_rungs, 2);
	assert_string_equal(p->rungs[0].name, "stop");
	assert_int_equal(p->rungs[0].grace_usec, 2 * USEC_PER_SEC); /* action default */
	assert_string_equal(p->rungs[1].name, "ice");
	assert_int_equal(p->rungs[1].grace_usec, 0);
	assert_int_equal(p->strike_rung, 0); /* "stop" exists */
	assert_int_equal(p->apps[0].hold_max, 64); /* trusted default */
	assert_int_equal(p->apps[1].hold_max, 0); /* jailed default */
	assert_int_equal(p->apps[1].max_rung, 1);
	assert_false(p->apps[1].notify); /* the notify rung needs consent */
	assert_int_equal(p->log_max_bytes, 65536);
}

/* The quiesce bound: 2 x (window + sum over rungs of grace + window), and --dump says it. */
static void test_quiesce_bound(void **state)
{
	_cleanup_(qj_policy_freep) struct qj_policy *p =
		parse_ok("version: 1\n"
			 "jail: { sample_window: 500ms }\n"
			 "escalation:\n"
			 "  ladder: [ { action: STOP, grace: 1s }, { action: KILL, grace: 2s } ]\n"
			 "  quiesce_bound: 1h\n" /* derived: accepted and ignored */
			 "apps: [ { name: j, notify: true } ]\n");
	_cleanup_free_ char *text = NULL;

	(void)state;
	assert_int_equal(qj_policy_quiesce_bound_usec(p), 2 * (500 + 1500 + 2500) * USEC_PER_MSEC);
	assert_true(p->apps[0].notify);
	text = dump(p);
	assert_non_null(strstr(text, "\"quiesce_bound\": \"9s\""));
}

static void test_strike_rung_default_without_stop(void **state)
{
	_cleanup_(qj_policy_freep) struct qj_policy *p =
		parse_ok("version: 1\nescalation:\n  ladder: [ {action: TERM}, {action: KILL} ]\n");
	_cleanup_(qj_policy_freep) struct qj_policy *q =
		parse_ok("version: 1\nescalation:\n  ladder: [ {action: KILL} ]\n");

	(void)state;
	assert_int_equal(p->strike_rung, 1);
	assert_int_equal(q->strike_rung, 0);
}

/* ---- matching and access ---------------------------------------------------------------- */

static void test_match(void **state)
{
	_cleanup_(qj_policy_freep) struct qj_policy *p =
		parse_ok("version: 1\n"
			 "apps:\n"
			 "  - name: placed\n"
			 "  - name: tabs\n"
			 "    match: { exe: '/usr/lib/firefox/*', cmdline: '*-contentproc*' }\n"
			 "  - name: firefox\n"
			 "    match: { exe: '/usr/lib/firefox/*' }\n"
			 "  - name: root-shell\n"
			 "    match: { exe: '*/bash', uid: 0 }\n"
			 "  - name: user\n"
			 "    match: { uid: 1000 }\n");
	const struct qj_app *a;

	(void)state;
	a = qj_policy_match(p, "/usr/lib/firefox/firefox-bin", "firefox -contentproc 12", 1000);
	assert_non_null(a);
	assert_string_equal(a->name, "tabs");
	a = qj_policy_match(p, "/usr/lib/firefox/firefox-bin", "firefox", 1000);
	assert_string_equal(a->name, "firefox");
	/* fnmatch without FNM_PATHNAME: '*' crosses '/' */
	a = qj_policy_match(p, "/usr/lib/firefox/sub/dir/plugin", "x", 5);
	assert_string_equal(a->name, "firefox");
	a = qj_policy_match(p, "/bin/bash", "bash", 0);
	assert_string_equal(a->name, "root-shell");
	a = qj_policy_match(p, "/bin/bash", "bash", 1000);
	assert_string_equal(a->name, "user");
	assert_null(qj_policy_match(p, "/bin/bash", "bash", 1001));
	/* no exe known (kernel thread, exited): exe rules cannot match */
	assert_null(qj_policy_match(p, NULL, NULL, 1001));
	a = qj_policy_match(p, NULL, NULL, 1000);
	assert_string_equal(a->name, "user");
	/* an app without rules is only placed by name */
	assert_string_equal(qj_policy_find_app(p, "placed")->name, "placed");
	assert_null(qj_policy_find_app(p, "nope"));
	assert_null(qj_policy_find_app(p, NULL));
}

static int fake_lookup(const char *group, gid_t *ret_gid, void *userdata)
{
	int *calls = userdata;

	(*calls)++;
	if (strcmp(group, "adm") == 0) {
		*ret_gid = 4;
		return 0;
	}
	if (strcmp(group, "power") == 0) {
		*ret_gid = 77;
		return 0;
	}
	return -ENOENT;
}

static void test_principals(void **state)
{
	_cleanup_(qj_policy_freep) struct qj_policy *p =
		parse_ok("version: 1\n"
			 "access:\n"
			 "  place: { uids: [0, 1000] }\n"
			 "  suspend: { groups: [power, nosuchgroup] }\n"
			 "  reload: {}\n");
	const gid_t user_groups[] = { 100, 77 };
	int calls = 0;

	(void)state;
	assert_true(qj_principals_allow(&p->access_place, 1000, NULL, 0));
	assert_false(qj_principals_allow(&p->access_place, 1001, NULL, 0));
	assert_false(qj_principals_allow(&p->access_reload, 0, NULL, 0)); /* {} = nobody */
	assert_true(qj_principals_allow(&p->access_hold, 12345, NULL, 0)); /* "*" default */
	/* groups count only once resolved */
	assert_false(qj_principals_allow(&p->access_suspend, 1000, user_groups, 2));
	assert_int_equal(qj_policy_resolve_groups(p, fake_lookup, &calls), 1);
	assert_int_equal(calls, 3); /* adm (logs default), power, nosuchgroup */
	assert_true(qj_principals_allow(&p->access_suspend, 1000, user_groups, 2));
	assert_false(qj_principals_allow(&p->access_suspend, 1000, user_groups, 1));
	assert_true(qj_principals_allow(&p->access_logs, 1000, (const gid_t[]){ 4 }, 1));
}

/* ---- the man page's example is a tested file -------------------------------------------- */

static void test_manpage_example(void **state)
{
	_cleanup_free_ char *man_path = NULL, *man = NULL, *file_path = NULL, *file = NULL;
	const char *begin, *end;

	(void)state;
	assert_true(asprintf(&man_path, "%s/docs/qosjail.yaml.5.scd", source_dir()) > 0);
	assert_true(asprintf(&file_path, "%s/tests/policy/good/example.yaml", source_dir()) > 0);
	man = read_file(man_path, NULL);
	file = read_file(file_path, NULL);
	assert_non_null(man);
	assert_non_null(file);
	begin = strstr(man, "; example: tests/policy/good/example.yaml\n```\n");
	assert_non_null(begin);
	begin = strchr(strchr(begin, '\n') + 1, '\n') + 1;
	end = strstr(begin, "```\n");
	assert_non_null(end);
	if (strlen(file) != (size_t)(end - begin) || memcmp(file, begin, strlen(file)) != 0)
		fail_msg(
			"docs/qosjail.yaml.5.scd EXAMPLE differs from tests/policy/good/example.yaml");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_duration_table),
		cmocka_unit_test(test_parse_size_table),
		cmocka_unit_test(test_strings_roundtrip),
		cmocka_unit_test(test_action_table),
		cmocka_unit_test(test_bad_policies_exact_diagnostics),
		cmocka_unit_test(test_bad_wrong_type_present),
		cmocka_unit_test(test_oversize_buffer),
		cmocka_unit_test(test_exactly_max_bytes_is_fine),
		cmocka_unit_test(test_diag_cap),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_empty_input),
		cmocka_unit_test(test_good_policies_dump_roundtrip),
		cmocka_unit_test(test_example_policies_valid),
		cmocka_unit_test(test_default_is_minimal),
		cmocka_unit_test(test_parse_fields),
		cmocka_unit_test(test_quiesce_bound),
		cmocka_unit_test(test_strike_rung_default_without_stop),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_principals),
		cmocka_unit_test(test_manpage_example),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
