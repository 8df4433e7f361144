// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The access: section of the policy schema: who may make which request (uids and group
 * names, or "*"), and which uids a launcher may place its children as.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy-internal.h"
#include "policy.h"
#include "util.h"

static void walk_uids(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct qj_principals *pr = obj;

	if (!qj_yaml_expect_kind(c, n, NODE_SEQ, "a list of user ids"))
		return;
	free(pr->uids);
	pr->n_uids = 0;
	pr->uids = calloc(n->n_items ? n->n_items : 1, sizeof(*pr->uids));
	if (!pr->uids) {
		c->error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n->n_items; i++) {
		size_t mark = qj_yaml_path_push(c, "[%zu]", i);
		uint64_t v;

		if (qj_yaml_get_uint(c, qj_yaml_deref(n->items[i]), 0, UINT32_MAX - 1, &v))
			pr->uids[pr->n_uids++] = (uid_t)v;
		qj_yaml_path_pop(c, mark);
	}
}

static void walk_groups(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct qj_principals *pr = obj;

	if (!qj_yaml_expect_kind(c, n, NODE_SEQ, "a list of group names"))
		return;
	for (size_t i = 0; i < pr->n_groups; i++)
		free(pr->groups[i]);
	free(pr->groups);
	pr->n_groups = 0;
	pr->groups = calloc(n->n_items ? n->n_items : 1, sizeof(*pr->groups));
	if (!pr->groups) {
		c->error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n->n_items; i++) {
		struct node *g = qj_yaml_deref(n->items[i]);
		size_t mark = qj_yaml_path_push(c, "[%zu]", i);
		char q[QUOTE_MAX + 4];
		const char *s = qj_yaml_want_scalar(c, g, "a group name");

		if (s && !qj_schema_name_is_valid(s, true))
			diag(c, g, "invalid group name '%s'", qj_yaml_printable(s, g->len, q));
		else if (s && qj_yaml_get_string(c, g, &pr->groups[pr->n_groups]))
			pr->n_groups++;
		qj_yaml_path_pop(c, mark);
	}
}

void qj_schema_principals_clear(struct qj_principals *pr)
{
	for (size_t i = 0; i < pr->n_groups; i++)
		free(pr->groups[i]);
	free(pr->groups);
	free(pr->uids);
	free(pr->gids);
	*pr = (struct qj_principals){};
}

void qj_schema_walk_principals(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "uids", .type = F_CUSTOM, .walk = walk_uids },
		{ .key = "groups", .type = F_CUSTOM, .walk = walk_groups },
	};
	struct qj_principals *pr = (struct qj_principals *)((char *)c->p + f->offset);
	char buf[QUOTE_MAX + 16];

	if (n->kind == NODE_SCALAR && !qj_yaml_is_null(n)) {
		if (strcmp(n->value, "*") != 0) {
			diag(c, n, "expected \"*\" or a mapping with uids: and groups:, got %s",
			     qj_yaml_describe(n, buf));
			return;
		}
		qj_schema_principals_clear(pr);
		pr->anyone = true;
		return;
	}
	if (n->kind != NODE_MAP) {
		if (n->kind != NODE_BAD)
			diag(c, n, "expected \"*\" or a mapping with uids: and groups:, got %s",
			     qj_yaml_describe(n, buf));
		return;
	}
	qj_schema_principals_clear(pr); /* given: replaces the default */
	qj_schema_walk_map(c, n, fields, ARRAY_SIZE(fields), pr);
}

