// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for the daemon's request handler: a real qosjaild (daemon.c, ipc.c,
 * holds.c, the dry-run backend and its worker thread; no jail engine) on a socket in a
 * temporary directory, driven by a sequence of actions on up to four connections:
 * connect, send a request (from templates with fuzzed fields, or raw bytes), read the
 * replies, shut the read side, close, let the loop run (the dry-run suspend takes 2 ms),
 * SIGHUP.  Odd-numbered connections are jailed peers, so hold requests are deferred while
 * a suspend runs (issue 11 finding 1 lived there).  ASan, UBSan and LeakSanitizer judge.
 * Build and run with tests/fuzz/run --target daemon.
 *
 * Input: records of [action][connection][argument][payload...]; a "send raw" record takes
 * the argument's count of payload bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define N_CONNS 4

static char dir[64], socket_path[128], policy_path[128], state_dir[128];

static const char policy[] = "version: 1\n"
			     "suspend: { backend: dry-run, idle_delay: 1h, dry_run_length: 2ms }\n"
			     "apps:\n"
			     "  - name: app\n"
			     "    match: { exe: \"/nonexistent/app\" }\n"
			     "    holds: { max: 2 }\n"
			     "limits: { holds_per_connection: 4 }\n"
			     "log:\n"
			     "  path: %s/kill.log\n";

static int membership(uint64_t client_id, pid_t pid, const char **ret_app)
{
	(void)pid;
	*ret_app = client_id % 2 ? "app" : "";
	return client_id % 2 ? 1 : 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	FILE *f;

	(void)argc;
	(void)argv;
	qj_log_open("fuzz-daemon", true, getenv("QJ_FUZZ_LOG") ? LOG_DEBUG : LOG_EMERG);
	/* The host's system bus is not the fuzzer's business: the logind bridge stays off. */
	setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/qj-fuzz-bus", 1);
	snprintf(dir, sizeof(dir), "/tmp/qj-fuzz-daemon-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	snprintf(socket_path, sizeof(socket_path), "%s/qosjail.sock", dir);
	snprintf(policy_path, sizeof(policy_path), "%s/policy.yaml", dir);
	snprintf(state_dir, sizeof(state_dir), "%s/state", dir);
	f = fopen(policy_path, "we");
	if (!f)
		abort();
	fprintf(f, policy, dir);
	fclose(f);
	/* SIGHUP reaches the daemon's signalfd; a write to a closed peer is only EPIPE. */
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static const char *const templates[] = {
	"{\"op\":\"hello\",\"version\":1}",
	"{\"op\":\"hold\",\"name\":\"n%u\",\"reason\":\"r\"}",
	"{\"op\":\"hold\",\"name\":\"n%u\",\"reason\":\"r\",\"timeout_usec\":1000}",
	"{\"op\":\"hold\",\"name\":\"n%u\",\"reason\":\"r\",\"nonblock\":true}",
	"{\"op\":\"release\",\"name\":\"n%u\"}",
	"{\"op\":\"status\"}",
	"{\"op\":\"holds\"}",
	"{\"op\":\"suspend\"}",
	"{\"op\":\"place\",\"app\":\"app\",\"pid\":%u}",
	"{\"op\":\"spawn\",\"app\":\"app\"}",
	"{\"op\":\"explain\",\"pid\":%u}",
	"{\"op\":\"log\"}",
	"{\"op\":\"reload\"}",
	"{\"op\":\"hello\",\"version\":%u}",
};

/* Runs the loop until it has been idle for a moment (bounded). */
static void settle(struct qj_daemon *d, int rounds)
{
	for (int i = 0; i < rounds; i++)
		if (qj_daemon_step(d, i < 2 ? 0 : 3) <= 0 && i >= 2)
			break;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qj_daemon_config cfg = { .policy_path = policy_path,
					.socket_path = socket_path,
					.state_dir = state_dir,
					.no_engine = true,
					.membership = membership };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fds[N_CONNS] = { -1, -1, -1, -1 };
	struct qj_daemon *d = NULL;
	size_t i = 0;

	if (qj_daemon_new(&cfg, &d) < 0)
		abort();
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", socket_path);
	settle(d, 3);
	while (i + 3 <= size) {
		uint8_t action = data[i] % 8, conn = data[i + 1] % N_CONNS, arg = data[i + 2];
		int *fd = &fds[conn];
		char buf[65536 + 1];

		i += 3;
		switch (action) {
		case 0: /* connect */
			if (*fd >= 0)
				break;
			*fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
			if (*fd < 0 || connect(*fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
				abort();
			break;
		case 1: { /* send a templated request */
			const char *t = templates[arg % (sizeof(templates) / sizeof(templates[0]))];
			int n;

			if (*fd < 0)
				break;
			n = snprintf(buf, sizeof(buf), t, i < size ? data[i] : 0u);
			i += i < size;
			(void)send(*fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
			break;
		}
		case 2: { /* send raw bytes */
			size_t n = arg < size - i ? arg : size - i;

			if (*fd >= 0)
				(void)send(*fd, data + i, n, MSG_NOSIGNAL | MSG_DONTWAIT);
			i += n;
			break;
		}
		case 3: /* read every pending reply */
			while (*fd >= 0 && recv(*fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
				;
			break;
		case 4: /* the peer stops reading */
			if (*fd >= 0)
				(void)shutdown(*fd, SHUT_RD);
			break;
		case 5: /* disconnect */
			if (*fd >= 0)
				(void)close(*fd);
			*fd = -1;
			break;
		case 6: /* time passes: the dry-run suspend returns, deferred requests run */
			settle(d, 2 + arg % 8);
			break;
		case 7: /* reload */
			(void)raise(SIGHUP);
			break;
		}
		settle(d, 2);
	}
	for (int c = 0; c < N_CONNS; c++)
		if (fds[c] >= 0)
			(void)close(fds[c]);
	settle(d, 10);
	qj_daemon_free(d);
	/* A SIGHUP nobody read must not reach the next input's daemon. */
	{
		sigset_t ss;

		sigemptyset(&ss);
		sigaddset(&ss, SIGHUP);
		while (sigtimedwait(&ss, NULL, &(struct timespec){}) == SIGHUP)
			;
	}
	return 0;
}
