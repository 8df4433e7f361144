// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The jail in systemd's delegated cgroup (issue 28).  A cgroup of the test subtree
 * stands in for qosjaild.service with Delegate=yes (trusted.delegate=1, as systemd
 * marks it); the daemon is started in it with the policy's default jail path.  It must
 * move itself into the leaf UNIT/supervisor and make the jail at UNIT/jail (never the
 * default path outside the unit); an app started there stays there, running, through a
 * restart of the daemon, which again starts in the unit's cgroup.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup.h"
#include "daemon-harness.h"
#include "itest.h"
#include "qosjail.h"
#include "util.h"

static const char first[] = "version: 1\n"
			    "suspend: { backend: dry-run, idle_delay: 1h }\n"
			    "jail: { cgroup: @CG@, cpu_cgroup: @CPU@ }\n"
			    "apps:\n"
			    "  - name: app\n";
/* The shipped policies' path, which means "the system's place for the jail". */
static const char deleg[] = "version: 1\n"
			    "suspend: { backend: dry-run, idle_delay: 1h }\n"
			    "jail: { cgroup: /sys/fs/cgroup/unified/qosjail, cpu_cgroup: @CPU@ }\n"
			    "apps:\n"
			    "  - name: app\n";

static void v2_of(pid_t pid, char *buf, size_t size)
{
	char path[64], text[2048];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(text, sizeof(text), f))
		if (strncmp(text, "0::", 3) == 0) {
			text[strcspn(text, "\n")] = '\0';
			snprintf(buf, size, "/sys/fs/cgroup/unified%s", text + 3);
		}
	fclose(f);
}

/* Starts the daemon with this process in @unit, as systemd starts a service's main process. */
static void start_in(struct harness *h, const char *unit)
{
	char procs[512], home[4096], home_procs[4200];

	v2_of(getpid(), home, sizeof(home));
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", unit);
	snprintf(home_procs, sizeof(home_procs), "%s/cgroup.procs", home);
	assert_int_equal(qj_write_file(procs, "0"), 0);
	assert_int_equal(harness_respawn(h), 0);
	assert_int_equal(qj_write_file(home_procs, "0"), 0);
}

static void test_jail_in_delegated_unit(void **state)
{
	struct harness h;
	char unit[512], leaf[600], jail[600], app[700], cg[4096];
	char *argv[] = { "/bin/sleep", "600", NULL };
	bool had_default = access("/sys/fs/cgroup/unified/qosjail", F_OK) == 0;
	struct qj_conn *c = NULL;
	pid_t child;
	json_t *st;

	(void)state;
	assert_int_equal(harness_start(&h, first), 0);
	assert_int_equal(harness_stop(&h), 0);
	snprintf(unit, sizeof(unit), "%s/qosjaild.service", h.it->cg_path);
	snprintf(leaf, sizeof(leaf), "%s/supervisor", unit);
	snprintf(jail, sizeof(jail), "%s/jail", unit);
	snprintf(app, sizeof(app), "%s/app", jail);
	assert_int_equal(mkdir(unit, 0755), 0);
	assert_int_equal(setxattr(unit, "trusted.delegate", "1", 1, 0), 0);
	assert_int_equal(harness_write_policy(&h, h.policy, deleg), 0);

	start_in(&h, unit);
	v2_of(h.pid, cg, sizeof(cg));
	assert_string_equal(cg, leaf);
	assert_int_equal(access(jail, F_OK), 0);
	assert_true(had_default || access("/sys/fs/cgroup/unified/qosjail", F_OK) < 0);
	st = harness_status(&h);
	assert_non_null(st);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(st, "jail"), "cgroup")), jail);
	json_decref(st);

	assert_int_equal(qj_open(h.socket, &c), 0);
	assert_int_equal(qj_spawn(c, "app", argv, &child, NULL), 0);
	qj_close(c);
	harness_track(child);
	v2_of(child, cg, sizeof(cg));
	assert_string_equal(cg, app);

	/* systemctl restart: the new main process starts in the unit's cgroup again. */
	assert_int_equal(harness_stop(&h), 0);
	start_in(&h, unit);
	v2_of(h.pid, cg, sizeof(cg));
	assert_string_equal(cg, leaf);
	v2_of(child, cg, sizeof(cg));
	assert_string_equal(cg, app);
	assert_int_equal(kill(child, 0), 0);
	st = harness_status(&h);
	assert_non_null(st);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "jail"), "tasks")),
			 1);
	json_decref(st);

	assert_int_equal(harness_stop(&h), 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	for (int i = 0; i < 100 && rmdir(app) < 0 && errno == EBUSY; i++)
		usleep(10 * 1000);
	assert_int_equal(rmdir(jail), 0);
	assert_int_equal(rmdir(leaf), 0);
	assert_int_equal(rmdir(unit), 0);
	harness_cleanup(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jail_in_delegated_unit),
	};
	int r = harness_need_root("integration/delegate");

	if (r >= 0)
		return r;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
