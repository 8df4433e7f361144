// SPDX-License-Identifier: LGPL-2.1-or-later
/* qosjailctl check: validates policy files offline; no daemon needed. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "policy.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct qj_policy *, qj_policy_free);

static void check_usage(FILE *f)
{
	fprintf(f,
		"Usage: qosjailctl check [--dump] [--quiet] FILE...\n\n"
		"Validates qosjail policies (qosjail.yaml(5)).  Every error of every file is\n"
		"printed to stderr as FILE:LINE:COL: KEY.PATH: MESSAGE.\n\n"
		"  -d, --dump     print the effective policy (defaults filled in) as JSON\n"
		"  -q, --quiet    do not print 'FILE: ok' for valid files\n"
		"  -h, --help     show this help\n\n"
		"Exit status: 0 all files valid, 2 any file invalid or unreadable, 1 other failure.\n");
}

/* Returns CTL_EXIT_OK, CTL_EXIT_INVALID or CTL_EXIT_FAILURE for one file. */
static int check_one(const char *path, bool dump, bool quiet)
{
	_cleanup_(qj_policy_freep) struct qj_policy *p = NULL;
	struct qj_diags d = {};
	int r;

	r = qj_policy_load(path, &d, &p);
	if (r == -EINVAL) {
		qj_diags_print(&d, stderr);
		qj_diags_done(&d);
		return CTL_EXIT_INVALID;
	}
	qj_diags_done(&d);
	if (r == -ENOMEM) {
		fprintf(stderr, "%s: out of memory\n", path);
		return CTL_EXIT_FAILURE;
	}
	if (r < 0) {
		fprintf(stderr, "%s: cannot read policy: %s\n", path, strerror(-r));
		return CTL_EXIT_INVALID;
	}
	if (dump) {
		r = qj_policy_dump_json(p, stdout);
		if (r < 0) {
			fprintf(stderr, "%s: cannot print policy: %s\n", path, strerror(-r));
			return CTL_EXIT_FAILURE;
		}
	} else if (!quiet) {
		printf("%s: ok\n", path);
	}
	return CTL_EXIT_OK;
}

int ctl_check(int argc, char **argv, const struct ctl_options *o)
{
	static const struct option opts[] = { { "dump", no_argument, NULL, 'd' },
					      { "quiet", no_argument, NULL, 'q' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	bool dump = false, quiet = false;
	int c, ret = CTL_EXIT_OK;

	while ((c = getopt_long(argc, argv, "dqh", opts, NULL)) >= 0) {
		switch (c) {
		case 'd':
			dump = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			check_usage(stdout);
			return CTL_EXIT_OK;
		default:
			check_usage(stderr);
			return CTL_EXIT_INVALID;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "qosjailctl check: no policy file given\n");
		check_usage(stderr);
		return CTL_EXIT_INVALID;
	}
	for (int i = optind; i < argc; i++) {
		int r = check_one(argv[i], dump, quiet);

		/* Invalid wins over a plain failure: it is what the caller must fix. */
		if (r == CTL_EXIT_INVALID || (r != CTL_EXIT_OK && ret == CTL_EXIT_OK))
			ret = r;
	}
	if (fflush(stdout) != 0)
		return CTL_EXIT_FAILURE;
	return ret;
}
