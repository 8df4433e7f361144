// SPDX-License-Identifier: LGPL-2.1-or-later
/* The rules in front of each IPC op (pure, daemon/ops.c): an unset rule refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ops.h"
#include "policy.h"

static const uid_t listed_uids[] = { 1000 };
static const struct qj_op_access listed = { .who = QJ_OP_WHO_POLICY,
					    .principals = offsetof(struct qj_policy, access_place),
					    .name = "place" };
static const struct qj_op_access anyone = { .who = QJ_OP_WHO_ANYONE };

static struct qj_policy *policy(void)
{
	static struct qj_policy p;

	p.access_place.uids = (uid_t *)listed_uids;
	p.access_place.n_uids = 1;
	return &p;
}

static int check(const struct qj_op_rule *rule, uid_t uid, int jailed, bool hello, bool flagged)
{
	const struct qj_op_peer peer = { .uid = uid, .hello = hello, .jailed = jailed };
	const char *why = NULL, *list = NULL;
	int r = qj_op_rule_check(rule, policy(), &peer, flagged, &why, &list);

	assert_non_null(why);
	assert_non_null(list);
	return r;
}

/* A row nobody wrote is all zeros: refused to everyone, root too, hello or not. */
static void test_op_rule_unset_refuses(void **state)
{
	const struct qj_op_rule unset = {};

	(void)state;
	assert_int_equal(check(&unset, 0, 0, true, false), -EPERM);
	assert_int_equal(check(&unset, 1000, 0, true, false), -EPERM);
	assert_int_equal(check(&unset, 0, 0, false, false), -EPERM);
	/* An access rule without a rule for jailed callers still refuses. */
	assert_int_equal(check(&(struct qj_op_rule){ .access = anyone }, 0, 0, true, false),
			 -EPERM);
	/* A privileged form nobody wrote a rule for is refused. */
	assert_int_equal(
		check(&(struct qj_op_rule){ .access = anyone, .jailed = QJ_OP_JAILED_AS_ANYONE }, 0,
		      0, true, true),
		-EPERM);
}

static void test_op_rule_hello_first(void **state)
{
	const struct qj_op_rule r = { .access = anyone,
				      .hello = true,
				      .jailed = QJ_OP_JAILED_AS_ANYONE };

	(void)state;
	assert_int_equal(check(&r, 0, 0, false, false), -EPROTO);
	assert_int_equal(check(&r, 0, 0, true, false), 0);
}

static void test_op_rule_access_list(void **state)
{
	const struct qj_op_rule r = { .access = listed,
				      .hello = true,
				      .jailed = QJ_OP_JAILED_AS_ANYONE };

	(void)state;
	assert_int_equal(check(&r, 1000, 0, true, false), 0);
	assert_int_equal(check(&r, 1001, 0, true, false), -EPERM);
	assert_int_equal(check(&r, 0, 0, true, false), -EPERM); /* root only when listed */
}

/* Unknown membership is jailed; root passes only where the row says so. */
static void test_op_rule_jailed(void **state)
{
	struct qj_op_rule r = { .access = anyone, .hello = true };

	(void)state;
	r.jailed = QJ_OP_JAILED_REFUSED;
	assert_int_equal(check(&r, 1000, 0, true, false), 0);
	assert_int_equal(check(&r, 1000, 1, true, false), -EPERM);
	assert_int_equal(check(&r, 1000, -ESRCH, true, false), -EPERM);
	assert_int_equal(check(&r, 0, -ESRCH, true, false), -EPERM);
	assert_int_equal(check(&r, 0, 1, true, false), -EPERM);
	r.jailed = QJ_OP_JAILED_REFUSED_BUT_ROOT;
	assert_int_equal(check(&r, 0, -ESRCH, true, false), 0);
	assert_int_equal(check(&r, 0, 1, true, false), -EPERM);
	assert_int_equal(check(&r, 1000, -ESRCH, true, false), -EPERM);
	r.jailed = QJ_OP_JAILED_ONLY;
	assert_int_equal(check(&r, 1000, 1, true, false), 0);
	assert_int_equal(check(&r, 1000, 0, true, false), -EPERM);
	assert_int_equal(check(&r, 1000, -ESRCH, true, false), -EPERM);
	assert_true(qj_op_rule_needs_jail(&r, false));
	r.jailed = QJ_OP_JAILED_HANDLER;
	assert_int_equal(check(&r, 1000, 1, true, false), 0);
	assert_false(qj_op_rule_needs_jail(&r, false));
}

/* The privileged form: both the op's rule and the form's. */
static void test_op_rule_flagged(void **state)
{
	const struct qj_op_rule r = { .access = anyone,
				      .hello = true,
				      .jailed = QJ_OP_JAILED_AS_ANYONE,
				      .flagged_access = listed,
				      .flagged_jailed = QJ_OP_JAILED_REFUSED };

	(void)state;
	assert_int_equal(check(&r, 1001, 1, true, false), 0);
	assert_int_equal(check(&r, 1001, 0, true, true), -EPERM);
	assert_int_equal(check(&r, 1000, 1, true, true), -EPERM);
	assert_int_equal(check(&r, 1000, 0, true, true), 0);
	assert_true(qj_op_rule_needs_jail(&r, true));
	assert_false(qj_op_rule_needs_jail(&r, false));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_op_rule_unset_refuses),
		cmocka_unit_test(test_op_rule_hello_first),
		cmocka_unit_test(test_op_rule_access_list),
		cmocka_unit_test(test_op_rule_jailed),
		cmocka_unit_test(test_op_rule_flagged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
