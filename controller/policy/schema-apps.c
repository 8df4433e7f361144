// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The apps: section of the policy schema: each app's name, match, trust, rungs and
 * holds, and duplicate names across the list.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy-internal.h"
#include "policy.h"
#include "util.h"

/* An app while it is parsed. */
struct app_parse {
	struct qj_app a;
	struct node *start_node, *max_node;
	bool hold_max_set;
};

static void walk_app_name(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct app_parse *ap = obj;
	char q[QUOTE_MAX + 4];
	const char *s = qj_yaml_want_scalar(c, n, "an app name");

	if (!s)
		return;
	if (!qj_schema_name_is_valid(s, true)) {
		diag(c, n,
		     "invalid app name '%s': use up to %d letters, digits, '-', '_' and '.', starting with a letter or digit",
		     qj_yaml_printable(s, n->len, q), QJ_POLICY_NAME_MAX);
		return;
	}
	(void)qj_yaml_get_string(c, n, &ap->a.name);
}

static void walk_match_exe(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct app_parse *ap = obj;
	char q[QUOTE_MAX + 4];
	const char *s = qj_yaml_want_scalar(c, n, "a string");

	if (!s)
		return;
	/* /proc/PID/exe is always absolute: "firefox" can never match, "*firefox" can. */
	if (s[0] && s[0] != '/' && s[0] != '*' && s[0] != '?' && s[0] != '[') {
		diag(c, n,
		     "exe pattern '%s' can never match: executables are absolute paths; try '*/%s'",
		     qj_yaml_printable(s, n->len, q), q);
		return;
	}
	(void)qj_yaml_get_string(c, n, &ap->a.match_exe);
}

static void walk_match_uid(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct app_parse *ap = obj;
	uint64_t v;

	if (!qj_yaml_get_uint(c, n, 0, UINT32_MAX - 1, &v))
		return;
	ap->a.has_match_uid = true;
	ap->a.match_uid = (uid_t)v;
}

static void walk_match(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "exe", .type = F_CUSTOM, .walk = walk_match_exe },
		{ .key = "cmdline",
		  .type = F_STRING,
		  .offset = offsetof(struct app_parse, a.match_cmdline) },
		{ .key = "uid", .type = F_CUSTOM, .walk = walk_match_uid },
	};
	qj_schema_walk_map(c, n, fields, ARRAY_SIZE(fields), obj);
	if (n->kind == NODE_MAP && n->n_items == 0)
		diag(c, n,
		     "empty match; give exe, cmdline or uid, or remove match: for an app the launcher places by name");
}

static void walk_trust(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct app_parse *ap = obj;
	char q[QUOTE_MAX + 4];
	const char *s = qj_yaml_want_scalar(c, n, "jailed or trusted");
	enum qj_trust t;

	if (!s)
		return;
	t = qj_trust_from_string(s);
	if (t < 0) {
		diag(c, n, "unknown trust '%s'; expected jailed or trusted",
		     qj_yaml_printable(s, n->len, q));
		return;
	}
	ap->a.trust = t;
}

static void walk_start_rung(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct app_parse *ap = obj;
	int i = qj_schema_get_rung(c, n);

	if (i >= 0) {
		ap->a.start_rung = i;
		ap->start_node = n;
	}
}

static void walk_max_rung(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct app_parse *ap = obj;
	int i = qj_schema_get_rung(c, n);

	if (i >= 0) {
		ap->a.max_rung = i;
		ap->max_node = n;
	}
}

static void walk_hold_max(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct app_parse *ap = obj;
	uint64_t v;

	if (qj_yaml_get_uint(c, n, 0, 1024, &v)) {
		ap->a.hold_max = (unsigned)v;
		ap->hold_max_set = true;
	}
}

static void walk_holds(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "max", .type = F_CUSTOM, .walk = walk_hold_max },
		{ .key = "max_timeout",
		  .type = F_DURATION,
		  .offset = offsetof(struct app_parse, a.hold_max_timeout_usec),
		  .min = 0,
		  .max = 7 * USEC_PER_DAY },
	};

	qj_schema_walk_map(c, n, fields, ARRAY_SIZE(fields), obj);
}

void qj_schema_app_done(struct qj_app *a)
{
	free(a->name);
	free(a->match_exe);
	free(a->match_cmdline);
}

