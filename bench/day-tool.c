// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest side of bench/day (issue 29), static, run in the QEMU guest only: the day's
 * programs and the first power manager.  Every measured event is one console line
 * "QJ-DAY: WHAT ..." with CLOCK_BOOTTIME and CLOCK_MONOTONIC in ns; the host reads
 * them (bench/day.py).
 *
 * A trusted program keeps the machine awake the way its manager offers (MODE):
 *   none      nothing (load-based idle suspend looks only at CPU use)
 *   wakelock  /sys/power/wake_lock (Android: autosleep), and EPOLLWAKEUP on its fds
 *   qosjail   a hold through qosjaild (qosjailctl hold -- CMD), EPOLLWAKEUP on its
 *             alarm fds, the evdev QOS hold (EVIOCSQOSHOLD) on the keyboard
 *
 *   as UID cap|nocap CMD...   runs CMD as UID (gid UID, no groups); "cap" keeps
 *                             CAP_BLOCK_SUSPEND (the WAKE_LOCK permission) ambient
 *   spin MS                   busy for MS ms (0: for ever)
 *   poll                      wakes every 10 ms for ever (the 10 ms poller)
 *   hop                       busy, a fresh process every 20-100 ms (fork-hopper)
 *   hog                       takes a wake lock at start (and asks qosjaild for a
 *                             hold when it runs) and never lets go
 *   chat MODE                 reads the PS/2 keyboard: one message a key press
 *   modem MODE T0 FIRST PERIOD END   an alarm (CLOCK_BOOTTIME_ALARM) at T0+FIRST s
 *                             and every PERIOD s until T0+END s: a 200 ms handler
 *   music MODE T0 N START END wakes (alarm) at T0+START s, plays until T0+END s
 *   play N END_NS             the player itself (under its manager's hold)
 *   until NS                  sleeps (alarm) until CLOCK_BOOTTIME NS, then takes the
 *                             wake lock "day-end" and exits
 *   loadsleep IDLE_S PCT      manager 1: "mem" once the CPUs were busy under PCT %
 *                             of one CPU for IDLE_S seconds in a row
 *   clocks                    prints "BOOTTIME_NS MONOTONIC_NS"
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/input.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef EVIOCSQOSHOLD
#define EVIOCSQOSHOLD _IOW('E', 0xa1, int)
#endif
#define NSEC_PER_SEC 1000000000LL
#define NSEC_PER_MSEC 1000000LL
#define KEYBOARD "AT Translated Set 2 keyboard"

enum mode { MODE_NONE, MODE_WAKELOCK, MODE_QOSJAIL };

static int64_t ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static int die(const char *what)
{
	fprintf(stderr, "day-tool: %s: %s\n", what, strerror(errno));
	return 1;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* One write a line: lines of several programs share the console. */
	if (n > 0)
		(void)!write(STDOUT_FILENO, buf,
			     (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static int parse_mode(const char *s, enum mode *ret)
{
	if (!strcmp(s, "none"))
		*ret = MODE_NONE;
	else if (!strcmp(s, "wakelock"))
		*ret = MODE_WAKELOCK;
	else if (!strcmp(s, "qosjail"))
		*ret = MODE_QOSJAIL;
	else
		return -EINVAL;
	return 0;
}

static int wake_lock(const char *name, bool on)
{
	int fd = open(on ? "/sys/power/wake_lock" : "/sys/power/wake_unlock", O_WRONLY | O_CLOEXEC);
	int r = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, name, strlen(name)) < 0)
		r = -errno;
	close(fd);
	return r;
}

static void burn_until(int64_t end)
{
	volatile uint64_t n = 0;

	while (ns(CLOCK_MONOTONIC) < end)
		for (int i = 0; i < 10000; i++)
			n++;
}

static int run_wait(char **argv)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Runs ARGV (a day-tool command) under NAME's hold of the manager; its exit status. */
static int run_held(enum mode m, const char *name, char **argv)
{
	char *held[32] = {
		"qosjailctl", "hold", "--name", (char *)name, "--why", "bench/day", "--"
	};
	int n = 7, r;

	if (m == MODE_QOSJAIL) {
		for (int i = 0; argv[i] && n < 31; i++)
			held[n++] = argv[i];
		held[n] = NULL;
		return run_wait(held);
	}
	if (m == MODE_WAKELOCK && wake_lock(name, true) < 0)
		say("QJ-DAY: ERROR wake_lock %s: %s\n", name, strerror(errno));
	r = run_wait(argv);
	if (m == MODE_WAKELOCK)
		(void)wake_lock(name, false);
	return r;
}

/* ---- the untrusted apps ---- */

static int as_user(int argc, char **argv)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = {};
	uid_t uid = (uid_t)atoi(argv[0]);
	bool cap = !strcmp(argv[1], "cap");

	if (argc < 3)
		return 2;
	if (cap && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return die("PR_SET_KEEPCAPS");
	if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
		return die("setuid");
	if (cap) {
		d[CAP_TO_INDEX(CAP_BLOCK_SUSPEND)].permitted = CAP_TO_MASK(CAP_BLOCK_SUSPEND);
		d[CAP_TO_INDEX(CAP_BLOCK_SUSPEND)].effective = CAP_TO_MASK(CAP_BLOCK_SUSPEND);
		d[CAP_TO_INDEX(CAP_BLOCK_SUSPEND)].inheritable = CAP_TO_MASK(CAP_BLOCK_SUSPEND);
		if (syscall(SYS_capset, &h, d) < 0 ||
		    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_BLOCK_SUSPEND, 0, 0) < 0)
			return die("CAP_BLOCK_SUSPEND");
	}
	execvp(argv[2], argv + 2);
	return die(argv[2]);
}

static int __attribute__((noreturn)) poller(void)
{
	struct timespec t = { 0, 10 * NSEC_PER_MSEC };

	for (;;)
		nanosleep(&t, NULL);
}

static int __attribute__((noreturn)) hopper(void)
{
	srand((unsigned)getpid());
	for (;;) {
		burn_until(ns(CLOCK_MONOTONIC) + (20 + rand() % 81) * NSEC_PER_MSEC);
		pid_t c = fork();

		if (c > 0)
			_exit(0);
		/* fork failed: carry on in this process */
	}
}

static int __attribute__((noreturn)) hog(void)
{
	char *hold[] = { "qosjailctl",	  "hold", "--name", "hog",	 "--why",
			 "never lets go", "--",	  "sleep",  "100000000", NULL };
	int r = wake_lock("hog", true);

	say("QJ-DAY: HOG wake_lock %s\n", r < 0 ? strerror(-r) : "held");
	if (access("/run/qosjail", F_OK) == 0) {
		r = run_wait(hold);
		say("QJ-DAY: HOG qosjail hold ended: exit %d\n", r);
	}
	for (;;)
		pause();
}

/* ---- the trusted apps ---- */

static int open_keyboard(int flags, char *path, size_t len)
{
	char name[128], f[300];
	struct dirent *e;
	DIR *d = opendir("/sys/class/input");
	int fd = -ENOENT;

	if (!d)
		return -errno;
	while ((e = readdir(d)) && fd < 0) {
		FILE *nf;

		if (strncmp(e->d_name, "event", 5))
			continue;
		snprintf(f, sizeof(f), "/sys/class/input/%s/device/name", e->d_name);
		nf = fopen(f, "re");
		if (!nf)
			continue;
		if (fgets(name, sizeof(name), nf) && !strncmp(name, KEYBOARD, strlen(KEYBOARD))) {
			snprintf(path, len, "/dev/input/%s", e->d_name);
			fd = open(path, flags | O_CLOEXEC);
			if (fd < 0)
				fd = -errno;
		}
		fclose(nf);
	}
	closedir(d);
	return fd;
}

static int epoll_on(int fd, bool wakeup)
{
	struct epoll_event ev = { .events = EPOLLIN | (wakeup ? EPOLLWAKEUP : 0u) };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	return ep;
}

static int64_t ev_ns(const struct input_event *e)
{
	return (int64_t)e->input_event_sec * NSEC_PER_SEC + (int64_t)e->input_event_usec * 1000;
}

/*
 * Two clients of the keyboard: B (CLOCK_BOOTTIME stamps; the one the manager's hold
 * is on) and M (CLOCK_MONOTONIC, no hold).  The same packet carries both clocks'
 * arrival time: when BOOTTIME - MONOTONIC grew between the arrival and the read,
 * the machine slept while the message waited (read late).
 */
static int chat(enum mode m)
{
	int clk_b = CLOCK_BOOTTIME, clk_m = CLOCK_MONOTONIC, one = 1, fb, fm, ep, n = 0;
	struct input_event eb[64], em[64];
	char path[300];
	ssize_t rb, rm;

	fb = open_keyboard(O_RDONLY, path, sizeof(path));
	fm = open_keyboard(O_RDONLY | O_NONBLOCK, path, sizeof(path));
	if (fb < 0 || fm < 0) {
		errno = -(fb < 0 ? fb : fm);
		return die("no " KEYBOARD);
	}
	if (ioctl(fb, EVIOCSCLOCKID, &clk_b) < 0 || ioctl(fm, EVIOCSCLOCKID, &clk_m) < 0)
		return die("EVIOCSCLOCKID");
	if (m == MODE_QOSJAIL && ioctl(fb, EVIOCSQOSHOLD, &one) < 0)
		return die("EVIOCSQOSHOLD");
	ep = epoll_on(fb, m == MODE_WAKELOCK);
	if (ep < 0) {
		errno = -ep;
		return die("epoll");
	}
	say("QJ-DAY: CHAT ready %s\n", path);
	for (;;) {
		struct epoll_event ev;

		if (epoll_wait(ep, &ev, 1, -1) < 0)
			continue;
		rb = read(fb, eb, sizeof(eb));
		rm = read(fm, em, sizeof(em));
		int64_t now_b = ns(CLOCK_BOOTTIME), now_m = ns(CLOCK_MONOTONIC);

		for (ssize_t i = 0, j = 0; i < rb / (ssize_t)sizeof(eb[0]); i++) {
			if (eb[i].type != EV_KEY || eb[i].value != 1)
				continue;
			/* the same press in M's queue */
			while (j < rm / (ssize_t)sizeof(em[0]) &&
			       (em[j].type != EV_KEY || em[j].value != 1))
				j++;
			int64_t arr_m = j < rm / (ssize_t)sizeof(em[0]) ? ev_ns(&em[j++]) : now_m;
			int64_t grew = (now_b - now_m) - (ev_ns(&eb[i]) - arr_m);

			say("QJ-DAY: MSG %d code %d arrived %lld read %lld slept_between %lld late %d\n",
			    ++n, eb[i].code, (long long)ev_ns(&eb[i]), (long long)now_b,
			    (long long)grew, grew > 50 * NSEC_PER_MSEC);
		}
	}
}

/* An alarm fd at CLOCK_BOOTTIME @at_ns (absolute), every @period_ns (0: once). */
static int alarm_fd(int64_t at_ns, int64_t period_ns)
{
	struct itimerspec it = {
		.it_value = { at_ns / NSEC_PER_SEC, at_ns % NSEC_PER_SEC },
		.it_interval = { period_ns / NSEC_PER_SEC, period_ns % NSEC_PER_SEC },
	};
	int fd = timerfd_create(CLOCK_BOOTTIME_ALARM, TFD_CLOEXEC);

	if (fd < 0 || timerfd_settime(fd, TFD_TIMER_ABSTIME, &it, NULL) < 0)
		return -errno;
	return fd;
}

/* Waits for the alarm (EPOLLWAKEUP unless MODE_NONE: the wake source stays active until
 * the next epoll_wait, so the handler's hold is taken before the machine may sleep). */
static int wait_alarm(int ep, int fd)
{
	struct epoll_event ev;
	uint64_t x;

	while (epoll_wait(ep, &ev, 1, -1) < 0)
		if (errno != EINTR)
			return -errno;
	return read(fd, &x, sizeof(x)) == sizeof(x) ? (int)x : -errno;
}

static int modem(enum mode m, int64_t t0, int first, int period, int end)
{
	char *work[] = { "day-tool", "spin", "200", NULL };
	int fd = alarm_fd(t0 + first * NSEC_PER_SEC, period * NSEC_PER_SEC), ep, n = 0;

	if (fd < 0 || (ep = epoll_on(fd, m != MODE_NONE)) < 0)
		return die("modem alarm");
	for (int64_t at = t0 + first * NSEC_PER_SEC; at < t0 + end * NSEC_PER_SEC;
	     at += period * NSEC_PER_SEC) {
		if (wait_alarm(ep, fd) < 0)
			return die("modem alarm");
		int64_t b0 = ns(CLOCK_BOOTTIME);
		int r = run_held(m, "modem", work);

		say("QJ-DAY: MODEM %d due %lld start %lld done %lld status %d\n", ++n,
		    (long long)at, (long long)b0, (long long)ns(CLOCK_BOOTTIME), r);
	}
	return 0;
}

static int music(enum mode m, int64_t t0, int w, int start, int end)
{
	char nb[16], eb[32];
	char *work[] = { "day-tool", "play", nb, eb, NULL };
	int fd = alarm_fd(t0 + start * NSEC_PER_SEC, 0), ep;

	if (fd < 0 || (ep = epoll_on(fd, m != MODE_NONE)) < 0)
		return die("music alarm");
	snprintf(nb, sizeof(nb), "%d", w);
	snprintf(eb, sizeof(eb), "%lld", (long long)(t0 + end * NSEC_PER_SEC));
	if (wait_alarm(ep, fd) < 0)
		return die("music alarm");
	return run_held(m, "music", work);
}

/* 20 ms frames on CLOCK_BOOTTIME until @end: a suspend shows as a gap in BOOTTIME and as
 * BOOTTIME - MONOTONIC growing. */
static int play(int w, int64_t end)
{
	int64_t b0 = ns(CLOCK_BOOTTIME), m0 = ns(CLOCK_MONOTONIC), last = b0, gap = 0, t = b0;

	say("QJ-DAY: MUSIC %d start %lld\n", w, (long long)b0);
	while (t < end) {
		int64_t next = t + 20 * NSEC_PER_MSEC;
		struct timespec ts = { next / NSEC_PER_SEC, next % NSEC_PER_SEC };

		clock_nanosleep(CLOCK_BOOTTIME, TIMER_ABSTIME, &ts, NULL);
		t = ns(CLOCK_BOOTTIME);
		if (t - last > gap)
			gap = t - last;
		last = t;
	}
	say("QJ-DAY: MUSIC %d end %lld slept %lld max_gap %lld\n", w, (long long)t,
	    (long long)((t - ns(CLOCK_MONOTONIC)) - (b0 - m0)), (long long)gap);
	return 0;
}

static int until(int64_t at)
{
	int fd = alarm_fd(at, 0), ep;

	if (fd < 0 || (ep = epoll_on(fd, true)) < 0 || wait_alarm(ep, fd) < 0)
		return die("day-end alarm");
	/* Awake from here on under every manager (one truth: "qos" and autosleep respect it). */
	if (wake_lock("day-end", true) < 0)
		return die("wake_lock day-end");
	return 0;
}

/* Non-idle jiffies of all CPUs (/proc/stat "cpu" line: all but idle and iowait). */
static long long busy_jiffies(void)
{
	long long v[10] = {}, sum = 0;
	FILE *f = fopen("/proc/stat", "re");

	if (!f)
		return -1;
	if (fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) != 8)
		sum = -1;
	fclose(f);
	if (sum < 0)
		return -1;
	for (int i = 0; i < 8; i++)
		if (i != 3 && i != 4)
			sum += v[i];
	return sum;
}

