// SPDX-License-Identifier: LGPL-2.1-or-later
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "itest.h"
#include "killlog-read.h"
#include "log.h"
#include "proc.h"
#include "rfc3339.h"
#include "test-policy.h"
#include "util.h"

#define V2_ROOT "/sys/fs/cgroup/unified"
#define V1_CPU "/sys/fs/cgroup/cpu"

bool itest_ci(void)
{
	const char *ci = getenv("CI");

	return ci && strcmp(ci, "true") == 0;
}

bool itest_available(const char **ret_why)
{
	if (geteuid() != 0) {
		*ret_why = "needs root";
		return false;
	}
	if (access(V2_ROOT "/cgroup.procs", F_OK) < 0 &&
	    access("/sys/fs/cgroup/cgroup.procs", F_OK) < 0) {
		*ret_why = "no cgroup2 mount";
		return false;
	}
	return true;
}

static const char *v2_root(void)
{
	return access(V2_ROOT "/cgroup.procs", F_OK) == 0 ? V2_ROOT : "/sys/fs/cgroup";
}

/* Kills everything in @dir's children, then removes them and @dir. */
static void remove_tree(const char *dir, bool v2)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char sub[512], f[600];

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		if (v2) {
			snprintf(f, sizeof(f), "%s/cgroup.freeze", sub);
			(void)qj_write_file(f, "0");
			snprintf(f, sizeof(f), "%s/cgroup.kill", sub);
			(void)qj_write_file(f, "1");
			for (int i = 0; i < 500; i++) {
				_cleanup_free_ char *ev = NULL;

				snprintf(f, sizeof(f), "%s/cgroup.events", sub);
				if (qj_read_file(f, &ev) < 0 || strstr(ev, "populated 0"))
					break;
				while (waitpid(-1, NULL, WNOHANG) > 0)
					;
				usleep(10 * 1000);
			}
		}
		for (int i = 0; i < 100 && rmdir(sub) < 0 && errno == EBUSY; i++)
			usleep(10 * 1000);
	}
	closedir(d);
	(void)rmdir(dir);
}

/* Subtrees of test processes that died without a teardown. */
static void remove_stale(void)
{
	const char *roots[] = { v2_root(), V1_CPU };

	for (size_t r = 0; r < ARRAY_SIZE(roots); r++) {
		DIR *d = opendir(roots[r]);
		struct dirent *de;

		if (!d)
			continue;
		while ((de = readdir(d))) {
			char p[512];
			pid_t pid;

			if (strncmp(de->d_name, "qosjail-test-", 13) != 0)
				continue;
			pid = (pid_t)atoi(de->d_name + 13);
			if (pid > 0 && kill(pid, 0) == 0)
				continue;
			snprintf(p, sizeof(p), "%s/%s", roots[r], de->d_name);
			remove_tree(p, r == 0);
		}
		closedir(d);
	}
}

struct itest *itest_new(uint64_t grace_usec)
{
	struct itest *t;
	const char *why;