/* One uid or a range "FIRST-LAST"; uid 0 can never be placed by a launcher. */
static bool get_uid_range(struct ctx *c, struct node *n, struct qj_uid_range *ret)
{
	char buf[QUOTE_MAX + 16];
	const char *s = qj_yaml_want_scalar(c, n, "a user id or a range FIRST-LAST");
	const char *dash;
	uint64_t a, b;

	if (!s)
		return false;
	dash = strchr(s, '-');
	if (!dash) {
		if (!qj_yaml_get_uint(c, n, 0, UINT32_MAX - 1, &a))
			return false;
		b = a;
	} else {
		_cleanup_free_ char *first = strndup(s, (size_t)(dash - s));

		if (!first) {
			c->error = -ENOMEM;
			return false;
		}
		if (qj_units_parse_u64(first, &a) < 0 || qj_units_parse_u64(dash + 1, &b) < 0 ||
		    a > b || b > UINT32_MAX - 1) {
			diag(c, n,
			     "expected a user id or a range FIRST-LAST (FIRST <= LAST < %u), got %s",
			     UINT32_MAX, qj_yaml_describe(n, buf));
			return false;
		}
	}
	if (a == 0) {
		diag(c, n, "uid 0: only root may place root's processes");
		return false;
	}
	*ret = (struct qj_uid_range){ .first = (uid_t)a, .last = (uid_t)b };
	return true;
}

static void walk_place_as_launcher(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct qj_place_as *pa = obj;
	uint64_t v;

	if (!qj_yaml_get_uint(c, n, 1, UINT32_MAX - 1, &v))
		return;
	pa->launcher = (uid_t)v;
	for (size_t i = 0; i < c->p->n_place_as; i++)
		if (c->p->place_as[i].launcher == pa->launcher)
			diag(c, n, "launcher %u is listed twice", pa->launcher);
}

static void walk_place_as_uids(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct qj_place_as *pa = obj;

	if (!qj_yaml_expect_kind(c, n, NODE_SEQ, "a list of user ids or ranges FIRST-LAST"))
		return;
	if (n->n_items == 0) {
		diag(c, n, "an empty list: leave the entry out");
		return;
	}
	pa->uids = calloc(n->n_items, sizeof(*pa->uids));
	if (!pa->uids) {
		c->error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n->n_items; i++) {
		size_t mark = qj_yaml_path_push(c, "[%zu]", i);

		if (get_uid_range(c, qj_yaml_deref(n->items[i]), &pa->uids[pa->n_uids]))
			pa->n_uids++;
		qj_yaml_path_pop(c, mark);
	}
}

static void walk_place_as(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "launcher",
		  .type = F_CUSTOM,
		  .walk = walk_place_as_launcher,
		  .required = true },
		{ .key = "uids", .type = F_CUSTOM, .walk = walk_place_as_uids, .required = true },
	};
	struct qj_policy *p = c->p;

	if (!qj_yaml_expect_kind(c, n, NODE_SEQ, "a list of { launcher: UID, uids: [...] }"))
		return;
	p->place_as = calloc(n->n_items ? n->n_items : 1, sizeof(*p->place_as));
	if (!p->place_as) {
		c->error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n->n_items && !c->error; i++) {
		size_t mark = qj_yaml_path_push(c, "[%zu]", i);
		struct qj_place_as pa = {};

		qj_schema_walk_map(c, qj_yaml_deref(n->items[i]), fields, ARRAY_SIZE(fields), &pa);
		p->place_as[p->n_place_as++] = pa; /* kept even when bad: freed with the policy */
		qj_yaml_path_pop(c, mark);
	}
}

void qj_schema_walk_access(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "place",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_place),
		  .walk = qj_schema_walk_principals },
		{ .key = "reload",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_reload),
		  .walk = qj_schema_walk_principals },
		{ .key = "suspend",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_suspend),
		  .walk = qj_schema_walk_principals },
		{ .key = "logs",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_logs),
		  .walk = qj_schema_walk_principals },
		{ .key = "hold",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_hold),
		  .walk = qj_schema_walk_principals },
		{ .key = "delay",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_delay),
		  .walk = qj_schema_walk_principals },
		{ .key = "place_as", .type = F_CUSTOM, .walk = walk_place_as },
	};

	qj_schema_walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
}
