// SPDX-License-Identifier: LGPL-2.1-or-later
/* qosjailctl: argument parsing and dispatch only; each verb lives in ctl-<verb>.c. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "log.h"
#include "util.h"

struct verb {
	const char *name;
	int (*run)(int argc, char **argv, const struct ctl_options *o);
	const char *summary;
};

static const struct verb verbs[] = {
	{ "check", ctl_check, "check [--dump] [--quiet] FILE...   validate policy files" },
	{ "status", ctl_status,
	  "status [--json]                   daemon state, cycle, jail, holds" },
	{ "holds", ctl_holds,
	  "holds [--json]                    live holds and per-name statistics" },
	{ "hold", ctl_hold, "hold --name N --why W [--timeout T] -- CMD...   hold while CMD runs" },
	{ "run", ctl_run, "run --app NAME [--] CMD...        start CMD inside the app's jail" },
	{ "place", ctl_place,
	  "place --app NAME PID...          move processes into the app's jail" },
	{ "suspend", ctl_suspend, "suspend                           start a suspend cycle now" },
	{ "reload", ctl_reload, "reload [FILE]                     reload the policy atomically" },
	{ "log", ctl_log, "log [--app A] [--since 12h] [-F]  kill log: actions, cycle summaries" },
	{ "monitor", ctl_monitor,
	  "monitor [--json] [--count N]      suspend cycle events as they happen" },
	{ "explain", ctl_explain,
	  "explain [--json] PID              why PID is (not) jailed, what a quiesce would do" },
	{ "metrics", ctl_metrics,
	  "metrics                           counters, Prometheus text format" },
	{ "report", ctl_report,
	  "report --html FILE [--since 12h]  timeline of holds, cycles and actions (HTML)" },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: qosjailctl [--socket PATH] VERB [ARGS...]\n\n"
		   "Control qosjaild and validate qosjail policies.\n\nVerbs:\n");
	for (const struct verb *v = verbs; v < verbs + ARRAY_SIZE(verbs); v++)
		fprintf(f, "  %s\n", v->summary);
	fprintf(f, "\nOptions:\n"
		   "  -s, --socket PATH    qosjaild socket (default /run/qosjail/qosjail.sock)\n"
		   "  -h, --help           show this help\n"
		   "  -V, --version        show the version\n\n"
		   "Run 'qosjailctl VERB --help' for a verb's options; see qosjailctl(1).\n"
		   "Exit status: 0 success, 1 failure, 2 invalid policy or usage.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "socket", required_argument, NULL, 's' },
					      { "help", no_argument, NULL, 'h' },
					      { "version", no_argument, NULL, 'V' },
					      {} };
	struct ctl_options o = { .socket_path = getenv("QOSJAIL_SOCKET") };
	int c;

	qj_log_open("qosjailctl", true, LOG_WARNING);
	/* '+': stop at the verb, its options are its own. */
	while ((c = getopt_long(argc, argv, "+s:hV", opts, NULL)) >= 0) {
		switch (c) {
		case 's':
			o.socket_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return CTL_EXIT_OK;
		case 'V':
			printf("qosjailctl %s\n", QJ_VERSION);
			return CTL_EXIT_OK;
		default:
			usage(stderr);
			return CTL_EXIT_INVALID;
		}
	}
	if (!o.socket_path)
		o.socket_path = "/run/qosjail/qosjail.sock";
	if (optind >= argc) {
		usage(stderr);
		return CTL_EXIT_INVALID;
	}
	for (const struct verb *v = verbs; v < verbs + ARRAY_SIZE(verbs); v++)
		if (strcmp(argv[optind], v->name) == 0) {
			int first = optind;

			optind = 0; /* glibc: reinitialise getopt for the verb's own options */
			return v->run(argc - first, argv + first, &o);
		}
	fprintf(stderr, "qosjailctl: unknown verb '%s'; see qosjailctl --help\n", argv[optind]);
	return CTL_EXIT_INVALID;
}
