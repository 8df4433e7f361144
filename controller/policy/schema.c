// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The policy schema: a table-driven walk over the node tree (yaml.c) that fills a struct
 * qj_policy and records every problem with its position and key path.  It never stops at
 * the first error; the caller gets the policy only when there was none.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "policy-internal.h"
#include "policy.h"
#include "util.h"

/* Names of apps, rungs and groups: no spaces or control characters, so logs stay parseable. */
static bool name_is_valid(const char *s, bool allow_upper)
{
	size_t n = strlen(s);

	if (n == 0 || n > QJ_POLICY_NAME_MAX ||
	    !(qj_units_is_digit(s[0]) || (s[0] >= 'a' && s[0] <= 'z') ||
	      (allow_upper && s[0] >= 'A' && s[0] <= 'Z')))
		return false;
	for (; *s; s++)
		if (!(qj_units_is_digit(*s) || (*s >= 'a' && *s <= 'z') ||
		      (allow_upper && *s >= 'A' && *s <= 'Z') || *s == '-' || *s == '_' ||
		      *s == '.'))
			return false;
	return true;
}

/* ---- schema walk: tables ---------------------------------------------------------------- */

enum field_type {
	F_STRING, /* char * */
	F_PATH, /* char *, absolute */
	F_BOOL, /* bool */
	F_UNSIGNED, /* unsigned, min..max */
	F_DURATION, /* uint64_t microseconds, min..max */
	F_SIZE, /* uint64_t bytes, min..max */
	F_CUSTOM, /* walk() */
};

struct field;
typedef void (*walk_fn)(struct ctx *c, struct node *n, void *obj, const struct field *f);

struct field {
	const char *key;
	enum field_type type;
	size_t offset; /* into obj */
	uint64_t min, max;
	walk_fn walk;
	bool required;
};

#define FIELD_MAX 16

static void walk_field(struct ctx *c, const struct field *f, struct node *v, void *obj)
{
	char *base = obj;
	uint64_t u;

	switch (f->type) {
	case F_STRING:
		(void)qj_yaml_get_string(c, v, (char **)(base + f->offset));
		break;
	case F_PATH:
		(void)qj_yaml_get_path(c, v, (char **)(base + f->offset));
		break;
	case F_BOOL:
		(void)qj_yaml_get_bool(c, v, (bool *)(base + f->offset));
		break;
	case F_UNSIGNED:
		if (qj_yaml_get_uint(c, v, f->min, f->max, &u))
			*(unsigned *)(base + f->offset) = (unsigned)u;
		break;
	case F_DURATION:
		(void)qj_yaml_get_duration(c, v, f->min, f->max, (uint64_t *)(base + f->offset));
		break;
	case F_SIZE:
		(void)qj_yaml_get_size(c, v, f->min, f->max, (uint64_t *)(base + f->offset));
		break;
	case F_CUSTOM:
		f->walk(c, v, obj, f);
		break;
	}
}

/*
 * Checks a mapping against @fields (unknown, duplicate and missing keys), then walks the
 * values in table order, so a table lists what others depend on first.  Returns a bitmask
 * of the keys present.
 */
static uint64_t walk_map(struct ctx *c, struct node *n, const struct field *fields, size_t n_fields,
			 void *obj)
{
	struct node *keys[FIELD_MAX] = {}, *vals[FIELD_MAX] = {};
	uint64_t present = 0;

	assert(n_fields <= FIELD_MAX);
	if (!qj_yaml_expect_kind(c, n, NODE_MAP, "a mapping"))
		return 0;
	for (size_t i = 0; i + 1 < n->n_items && !c->error; i += 2) {
		struct node *k = qj_yaml_deref(n->items[i]);
		char buf[QUOTE_MAX + 16], list[FIELD_MAX * 24];
		size_t j, mark, o = 0;

		if (k->kind == NODE_BAD)
			continue;
		if (k->kind != NODE_SCALAR || qj_yaml_is_null(k)) {
			diag(c, k, "expected a key name, got %s", qj_yaml_describe(k, buf));
			continue;
		}
		for (j = 0; j < n_fields; j++)
			if (strlen(k->value) == k->len && strcmp(k->value, fields[j].key) == 0)
				break;
		mark = qj_yaml_path_push_key(c, k->value, k->len);
		if (j < n_fields && keys[j]) {
			diag(c, k, "duplicate key (first at %u:%u)", keys[j]->line + 1,
			     keys[j]->col + 1);
		} else if (j < n_fields) {
			keys[j] = k;
			vals[j] = qj_yaml_deref(n->items[i + 1]);
			present |= 1ULL << j;
		} else {
			for (j = 0; j < n_fields; j++)
				o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s",
						      j ? ", " : "", fields[j].key);
			if (strcmp(k->value, "<<") == 0)
				diag(c, k, "YAML merge keys (<<) are not supported; known keys: %s",
				     list);
			else
				diag(c, k, "unknown key; known keys here: %s", list);
		}
		qj_yaml_path_pop(c, mark);
	}
	for (size_t j = 0; j < n_fields && !c->error; j++) {
		size_t mark;

		if (!keys[j]) {
			if (fields[j].required)
				diag(c, n, "missing required key '%s'", fields[j].key);
			continue;
		}
		mark = qj_yaml_path_push_key(c, fields[j].key, strlen(fields[j].key));
		walk_field(c, &fields[j], vals[j], obj);
		qj_yaml_path_pop(c, mark);
	}
	return present;
}

