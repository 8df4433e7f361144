// SPDX-License-Identifier: LGPL-2.1-or-later
#include <stdlib.h>
#include <string.h>

#include "test-policy.h"
#include "util.h"

static void *xcalloc(size_t n, size_t s)
{
	void *p = calloc(n, s);

	if (!p)
		abort();
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		abort();
	return d;
}

void qj_test_policy_add_rung(struct qj_policy *p, enum qj_action a, uint64_t grace_usec)
{
	static const char *const names[] = { "sigxcpu", "sigstop", "sigterm", "sigkill", "freeze" };

	if (p->n_rungs >= QJ_POLICY_MAX_RUNGS)
		abort();
	p->rungs[p->n_rungs].name = xstrdup(names[a]);
	p->rungs[p->n_rungs].action = a;
	p->rungs[p->n_rungs].grace_usec = grace_usec;
	p->n_rungs++;
	for (size_t i = 0; i < p->n_apps; i++)
		p->apps[i].max_rung = (int)p->n_rungs - 1;
}

void qj_test_policy_set_ladder(struct qj_policy *p, const enum qj_action *actions, size_t n,
			       uint64_t grace_usec)
{
	for (size_t i = 0; i < p->n_rungs; i++)
		free(p->rungs[i].name);
	p->n_rungs = 0;
	for (size_t i = 0; i < n; i++)
		qj_test_policy_add_rung(p, actions[i], grace_usec);
}

struct qj_policy *qj_test_policy_new(uint64_t grace_usec)
{
	struct qj_policy *p = xcalloc(1, sizeof(*p));

	p->source = xstrdup("<test>");
	p->backend = QJ_BACKEND_DRY_RUN;
	p->cgroup_path = xstrdup("/sys/fs/cgroup/unified/qosjail");
	p->cpu_cgroup_path = xstrdup("/sys/fs/cgroup/cpu/qosjail");
	p->cpu_idle = true;
	p->timer_slack_nsec = 50 * 1000 * 1000;
	p->busy_threshold = 0.5;
	p->sample_window_usec = 300 * USEC_PER_MSEC;
	qj_test_policy_add_rung(p, QJ_ACTION_SIGXCPU, grace_usec);
	qj_test_policy_add_rung(p, QJ_ACTION_SIGSTOP, grace_usec);
	qj_test_policy_add_rung(p, QJ_ACTION_SIGTERM, grace_usec);
	qj_test_policy_add_rung(p, QJ_ACTION_SIGKILL, grace_usec);
	p->max_strikes = 3;
	p->strike_rung = 1;
	p->log_max_bytes = 1024 * 1024;
	p->log_keep = 3;
	return p;
}

struct qj_app *qj_test_policy_add_app(struct qj_policy *p, const char *name)
{
	struct qj_app *apps = realloc(p->apps, (p->n_apps + 1) * sizeof(*apps));
	struct qj_app *a;

	if (!apps)
		abort();
	p->apps = apps;
	a = &p->apps[p->n_apps++];
	memset(a, 0, sizeof(*a));
	a->name = xstrdup(name);
	a->trust = QJ_TRUST_JAILED;
	a->start_rung = 0;
	a->max_rung = (int)p->n_rungs - 1;
	return a;
}

void qj_test_policy_free(struct qj_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_rungs; i++)
		free(p->rungs[i].name);
	for (size_t i = 0; i < p->n_apps; i++) {
		free(p->apps[i].name);
		free(p->apps[i].match_exe);
		free(p->apps[i].match_cmdline);
	}
	free(p->apps);
	free(p->source);
	free(p->cgroup_path);
	free(p->cpu_cgroup_path);
	free(p->log_path);
	free(p);
}
