// SPDX-License-Identifier: GPL-2.0
/*
 * qos-e2e: end-to-end checks of the QOS_EVENTUALLY series, run as part of
 * the initramfs of kernel/scripts/e2e inside QEMU (never on a host: it
 * suspends the machine it runs on).
 *
 * Prints one "QJ-E2E: PASS|FAIL <check>: <detail>" line per check (a)-(x)
 * ((w) and (x), suspend-to-idle, are in qos-e2e-s2idle.c), "QJ-BENCH: ..."
 * lines for the micro-benchmark and "QJ-E2E: DONE" last.
 * Expects /sys/power/pm_test set (or real S3 with a wakeup source) and
 * debugfs at /sys/kernel/debug.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/input.h>
#include <linux/uinput.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qos-e2e.h"

#define DEV		"/dev/cpu_interactivity"
#define BENCH		"/sys/kernel/debug/qos_eventually_test/bench"
#define PM_DEBUG	"/sys/power/pm_debug_messages"
#define AUTOSLEEP	"/sys/power/autosleep"
#define WAKE_LOCK	"/sys/power/wake_lock"
#define WAKE_UNLOCK	"/sys/power/wake_unlock"

#ifndef EVIOCSQOSHOLD
#define EVIOCSQOSHOLD	_IOW('E', 0xa1, int)
#endif

static int failures;

void report(int ok, const char *check, const char *fmt, ...)
{
	va_list ap;

	printf("QJ-E2E: %s %s: ", ok ? "PASS" : "FAIL", check);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		failures++;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Write "qos" to /sys/power/state; return 0 or -errno. */
int write_qos(void)
{
	int fd = open(STATE, O_WRONLY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = write(fd, "qos", 3) == 3 ? 0 : -errno;
	close(fd);
	return r;
}

int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -errno;
	close(fd);
	return r;
}

