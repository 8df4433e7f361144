// SPDX-License-Identifier: LGPL-2.1-or-later
/* The checks in front of each IPC op (pure, see ops.h). */
#include <errno.h>

#include "ops.h"

bool qj_op_rule_needs_jail(const struct qj_op_rule *rule, bool flagged)
{
	enum qj_op_jailed j = flagged ? rule->flagged_jailed : rule->jailed;

	return j == QJ_OP_JAILED_REFUSED || j == QJ_OP_JAILED_REFUSED_BUT_ROOT ||
	       j == QJ_OP_JAILED_ONLY;
}

static int check_access(const struct qj_op_access *a, const struct qj_policy *p,
			const struct qj_op_peer *peer, const char **ret_why, const char **ret_list)
{
	const struct qj_principals *pr;

	switch (a->who) {
	case QJ_OP_WHO_ANYONE:
		return 0;
	case QJ_OP_WHO_POLICY:
		pr = (const struct qj_principals *)((const char *)p + a->principals);
		if (qj_principals_allow(pr, peer->uid, peer->groups, peer->n_groups))
			return 0;
		*ret_why = "not in access.%s of the policy";
		*ret_list = a->name ? a->name : "";
		return -EPERM;
	default:
		*ret_why = "the daemon has no access rule for this request";
		return -EPERM;
	}
}

static int check_jailed(enum qj_op_jailed j, const struct qj_op_peer *peer, const char **ret_why)
{
	switch (j) {
	case QJ_OP_JAILED_AS_ANYONE:
	case QJ_OP_JAILED_HANDLER:
		return 0;
	case QJ_OP_JAILED_REFUSED:
	case QJ_OP_JAILED_REFUSED_BUT_ROOT:
		/* Fail closed: an unknown peer is a jailed one (root passes where the row says). */
		if (peer->jailed == 0 ||
		    (peer->jailed < 0 && peer->uid == 0 && j == QJ_OP_JAILED_REFUSED_BUT_ROOT))
			return 0;
		*ret_why = peer->jailed > 0 ? "a jailed process may not send it" :
					      "cannot tell whether the caller is jailed";
		return -EPERM;
	case QJ_OP_JAILED_ONLY:
		if (peer->jailed > 0)
			return 0;
		*ret_why = peer->jailed == 0 ? "only a jailed process may send it" :
					       "cannot tell whether the caller is jailed";
		return -EPERM;
	default:
		*ret_why = "the daemon has no rule for jailed callers of this request";
		return -EPERM;
	}
}

int qj_op_rule_check(const struct qj_op_rule *rule, const struct qj_policy *p,
		     const struct qj_op_peer *peer, bool flagged, const char **ret_why,
		     const char **ret_list)
{
	int r;

	*ret_why = "";
	*ret_list = "";
	if (rule->hello && !peer->hello) {
		*ret_why = "the connection has not said hello";
		return -EPROTO;
	}
	r = check_access(&rule->access, p, peer, ret_why, ret_list);
	if (r == 0)
		r = check_jailed(rule->jailed, peer, ret_why);
	if (r == 0 && flagged)
		r = check_access(&rule->flagged_access, p, peer, ret_why, ret_list);
	if (r == 0 && flagged)
		r = check_jailed(rule->flagged_jailed, peer, ret_why);
	return r;
}