	if (!itest_available(&why))
		return NULL;
	if (getenv("QJ_TEST_DEBUG"))
		qj_log_set_level(LOG_DEBUG);
	remove_stale();
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	snprintf(t->cg_path, sizeof(t->cg_path), "%s/qosjail-test-%d", v2_root(), getpid());
	snprintf(t->cpu_path, sizeof(t->cpu_path), V1_CPU "/qosjail-test-%d", getpid());
	snprintf(t->tmpdir, sizeof(t->tmpdir), "/tmp/qj-itest-XXXXXX");
	if (!mkdtemp(t->tmpdir)) {
		free(t);
		return NULL;
	}
	snprintf(t->log_path, sizeof(t->log_path), "%s/kill.log", t->tmpdir);
	snprintf(t->state_dir, sizeof(t->state_dir), "%s/state", t->tmpdir);
	t->p = qj_test_policy_new(grace_usec);
	free(t->p->cgroup_path);
	free(t->p->cpu_cgroup_path);
	free(t->p->log_path);
	t->p->cgroup_path = strdup(t->cg_path);
	t->p->cpu_cgroup_path = strdup(t->cpu_path);
	t->p->log_path = strdup(t->log_path);
	/* Reap what the engine kills and what orphans leave behind. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	return t;
}

int itest_start_engine(struct itest *t)
{
	int r;

	if (!t->log) {
		r = qj_killlog_open(t->log_path, t->p->log_max_bytes, t->p->log_keep, &t->log);
		if (r < 0)
			return r;
	}
	return qj_engine_new(t->p, t->log, t->state_dir, &t->e);
}

void itest_free(struct itest *t)
{
	char cmd[128];

	if (!t)
		return;
	if (t->e) {
		(void)qj_engine_restore(t->e, "teardown");
		t->e = qj_engine_free(t->e);
	}
	remove_tree(t->cg_path, true);
	remove_tree(t->cpu_path, false);
	for (size_t i = 0; i < t->n_procs; i++) {
		int fd = pidfd_open(t->procs[i], 0);

		if (fd >= 0) {
			(void)pidfd_send_signal(fd, SIGKILL, NULL, 0);
			close(fd);
		}
	}
	for (size_t i = 0; i < t->n_procs; i++)
		(void)waitpid(t->procs[i], NULL, 0);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	qj_killlog_free(t->log);
	qj_policy_free(t->p);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->tmpdir);
	(void)system(cmd);
	free(t);
}

/*
 * Test apps run from a private copy: exec matching is system-wide, and another
 * qosjail instance under test on this machine (a policy matching any
 * tests/apps/qj-busy) must not move our processes into its jail.
 */
static int private_copy(struct itest *t, const char *bin, char *path, size_t size)
{
	const char *build = getenv("QJ_BUILD_DIR");
	char src[512], dir[128];
	_cleanup_close_ int in = -EBADF, out = -EBADF;
	char buf[65536];
	ssize_t n;

	snprintf(dir, sizeof(dir), "%s/bin", t->tmpdir);
	(void)mkdir(dir, 0755);
	snprintf(path, size, "%s/%s", dir, bin);
	if (access(path, X_OK) == 0)
		return 0;
	snprintf(src, sizeof(src), "%s/tests/apps/%s", build ? build : ".", bin);
	in = open(src, O_RDONLY | O_CLOEXEC);
	out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (in < 0 || out < 0)
		return -errno;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			return -EIO;
	return n < 0 ? -errno : 0;
}

const char *itest_bin_dir(struct itest *t, char *buf, size_t size)
{
	snprintf(buf, size, "%s/bin", t->tmpdir);
	return buf;
}

pid_t itest_spawn(struct itest *t, const char *bin, const char *app, char *line, size_t size)
{
	char path[512], buf[256];
	int go[2], out[2];
	struct pollfd pfd;
	size_t len = 0;
	pid_t pid;

	if (private_copy(t, bin, path, sizeof(path)) < 0)
		return -1;
	if (t->n_procs >= ITEST_MAX_PROCS || pipe2(go, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char c;

		/* Dies with the test even when the test crashes before teardown. */
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(out[1], STDOUT_FILENO);
		/*
		 * ASan builds: LeakSanitizer at an app's exit ptraces it from a
		 * helper task that runs in the jail ('t' and 'R' after a quiesce).
		 * The apps are fixtures, not what the leak check is for.
		 */
		{
			const char *o = getenv("ASAN_OPTIONS");
			char opts[512];

			snprintf(opts, sizeof(opts), "%s%sdetect_leaks=0", o ? o : "",
				 o && *o ? ":" : "");
			setenv("ASAN_OPTIONS", opts, 1);
		}
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execl(path, bin, (char *)NULL);
		_exit(127);
	}
	t->procs[t->n_procs++] = pid;
	close(go[0]);
	close(out[1]);
	if (app && t->e && qj_engine_place(t->e, app, pid) < 0)
		fprintf(stderr, "itest: failed to place %d in %s\n", pid, app);
	(void)!write(go[1], "x", 1);
	close(go[1]);
	pfd = (struct pollfd){ .fd = out[0], .events = POLLIN };
	while (len < sizeof(buf) - 1 && poll(&pfd, 1, 10000) > 0) {
		ssize_t n = read(out[0], buf + len, sizeof(buf) - 1 - len);

		if (n <= 0)
			break;
		len += (size_t)n;
		if (memchr(buf, '\n', len))
			break;
	}
	close(out[0]);
	buf[len] = 0;
	if (strncmp(buf, "ready", 5) != 0)
		return -1;
	if (line)
		snprintf(line, size, "%s", buf);
	return pid;
}

char itest_state(pid_t pid)
{
	struct qj_proc_stat st;

	if (qj_proc_stat_read(pid, &st) < 0)
		return 0;
	return st.state;
}

bool itest_stopped_or_stopping(pid_t pid)
{
	struct qj_proc_status ps;

	if (itest_state(pid) == 'T')
		return true;
	return qj_proc_status_read(pid, &ps) == 0 &&
	       ((ps.shdpnd | ps.sigpnd) & (1ULL << (SIGSTOP - 1)));
}

int itest_steps(struct itest *t, uint64_t timeout_usec)
{
	uint64_t end = now_usec(CLOCK_MONOTONIC) + timeout_usec;

	for (;;) {
		uint64_t now = now_usec(CLOCK_MONOTONIC), next = 0;
		struct timespec ts;
		int r;

		r = qj_engine_quiesce_step(t->e, now, &next);
		if (r != 0)
			return r;
		if (now >= end)
			return -ETIMEDOUT;
		if (next > end)
			next = end;
		ts.tv_sec = (time_t)(next / USEC_PER_SEC);
		ts.tv_nsec = (long)(next % USEC_PER_SEC * 1000);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
}

void itest_pump_events(struct itest *t, uint64_t usec)
{
	uint64_t end = now_usec(CLOCK_MONOTONIC) + usec;
	int fd = qj_engine_procmon_fd(t->e);

	for (;;) {
		uint64_t now = now_usec(CLOCK_MONOTONIC);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (now >= end)
			return;
		if (fd < 0) {
			usleep((useconds_t)(end - now));
			return;
		}
		if (poll(&pfd, 1, (int)((end - now + 999) / 1000)) > 0)
			(void)qj_engine_on_procmon(t->e);
	}
}

int itest_quiesce(struct itest *t, uint64_t cycle, uint64_t timeout_usec)
{
	int r = qj_engine_quiesce_begin(t->e, cycle, now_usec(CLOCK_MONOTONIC));

	return r < 0 ? r : itest_steps(t, timeout_usec);
}

struct log_walk {
	char *buf;
	size_t size;
	const char *action;
	int count;
};

static int reason_cb(json_t *rec, void *ud)
{
	struct log_walk *w = ud;
	const char *r = json_string_value(json_object_get(rec, "reason"));

	if (r && strcmp(r, w->action) == 0)
		w->count++;
	return 0;
}

int itest_log_count_reason(struct itest *t, pid_t pid, const char *reason)
{
	struct qj_killlog_filter f = { .pid = pid };
	struct log_walk w = { .action = reason };
	FILE *fp = fopen(t->log_path, "re");
	int r;

	if (!fp)
		return -errno;
	r = qj_killlog_read(fp, &f, reason_cb, &w);
	fclose(fp);
	return r < 0 ? r : w.count;
}

/* Every record an operator reads has its time as RFC 3339 text, as `qosjailctl log` shows it. */
static int check_ts_cb(json_t *rec, void *ud)
{
	uint64_t usec;

	(void)ud;
	if (qj_parse_rfc3339(json_string_value(json_object_get(rec, "ts")) ?: "", &usec) < 0)
		return -EBADMSG;
	return 0;
}

int itest_log_count_app(struct itest *t, const char *app, const char *action)
{
	struct qj_killlog_filter f = { .app = app, .action = action };
	FILE *fp = fopen(t->log_path, "re");
	int r;

	if (!fp)
		return -errno;
	r = qj_killlog_read(fp, &f, check_ts_cb, NULL);
	fclose(fp);
	return r;
}

static int append_cb(json_t *rec, void *ud)
{
	struct log_walk *w = ud;
	size_t len = strlen(w->buf);

	snprintf(w->buf + len, w->size - len, "%s%s:%s", len ? "," : "",
		 json_string_value(json_object_get(rec, "action")),
		 json_string_value(json_object_get(rec, "outcome")));
	return 0;
}

int itest_log_of(struct itest *t, pid_t pid, char *buf, size_t size)
{
	struct qj_killlog_filter f = { .pid = pid };
	struct log_walk w = { .buf = buf, .size = size };
	FILE *fp = fopen(t->log_path, "re");
	int r;

	buf[0] = 0;
	if (!fp)
		return -errno;
	r = qj_killlog_read(fp, &f, append_cb, &w);
	fclose(fp);
	return r;
}

static int count_cb(json_t *rec, void *ud)
{
	struct log_walk *w = ud;
	const char *a = json_string_value(json_object_get(rec, "action"));

	if (!a)
		return 0;
	/* NULL: actions, not summaries nor what followed them (exit, quiesce-timeout). */
	if (w->action ? strcmp(a, w->action) == 0 :
			strcmp(a, "summary") != 0 && strcmp(a, "exit") != 0 &&
				strcmp(a, "quiesce-timeout") != 0)
		w->count++;
	return 0;
}

int itest_log_count(struct itest *t, const char *action)
{
	struct log_walk w = { .action = action };
	FILE *fp = fopen(t->log_path, "re");
	int r;

	if (!fp)
		return -errno;
	r = qj_killlog_read(fp, NULL, count_cb, &w);
	fclose(fp);
	return r < 0 ? r : w.count;
}

int itest_write_spin_page(const char *path)
{
	FILE *f = fopen(path, "we");
	int r;

	if (!f)
		return -errno;
	fputs("<!doctype html><title>spin</title><script>\n"
	      "new Worker(URL.createObjectURL(new Blob(['for(;;){}'],"
	      " {type: 'text/javascript'})));\n"
	      "function spin() { const e = Date.now() + 40; while (Date.now() < e) {}"
	      " setTimeout(spin, 10); }\nspin();\n</script>\n",
	      f);
	r = ferror(f) ? -EIO : 0;
	if (fclose(f) < 0 && r == 0)
		r = -errno;
	return r;
}

int itest_usage_usec(struct itest *t, const char *app, uint64_t *ret)
{
	_cleanup_free_ char *s = NULL;
	char path[600];
	const char *u;
	int r;

	snprintf(path, sizeof(path), "%s/%s/cpu.stat", t->cg_path, app);
	r = qj_read_file(path, &s);
	if (r < 0)
		return r;
	u = strstr(s, "usage_usec ");
	if (!u)
		return -ENODATA;
	*ret = strtoull(u + strlen("usage_usec "), NULL, 10);
	return 0;
}

long long itest_read_ll(const char *dir, const char *file)
{
	_cleanup_free_ char *s = NULL;
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	if (qj_read_file(p, &s) < 0)
		return -1;
	return strtoll(s, NULL, 10);
}
