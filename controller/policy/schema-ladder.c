// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The escalation: section of the policy schema: the ladder's rungs (their action, grace
 * and name), the strike rung, and resolving a rung's name for the sections that refer to
 * one (apps: start_rung, max_rung).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy-internal.h"
#include "policy.h"
#include "util.h"

/* A rung while it is parsed: which keys were given decides the defaults. */
struct rung_parse {
	struct qj_rung r;
	bool ok;
};

static void walk_action(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct rung_parse *rp = obj;
	char q[QUOTE_MAX + 4], sig[32], names[128];
	const char *s = qj_yaml_want_scalar(c, n, "a signal name");
	enum qj_action a;

	if (!s) {
		rp->ok = false;
		return;
	}
	a = qj_action_from_string(s);
	if (a >= 0) {
		rp->r.action = a;
		return;
	}
	rp->ok = false;
	/* A real signal that is not a rung deserves its own message. */
	for (int i = 1; i < NSIG; i++) {
		const char *abbrev = sigabbrev_np(i);

		if (!abbrev)
			continue;
		snprintf(sig, sizeof(sig), "SIG%s", abbrev);
		if (strcasecmp(s, abbrev) == 0 || strcasecmp(s, sig) == 0) {
			qj_action_list(names, sizeof(names), ", ");
			diag(c, n, "%s is not a supported rung action; supported: %s", sig, names);
			return;
		}
	}
	qj_action_list(names, sizeof(names), " or ");
	diag(c, n, "unknown action '%s'; expected %s", qj_yaml_printable(s, n->len, q), names);
}

static void walk_rung_name(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct rung_parse *rp = obj;
	char q[QUOTE_MAX + 4];
	const char *s = qj_yaml_want_scalar(c, n, "a rung name");

	if (!s) {
		rp->ok = false;
		return;
	}
	if (!qj_schema_name_is_valid(s, false)) {
		diag(c, n,
		     "invalid rung name '%s': use up to %d lowercase letters, digits, '-', '_' and '.'",
		     qj_yaml_printable(s, n->len, q), QJ_POLICY_NAME_MAX);
		rp->ok = false;
		return;
	}
	if (!qj_yaml_get_string(c, n, &rp->r.name))
		rp->ok = false;
}

static void walk_grace(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct rung_parse *rp = obj;

	if (!qj_yaml_get_duration(c, n, 0, USEC_PER_HOUR, &rp->r.grace_usec))
		rp->ok = false;
}

