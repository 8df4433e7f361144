// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * bench-daemon-idle: an idle qosjaild (no holds, idle_delay far away, nothing
 * pending) must not wake up: voluntary context switches over 60 s (goal 0)
 * and RSS after start (goal < 4 MiB), next to the same figures for a process
 * doing nothing but pause() (the floor) measured in the same run, and the
 * number of processes the machine created meanwhile (proc connector events).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon-harness.h"

static const char policy[] = "version: 1\n"
			     "suspend: { backend: dry-run, idle_delay: 1h }\n";

/* Processes created on the whole machine so far (/proc/stat "processes"). */
static long forks_total(void)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/stat", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "processes %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Voluntary context switches summed over every thread of @pid. */
static long vcsw(pid_t pid)
{
	char cmd[128], out[64] = "";
	FILE *p;

	snprintf(
		cmd, sizeof(cmd),
		"cat /proc/%d/task/*/status | awk '/^voluntary_ctxt_switches/ {s+=$2} END {print s}'",
		pid);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (!fgets(out, sizeof(out), p))
		out[0] = '\0';
	pclose(p);
	return strtol(out, NULL, 10);
}

int main(int argc, char **argv)
{
	unsigned seconds = argc > 1 ? (unsigned)atoi(argv[1]) : 60;
	struct harness h;
	long d0, d1, f0, f1, p0, p1, rss;
	pid_t floor_pid;

	harness_debug = false; /* no log write per request */
	if (harness_start(&h, policy) < 0) {
		fprintf(stderr, "cannot start qosjaild (root and cgroup2 needed)\n");
		return 1;
	}
	floor_pid = fork();
	if (floor_pid == 0) {
		pause();
		_exit(0);
	}
	sleep(1); /* let start-up settle */
	rss = harness_rss_kib(h.pid);
	d0 = vcsw(h.pid);
	f0 = vcsw(floor_pid);
	p0 = forks_total();
	sleep(seconds);
	d1 = vcsw(h.pid);
	f1 = vcsw(floor_pid);
	p1 = forks_total();
	printf("bench-daemon-idle over %u s: qosjaild %ld voluntary context switches (goal 0), "
	       "pause() floor %ld; qosjaild RSS %ld KiB after start (goal < 4096)\n",
	       seconds, d1 - d0, f1 - f0, rss);
	/* The jail engine's proc connector hears every fork/exec/exit on the machine
	 * (kernel-side filtering needs 6.6+): on a busy machine that is the floor. */
	printf("machine: %ld processes created meanwhile (each fork/exec/exit is a proc "
	       "connector event qosjaild must classify)\n",
	       p1 - p0);
	kill(floor_pid, SIGKILL);
	waitpid(floor_pid, NULL, 0);
	harness_stop(&h);
	harness_cleanup(&h);
	return 0;
}