/* ---- schema walk: sections -------------------------------------------------------------- */

static void walk_version(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	uint64_t v;

	if (!qj_yaml_get_uint(c, n, 0, UINT32_MAX, &v))
		return;
	if (v != 1)
		diag(c, n, "unsupported policy version %" PRIu64 "; this qosjail reads version 1",
		     v);
}

static void walk_backend(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	const char *s = qj_yaml_want_scalar(c, n, "a backend name");
	char q[QUOTE_MAX + 4];
	enum qj_backend b;

	if (!s)
		return;
	b = qj_backend_from_string(s);
	if (b < 0) {
		diag(c, n,
		     "unknown backend '%s'; expected auto, qos, wakeup-count, mem, freeze or dry-run",
		     qj_yaml_printable(s, n->len, q));
		return;
	}
	c->p->backend = b;
}

static void walk_wakeup_state(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	const char *s = qj_yaml_want_scalar(c, n, "mem or freeze");
	char q[QUOTE_MAX + 4];

	if (!s)
		return;
	if (strcmp(s, "mem") != 0 && strcmp(s, "freeze") != 0) {
		diag(c, n, "unknown sleep state '%s'; expected mem or freeze",
		     qj_yaml_printable(s, n->len, q));
		return;
	}
	(void)qj_yaml_get_string(c, n, &c->p->wakeup_state);
}

static void walk_retry(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "initial",
		  .type = F_DURATION,
		  .offset = offsetof(struct qj_policy, retry_initial_usec),
		  .min = USEC_PER_MSEC,
		  .max = USEC_PER_HOUR },
		{ .key = "max",
		  .type = F_DURATION,
		  .offset = offsetof(struct qj_policy, retry_max_usec),
		  .min = USEC_PER_MSEC,
		  .max = USEC_PER_DAY },
	};
	size_t before = c->diags->n;
	char a[32], b[32];

	walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
	if (c->diags->n == before && c->p->retry_max_usec < c->p->retry_initial_usec)
		diag(c, n, "max (%s) is shorter than initial (%s)",
		     qj_units_format_duration(c->p->retry_max_usec, a),
		     qj_units_format_duration(c->p->retry_initial_usec, b));
}

static void walk_suspend(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "backend", .type = F_CUSTOM, .walk = walk_backend },
		{ .key = "sysfs", .type = F_PATH, .offset = offsetof(struct qj_policy, sysfs_root) },
		{ .key = "state", .type = F_CUSTOM, .walk = walk_wakeup_state },
		{ .key = "idle_delay",
		  .type = F_DURATION,
		  .offset = offsetof(struct qj_policy, idle_delay_usec),
		  .min = 0,
		  .max = USEC_PER_HOUR },
		{ .key = "retry", .type = F_CUSTOM, .walk = walk_retry },
		{ .key = "dry_run_length",
		  .type = F_DURATION,
		  .offset = offsetof(struct qj_policy, dry_run_length_usec),
		  .min = 0,
		  .max = USEC_PER_HOUR },
		/* A delay hold postpones every suspend: bounded like logind's InhibitDelayMaxSec. */
		{ .key = "max_delay",
		  .type = F_DURATION,
		  .offset = offsetof(struct qj_policy, max_delay_usec),
		  .min = 0,
		  .max = USEC_PER_MINUTE },
	};

	walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
}