/* Open /dev/cpu_interactivity and hold NAME; return the fd or -errno. */
static int hold(const char *name, int value)
{
	char buf[96];
	int fd = open(DEV, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	snprintf(buf, sizeof(buf), "%s %d\n", name, value);
	if (write(fd, buf, strlen(buf)) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* Fork a child that writes "qos"; it exits with the errno (0 on success). */
static pid_t spawn_qos(void)
{
	pid_t pid = fork();
	int fd;

	if (pid == 0) {
		/* Holders are per open file: do not keep the parent's open. */
		for (fd = 3; fd < 256; fd++)
			close(fd);
		_exit(-write_qos());
	}
	return pid;
}

/* Wait for @pid up to @ms; return its exit code, or -1 if still running. */
static int wait_child(pid_t pid, int ms)
{
	int status;
	double end = now() + ms / 1000.0;

	do {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
		sleep_ms(20);
	} while (now() < end);
	return -1;
}

int read_str(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	buf[0] = '\0';
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

#define WAKEUP_SOURCES	"/sys/kernel/debug/wakeup_sources"

/* Find @name in /sys/kernel/debug/wakeup_sources. */
int ws_row(const char *name, struct wsrow *r)
{
	static char buf[65536];
	ssize_t n, len = 0;
	char *line, *save;
	int fd = open(WAKEUP_SOURCES, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = '\0';
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%63s %ld %ld %ld %ld %ld %ld %ld %ld %ld",
			   r->name, &r->active_count, &r->event_count,
			   &r->wakeup_count, &r->expire_count, &r->active_since,
			   &r->total, &r->max, &r->last_change,
			   &r->prevent) == 10 && !strcmp(r->name, name))
			return 0;
	}
	return -ENOENT;
}

/* The /sys/class/wakeup/wakeupN directory whose name is @name, or -ENOENT. */
static int class_wakeup_find(const char *name, char *dir, size_t size)
{
	char path[128], buf[128];
	int i;

	for (i = 0; i < 512; i++) {
		snprintf(path, sizeof(path), "/sys/class/wakeup/wakeup%d/name", i);
		if (read_str(path, buf, sizeof(buf)))
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		if (!strcmp(buf, name)) {
			snprintf(dir, size, "/sys/class/wakeup/wakeup%d", i);
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Whether the wakeup source of request @name is active: 1, 0, or -1 if it
 * is not listed.  active_since is in ms: give a fresh activation time.
 */
static int ws_active(const char *name)
{
	struct wsrow w;

	sleep_ms(50);
	if (ws_row(name, &w))
		return -1;
	return w.active_since > 0;
}

static void check_a(void)
{
	double t = now();
	int r = write_qos();

	report(r == 0, "a", "qos with nothing held: %s after %.1f s",
	       r ? strerror(-r) : "suspended and resumed", now() - t);
}

static void check_b(void)
{
	int fd = hold("e2e-b", 1), code;
	pid_t pid;
	double t;

	if (fd < 0) {
		report(0, "b", "hold: %s", strerror(-fd));
		return;
	}
	pid = spawn_qos();
	code = wait_child(pid, 2000);
	if (code != -1) {
		close(fd);
		report(0, "b", "qos returned (%d) while held", code);
		return;
	}
	t = now();
	close(fd);
	code = wait_child(pid, 60000);
	report(code == 0, "b",
	       "qos blocked 2 s while held, then %s %.1f s after close",
	       code == 0 ? "suspended" : strerror(code), now() - t);
}

static void check_c(void)
{
	int32_t us = 10;
	int fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
	int hfd, r, r2;
	double t, dt;

	if (fd < 0 || write(fd, &us, sizeof(us)) != sizeof(us)) {
		report(0, "c", "cpu_dma_latency: %s", strerror(errno));
		return;
	}
	t = now();
	r = write_qos();
	dt = now() - t;
	/* Refused at once even while a QOS_EVENTUALLY request is held. */
	hfd = hold("e2e-c", 1);
	r2 = write_qos();
	if (hfd >= 0)
		close(hfd);
	close(fd);
	report(r == -ERANGE && r2 == -ERANGE && dt < 1.0, "c",
	       "10 us cpu latency request: %s in %.3f s, %s while held",
	       strerror(-r), dt, strerror(-r2));
}

/*
 * The latency veto is decided at entry and right before suspending, not
 * during the wait: a 10 us cpu latency request added while a "qos" write
 * waits on a held request does not end the wait; it fails the write with
 * ERANGE once the hold goes, as the request is still there.
 */
static void check_h(void)
{
	int32_t us = 10;
	int hfd = hold("e2e-h", 1), fd, code, waiting;
	pid_t pid;
	double t;

	if (hfd < 0) {
		report(0, "h", "hold: %s", strerror(-hfd));
		return;
	}
	pid = spawn_qos();
	code = wait_child(pid, 1000);
	if (code != -1) {
		close(hfd);
		report(0, "h", "qos returned (%s) while held",
		       strerror(code));
		return;
	}
	fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, &us, sizeof(us)) != sizeof(us)) {
		report(0, "h", "cpu_dma_latency: %s", strerror(errno));
		close(hfd);
		wait_child(pid, 60000);
		return;
	}
	code = wait_child(pid, 1500);
	waiting = code == -1;
	t = now();
	close(hfd);
	if (waiting)
		code = wait_child(pid, 10000);
	report(waiting && code == ERANGE, "h",
	       "10 us cpu latency request during the wait: qos %s; hold released: %s after %.2f s",
	       waiting ? "kept waiting" : "ended",
	       code == -1 ? "still waiting" :
	       code ? strerror(code) : "suspended", now() - t);
	close(fd);
	if (code == -1)
		wait_child(pid, 60000);
}

/*
 * A removed request leaves the wakeup sources and its statistics are
 * added up in their "deleted" line.
 */
static void check_i(void)
{
	struct wsrow d0, d1, r;
	int fd, ok;

	if (ws_row("deleted", &d0)) {
		report(0, "i", "no \"deleted\" line in %s", WAKEUP_SOURCES);
		return;
	}
	fd = hold("e2e-i", 1);
	if (fd < 0) {
		report(0, "i", "hold: %s", strerror(-fd));
		return;
	}
	sleep_ms(300);
	close(fd);
	ok = !ws_row("deleted", &d1) && ws_row("e2e-i", &r) == -ENOENT &&
	     d1.active_count == d0.active_count + 1 &&
	     d1.event_count == d0.event_count + 1 &&
	     d1.total > d0.total && d1.total - d0.total < 10000 &&
	     d1.active_since == 0;
	report(ok, "i",
	       "deleted line: active_count %ld -> %ld, event_count %ld -> %ld, total %ld -> %ld ms; e2e-i %s",
	       d0.active_count, d1.active_count, d0.event_count,
	       d1.event_count, d0.total, d1.total,
	       ws_row("e2e-i", &r) ? "gone" : "still listed");
}

/* /dev/kmsg from its end: only records printed from now on. */
static int kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/* Whether a kernel record printed since kmsg_open() contains @needle. */
static int kmsg_has(int fd, const char *needle)
{
	char rec[1024];
	ssize_t n;
	int found = 0;

	if (fd < 0)
		return 0;
	while ((n = read(fd, rec, sizeof(rec) - 1)) > 0 || (n < 0 && errno == EPIPE)) {
		if (n <= 0)
			continue;
		rec[n] = '\0';
		if (strstr(rec, needle))
			found = 1;
	}
	return found;
}


/*
 * "qos" suspends to the state "mem" stands for, the one selected in
 * /sys/power/mem_sleep (s2idle here), not always to S3; and it is listed.
 */
static void check_j(void)
{
	char state[256];
	int kfd, r, s2idle;

	read_str(STATE, state, sizeof(state));
	if (write_str(MEM_SLEEP, "s2idle") || write_str(PM_TEST, "platform")) {
		report(0, "j", "cannot select s2idle with pm_test=platform");
		write_str(MEM_SLEEP, "deep");
		write_str(PM_TEST, "core");
		return;
	}
	kfd = kmsg_open();
	r = write_qos();
	s2idle = kmsg_has(kfd, "suspend entry (s2idle)");
	close(kfd);
	write_str(MEM_SLEEP, "deep");
	write_str(PM_TEST, "core");
	report(strstr(state, "qos") && r == 0 && s2idle, "j",
	       "mem_sleep=s2idle: qos %s, kernel log %s; \"qos\" %s in %s",
	       r ? strerror(-r) : "suspended",
	       s2idle ? "says s2idle" : "does not say s2idle",
	       strstr(state, "qos") ? "listed" : "NOT listed", STATE);
}

/* Fork a child that writes @text to @path; it exits with the errno. */
static pid_t spawn_write(const char *path, const char *text)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(-write_str(path, text));
	return pid;
}

/*
 * A writer of /sys/power/autosleep does not wait for a "qos" write that
 * waits for a constraint (it did while "qos" held pm_autosleep_lock).
 */
static void check_k(void)
{
	int hfd = hold("e2e-k", 1), code, acode;
	pid_t pid, apid;
	double t;

	if (hfd < 0) {
		report(0, "k", "hold: %s", strerror(-hfd));
		return;
	}
	pid = spawn_qos();
	if (wait_child(pid, 1000) != -1) {
		close(hfd);
		report(0, "k", "qos did not wait");
		return;
	}
	t = now();
	apid = spawn_write(AUTOSLEEP, "off");
	acode = wait_child(apid, 3000);
	t = now() - t;
	close(hfd);
	code = wait_child(pid, 60000);
	if (acode == -1)
		wait_child(apid, 60000);
	report(acode == 0 && code == 0, "k",
	       "autosleep write while qos waits: %s after %.2f s; qos then %s",
	       acode == -1 ? "HUNG" : acode ? strerror(acode) : "done", t,
	       code ? strerror(code) : "suspended");
}

static void on_signal(int sig)
{
	(void)sig;
}

static void check_d(void)
{
	struct sigaction sa = { .sa_handler = on_signal };	/* no SA_RESTART */
	int fd = hold("e2e-d", 1), r;
	pid_t parent = getpid(), pid;
	double t;

	if (fd < 0) {
		report(0, "d", "hold: %s", strerror(-fd));
		return;
	}
	sigaction(SIGUSR1, &sa, NULL);
	t = now();
	pid = fork();
	if (pid == 0) {
		sleep_ms(1000);
		kill(parent, SIGUSR1);
		_exit(0);
	}
	r = write_qos();
	waitpid(pid, NULL, 0);
	close(fd);
	report(r == -EINTR, "d", "SIGUSR1 during the wait: %s after %.1f s",
	       r ? strerror(-r) : "suspended", now() - t);
}

/*
 * A request added during the transition makes "qos" back out, and the
 * abort names it (pm_print_active_wakeup_sources(), with pm_debug_messages).
 */
static void check_e(void)
{
	struct wsrow row;
	int r, r2, kfd, named;

	r = write_str(INJECT, "e2e-inject");
	if (r) {
		report(0, "e", "inject: %s", strerror(-r));
		return;
	}
	write_str(PM_DEBUG, "1");
	kfd = kmsg_open();
	r = write_qos();
	named = kmsg_has(kfd, "active wakeup source: e2e-inject");
	close(kfd);
	write_str(PM_DEBUG, "0");
	/* The injected request was removed after the attempt; suspend works. */
	r2 = write_qos();
	report(r == -EAGAIN && r2 == 0 && named && ws_row("e2e-inject", &row),
	       "e", "request added mid-transition: %s, the abort %s; next qos: %s",
	       r ? strerror(-r) : "suspended anyway",
	       named ? "names it" : "does NOT name it",
	       r2 ? strerror(-r2) : "suspended");
}

/*
 * A request's statistics are its wakeup source's: the same numbers in
 * the wakeup_sources debugfs file and in /sys/class/wakeup.
 */
static void check_f(void)
{
	char dir[64] = "", path[96], buf[32];
	struct wsrow d;
	double t1, t2;
	long held, active, sys_ac = -1, sys_ec = -1;
	int fd, ok;

	t1 = now();
	fd = hold("e2e-f", 1);
	if (fd < 0) {
		report(0, "f", "hold: %s", strerror(-fd));
		return;
	}
	sleep_ms(300);
	write(fd, "e2e-f 0\n", 8);
	held = (now() - t1) * 1000;
	write(fd, "e2e-f 0\n", 8);		/* no event, no activation */
	sleep_ms(100);
	t2 = now();			/* before the activation... */
	write(fd, "e2e-f 2\n", 8);
	write(fd, "e2e-f 3\n", 8);		/* an event, same activation */
	sleep_ms(1200);
	d.active_count = -1;
	ws_row("e2e-f", &d);
	active = (now() - t2) * 1000;	/* ...and after the read: an upper bound */
	if (d.active_count < 0 || class_wakeup_find("e2e-f", dir, sizeof(dir))) {
		report(0, "f", "e2e-f missing from wakeup_sources or /sys/class/wakeup");
		close(fd);
		return;
	}
	snprintf(path, sizeof(path), "%s/active_count", dir);
	if (!read_str(path, buf, sizeof(buf)))
		sys_ac = strtol(buf, NULL, 10);
	snprintf(path, sizeof(path), "%s/event_count", dir);
	if (!read_str(path, buf, sizeof(buf)))
		sys_ec = strtol(buf, NULL, 10);
	close(fd);
	/*
	 * Compare with what this process measured around the activation and
	 * the read (ktime_get() in the kernel, CLOCK_MONOTONIC here); the
	 * guest is emulated, so only bound it from below loosely.
	 */
	ok = d.active_count == 2 && d.event_count == 3 &&
	     d.active_since >= active / 2 - 20 &&
	     d.active_since <= active + 1 &&
	     d.total >= (held + active) / 2 - 40 && d.total < 10000 &&
	     d.max >= d.active_since && sys_ac == 2 && sys_ec == 3;
	report(ok, "f",
	       "wakeup_sources: active_count %ld event_count %ld active_since %ld total %ld max %ld (measured here: held %ld, active %ld); %s: active_count %ld event_count %ld",
	       d.active_count, d.event_count, d.active_since, d.total, d.max,
	       held, active, dir, sys_ac, sys_ec);
}

static int uinput_open(char *evpath, size_t size)
{
	struct uinput_setup us = { .id = { BUS_VIRTUAL, 0x1, 0x1, 1 } };
	char sys[64], path[128];
	int fd, i;

	fd = open("/dev/uinput", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	strcpy(us.name, "qos-e2e-keys");
	if (ioctl(fd, UI_SET_EVBIT, EV_KEY) || ioctl(fd, UI_SET_KEYBIT, KEY_A) ||
	    ioctl(fd, UI_DEV_SETUP, &us) || ioctl(fd, UI_DEV_CREATE) ||
	    ioctl(fd, UI_GET_SYSNAME(sizeof(sys)), sys) < 0) {
		close(fd);
		return -errno;
	}
	for (i = 0; i < 64; i++) {
		snprintf(path, sizeof(path), "/sys/class/input/%s/event%d", sys, i);
		if (access(path, F_OK) == 0) {
			snprintf(evpath, size, "/dev/input/event%d", i);
			break;
		}
	}
	for (i = 0; i < 100 && access(evpath, F_OK); i++)
		sleep_ms(20);			/* devtmpfs node */
	return fd;
}

static void emit(int fd, int type, int code, int value)
{
	struct input_event ev = { .type = type, .code = code, .value = value };

	write(fd, &ev, sizeof(ev));
}

/* Press and release KEY_A: two complete packets. */
static void press(int ufd)
{
	emit(ufd, EV_KEY, KEY_A, 1);
	emit(ufd, EV_SYN, SYN_REPORT, 0);
	emit(ufd, EV_KEY, KEY_A, 0);
	emit(ufd, EV_SYN, SYN_REPORT, 0);
}

static void check_g(void)
{
	char evpath[64] = "", name[80];
	struct input_event ev[16];
	int ufd, efd, code, held, one = 1;
	pid_t pid;
	double t;

	ufd = uinput_open(evpath, sizeof(evpath));
	if (ufd < 0 || !evpath[0]) {
		report(0, "g", "uinput: %s", strerror(ufd < 0 ? -ufd : ENOENT));
		return;
	}
	efd = open(evpath, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (efd < 0 || ioctl(efd, EVIOCSQOSHOLD, &one)) {
		report(0, "g", "%s: %s", evpath, strerror(errno));
		return;
	}
	press(ufd);
	snprintf(name, sizeof(name), "evdev/%s", evpath + strlen("/dev/input/"));
	held = ws_active(name) == 1;
	pid = spawn_qos();
	code = wait_child(pid, 1500);
	if (code != -1) {
		report(0, "g", "qos returned (%d) with unread events (%s held: %d)",
		       code, name, held);
		goto out;
	}
	t = now();
	while (read(efd, ev, sizeof(ev)) > 0)
		;
	code = wait_child(pid, 60000);
	report(held && code == 0, "g",
	       "%s held while unread, qos blocked 1.5 s, then %s %.1f s after read",
	       name, code == 0 ? "suspended" : strerror(code), now() - t);
out:
	close(efd);
	ioctl(ufd, UI_DEV_DESTROY);
	close(ufd);
}

/*
 * Unplug with events queued: reads fail with ENODEV from then on, so the
 * client's hold must go with the device, not wait for close().
 */
static void check_l(void)
{
	char evpath[64] = "", name[80];
	int ufd, efd, code, one = 1, held, after;
	pid_t pid;

	ufd = uinput_open(evpath, sizeof(evpath));
	if (ufd < 0 || !evpath[0]) {
		report(0, "l", "uinput: %s", strerror(ufd < 0 ? -ufd : ENOENT));
		return;
	}
	efd = open(evpath, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (efd < 0 || ioctl(efd, EVIOCSQOSHOLD, &one)) {
		report(0, "l", "%s: %s", evpath, strerror(errno));
		close(ufd);
		return;
	}
	press(ufd);
	snprintf(name, sizeof(name), "evdev/%s", evpath + strlen("/dev/input/"));
	held = ws_active(name) == 1;
	ioctl(ufd, UI_DEV_DESTROY);
	close(ufd);
	after = ws_active(name);
	pid = spawn_qos();		/* the unplugged client stays open */
	/* Long enough for a slow suspend; only a held write takes it all. */
	code = wait_child(pid, 60000);
	close(efd);
	if (code == -1)
		code = wait_child(pid, 60000) == 0 ? -2 : -3;
	report(held && after == 0 && code == 0, "l",
	       "%s held before unplug: %d, value after unplug: %d, qos with the dead client open: %s",
	       name, held, after,
	       code == 0 ? "suspended" : code == -2 ? "blocked until close" :
	       code == -3 ? "failed after close" : strerror(code));
}

static int drop_block_suspend(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[CAP_TO_INDEX(CAP_BLOCK_SUSPEND)].effective &= ~CAP_TO_MASK(CAP_BLOCK_SUSPEND);
	d[CAP_TO_INDEX(CAP_BLOCK_SUSPEND)].permitted &= ~CAP_TO_MASK(CAP_BLOCK_SUSPEND);
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

/*
 * Holding is a per-client opt-in that needs CAP_BLOCK_SUSPEND: without it
 * EVIOCSQOSHOLD fails with EPERM, and a client that did not opt in does
 * not hold "qos" off by leaving events unread.
 */
static void check_m(void)
{
	char evpath[64] = "";
	int ufd, efd, code, one = 1, status, perm;
	pid_t pid;

	ufd = uinput_open(evpath, sizeof(evpath));
	if (ufd < 0 || !evpath[0]) {
		report(0, "m", "uinput: %s", strerror(ufd < 0 ? -ufd : ENOENT));
		return;
	}
	pid = fork();
	if (pid == 0) {
		int fd, r = drop_block_suspend();

		if (r)
			_exit(100);
		fd = open(evpath, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(101);
		_exit(ioctl(fd, EVIOCSQOSHOLD, &one) ? errno : 0);
	}
	waitpid(pid, &status, 0);
	perm = WIFEXITED(status) ? WEXITSTATUS(status) : 255;

	efd = open(evpath, O_RDONLY | O_NONBLOCK | O_CLOEXEC);	/* no opt-in */
	press(ufd);
	pid = spawn_qos();
	/* Long enough for a slow suspend; only a held write takes it all. */
	code = wait_child(pid, 60000);
	close(efd);
	if (code == -1)
		code = wait_child(pid, 60000) == 0 ? -2 : -3;
	ioctl(ufd, UI_DEV_DESTROY);
	close(ufd);
	report(perm == EPERM && efd >= 0 && code == 0, "m",
	       "EVIOCSQOSHOLD without CAP_BLOCK_SUSPEND: %s; unread events of a client that did not opt in: qos %s",
	       perm == 0 ? "allowed" : perm >= 100 ? "test setup failed" : strerror(perm),
	       code == 0 ? "suspended" : code == -2 ? "blocked until close" :
	       code == -3 ? "failed after close" : strerror(code));
}

long read_long(const char *path)
{
	char buf[64];

	return read_str(path, buf, sizeof(buf)) ? -1 : strtol(buf, NULL, 10);
}

/*
 * A constraint that becomes active after tasks are frozen and devices are
 * suspended (syscore, interrupts off, one CPU) makes the suspend back out
 * through pm_wakeup_pending(): EAGAIN, and the next "qos" suspends.
 * suspend_stats counts the failure, not a success.
 */
static void check_n(void)
{
	struct wsrow row;
	long s0 = read_long(SUCCESS), f0 = read_long(FAIL), s1, f1;
	int r, r2;

	r = write_str(INJECT, "late e2e-late");
	if (r) {
		report(0, "n", "inject: %s", strerror(-r));
		return;
	}
	r = write_qos();
	s1 = read_long(SUCCESS);
	f1 = read_long(FAIL);
	r2 = write_qos();
	report(r == -EAGAIN && r2 == 0 && s1 == s0 && f1 == f0 + 1 &&
	       ws_row("e2e-late", &row) == -ENOENT, "n",
	       "request added in syscore suspend: %s (suspend_stats success %ld -> %ld, fail %ld -> %ld); next qos: %s",
	       r ? strerror(-r) : "suspended anyway", s0, s1, f0, f1,
	       r2 ? strerror(-r2) : "suspended");
}

/*
 * One truth for the wakeup_count protocol: with a constraint held,
 * reading /sys/power/wakeup_count blocks (a wakeup event is in progress)
 * until the constraint goes.
 */
static void check_o(void)
{
	char buf[32];
	int hfd = hold("e2e-o", 1), code;
	pid_t pid;

	if (hfd < 0) {
		report(0, "o", "hold: %s", strerror(-hfd));
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(hfd);	/* holders are per open file */
		_exit(read_str("/sys/power/wakeup_count", buf, sizeof(buf)) ? 1 : 0);
	}
	code = wait_child(pid, 1500);
	close(hfd);
	if (code == -1)
		code = wait_child(pid, 10000) == 0 ? -2 : -3;
	report(code == -2, "o",
	       "with a constraint held: wakeup_count read %s",
	       code == -2 ? "blocked until release" :
	       code == 0 ? "returned at once" : "failed");
}

/*
 * One truth: "qos" waits for an active wakeup source (a user space wake
 * lock here) as for a constraint; a second "qos" writer meanwhile gets
 * EBUSY at once; every real suspend counts in suspend_stats/success.
 */
static void check_p(void)
{
	long s0 = read_long(SUCCESS), s1;
	int r, r2, code;
	pid_t pid;
	double t;

	r = write_str(WAKE_LOCK, "e2e-p");
	if (r) {
		report(0, "p", "wake_lock: %s", strerror(-r));
		return;
	}
	pid = spawn_qos();
	code = wait_child(pid, 1500);
	t = now();
	r2 = code == -1 ? write_qos() : 0;
	t = now() - t;
	write_str(WAKE_UNLOCK, "e2e-p");
	if (code == -1)
		code = wait_child(pid, 60000);
	else
		code = -code - 1000;	/* returned while the wake lock was held */
	s1 = read_long(SUCCESS);
	report(code == 0 && r2 == -EBUSY && t < 1.0 && s1 == s0 + 1, "p",
	       "qos with a wake lock held: %s; a second qos meanwhile: %s in %.2f s; suspend_stats success %ld -> %ld",
	       code == 0 ? "waited, suspended after wake_unlock" :
	       code <= -1000 ? "did not wait" : strerror(code),
	       r2 ? strerror(-r2) : "suspended", t, s0, s1);
}

/* Kernel reports of a frozen lock holder or any other splat since @fd opened. */
static int kmsg_splat(int fd)
{
	char rec[1024];
	ssize_t n;
	int found = 0;

	if (fd < 0)
		return 0;
	while ((n = read(fd, rec, sizeof(rec) - 1)) > 0 || (n < 0 && errno == EPIPE)) {
		if (n <= 0)
			continue;
		rec[n] = '\0';
		if (strstr(rec, "WARNING:") || strstr(rec, "BUG:") ||
		    strstr(rec, "locks held") || strstr(rec, "lock held"))
			found = 1;
	}
	return found;
}

/*
 * Forced suspend stays forced: "mem" and "freeze" succeed while a
 * QOS_EVENTUALLY request is held, as they do while a wakeup source is
 * active (a lid close through logind, UPower's critical-battery action).
 */
static void check_q(void)
{
	long s0 = read_long(SUCCESS), s1;
	int hfd = hold("e2e-q", 1), r, rf;

	if (hfd < 0) {
		report(0, "q", "hold: %s", strerror(-hfd));
		return;
	}
	r = write_str(STATE, "mem");
	/* Suspend-to-idle takes no pm_test level past "platform". */
	write_str(PM_TEST, "platform");
	rf = write_str(STATE, "freeze");
	write_str(PM_TEST, "core");
	close(hfd);
	s1 = read_long(SUCCESS);
	report(r == 0 && rf == 0 && s1 == s0 + 2, "q",
	       "with a request held: mem %s, freeze %s; suspend_stats success %ld -> %ld",
	       r ? strerror(-r) : "suspended", rf ? strerror(-rf) : "suspended",
	       s0, s1);
}

/*
 * A suspend started by other means ("mem") while a "qos" write waits runs
 * the freezer on the writer: no WARNING (a task frozen with locks held),
 * and the write is restarted (it waits on, then suspends) or fails cleanly.
 */
static void check_r(void)
{
	long s0 = read_long(SUCCESS), s1;
	int kfd, r, code, splat, waiting;
	pid_t pid;

	r = write_str(WAKE_LOCK, "e2e-r");
	if (r) {
		report(0, "r", "wake_lock: %s", strerror(-r));
		return;
	}
	pid = spawn_qos();
	if (wait_child(pid, 1500) != -1) {
		write_str(WAKE_UNLOCK, "e2e-r");
		report(0, "r", "qos did not wait on the wake lock");
		return;
	}
	kfd = kmsg_open();
	r = write_str(STATE, "mem");		/* forced: freezes the writer */
	code = wait_child(pid, 1500);
	waiting = code == -1;
	write_str(WAKE_UNLOCK, "e2e-r");
	if (waiting)
		code = wait_child(pid, 60000);
	s1 = read_long(SUCCESS);
	splat = kmsg_splat(kfd);
	close(kfd);
	report(r == 0 && !splat && (code == 0 || code == EINTR) &&
	       s1 == s0 + 1 + (code == 0), "r",
	       "mem while qos waits: %s, %s; qos %s, then %s; suspend_stats success %ld -> %ld",
	       r ? strerror(-r) : "suspended",
	       splat ? "kernel WARNING/BUG/locks held" : "no warning",
	       waiting ? "still waiting (restarted)" : "ended",
	       code == -1 ? "hung" : code ? strerror(code) : "suspended", s0, s1);
}

/*
 * A key held down when a forced suspend starts: input_dev_suspend()
 * releases it, an opted-in evdev client gets the packet while suspending;
 * the forced suspend does not back out.
 */
static void check_s(void)
{
	char evpath[64] = "";
	struct input_event ev[16];
	long s0 = read_long(SUCCESS), s1;
	int ufd, efd, one = 1, r, released = 0, i;
	ssize_t n;

	ufd = uinput_open(evpath, sizeof(evpath));
	if (ufd < 0 || !evpath[0]) {
		report(0, "s", "uinput: %s", strerror(ufd < 0 ? -ufd : ENOENT));
		return;
	}
	efd = open(evpath, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (efd < 0 || ioctl(efd, EVIOCSQOSHOLD, &one)) {
		report(0, "s", "%s: %s", evpath, strerror(errno));
		close(ufd);
		return;
	}
	emit(ufd, EV_KEY, KEY_A, 1);		/* held down, not released */
	emit(ufd, EV_SYN, SYN_REPORT, 0);
	sleep_ms(100);
	while (read(efd, ev, sizeof(ev)) > 0)	/* read: nothing unread */
		;
	r = write_str(STATE, "mem");
	s1 = read_long(SUCCESS);
	while ((n = read(efd, ev, sizeof(ev))) > 0)
		for (i = 0; i < n / (ssize_t)sizeof(ev[0]); i++)
			if (ev[i].type == EV_KEY && ev[i].code == KEY_A &&
			    ev[i].value == 0)
				released = 1;
	close(efd);
	ioctl(ufd, UI_DEV_DESTROY);
	close(ufd);
	report(r == 0 && s1 == s0 + 1 && released, "s",
	       "KEY_A down at a forced mem: %s (success %ld -> %ld), release %s",
	       r ? strerror(-r) : "suspended", s0, s1,
	       released ? "delivered during the suspend" : "NOT seen");
}

/*
 * A transient cpu latency request (1 ms at latency 0, as i915 makes for
 * every DP AUX transfer) while "qos" waits does not end the wait with
 * ERANGE: the write goes on waiting and suspends once the hold goes.
 */
static void check_t(void)
{
	int32_t zero = 0;
	int hfd = hold("e2e-t", 1), fd, code, waiting;
	pid_t pid;

	if (hfd < 0) {
		report(0, "t", "hold: %s", strerror(-hfd));
		return;
	}
	pid = spawn_qos();
	if (wait_child(pid, 1000) != -1) {
		close(hfd);
		report(0, "t", "qos did not wait");
		return;
	}
	fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, &zero, sizeof(zero)) != sizeof(zero)) {
		report(0, "t", "cpu_dma_latency: %s", strerror(errno));
		close(hfd);
		wait_child(pid, 60000);
		return;
	}
	usleep(1000);
	close(fd);
	code = wait_child(pid, 1500);
	waiting = code == -1;
	close(hfd);
	if (waiting)
		code = wait_child(pid, 60000);
	report(waiting && code == 0, "t",
	       "1 ms latency-0 request during the wait: qos %s, then %s",
	       waiting ? "still waiting" : "ended", code == -1 ? "hung" :
	       code ? strerror(code) : "suspended");
}

/*
 * Requests are where people look: /sys/class/wakeup and the
 * wakeup_sources debugfs file, active while held, gone once removed.
 */
static void check_u(void)
{
	char dir[64] = "", path[96], buf[32];
	struct wsrow w;
	long ac = -1;
	int hfd = hold("e2e-u", 1), in_class, in_debugfs, gone;

	if (hfd < 0) {
		report(0, "u", "hold: %s", strerror(-hfd));
		return;
	}
	sleep_ms(100);
	in_class = !class_wakeup_find("e2e-u", dir, sizeof(dir));
	if (in_class) {
		snprintf(path, sizeof(path), "%s/active_count", dir);
		if (!read_str(path, buf, sizeof(buf)))
			ac = strtol(buf, NULL, 10);
	}
	in_debugfs = !ws_row("e2e-u", &w) && w.active_since > 0;
	close(hfd);
	gone = class_wakeup_find("e2e-u", dir, sizeof(dir)) == -ENOENT &&
	       ws_row("e2e-u", &w) == -ENOENT;
	report(in_class && ac == 1 && in_debugfs && gone, "u",
	       "held e2e-u: /sys/class/wakeup %s (active_count %ld), wakeup_sources %s; after close %s",
	       in_class ? dir : "NOT listed", ac,
	       in_debugfs ? "lists it active" : "does not list it active",
	       gone ? "gone from both" : "still listed");
}

/*
 * EBUSY for autosleep is decided at entry: with autosleep enabled (and
 * kept from suspending by a held request) "qos" fails at once, not after
 * waiting for the request.
 */
static void check_v(void)
{
	int hfd = hold("e2e-v", 1), r, code;
	pid_t pid;

	if (hfd < 0) {
		report(0, "v", "hold: %s", strerror(-hfd));
		return;
	}
	r = write_str(AUTOSLEEP, "mem");
	if (r) {
		close(hfd);
		report(0, "v", "autosleep mem: %s", strerror(-r));
		return;
	}
	pid = spawn_qos();
	code = wait_child(pid, 1500);
	/* Off before the hold goes, or autosleep suspends in a loop. */
	r = write_str(AUTOSLEEP, "off");
	close(hfd);
	if (code == -1)
		code = wait_child(pid, 60000) + 1000;	/* waited for the hold */
	report(code == EBUSY && r == 0, "v",
	       "qos with autosleep on and a request held: %s%s; autosleep off: %s",
	       code >= 1000 ? "waited for the request, then " : "at once ",
	       code % 1000 ? strerror(code % 1000) : "suspended",
	       r ? strerror(-r) : "done");
}

/*
 * A kernel built without CONFIG_PM_QOS_EVENTUALLY (kernel/scripts/config-off
 * --boot): "qos" is not listed and writing it fails with EINVAL, there is no
 * /dev/cpu_interactivity, and EVIOCSQOSHOLD fails with EOPNOTSUPP.
 */
static void check_off(void)
{
	char state[256] = "", evpath[64] = "";
	int r, dev, ufd, efd = -1, hold_err = 0, one = 1;

	read_str(STATE, state, sizeof(state));
	r = write_qos();
	dev = open(DEV, O_RDWR | O_CLOEXEC);
	dev = dev < 0 ? errno : (close(dev), 0);
	ufd = uinput_open(evpath, sizeof(evpath));
	if (ufd >= 0 && evpath[0])
		efd = open(evpath, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (efd >= 0 && ioctl(efd, EVIOCSQOSHOLD, &one))
		hold_err = errno;
	report(!strstr(state, "qos") && r == -EINVAL && dev == ENOENT &&
	       hold_err == EOPNOTSUPP, "off",
	       "\"qos\" %s; its write: %s; %s: %s; EVIOCSQOSHOLD: %s",
	       strstr(state, "qos") ? "listed" : "not listed",
	       r ? strerror(-r) : "accepted", DEV, dev ? strerror(dev) : "exists",
	       efd < 0 ? "no evdev client" :
	       hold_err ? strerror(hold_err) : "accepted");
	if (efd >= 0)
		close(efd);
	if (ufd >= 0) {
		ioctl(ufd, UI_DEV_DESTROY);
		close(ufd);
	}
}

static void bench(void)
{
	char buf[512];
	ssize_t n;
	int fd;

	if (write_str(BENCH, "1000000")) {
		printf("QJ-BENCH: unavailable: %s\n", strerror(errno));
		return;
	}
	fd = open(BENCH, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n > 0) {
		char *line, *save;

		buf[n] = '\0';
		for (line = strtok_r(buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save))
			printf("QJ-BENCH: %s\n", line);
	}
	if (fd >= 0)
		close(fd);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char buf[256] = "";
	int fd = open(STATE, O_RDONLY | O_CLOEXEC);

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (fd >= 0) {
		read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	printf("QJ-E2E: /sys/power/state: %s", buf);
	if (argc > 1 && !strcmp(argv[1], "bench")) {
		bench();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "off")) {
		check_off();
		printf("QJ-E2E: DONE %d failure(s)\n", failures);
		return failures ? 1 : 0;
	}
	check_a();
	check_b();
	check_c();
	check_d();
	check_e();
	check_f();
	check_g();
	check_h();
	check_i();
	check_j();
	check_k();
	check_l();
	check_m();
	check_n();
	check_o();
	check_p();
	check_q();
	check_r();
	check_s();
	check_t();
	check_u();
	check_v();
	check_w();
	check_x();
	bench();
	printf("QJ-E2E: DONE %d failure(s)\n", failures);
	return failures ? 1 : 0;
}
