/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tests build struct qj_policy by hand:
 * defaults like the built-in policy, apps appended one by one.
 */
#ifndef QJ_TEST_POLICY_H
#define QJ_TEST_POLICY_H

#include "policy.h"

/* Default ladder sigxcpu, sigstop, sigterm, sigkill, each with @grace_usec. */
struct qj_policy *qj_test_policy_new(uint64_t grace_usec);
/* Appends a jailed app with no match rules (start rung 0, max rung the last). */
struct qj_app *qj_test_policy_add_app(struct qj_policy *p, const char *name);
/* Appends a rung to the ladder. */
void qj_test_policy_add_rung(struct qj_policy *p, enum qj_action a, uint64_t grace_usec);
/* Replaces the ladder with @n rungs of @actions, each with @grace_usec. */
void qj_test_policy_set_ladder(struct qj_policy *p, const enum qj_action *actions, size_t n,
			       uint64_t grace_usec);
void qj_test_policy_free(struct qj_policy *p);

#endif