static void walk_timer_slack(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	uint64_t usec;

	if (qj_yaml_get_duration(c, n, 1, USEC_PER_SEC, &usec))
		c->p->timer_slack_nsec = usec * NSEC_PER_USEC;
}

static void walk_busy_threshold(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	char buf[QUOTE_MAX + 16];
	const char *s = qj_yaml_want_scalar(c, n, "a percentage");
	double v;

	if (!s)
		return;
	if (qj_units_parse_percent(s, &v) < 0) {
		diag(c, n,
		     "expected a percentage of one CPU such as 5%% or 2.5%% (at most 3 decimals), got %s",
		     qj_yaml_describe(n, buf));
		return;
	}
	if (!(v > 0.0 && v <= 1.0)) {
		diag(c, n, "%s is out of range (more than 0%% and at most 100%%)",
		     qj_yaml_describe(n, buf));
		return;
	}
	c->p->busy_threshold = v;
}

static void walk_jail(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	/* Counters are tick-grained (4 ms, docs/platform.md): a window must be far longer. */
	static const struct field fields[] = {
		{ .key = "cgroup",
		  .type = F_PATH,
		  .offset = offsetof(struct qj_policy, cgroup_path) },
		{ .key = "cpu_cgroup",
		  .type = F_PATH,
		  .offset = offsetof(struct qj_policy, cpu_cgroup_path) },
		{ .key = "cpu_idle",
		  .type = F_BOOL,
		  .offset = offsetof(struct qj_policy, cpu_idle) },
		{ .key = "timer_slack", .type = F_CUSTOM, .walk = walk_timer_slack },
		{ .key = "busy_threshold", .type = F_CUSTOM, .walk = walk_busy_threshold },
		{ .key = "sample_window",
		  .type = F_DURATION,
		  .offset = offsetof(struct qj_policy, sample_window_usec),
		  .min = 100 * USEC_PER_MSEC,
		  .max = 10 * USEC_PER_MINUTE },
	};

	walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
}

/* A rung while it is parsed: which keys were given decides the defaults. */
struct rung_parse {
	struct qj_rung r;
	bool ok;
};

static void walk_action(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct rung_parse *rp = obj;
	char q[QUOTE_MAX + 4], sig[32];
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
			diag(c, n,
			     "%s is not a supported rung action; supported: SIGXCPU, SIGSTOP, SIGTERM, SIGKILL, freeze",
			     sig);
			return;
		}
	}
	diag(c, n, "unknown action '%s'; expected SIGXCPU, SIGSTOP, SIGTERM, SIGKILL or freeze",
	     qj_yaml_printable(s, n->len, q));
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
	if (!name_is_valid(s, false)) {
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
		present = walk_map(c, item, fields, ARRAY_SIZE(fields), &rp);
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
static int get_rung(struct ctx *c, struct node *n)
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
	int i = get_rung(c, n);

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

static void walk_escalation(struct ctx *c, struct node *n, void *obj, const struct field *f)
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
	uint64_t present = walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
	int i;

	if ((present & 1) && !(present & 4) && c->ladder_ok) {
		/* Default strike rung: "stop" when the ladder has one, else its second rung. */
		i = rung_index(c->p, "stop");
		if (i < 0)
			i = c->p->n_rungs > 1 ? 1 : 0;
		c->p->strike_rung = i;
	}
}

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
	if (!name_is_valid(s, true)) {
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
	walk_map(c, n, fields, ARRAY_SIZE(fields), obj);
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
	int i = get_rung(c, n);

	if (i >= 0) {
		ap->a.start_rung = i;
		ap->start_node = n;
	}
}

static void walk_max_rung(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct app_parse *ap = obj;
	int i = get_rung(c, n);

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

	walk_map(c, n, fields, ARRAY_SIZE(fields), obj);
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

static void walk_apps(struct ctx *c, struct node *n, void *obj, const struct field *f)
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

		walk_map(c, qj_yaml_deref(n->items[i]), fields, ARRAY_SIZE(fields), &ap);
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

		if (s && !name_is_valid(s, true))
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

static void walk_principals(struct ctx *c, struct node *n, void *obj, const struct field *f)
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
	walk_map(c, n, fields, ARRAY_SIZE(fields), pr);
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

		walk_map(c, qj_yaml_deref(n->items[i]), fields, ARRAY_SIZE(fields), &pa);
		p->place_as[p->n_place_as++] = pa; /* kept even when bad: freed with the policy */
		qj_yaml_path_pop(c, mark);
	}
}

