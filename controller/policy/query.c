// SPDX-License-Identifier: LGPL-2.1-or-later
/* Questions the daemon asks a policy: which app a process is, who may do what. */
#include <fnmatch.h>
#include <string.h>

#include "policy-internal.h"
#include "policy.h"
#include "util.h"

/* ---- queries ---------------------------------------------------------------------------- */

const struct qj_app *qj_policy_match(const struct qj_policy *p, const char *exe,
				     const char *cmdline, uid_t uid)
{
	for (size_t i = 0; i < p->n_apps; i++) {
		const struct qj_app *a = &p->apps[i];

		/* No rules at all: placed by name only (launchers), never by matching. */
		if (!a->match_exe && !a->match_cmdline && !a->has_match_uid)
			continue;
		if (a->match_exe && (!exe || fnmatch(a->match_exe, exe, 0) != 0))
			continue;
		if (a->match_cmdline && (!cmdline || fnmatch(a->match_cmdline, cmdline, 0) != 0))
			continue;
		if (a->has_match_uid && a->match_uid != uid)
			continue;
		return a;
	}
	return NULL;
}

const struct qj_app *qj_policy_match_without_cmdline(const struct qj_policy *p, const char *exe,
						     uid_t uid, bool *ret_needs_cmdline)
{
	const struct qj_app *jailed = NULL, *certain = NULL;
	bool depends = false;

	for (size_t i = 0; i < p->n_apps && !certain; i++) {
		const struct qj_app *a = &p->apps[i];

		if (!a->match_exe && !a->match_cmdline && !a->has_match_uid)
			continue;
		if (a->match_exe && (!exe || fnmatch(a->match_exe, exe, 0) != 0))
			continue;
		if (a->has_match_uid && a->match_uid != uid)
			continue;
		if (!a->match_cmdline)
			certain = a; /* matches whatever the cmdline: later apps cannot */
		else
			depends = true;
		if (!jailed && a->trust == QJ_TRUST_JAILED)
			jailed = a;
	}
	/* Every possible answer (the candidates, then @certain or no app) trusted: no read. */
	*ret_needs_cmdline = depends && jailed;
	return *ret_needs_cmdline ? jailed : certain;
}

uint64_t qj_policy_quiesce_bound_usec(const struct qj_policy *p)
{
	uint64_t ladder = 0;

	for (size_t i = 0; i < p->n_rungs; i++)
		ladder += p->rungs[i].grace_usec + p->sample_window_usec;
	return 2 * (p->sample_window_usec + ladder);
}

const struct qj_app *qj_policy_find_app(const struct qj_policy *p, const char *name)
{
	for (size_t i = 0; name && i < p->n_apps; i++)
		if (strcmp(p->apps[i].name, name) == 0)
			return &p->apps[i];
	return NULL;
}

bool qj_principals_allow(const struct qj_principals *pr, uid_t uid, const gid_t *gids,
			 size_t n_gids)
{
	if (pr->anyone)
		return true;
	for (size_t i = 0; i < pr->n_uids; i++)
		if (pr->uids[i] == uid)
			return true;
	for (size_t i = 0; i < pr->n_gids; i++)
		for (size_t j = 0; j < n_gids; j++)
			if (pr->gids[i] == gids[j])
				return true;
	return false;
}

bool qj_policy_may_place_as(const struct qj_policy *p, uid_t launcher, uid_t uid)
{
	if (uid == 0)
		return false;
	for (size_t i = 0; i < p->n_place_as; i++) {
		const struct qj_place_as *pa = &p->place_as[i];

		if (pa->launcher != launcher)
			continue;
		for (size_t j = 0; j < pa->n_uids; j++)
			if (uid >= pa->uids[j].first && uid <= pa->uids[j].last)
				return true;
	}
	return false;
}

static int principals_resolve(struct qj_principals *pr,
			      int (*lookup)(const char *group, gid_t *ret_gid, void *userdata),
			      void *userdata)
{
	int unresolved = 0;

	free(pr->gids);
	pr->n_gids = 0;
	pr->gids = calloc(pr->n_groups ? pr->n_groups : 1, sizeof(*pr->gids));
	if (!pr->gids)
		return -ENOMEM;
	for (size_t i = 0; i < pr->n_groups; i++) {
		gid_t g;
		int r = lookup(pr->groups[i], &g, userdata);

		if (r == -ENOMEM)
			return r;
		if (r < 0)
			unresolved++;
		else
			pr->gids[pr->n_gids++] = g;
	}
	return unresolved;
}

int qj_policy_resolve_groups(struct qj_policy *p,
			     int (*lookup)(const char *group, gid_t *ret_gid, void *userdata),
			     void *userdata)
{
	struct qj_principals *all[] = { &p->access_place,     &p->access_reload, &p->access_suspend,
					&p->access_logs,      &p->access_hold,	 &p->access_delay,
					&p->logind_inhibitors };
	int total = 0;

	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		int r = principals_resolve(all[i], lookup, userdata);

		if (r < 0)
			return r;
		total += r;
	}
	return total;
}
