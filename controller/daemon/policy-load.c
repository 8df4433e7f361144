// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The policy as qosjaild runs it (see daemon-internal.h): the file or the defaults,
 * group names of the access lists resolved, the default jail path placed where this
 * system wants it; a reload (SIGHUP and the request alike) swaps it all or nothing and
 * has the backend, the engine, the cycle and the logind bridge follow.
 */
#include <grp.h>
#include <stdlib.h>
#include <string.h>

#include "daemon-internal.h"
#include "backend.h"
#include "delegate.h"
#include "engine.h"
#include "events.h"
#include "holds.h"
#include "logind-idle.h"
#include "logind.h"
#include "log.h"
#include "policy.h"

static int lookup_group(const char *group, gid_t *ret_gid, void *userdata)
{
	struct group gr, *res = NULL;
	char buf[4096];
	int r;

	(void)userdata;
	r = getgrnam_r(group, &gr, buf, sizeof(buf), &res);
	if (r != 0)
		return -r;
	if (!res)
		return -ENOENT;
	*ret_gid = gr.gr_gid;
	return 0;
}

/* The default jail path means "where this system wants it" (jail/delegate.c). */
static int place_jail(struct qj_policy *p)
{
	char *path = NULL;
	int r = qj_delegate_jail_path(p->cgroup_path, &path);

	if (r <= 0)
		return r;
	free(p->cgroup_path);
	p->cgroup_path = path;
	return 0;
}

int qj_daemon_load_policy(const char *path, struct qj_diags *diags, struct qj_policy **ret)
{
	struct qj_policy *p = NULL;
	int r;

	r = path ? qj_policy_load(path, diags, &p) : qj_policy_new_default(&p);
	if (r < 0)
		return r;
	r = qj_policy_resolve_groups(p, lookup_group, NULL);
	if (r < 0) {
		qj_policy_free(p);
		return r;
	}
	if (r > 0)
		log_warning("%d group name(s) in the access lists of %s do not exist, ignoring", r,
			    path ? path : "the defaults");
	r = place_jail(p);
	if (r < 0) {
		qj_policy_free(p);
		return r;
	}
	*ret = p;
	return 0;
}

/*
 * Starts, stops or re-decides the logind bridge as the running policy says.  A bridge
 * whose bus went away is started again here: a reload is how an operator brings it back.
 */
void qj_daemon_logind_follow_policy(struct qj_daemon *d)
{
	const struct qj_logind_handles handles = { .loop = d->loop,
						   .holds = d->holds,
						   .holds_changed = &d->holds_work,
						   .policy = &d->policy,
						   .app_gen = &d->app_gen,
						   .engine = d->engine,
						   .membership = d->membership };
	bool idle = d->policy->logind_bridge && d->policy->logind_idle_hint;
	int r;

	if (d->logind_idle && (!idle || !qj_logind_idle_connected(d->logind_idle)))
		d->logind_idle = qj_logind_idle_free(d->logind_idle);
	if (idle && !d->logind_idle) {
		r = qj_logind_idle_new(&handles, &d->logind_idle);
		if (r < 0)
			log_info_errno(r, "logind idle hint off: no system bus (%m)");
		else
			log_info("logind idle hint on: an active local session that is not idle "
				 "holds the system awake");
	}
	if (d->logind && (!d->policy->logind_bridge || !qj_logind_connected(d->logind)))
		d->logind = qj_logind_free(d->logind);
	if (d->logind) {
		qj_logind_recheck(d->logind, true);
		return;
	}
	if (!d->policy->logind_bridge)
		return;
	r = qj_logind_new(&handles, &d->logind);
	if (r < 0)
		log_info_errno(r, "logind bridge off: no system bus (%m); logind's inhibitors are "
				  "not followed");
	else
		log_info("logind bridge on: sleep inhibitors in block mode are holds");
}

static int apply_policy(struct qj_daemon *d, struct qj_policy *p)
{
	int r;

	if (qj_power_running(d->power))
		return -EBUSY;
	r = qj_power_configure(d->power, p);
	if (r < 0)
		return r;
	if (d->engine) {
		r = qj_engine_set_policy(d->engine, p);
		if (r < 0) {
			(void)qj_power_configure(d->power, d->policy);
			return r;
		}
	}
	qj_cycle_configure(&d->cycle, p->idle_delay_usec, p->retry_initial_usec, p->retry_max_usec);
	qj_cycle_set_keep_quiesced(&d->cycle, p->dark_wake_keep, p->dark_wake_max_usec);
	qj_events_set_max_delay(d->events, p->max_delay_usec);
	qj_ipc_set_limits(d->ipc, p->max_clients, p->max_clients_per_uid);
	qj_policy_free(d->policy);
	d->policy = p;
	d->app_gen++;
	qj_daemon_logind_follow_policy(d);
	return 0;
}

int qj_daemon_reload(struct qj_daemon *d, const char *path, struct qj_diags *diags)
{
	_cleanup_free_ char *copy = NULL;
	struct qj_policy *p = NULL;
	int r;

	if (path != d->policy_path) {
		copy = strdup(path);
		if (!copy)
			return -ENOMEM;
	}
	r = qj_daemon_load_policy(path, diags, &p);
	if (r < 0)
		return r;
	r = apply_policy(d, p);
	if (r < 0) {
		qj_policy_free(p);
		return r;
	}
	if (copy) {
		free(d->policy_path);
		d->policy_path = TAKE_PTR(copy);
	}
	/* The idle delay may have changed. */
	qj_daemon_apply(d, qj_cycle_on_holds(&d->cycle, qj_holds_count(d->holds), qj_daemon_now()));
	return 0;
}