static void walk_access(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "place",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_place),
		  .walk = walk_principals },
		{ .key = "reload",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_reload),
		  .walk = walk_principals },
		{ .key = "suspend",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_suspend),
		  .walk = walk_principals },
		{ .key = "logs",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_logs),
		  .walk = walk_principals },
		{ .key = "hold",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_hold),
		  .walk = walk_principals },
		{ .key = "delay",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_delay),
		  .walk = walk_principals },
		{ .key = "place_as", .type = F_CUSTOM, .walk = walk_place_as },
	};

	walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
}

static void walk_logind(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "bridge",
		  .type = F_BOOL,
		  .offset = offsetof(struct qj_policy, logind_bridge) },
		{ .key = "inhibitors",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, logind_inhibitors),
		  .walk = walk_principals },
		/* logind away from the bus: how long its inhibitors still hold (fail-closed). */
		{ .key = "absent_max",
		  .type = F_DURATION,
		  .offset = offsetof(struct qj_policy, logind_absent_max_usec),
		  .min = 0,
		  .max = USEC_PER_HOUR },
		/* The user is using the machine: a session's idle hint as a hold. */
		{ .key = "idle_hint",
		  .type = F_BOOL,
		  .offset = offsetof(struct qj_policy, logind_idle_hint) },
	};

	walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
}

static void walk_log(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "path", .type = F_PATH, .offset = offsetof(struct qj_policy, log_path) },
		{ .key = "max_size",
		  .type = F_SIZE,
		  .offset = offsetof(struct qj_policy, log_max_bytes),
		  .min = 4096,
		  .max = 1ULL << 40 },
		{ .key = "keep",
		  .type = F_UNSIGNED,
		  .offset = offsetof(struct qj_policy, log_keep),
		  .min = 0,
		  .max = 100 },
	};

	walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
}

static void walk_limits(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "clients",
		  .type = F_UNSIGNED,
		  .offset = offsetof(struct qj_policy, max_clients),
		  .min = 1,
		  .max = QJ_POLICY_MAX_CLIENTS },
		{ .key = "clients_per_uid",
		  .type = F_UNSIGNED,
		  .offset = offsetof(struct qj_policy, max_clients_per_uid),
		  .min = 1,
		  .max = QJ_POLICY_MAX_CLIENTS },
		{ .key = "holds_per_uid",
		  .type = F_UNSIGNED,
		  .offset = offsetof(struct qj_policy, max_holds_per_uid),
		  .min = 1,
		  .max = QJ_POLICY_MAX_HOLDS },
		{ .key = "holds_per_connection",
		  .type = F_UNSIGNED,
		  .offset = offsetof(struct qj_policy, max_holds_per_conn),
		  .min = 1,
		  .max = QJ_POLICY_MAX_HOLDS },
	};

	walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
}

void qj_schema_walk_document(struct ctx *c, struct node *root)
{
	static const struct field fields[] = {
		{ .key = "version", .type = F_CUSTOM, .walk = walk_version, .required = true },
		{ .key = "escalation", .type = F_CUSTOM, .walk = walk_escalation },
		{ .key = "suspend", .type = F_CUSTOM, .walk = walk_suspend },
		{ .key = "jail", .type = F_CUSTOM, .walk = walk_jail },
		{ .key = "apps", .type = F_CUSTOM, .walk = walk_apps },
		{ .key = "access", .type = F_CUSTOM, .walk = walk_access },
		{ .key = "log", .type = F_CUSTOM, .walk = walk_log },
		{ .key = "logind", .type = F_CUSTOM, .walk = walk_logind },
		{ .key = "limits", .type = F_CUSTOM, .walk = walk_limits },
	};
	char buf[QUOTE_MAX + 16];

	root = qj_yaml_deref(root);
	if (!root || qj_yaml_is_null(root)) {
		qj_yaml_diag_pos(
			c, root ? root->line : 0, root ? root->col : 0,
			"empty policy; a policy is a mapping that starts with 'version: 1'");
		return;
	}
	if (root->kind != NODE_MAP) {
		if (root->kind != NODE_BAD)
			diag(c, root,
			     "a policy must be a mapping of sections (version:, suspend:, ...), got %s",
			     qj_yaml_describe(root, buf));
		return;
	}
	walk_map(c, root, fields, ARRAY_SIZE(fields), c->p);
}