static void walk_ladder(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "action", .type = F_CUSTOM, .walk = walk_action, .required = true },
		{ .key = "grace", .type = F_CUSTOM, .walk = walk_grace },
		{ .key = "name", .type = F_CUSTOM, .walk = walk_rung_name },
	};
	struct qj_rung rungs[QJ_POLICY_MAX_RUNGS] = {};
	struct node *name_nodes[QJ_POLICY_MAX_RUNGS] = {};
	size_t n_rungs = 0;
	bool ok = true;

	c->ladder_ok = false;
	if (!qj_yaml_expect_kind(c, n, NODE_SEQ, "a list of rungs"))
		return;
	if (n->n_items == 0) {
		diag(c, n,
		     "empty ladder; give at least one rung, or remove ladder: to get the default");
		return;
	}
	for (size_t i = 0; i < n->n_items && !c->error; i++) {
		struct node *item = qj_yaml_deref(n->items[i]);
		struct rung_parse rp = { .ok = true };
		size_t mark = qj_yaml_path_push(c, "[%zu]", i);
		uint64_t present;

		if (i == QJ_POLICY_MAX_RUNGS) {
			diag(c, item, "too many rungs; a ladder has at most %d",
			     QJ_POLICY_MAX_RUNGS);
			qj_yaml_path_pop(c, mark);
			ok = false;
			break;
		}
		present = qj_schema_walk_map(c, item, fields, ARRAY_SIZE(fields), &rp);
		if (!(present & 1))
			rp.ok = false;
		if (rp.ok) {
			if (!(present & 2))
				rp.r.grace_usec = qj_action_info(rp.r.action)->default_grace_usec;
			if (!rp.r.name) {
				rp.r.name = strdup(qj_action_info(rp.r.action)->default_rung_name);
				if (!rp.r.name)
					c->error = -ENOMEM;
			}
			name_nodes[n_rungs] = qj_yaml_map_get(item, "name") ?: item;
			for (size_t k = 0; k < n_rungs && rp.r.name; k++)
				if (strcmp(rungs[k].name, rp.r.name) == 0) {
					size_t m2 = qj_yaml_path_push(c, ".name");

					diag(c, name_nodes[n_rungs],
					     "duplicate rung name '%s' (first at %u:%u); give one of them another name:",
					     rp.r.name, name_nodes[k]->line + 1,
					     name_nodes[k]->col + 1);
					qj_yaml_path_pop(c, m2);
					rp.ok = false;
					break;
				}
		}
		if (rp.ok)
			rungs[n_rungs++] = rp.r;
		else {
			free(rp.r.name);
			ok = false;
		}
		qj_yaml_path_pop(c, mark);
	}
	if (ok && !c->error) {
		for (size_t i = 0; i < c->p->n_rungs; i++)
			free(c->p->rungs[i].name);
		memcpy(c->p->rungs, rungs, sizeof(rungs));
		c->p->n_rungs = n_rungs;
		c->ladder_ok = true;
	} else {
		for (size_t i = 0; i < n_rungs; i++)
			free(rungs[i].name);
	}
}

static int rung_index(const struct qj_policy *p, const char *name)
{
	for (size_t i = 0; i < p->n_rungs; i++)
		if (strcmp(p->rungs[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

/* Resolves a rung name; returns the index, or -EINVAL after a diagnostic (or when unknowable). */
int qj_schema_get_rung(struct ctx *c, struct node *n)
{
	char q[QUOTE_MAX + 4], list[QJ_POLICY_MAX_RUNGS * (QJ_POLICY_NAME_MAX + 2)];
	const char *s = qj_yaml_want_scalar(c, n, "a rung name");
	size_t o = 0;
	int i;

	if (!s || !c->ladder_ok)
		return -EINVAL; /* a broken ladder was reported already */
	i = rung_index(c->p, s);
	if (i >= 0)
		return i;
	for (size_t k = 0; k < c->p->n_rungs; k++)
		o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", k ? ", " : "",
				      c->p->rungs[k].name);
	diag(c, n, "unknown rung '%s'; the ladder has: %s", qj_yaml_printable(s, n->len, q), list);
	return -EINVAL;
}

static void walk_strike_rung(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	int i = qj_schema_get_rung(c, n);

	if (i >= 0)
		c->p->strike_rung = i;
}

/* quiesce_bound is derived (--dump prints it); accepted back as a duration and not used. */
static void walk_quiesce_bound(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	uint64_t ignored;

	(void)obj;
	(void)f;
	(void)qj_yaml_get_duration(c, n, 0, UINT64_MAX, &ignored);
}

void qj_schema_walk_escalation(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "ladder", .type = F_CUSTOM, .walk = walk_ladder },
		{ .key = "max_strikes",
		  .type = F_UNSIGNED,
		  .offset = offsetof(struct qj_policy, max_strikes),
		  .min = 0,
		  .max = 1000 },
		{ .key = "strike_rung", .type = F_CUSTOM, .walk = walk_strike_rung },
		{ .key = "quiesce_bound", .type = F_CUSTOM, .walk = walk_quiesce_bound },
	};
	uint64_t present = qj_schema_walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
	int i;

	if ((present & 1) && !(present & 4) && c->ladder_ok) {
		/* Default strike rung: "stop" when the ladder has one, else its second rung. */
		i = rung_index(c->p, "stop");
		if (i < 0)
			i = c->p->n_rungs > 1 ? 1 : 0;
		c->p->strike_rung = i;
	}
}
