// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The policy schema: a table-driven walk over the node tree (yaml.c) that fills a struct
 * qj_policy and records every problem with its position and key path.  It never stops at
 * the first error; the caller gets the policy only when there was none.  This file holds
 * the document's table and the small sections (suspend:, jail:, log:, logind:, limits:);
 * escalation:, apps: and access: have a file each (schema-ladder.c, schema-apps.c,
 * schema-access.c), and the table walk is schema-walk.c.
 */
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "policy-internal.h"
#include "policy.h"
#include "util.h"

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

static void walk_dark_wake(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	const char *s = qj_yaml_want_scalar(c, n, "keep-quiesced or restore");
	char q[QUOTE_MAX + 4];

	if (!s)
		return;
	if (strcmp(s, "keep-quiesced") != 0 && strcmp(s, "restore") != 0) {
		diag(c, n, "unknown dark_wake '%s'; expected keep-quiesced or restore",
		     qj_yaml_printable(s, n->len, q));
		return;
	}
	c->p->dark_wake_keep = strcmp(s, "keep-quiesced") == 0;
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

	qj_schema_walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
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
		/* After a suspend with no hold: keep the jail quiesced (docs/decisions.md). */
		{ .key = "dark_wake", .type = F_CUSTOM, .walk = walk_dark_wake },
		{ .key = "dark_wake_max",
		  .type = F_DURATION,
		  .offset = offsetof(struct qj_policy, dark_wake_max_usec),
		  .min = 0,
		  .max = USEC_PER_HOUR },
	};

	qj_schema_walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
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

	qj_schema_walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
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
		  .walk = qj_schema_walk_principals },
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

	qj_schema_walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
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

	qj_schema_walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
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

	qj_schema_walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
}

void qj_schema_walk_document(struct ctx *c, struct node *root)
{
	static const struct field fields[] = {
		{ .key = "version", .type = F_CUSTOM, .walk = walk_version, .required = true },
		{ .key = "escalation", .type = F_CUSTOM, .walk = qj_schema_walk_escalation },
		{ .key = "suspend", .type = F_CUSTOM, .walk = walk_suspend },
		{ .key = "jail", .type = F_CUSTOM, .walk = walk_jail },
		{ .key = "apps", .type = F_CUSTOM, .walk = qj_schema_walk_apps },
		{ .key = "access", .type = F_CUSTOM, .walk = qj_schema_walk_access },
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
	qj_schema_walk_map(c, root, fields, ARRAY_SIZE(fields), c->p);
}
