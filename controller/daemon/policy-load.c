// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The policy as qosjaild runs it (see daemon-internal.h): the file or the defaults,
 * group names of the access lists resolved, the default jail path placed where this
 * system wants it.
 */
#include <grp.h>
#include <stdlib.h>

#include "daemon-internal.h"
#include "delegate.h"
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
