/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The rules in front of each IPC op, as data: who may send it (an access list of the
 * policy, or anyone), whether the connection must have said hello, and what a jailed
 * caller gets.  requests.c keeps one table of them beside the handlers, indexed by the
 * protocol's op (common/proto.h), and checks every request against its row here, in one
 * place, before any handler runs.  A row left out is all zeros: its access rule is unset,
 * and an unset rule refuses (like an sd-bus vtable without SD_BUS_VTABLE_UNPRIVILEGED).
 * Pure: the decision reads only what it is given.  Private to controller/daemon/.
 */
#ifndef QJ_OPS_H
#define QJ_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "policy.h"

enum qj_op_who {
	QJ_OP_WHO_UNSET = 0, /* no rule written: refused */
	QJ_OP_WHO_ANYONE, /* every peer that connected */
	QJ_OP_WHO_POLICY, /* those the policy's access.NAME lists */
};

enum qj_op_jailed {
	QJ_OP_JAILED_UNSET = 0, /* no rule written: refused */
	QJ_OP_JAILED_AS_ANYONE, /* a jailed caller is answered as anyone */
	QJ_OP_JAILED_REFUSED, /* EPERM to jailed callers and to those that cannot be told,
				 e.g. a delay hold: a jailed app never postpones a suspend */
	QJ_OP_JAILED_REFUSED_BUT_ROOT, /* the same, but root that cannot be told passes,
					  e.g. place: a jailed app never moves processes */
	QJ_OP_JAILED_ONLY, /* only a caller known to be jailed, e.g. notify */
	QJ_OP_JAILED_HANDLER, /* let through; the handler decides (hold: deferred while the
				 jail is quiesced, the app's own quota) */
};

/**
 * struct qj_op_access - Who may send an op.
 * @who: anyone, or a policy list.
 * @principals: offsetof(struct qj_policy, the list) when @who is QJ_OP_WHO_POLICY.
 * @name: the list's key under access: ("hold", "place"...), for refusals.
 */
struct qj_op_access {
	enum qj_op_who who;
	size_t principals;
	const char *name;
};

/**
 * struct qj_op_rule - The checks in front of one op.
 * @access: who may send it.
 * @hello: the connection must have said hello first.
 * @jailed: what a jailed caller (or one whose membership is unknown) gets.
 * @flagged_access: for an op with a privileged form (subscribe with "delay"), who may
 *	send that form, besides @access.
 * @flagged_jailed: what a jailed caller gets for that form.
 */
struct qj_op_rule {
	struct qj_op_access access;
	bool hello;
	enum qj_op_jailed jailed;
	struct qj_op_access flagged_access;
	enum qj_op_jailed flagged_jailed;
};

/**
 * struct qj_op_peer - What the check knows of the caller.
 * @uid: SO_PEERCRED uid.
 * @groups: its groups, @n_groups of them.
 * @hello: the connection said hello.
 * @jailed: 1 jailed, 0 not, negative errno when it cannot be told.
 */
struct qj_op_peer {
	uid_t uid;
	const gid_t *groups;
	size_t n_groups;
	bool hello;
	int jailed;
};

/* Whether @rule needs the caller's jail membership (a /proc read): for @flagged or not. */
bool qj_op_rule_needs_jail(const struct qj_op_rule *rule, bool flagged);

/*
 * The one check: 0 when @peer may send the op (@flagged: its privileged form), else
 * -EPROTO (no hello yet) or -EPERM, with *ret_why (a static sentence, "%s" taking the
 * access list's name where it has one) and *ret_list (that name, or "").
 */
int qj_op_rule_check(const struct qj_op_rule *rule, const struct qj_policy *p,
		     const struct qj_op_peer *peer, bool flagged, const char **ret_why,
		     const char **ret_list);

#endif