struct app_ref {
	const char *name;
	size_t index;
};

static int app_ref_cmp(const void *x, const void *y)
{
	const struct app_ref *a = x, *b = y;
	int r = strcmp(a->name, b->name);

	if (r)
		return r;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* Duplicate names: sorted, so a file with thousands of apps stays O(n log n). */
static void check_app_names(struct ctx *c, struct node *list)
{
	struct qj_policy *p = c->p;
	_cleanup_free_ struct app_ref *refs = calloc(p->n_apps ? p->n_apps : 1, sizeof(*refs));
	size_t n = 0, first = 0;

	if (!refs) {
		c->error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < p->n_apps; i++)
		if (p->apps[i].name) /* unnamed ones were reported already */
			refs[n++] = (struct app_ref){ p->apps[i].name, i };
	/* Sorted by name, then by position: the first of each run of equal names came first. */
	qsort(refs, n, sizeof(*refs), app_ref_cmp);
	for (size_t i = 1; i < n; i++) {
		struct node *dup, *orig;
		size_t mark;

		if (strcmp(refs[i].name, refs[first].name) != 0) {
			first = i;
			continue;
		}
		dup = qj_yaml_map_get(list->items[refs[i].index], "name");
		orig = qj_yaml_map_get(list->items[refs[first].index], "name");
		mark = qj_yaml_path_push(c, "[%zu].name", refs[i].index);
		diag(c, dup, "duplicate app name '%s' (first defined at apps[%zu], %u:%u)",
		     refs[i].name, refs[first].index, orig->line + 1, orig->col + 1);
		qj_yaml_path_pop(c, mark);
	}
}

void qj_schema_walk_apps(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "name", .type = F_CUSTOM, .walk = walk_app_name, .required = true },
		{ .key = "match", .type = F_CUSTOM, .walk = walk_match },
		{ .key = "trust", .type = F_CUSTOM, .walk = walk_trust },
		{ .key = "exempt", .type = F_BOOL, .offset = offsetof(struct app_parse, a.exempt) },
		{ .key = "notify", .type = F_BOOL, .offset = offsetof(struct app_parse, a.notify) },
		{ .key = "start_rung", .type = F_CUSTOM, .walk = walk_start_rung },
		{ .key = "max_rung", .type = F_CUSTOM, .walk = walk_max_rung },
		{ .key = "holds", .type = F_CUSTOM, .walk = walk_holds },
	};
	struct qj_policy *p = c->p;

	if (!qj_yaml_expect_kind(c, n, NODE_SEQ, "a list of apps"))
		return;
	p->apps = calloc(n->n_items ? n->n_items : 1, sizeof(*p->apps));
	if (!p->apps) {
		c->error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n->n_items && !c->error; i++) {
		struct app_parse ap = {
			.a = { .trust = QJ_TRUST_JAILED,
			       .start_rung = 0,
			       .max_rung = (int)p->n_rungs - 1 },
		};
		size_t mark = qj_yaml_path_push(c, "[%zu]", i);

		qj_schema_walk_map(c, qj_yaml_deref(n->items[i]), fields, ARRAY_SIZE(fields), &ap);
		if (!ap.hold_max_set)
			ap.a.hold_max = ap.a.trust == QJ_TRUST_TRUSTED ? TRUSTED_HOLD_MAX : 0;
		if (ap.start_node && ap.a.start_rung > ap.a.max_rung) {
			size_t m2 = qj_yaml_path_push(c, ".start_rung");

			diag(c, ap.start_node, "start_rung '%s' comes after max_rung '%s'",
			     p->rungs[ap.a.start_rung].name, p->rungs[ap.a.max_rung].name);
			qj_yaml_path_pop(c, m2);
		} else if (ap.max_node && ap.a.start_rung > ap.a.max_rung) {
			size_t m2 = qj_yaml_path_push(c, ".max_rung");

			diag(c, ap.max_node, "max_rung '%s' comes before start_rung '%s'",
			     p->rungs[ap.a.max_rung].name, p->rungs[ap.a.start_rung].name);
			qj_yaml_path_pop(c, m2);
		}
		p->apps[p->n_apps++] = ap.a;
		qj_yaml_path_pop(c, mark);
	}
	if (!c->error)
		check_app_names(c, n);
}
