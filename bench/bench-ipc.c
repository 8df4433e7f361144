// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * bench-ipc: hold+release round trips through libqosjail against a real
 * qosjaild, next to a raw SOCK_SEQPACKET echo of a 40-byte JSON message
 * measured in the same run under the same CPU placement (both on one CPU,
 * then on two CPUs).  Then 1000 connected clients: the daemon's RSS and the
 * round trip at that load.  Goals: <= 2x the raw echo, > 50k round trips/s
 * on one CPU, RSS < 16 MiB with 1000 clients.
 *
 * The VM's vCPUs are shared, so one long run of each side measures the
 * neighbours as much as us: the two sides alternate in short rounds and the
 * median of the per-round figures is reported, with the spread of the ratio.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon-harness.h"
#include "qosjail.h"
#include "util.h"

#define ROUNDS 4000 /* round trips per side per round */
#define N_ROUNDS 9

static const char policy[] = "version: 1\n"
			     "suspend: { backend: dry-run, idle_delay: 1h }\n"
			     "access: { hold: \"*\" }\n";

static void pin(pid_t pid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(pid, sizeof(set), &set) < 0)
		fprintf(stderr, "sched_setaffinity(%d, cpu %d): %m\n", pid, cpu);
}

/* Pins every thread of @pid (the daemon's worker too). */
static void pin_all(pid_t pid, int cpu)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "taskset -a -p -c %d %d >/dev/null", cpu, pid);
	if (system(cmd) != 0)
		pin(pid, cpu);
}

/* Raw echo: microseconds per round trip of a 40-byte message. */
static double raw_echo(int client_cpu, int server_cpu, int rounds)
{
	static const char msg[] = "{\"op\":\"hold\",\"name\":\"bench\",\"x\":\"0\"}";
	char buf[256];
	int sv[2];
	uint64_t t0, t1;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		pin(0, server_cpu);
		close(sv[0]);
		for (;;) {
			ssize_t n = recv(sv[1], buf, sizeof(buf), 0);

			if (n <= 0 || send(sv[1], buf, (size_t)n, 0) != n)
				_exit(0);
		}
	}
	close(sv[1]);
	pin(0, client_cpu);
	for (int i = 0; i < 1000; i++) { /* warm up */
		(void)!send(sv[0], msg, sizeof(msg) - 1, 0);
		(void)!recv(sv[0], buf, sizeof(buf), 0);
	}
	t0 = now_usec(CLOCK_MONOTONIC);
	for (int i = 0; i < rounds; i++) {
		(void)!send(sv[0], msg, sizeof(msg) - 1, 0);
		(void)!recv(sv[0], buf, sizeof(buf), 0);
	}
	t1 = now_usec(CLOCK_MONOTONIC);
	close(sv[0]);
	waitpid(pid, NULL, 0);
	return (double)(t1 - t0) / rounds;
}

/* Microseconds per request (a hold or a release), measured over hold+release pairs. */
static double ours(struct harness *h, int client_cpu, int daemon_cpu, int rounds)
{
	struct qj_conn *c = NULL;
	uint64_t t0, t1;

	pin_all(h->pid, daemon_cpu);
	pin(0, client_cpu);
	if (qj_open(h->socket, &c) < 0)
		return -1;
	for (int i = 0; i < 500; i++) {
		(void)qj_hold(c, "bench", "benchmark", 0, 0);
		(void)qj_release(c, "bench");
	}
	t0 = now_usec(CLOCK_MONOTONIC);
	for (int i = 0; i < rounds; i++) {
		if (qj_hold(c, "bench", "benchmark", 0, 0) < 0 || qj_release(c, "bench") < 0) {
			qj_close(c);
			return -1;
		}
	}
	t1 = now_usec(CLOCK_MONOTONIC);
	qj_close(c);
	return (double)(t1 - t0) / (2.0 * rounds);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct result {
	double raw, our, ratio, ratio_min, ratio_max;
};

/* Alternates raw echo and hold/release rounds under one placement; medians. */
static int measure(struct harness *h, int client_cpu, int server_cpu, int rounds,
		   struct result *ret)
{
	double raw[N_ROUNDS], our[N_ROUNDS], ratio[N_ROUNDS];

	for (int i = 0; i < N_ROUNDS; i++) {
		raw[i] = raw_echo(client_cpu, server_cpu, rounds);
		our[i] = ours(h, client_cpu, server_cpu, rounds / 2);
		if (raw[i] <= 0 || our[i] <= 0)
			return -1;
		ratio[i] = our[i] / raw[i];
	}
	ret->raw = median(raw, N_ROUNDS);
	ret->our = median(our, N_ROUNDS);
	ret->ratio = median(ratio, N_ROUNDS);
	ret->ratio_min = ratio[0];
	ret->ratio_max = ratio[N_ROUNDS - 1];
	return 0;
}

static void report(const char *what, const struct result *r)
{
	printf("%-26s raw echo %6.2f us (%6.0f/s)  hold|release %6.2f us (%6.0f/s)  "
	       "ratio %.2fx (rounds %.2f-%.2f)\n",
	       what, r->raw, 1e6 / r->raw, r->our, 1e6 / r->our, r->ratio, r->ratio_min,
	       r->ratio_max);
}

int main(void)
{
	struct rlimit rl = { .rlim_cur = 4096, .rlim_max = 4096 };
	struct result same, cross, loaded;
	struct qj_conn **conns;
	struct harness h;
	long rss_start, rss_loaded;
	int n = 0;

	harness_debug = false; /* no log write per request */
	if (harness_start(&h, policy) < 0) {
		fprintf(stderr, "cannot start qosjaild (root and cgroup2 needed)\n");
		return 1;
	}
	rss_start = harness_rss_kib(h.pid);
	printf("bench-ipc: %d rounds of %d round trips per side, 40-byte raw echo vs libqosjail "
	       "hold/release; medians\n",
	       N_ROUNDS, ROUNDS);
	if (measure(&h, 0, 0, ROUNDS, &same) < 0 || measure(&h, 0, 1, ROUNDS / 8, &cross) < 0) {
		fprintf(stderr, "a round failed\n");
		harness_stop(&h);
		harness_cleanup(&h);
		return 1;
	}
	report("same CPU (0/0):", &same);
	report("different CPUs (0/1):", &cross);

	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < 4096) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	conns = calloc(1000, sizeof(*conns));
	for (n = 0; conns && n < 1000; n++) {
		char name[32];

		snprintf(name, sizeof(name), "idle-%d", n);
		if (qj_open(h.socket, &conns[n]) < 0 || qj_hold(conns[n], name, "load", 0, 0) < 0)
			break;
	}
	rss_loaded = harness_rss_kib(h.pid);
	printf("1000 clients: %d connected, each holding; qosjaild RSS %ld KiB at start, "
	       "%ld KiB loaded (goal < 16384)\n",
	       n, rss_start, rss_loaded);
	if (measure(&h, 0, 0, ROUNDS, &loaded) == 0)
		report("same CPU, 1000 clients:", &loaded);
	printf("goals: ratio <= 2x: %s; > 50k rt/s same CPU: %s; RSS < 16 MiB: %s\n",
	       same.ratio <= 2 ? "met" : "NOT met", 1e6 / same.our > 50000 ? "met" : "NOT met",
	       rss_loaded < 16384 ? "met" : "NOT met");
	for (int i = 0; i < n; i++)
		qj_close(conns[i]);
	free(conns);
	harness_stop(&h);
	harness_cleanup(&h);
	return 0;
}