static int __attribute__((noreturn)) loadsleep(int idle_s, int pct)
{
	long hz = sysconf(_SC_CLK_TCK);
	long long prev = busy_jiffies();
	int quiet = 0;

	for (;;) {
		sleep(1);
		long long now = busy_jiffies();

		/* @pct % of one CPU over the last second */
		quiet = now - prev <= hz * pct / 100 ? quiet + 1 : 0;
		prev = now;
		if (quiet < idle_s)
			continue;
		int fd = open("/sys/power/state", O_WRONLY | O_CLOEXEC);

		if (fd < 0 || write(fd, "mem", 3) < 0)
			say("QJ-DAY: LOADSLEEP mem: %s\n", strerror(errno));
		if (fd >= 0)
			close(fd);
		quiet = 0;
		prev = busy_jiffies();
	}
}

int main(int argc, char **argv)
{
	enum mode m = MODE_NONE;
	const char *cmd = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 2 && strcmp(cmd, "as") && strcmp(cmd, "play") && strcmp(cmd, "spin") &&
	    strcmp(cmd, "until") && strcmp(cmd, "loadsleep") && parse_mode(argv[2], &m) < 0)
		goto usage;
	if (!strcmp(cmd, "as") && argc >= 5)
		return as_user(argc - 2, argv + 2);
	if (!strcmp(cmd, "spin") && argc == 3) {
		long ms = atol(argv[2]);

		burn_until(ms ? ns(CLOCK_MONOTONIC) + ms * NSEC_PER_MSEC : INT64_MAX);
		return 0;
	}
	if (!strcmp(cmd, "poll"))
		return poller();
	if (!strcmp(cmd, "hop"))
		return hopper();
	if (!strcmp(cmd, "hog"))
		return hog();
	if (!strcmp(cmd, "chat") && argc == 3)
		return chat(m);
	if (!strcmp(cmd, "modem") && argc == 7)
		return modem(m, atoll(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
	if (!strcmp(cmd, "music") && argc == 7)
		return music(m, atoll(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
	if (!strcmp(cmd, "play") && argc == 4)
		return play(atoi(argv[2]), atoll(argv[3]));
	if (!strcmp(cmd, "until") && argc == 3)
		return until(atoll(argv[2]));
	if (!strcmp(cmd, "loadsleep") && argc == 4)
		return loadsleep(atoi(argv[2]), atoi(argv[3]));
	if (!strcmp(cmd, "clocks")) {
		printf("%lld %lld\n", (long long)ns(CLOCK_BOOTTIME),
		       (long long)ns(CLOCK_MONOTONIC));
		return 0;
	}
usage:
	fprintf(stderr, "usage: day-tool as|spin|poll|hop|hog|chat|modem|music|play|until|"
			"loadsleep|clocks ... (see the source's head)\n");
	return 2;
}
