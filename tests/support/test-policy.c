// SPDX-License-Identifier: LGPL-2.1-or-later
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "test-policy.h"
#include "util.h"

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
	struct qj_diags diags = {};
	struct qj_policy *p = NULL;
	char text[1024];
	int n;

	/* Through the parser, so a test policy has every default a real one has. */
	n = snprintf(text, sizeof(text),
		     "version: 1\n"
		     "suspend: { backend: dry-run }\n"
		     "jail: { timer_slack: 50ms, busy_threshold: 50%%, sample_window: 300ms }\n"
		     "escalation:\n"
		     "  ladder:\n"
		     "    - { name: sigxcpu, action: SIGXCPU, grace: %1$" PRIu64 "us }\n"
		     "    - { name: sigstop, action: SIGSTOP, grace: %1$" PRIu64 "us }\n"
		     "    - { name: sigterm, action: SIGTERM, grace: %1$" PRIu64 "us }\n"
		     "    - { name: sigkill, action: SIGKILL, grace: %1$" PRIu64 "us }\n"
		     "  max_strikes: 3\n"
		     "  strike_rung: sigstop\n"
		     "log: { max_size: 1M, keep: 3 }\n",
		     grace_usec);
	if (n < 0 || (size_t)n >= sizeof(text) ||
	    qj_policy_parse("<test>", text, (size_t)n, &diags, &p) < 0) {
		qj_diags_print(&diags, stderr);
		abort();
	}
	qj_diags_done(&diags);
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
