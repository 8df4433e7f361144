// SPDX-License-Identifier: LGPL-2.1-or-later
/* qosjaild: argument parsing and wiring only; the loop lives in daemon.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "util.h"

#define DEFAULT_POLICY QJ_SYSCONFDIR "/policy.yaml"
#define DEFAULT_SOCKET "/run/qosjail/qosjail.sock"
#define DEFAULT_STATE_DIR "/run/qosjail"

/* Exit statuses (qosjaild(8)): 0 clean exit, 1 runtime failure, 2 invalid usage or policy. */
enum { EXIT_INVALID = 2 };

static void usage(FILE *f)
{
	fprintf(f, "Usage: qosjaild [OPTIONS]\n\n"
		   "Keeps untrusted programs from keeping the system awake; suspends when no hold\n"
		   "is left.\n\n"
		   "  -p, --policy FILE     policy (default " DEFAULT_POLICY "; built-in defaults\n"
		   "                        when that file does not exist)\n"
		   "  -s, --socket PATH     listening socket (default " DEFAULT_SOCKET ")\n"
		   "  -S, --state-dir DIR   restart-safety state (default " DEFAULT_STATE_DIR ")\n"
		   "  -m, --metrics-file FILE  write the metrics (Prometheus text) there at start\n"
		   "                        and after each cycle, atomically (node_exporter's\n"
		   "                        textfile collector: a *.prom file in its directory)\n"
		   "  -d, --debug           log to stderr, debug level\n"
		   "  -h, --help            show this help\n"
		   "  -V, --version         show the version\n\n"
		   "Signals: SIGHUP reloads the policy, SIGTERM/SIGINT restore the jail and exit.\n"
		   "See qosjaild(8).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "policy", required_argument, NULL, 'p' },
					      { "socket", required_argument, NULL, 's' },
					      { "state-dir", required_argument, NULL, 'S' },
					      { "metrics-file", required_argument, NULL, 'm' },
					      { "debug", no_argument, NULL, 'd' },
					      { "help", no_argument, NULL, 'h' },
					      { "version", no_argument, NULL, 'V' },
					      {} };
	struct qj_daemon_config cfg = { .socket_path = DEFAULT_SOCKET,
					.state_dir = DEFAULT_STATE_DIR };
	struct qj_daemon *d = NULL;
	bool debug = false, stuck;
	int c, r;

	while ((c = getopt_long(argc, argv, "p:s:S:m:dhV", opts, NULL)) >= 0) {
		switch (c) {
		case 'p':
			cfg.policy_path = optarg;
			break;
		case 's':
			cfg.socket_path = optarg;
			break;
		case 'S':
			cfg.state_dir = optarg;
			break;
		case 'm':
			cfg.metrics_path = optarg;
			break;
		case 'd':
			debug = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		case 'V':
			printf("qosjaild %s\n", QJ_VERSION);
			return EXIT_SUCCESS;
		default:
			usage(stderr);
			return EXIT_INVALID;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "qosjaild: unexpected argument '%s'\n", argv[optind]);
		return EXIT_INVALID;
	}
	qj_log_open("qosjaild", debug, debug ? LOG_DEBUG : LOG_INFO);
	if (!cfg.policy_path && access(DEFAULT_POLICY, F_OK) == 0)
		cfg.policy_path = DEFAULT_POLICY;

	qj_log_set_starting(true);
	r = qj_daemon_new(&cfg, &d);
	qj_log_set_starting(false);
	if (r == -EINVAL)
		return EXIT_INVALID;
	if (r < 0)
		return EXIT_FAILURE;
	r = qj_daemon_run(d);
	stuck = qj_daemon_reads_running(d);
	qj_daemon_free(d); /* the jail is restored: nothing below may wait */
	if (stuck)
		_exit(r < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
