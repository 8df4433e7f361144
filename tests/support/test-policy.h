/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Test policies: parsed from YAML like a real one (a dry-run backend, a 300 ms window,
 * the default ladder with rungs named after their actions), then apps and rungs appended
 * by hand.  Free them with qj_policy_free().
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

#endif
