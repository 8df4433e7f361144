// SPDX-License-Identifier: LGPL-2.1-or-later
/* The effective policy as JSON, the output of `qosjailctl check --dump`. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "policy-internal.h"
#include "policy.h"
#include "util.h"

/* ---- JSON dump -------------------------------------------------------------------------- */

/*
 * Same keys and value syntax as the YAML, so the dump is itself a valid policy (JSON is
 * YAML flow style): tests parse it back and expect the same dump.
 */
static int set_new(json_t *o, const char *key, json_t *v)
{
	if (!v || json_object_set_new(o, key, v) < 0)
		return -ENOMEM;
	return 0;
}

static json_t *json_duration(uint64_t usec)
{
	char buf[32];

	return json_string(qj_units_format_duration(usec, buf));
}

static json_t *json_principals(const struct qj_principals *pr)
{
	json_t *o, *uids, *groups;

	if (pr->anyone)
		return json_string("*");
	o = json_object();
	if (!o)
		return NULL;
	/* set_new() and json_array_append_new() drop the value on failure: only o to free. */
	uids = json_array();
	if (set_new(o, "uids", uids) < 0)
		goto fail;
	groups = json_array();
	if (set_new(o, "groups", groups) < 0)
		goto fail;
	for (size_t i = 0; i < pr->n_uids; i++)
		if (json_array_append_new(uids, json_integer(pr->uids[i])) < 0)
			goto fail;
	for (size_t i = 0; i < pr->n_groups; i++)
		if (json_array_append_new(groups, json_string(pr->groups[i])) < 0)
			goto fail;
	return o;
fail:
	json_decref(o);
	return NULL;
}

static json_t *json_place_as(const struct qj_policy *p)
{
	json_t *list = json_array();

	for (size_t i = 0; list && i < p->n_place_as; i++) {
		const struct qj_place_as *pa = &p->place_as[i];
		json_t *uids = json_array();

		for (size_t j = 0; uids && j < pa->n_uids; j++) {
			const struct qj_uid_range *u = &pa->uids[j];
			char buf[32];

			snprintf(buf, sizeof(buf), "%u-%u", u->first, u->last);
			if (json_array_append_new(uids, u->first == u->last ?
								json_integer(u->first) :
								json_string(buf)) < 0) {
				json_decref(uids);
				uids = NULL;
			}
		}
		if (!uids || json_array_append_new(list, json_pack("{s:I,s:o}", "launcher",
								   (json_int_t)pa->launcher, "uids",
								   uids)) < 0) {
			json_decref(list);
			return NULL;
		}
	}
	return list;
}

static json_t *json_app(const struct qj_policy *p, const struct qj_app *a)
{
	json_t *o = json_object(), *m, *h;

	if (!o || set_new(o, "name", json_string(a->name)) < 0)
		goto fail;
	if (a->match_exe || a->match_cmdline || a->has_match_uid) {
		m = json_object();
		if (set_new(o, "match", m) < 0 ||
		    (a->match_exe && set_new(m, "exe", json_string(a->match_exe)) < 0) ||
		    (a->match_cmdline &&
		     set_new(m, "cmdline", json_string(a->match_cmdline)) < 0) ||
		    (a->has_match_uid && set_new(m, "uid", json_integer(a->match_uid)) < 0))
			goto fail;
	}
	if (set_new(o, "trust", json_string(qj_trust_to_string(a->trust))) < 0 ||
	    set_new(o, "exempt", json_boolean(a->exempt)) < 0 ||
	    set_new(o, "notify", json_boolean(a->notify)) < 0 ||
	    set_new(o, "start_rung", json_string(p->rungs[a->start_rung].name)) < 0 ||
	    set_new(o, "max_rung", json_string(p->rungs[a->max_rung].name)) < 0)
		goto fail;
	h = json_object();
	if (set_new(o, "holds", h) < 0 || set_new(h, "max", json_integer(a->hold_max)) < 0 ||
	    set_new(h, "max_timeout", json_duration(a->hold_max_timeout_usec)) < 0)
		goto fail;
	return o;
fail:
	json_decref(o);
	return NULL;
}

/* Builds a child object and attaches it; NULL on OOM. */
static json_t *child(json_t *parent, const char *key)
{
	json_t *o = json_object();

	if (set_new(parent, key, o) < 0)
		return NULL;
	return o;
}

