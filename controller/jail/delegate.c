// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Where the jail lives (issue 28).  Under systemd, qosjaild.service has Delegate=yes:
 * its cgroup is ours to change, systemd marks it with the xattr trusted.delegate=1,
 * and the jail is made inside it.  The daemon first moves itself into the leaf
 * "supervisor" (cgroup2 lets only leaves hold processes once controllers are enabled,
 * and systemd's delegation rules ask a delegated manager to keep its own processes in a
 * leaf), then enables the cpu controller for its children so the jail gets cpu.idle.
 * Without systemd (the development host, the busybox guest) nothing moves and the
 * policy's path is used; the default path follows the layout.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cgroup.h"
#include "delegate.h"
#include "log.h"
#include "util.h"

#define SUPERVISOR "supervisor"

static bool delegated(const char *dir)
{
	char v[8] = "";
	ssize_t n = getxattr(dir, "trusted.delegate", v, sizeof(v) - 1);

	return n > 0 && v[0] == '1';
}

/* Our own cgroup2 directory (mount + the "0::" path of /proc/self/cgroup). */
static int own_cgroup(const char *mount, char **ret)
{
	_cleanup_free_ char *s = NULL;
	int r = qj_read_file("/proc/self/cgroup", &s);

	if (r < 0)
		return r;
	for (char *line = s, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next = 0, next++;
		if (strncmp(line, "0::", 3) != 0)
			continue;
		if (asprintf(ret, "%s%s", mount, strcmp(line + 3, "/") == 0 ? "" : line + 3) < 0)
			return -ENOMEM;
		return 0;
	}
	return -ENOENT;
}

int qj_delegate_unit(char **ret_unit)
{
	_cleanup_free_ char *mount = NULL, *own = NULL;
	enum qj_cg_layout layout;
	char *slash;
	int r;

	*ret_unit = NULL;
	r = qj_cgroup_detect(&layout, &mount);
	if (r < 0 || layout == QJ_CG_LEGACY)
		return 0;
	r = own_cgroup(mount, &own);
	if (r < 0)
		return r;
	/* Moved already (a re-exec, or a second look): the unit is the leaf's parent. */
	slash = strrchr(own, '/');
	if (slash && strcmp(slash + 1, SUPERVISOR) == 0) {
		*slash = 0;
		if (!delegated(own))
			*slash = '/';
	}
	if (!delegated(own))
		return 0;
	*ret_unit = TAKE_PTR(own);
	return 1;
}

int qj_delegate_enter(void)
{
	_cleanup_free_ char *unit = NULL, *leaf = NULL, *procs = NULL, *ctl = NULL;
	int r = qj_delegate_unit(&unit);

	if (r <= 0)
		return r;
	if (asprintf(&leaf, "%s/" SUPERVISOR, unit) < 0 ||
	    asprintf(&procs, "%s/cgroup.procs", leaf) < 0 ||
	    asprintf(&ctl, "%s/cgroup.subtree_control", unit) < 0)
		return -ENOMEM;
	if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
		return log_error_errno(negative_errno(), "Cannot make %s: %m", leaf);
	r = qj_write_file(procs, "0");
	if (r < 0)
		return log_error_errno(r, "Cannot move qosjaild into %s: %m", leaf);
	/* Best effort: without the cpu controller the jail has no cpu.idle (logged there). */
	r = qj_write_file(ctl, "+cpu");
	if (r < 0)
		log_info_errno(r, "No cpu controller for the jail in %s: %m", unit);
	log_info("Delegated cgroup %s: qosjaild in %s, the jail beside it", unit, leaf);
	return 1;
}

int qj_delegate_jail_path(const char *policy_path, char **ret)
{
	_cleanup_free_ char *unit = NULL, *mount = NULL;
	enum qj_cg_layout layout;
	int r;

	*ret = NULL;
	if (strcmp(policy_path, QJ_DEFAULT_JAIL) != 0)
		return 0;
	r = qj_delegate_unit(&unit);
	if (r < 0)
		return r;
	if (r > 0)
		return asprintf(ret, "%s/jail", unit) < 0 ? -ENOMEM : 1;
	r = qj_cgroup_detect(&layout, &mount);
	if (r < 0 || layout != QJ_CG_UNIFIED)
		return 0;
	return asprintf(ret, "%s/qosjail", mount) < 0 ? -ENOMEM : 1;
}
