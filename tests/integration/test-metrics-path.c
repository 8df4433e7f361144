// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The metrics file is written as root into a directory on a path another user may own
 * part of (issue 24).  The attacker: uid 65534, owner of the textfile directory's parent,
 * swaps the directory for a symlink to a root-only directory.  Real daemon, dry-run.
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
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "qosjail.h"
#include "util.h"

#define NOBODY 65534

static const char policy[] =
	"version: 1\n"
	"suspend: { backend: dry-run, idle_delay: 1h, dry_run_length: 10ms }\n";

static char base[] = "/tmp/qj-mpath-XXXXXX";
static char path[512], secret[512];

static void cleanup(void)
{
	char cmd[600];

	if (base[strlen(base) - 1] != 'X') {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
		(void)!system(cmd);
	}
	snprintf(base, sizeof(base), "/tmp/qj-mpath-XXXXXX");
}

/* base (root, 0755) / parent (uid 65534) / textfile (uid 65534), and base/secret (root, 0700). */
static void make_tree(void)
{
	char dir[512];

	assert_non_null(mkdtemp(base));
	assert_int_equal(chmod(base, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/parent", base);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(chown(dir, NOBODY, NOBODY), 0);
	snprintf(dir, sizeof(dir), "%s/parent/textfile", base);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(chown(dir, NOBODY, NOBODY), 0);
	snprintf(secret, sizeof(secret), "%s/secret", base);
	assert_int_equal(mkdir(secret, 0700), 0);
	snprintf(path, sizeof(path), "%s/parent/textfile/qosjail.prom", base);
}

/* The attacker, as uid 65534: textfile -> textfile.old, and textfile -> ../secret. */
static int swap(void *arg)
{
	char dir[512], old[520];

	(void)arg;
	snprintf(dir, sizeof(dir), "%s/parent/textfile", base);
	snprintf(old, sizeof(old), "%s.old", dir);
	if (rename(dir, old) < 0 || symlink(secret, dir) < 0)
		return 1;
	return 0;
}

static bool exists_in(const char *dir, const char *name)
{
	char p[600];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static int setup(void **state)
{
	int r;

	make_tree();
	harness_metrics_file = path;
	r = harness_setup(state, policy);
	harness_metrics_file = NULL;
	return r;
}

static int teardown(void **state)
{
	int r = harness_teardown(state);

	cleanup();
	return r;
}

/* One cycle, after which the daemon writes the metrics file. */
static void run_cycle(struct harness *h)
{
	struct qj_conn *c = NULL;
	long long before = harness_wait_int(h, "dry_runs", 0, 0);

	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_suspend(c), 0);
	assert_true(harness_wait_int(h, "dry_runs", before + 1, 30000) > before);
	/* The cycle is over once the daemon waits for idleness again: the file is written. */
	assert_true(harness_wait_state(h, "idle-wait", 30000));
	qj_close(c);
}

/*
 * A path whose textfile directory sits in a directory uid 65534 owns: nothing is ever
 * written through it, the swap notwithstanding, and the log says why.  Before the fix
 * the next cycle wrote qosjail.prom into the root-only directory.
 */
static void test_metrics_path_swapped_by_parent_owner(void **state)
{
	struct harness *h = *state;

	REQUIRE_HARNESS(h);
	assert_int_equal(harness_run_as(NOBODY, swap, NULL), 0);
	run_cycle(h);
	if (exists_in(secret, "qosjail.prom")) {
		harness_dump_log(h);
		fail_msg("root wrote the metrics file into %s through a swapped directory", secret);
	}
	assert_true(harness_log_has(h, "Refusing to write the metrics file"));
}

/*
 * A path of root's directories down to a textfile directory another user owns (as
 * node_exporter's is): written there.  Its directory is held from start: swapped for a
 * symlink afterwards, the file still goes to the directory opened then, never through
 * the link.
 */
static void test_metrics_dir_held_from_start(void **state)
{
	struct harness *h = *state;
	char dir[512], old[520], file[600];

	REQUIRE_HARNESS(h);
	/* base/parent back to root's: the textfile directory stays uid 65534's. */
	snprintf(dir, sizeof(dir), "%s/parent", base);
	assert_int_equal(chown(dir, 0, 0), 0);
	harness_metrics_file = path;
	assert_int_equal(harness_restart(h), 0);
	harness_metrics_file = NULL;
	run_cycle(h);
	snprintf(dir, sizeof(dir), "%s/parent/textfile", base);
	assert_true(exists_in(dir, "qosjail.prom"));
	snprintf(old, sizeof(old), "%s.old", dir);
	assert_int_equal(rename(dir, old), 0);
	assert_int_equal(symlink(secret, dir), 0);
	snprintf(file, sizeof(file), "%s/qosjail.prom", old);
	assert_int_equal(unlink(file), 0);
	run_cycle(h);
	assert_true(exists_in(old, "qosjail.prom"));
	assert_false(exists_in(secret, "qosjail.prom"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_metrics_path_swapped_by_parent_owner, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_metrics_dir_held_from_start, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