static json_t *policy_to_json(const struct qj_policy *p)
{
	json_t *root = json_object(), *s, *r, *j, *e, *l, *apps, *a, *lg, *lim;
	char buf[64];

	if (!root || set_new(root, "version", json_integer(1)) < 0)
		goto fail;

	s = child(root, "suspend");
	if (!s || set_new(s, "backend", json_string(qj_backend_to_string(p->backend))) < 0 ||
	    set_new(s, "sysfs", json_string(p->sysfs_root)) < 0 ||
	    set_new(s, "state", json_string(p->wakeup_state)) < 0 ||
	    set_new(s, "idle_delay", json_duration(p->idle_delay_usec)) < 0)
		goto fail;
	r = child(s, "retry");
	if (!r || set_new(r, "initial", json_duration(p->retry_initial_usec)) < 0 ||
	    set_new(r, "max", json_duration(p->retry_max_usec)) < 0 ||
	    set_new(s, "dry_run_length", json_duration(p->dry_run_length_usec)) < 0 ||
	    set_new(s, "max_delay", json_duration(p->max_delay_usec)) < 0 ||
	    set_new(s, "dark_wake", json_string(p->dark_wake_keep ? "keep-quiesced" : "restore")) <
		    0 ||
	    set_new(s, "dark_wake_max", json_duration(p->dark_wake_max_usec)) < 0)
		goto fail;

	j = child(root, "jail");
	snprintf(buf, sizeof(buf), "%g%%", p->busy_threshold * 100.0);
	if (!j || set_new(j, "cgroup", json_string(p->cgroup_path)) < 0 ||
	    set_new(j, "cpu_cgroup", json_string(p->cpu_cgroup_path)) < 0 ||
	    set_new(j, "cpu_idle", json_boolean(p->cpu_idle)) < 0 ||
	    set_new(j, "timer_slack", json_duration(p->timer_slack_nsec / NSEC_PER_USEC)) < 0 ||
	    set_new(j, "busy_threshold", json_string(buf)) < 0 ||
	    set_new(j, "sample_window", json_duration(p->sample_window_usec)) < 0)
		goto fail;

	e = child(root, "escalation");
	l = e ? json_array() : NULL;
	if (!l || set_new(e, "ladder", l) < 0)
		goto fail;
	for (size_t i = 0; i < p->n_rungs; i++) {
		json_t *o = json_object();

		if (!o || json_array_append_new(l, o) < 0 ||
		    set_new(o, "name", json_string(p->rungs[i].name)) < 0 ||
		    set_new(o, "action", json_string(qj_action_to_string(p->rungs[i].action))) <
			    0 ||
		    set_new(o, "grace", json_duration(p->rungs[i].grace_usec)) < 0)
			goto fail;
	}
	if (set_new(e, "max_strikes", json_integer(p->max_strikes)) < 0 ||
	    set_new(e, "strike_rung", json_string(p->rungs[p->strike_rung].name)) < 0 ||
	    set_new(e, "quiesce_bound", json_duration(qj_policy_quiesce_bound_usec(p))) < 0)
		goto fail;

	apps = json_array();
	if (!apps || set_new(root, "apps", apps) < 0)
		goto fail;
	for (size_t i = 0; i < p->n_apps; i++)
		if (json_array_append_new(apps, json_app(p, &p->apps[i])) < 0)
			goto fail;

	a = child(root, "access");
	if (!a || set_new(a, "place", json_principals(&p->access_place)) < 0 ||
	    set_new(a, "reload", json_principals(&p->access_reload)) < 0 ||
	    set_new(a, "suspend", json_principals(&p->access_suspend)) < 0 ||
	    set_new(a, "logs", json_principals(&p->access_logs)) < 0 ||
	    set_new(a, "hold", json_principals(&p->access_hold)) < 0 ||
	    set_new(a, "delay", json_principals(&p->access_delay)) < 0 ||
	    set_new(a, "place_as", json_place_as(p)) < 0)
		goto fail;

	lg = child(root, "log");
	if (!lg || set_new(lg, "path", json_string(p->log_path)) < 0 ||
	    set_new(lg, "max_size", json_string(qj_units_format_size(p->log_max_bytes, buf))) < 0 ||
	    set_new(lg, "keep", json_integer(p->log_keep)) < 0)
		goto fail;

	lg = child(root, "logind");
	if (!lg || set_new(lg, "bridge", json_boolean(p->logind_bridge)) < 0 ||
	    set_new(lg, "inhibitors", json_principals(&p->logind_inhibitors)) < 0 ||
	    set_new(lg, "absent_max", json_duration(p->logind_absent_max_usec)) < 0 ||
	    set_new(lg, "idle_hint", json_boolean(p->logind_idle_hint)) < 0)
		goto fail;

	lim = child(root, "limits");
	if (!lim || set_new(lim, "clients", json_integer(p->max_clients)) < 0 ||
	    set_new(lim, "clients_per_uid", json_integer(p->max_clients_per_uid)) < 0 ||
	    set_new(lim, "holds_per_uid", json_integer(p->max_holds_per_uid)) < 0 ||
	    set_new(lim, "holds_per_connection", json_integer(p->max_holds_per_conn)) < 0)
		goto fail;
	return root;
fail:
	json_decref(root);
	return NULL;
}

int qj_policy_dump_json(const struct qj_policy *p, FILE *f)
{
	json_t *root = policy_to_json(p);
	int r;

	if (!root)
		return -ENOMEM;
	r = json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (r < 0 || fputc('\n', f) == EOF)
		return -EIO;
	return 0;
}
