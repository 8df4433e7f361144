// SPDX-License-Identifier: GPL-2.0
/*
 * Guest-side helper of kernel/scripts/system (static, runs in the QEMU guest
 * only): what busybox sh cannot do.
 *
 *   clocks         prints "BOOTTIME_NS MONOTONIC_NS": their difference grows by
 *                  the time the guest spent suspended
 *   evdev-hold     creates a uinput keyboard, opens its event node, opts in to
 *                  the QOS_EVENTUALLY hold (EVIOCSQOSHOLD) and presses a key;
 *                  prints "READY evdev/eventN"; on SIGUSR1 reads the events and
 *                  prints "READ"; on SIGTERM removes the device and exits
 *   gate FILE      a jailed app that catches SIGXCPU and spins until FILE
 *                  exists, then blocks: it holds a quiesce up for as long as
 *                  the script wants
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/uinput.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#ifndef EVIOCSQOSHOLD
#define EVIOCSQOSHOLD _IOW('E', 0xa1, int)
#endif

static long long ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int clocks(void)
{
	printf("%lld %lld\n", ns(CLOCK_BOOTTIME), ns(CLOCK_MONOTONIC));
	return 0;
}

static int die(const char *what)
{
	fprintf(stderr, "qj-system-tool: %s: %s\n", what, strerror(errno));
	return 1;
}

static void emit(int fd, int type, int code, int value)
{
	struct input_event ev = { .type = type, .code = code, .value = value };

	if (write(fd, &ev, sizeof(ev)) != sizeof(ev))
		(void)die("uinput write");
}

static int evdev_hold(void)
{
	struct uinput_setup us = { .id = { BUS_VIRTUAL, 0x1, 0x2, 1 } };
	char sys[64], path[128], evpath[64] = "";
	struct input_event ev[16];
	int ufd, efd, one = 1, sig, i;
	sigset_t ss;

	sigemptyset(&ss);
	sigaddset(&ss, SIGUSR1);
	sigaddset(&ss, SIGTERM);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	ufd = open("/dev/uinput", O_WRONLY | O_CLOEXEC);
	if (ufd < 0)
		return die("/dev/uinput");
	strcpy(us.name, "qj-system-keys");
	if (ioctl(ufd, UI_SET_EVBIT, EV_KEY) || ioctl(ufd, UI_SET_KEYBIT, KEY_A) ||
	    ioctl(ufd, UI_DEV_SETUP, &us) || ioctl(ufd, UI_DEV_CREATE) ||
	    ioctl(ufd, UI_GET_SYSNAME(sizeof(sys)), sys) < 0)
		return die("uinput setup");
	for (i = 0; i < 64 && !evpath[0]; i++) {
		snprintf(path, sizeof(path), "/sys/class/input/%s/event%d", sys, i);
		if (access(path, F_OK) == 0)
			snprintf(evpath, sizeof(evpath), "/dev/input/event%d", i);
	}
	/* devtmpfs creates the node asynchronously. */
	for (i = 0; i < 500 && evpath[0] && access(evpath, F_OK); i++)
		usleep(20000);
	efd = open(evpath, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (efd < 0)
		return die(evpath[0] ? evpath : "no event node");
	if (ioctl(efd, EVIOCSQOSHOLD, &one))
		return die("EVIOCSQOSHOLD");
	emit(ufd, EV_KEY, KEY_A, 1);
	emit(ufd, EV_SYN, SYN_REPORT, 0);
	emit(ufd, EV_KEY, KEY_A, 0);
	emit(ufd, EV_SYN, SYN_REPORT, 0);
	printf("READY evdev/%s\n", evpath + strlen("/dev/input/"));
	fflush(stdout);
	for (;;) {
		if (sigwait(&ss, &sig))
			return die("sigwait");
		if (sig == SIGTERM)
			break;
		while (read(efd, ev, sizeof(ev)) > 0)
			;
		printf("READ\n");
		fflush(stdout);
	}
	close(efd);
	ioctl(ufd, UI_DEV_DESTROY);
	close(ufd);
	return 0;
}

/* Caught (SigCgt), so the notify rung applies; it changes nothing here. */
static void on_xcpu(int sig)
{
	(void)sig;
}

static int gate(const char *file)
{
	struct sigaction sa = { .sa_handler = on_xcpu };

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGXCPU, &sa, NULL) < 0)
		return die("sigaction");
	printf("ready\n");
	fflush(stdout);
	while (access(file, F_OK) != 0)
		;
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "clocks"))
		return clocks();
	if (argc == 2 && !strcmp(argv[1], "evdev-hold"))
		return evdev_hold();
	if (argc == 3 && !strcmp(argv[1], "gate"))
		return gate(argv[2]);
	fprintf(stderr, "usage: qj-system-tool clocks | evdev-hold | gate FILE\n");
	return 2;
}
