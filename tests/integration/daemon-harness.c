// SPDX-License-Identifier: LGPL-2.1-or-later
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon-harness.h"
#include "itest.h"
#include "util.h"
#include "qosjail.h"

bool harness_debug = true;
bool harness_no_pidfd = false;
const char *harness_notify_socket;
const char *harness_metrics_file;

/*
 * Makes pidfd_open() fail with ENOSYS in the daemon about to be exec'd, as on
 * kernels before 5.3 or under valgrind 3.19.  Seven BPF instructions: not
 * worth libseccomp as a test dependency.
 */
static int deny_pidfd_open(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pidfd_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return -errno;
	return 0;
}

void msleep(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

bool harness_log_has(struct harness *h, const char *text)
{
	static char buf[1 << 20];
	size_t n;
	FILE *f;

	for (int i = 0; i < 500; i++) {
		f = fopen(h->log, "re");
		if (f) {
			n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
			buf[n] = '\0';
			if (strstr(buf, text))
				return true;
		}
		msleep(20);
	}
	return false;
}

int harness_run_as(uid_t uid, int (*fn)(void *arg), void *arg)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		gid_t g = (gid_t)uid;

		if (setgroups(1, &g) < 0 || setresgid(g, g, g) < 0 || setresuid(uid, uid, uid) < 0)
			_exit(99);
		_exit(fn(arg));
	}
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

static void put_expanded(struct harness *h, FILE *f, const char *text)
{
	for (const char *p = text; *p; p++) {
		if (strncmp(p, "@DIR@", 5) == 0) {
			fputs(h->dir, f);
			p += 4;
		} else if (strncmp(p, "@CG@", 4) == 0) {
			fputs(h->it->cg_path, f);
			p += 3;
		} else if (strncmp(p, "@CPU@", 5) == 0) {
			fputs(h->it->cpu_path, f);
			p += 4;
		} else {
			fputc(*p, f);
		}
	}
}

int harness_write_policy(struct harness *h, const char *file, const char *text)
{
	FILE *f = fopen(file, "we");

	if (!f)
		return -errno;
	put_expanded(h, f, text);
	if (!strstr(text, "\njail:"))
		put_expanded(h, f, "jail:\n  cgroup: @CG@\n  cpu_cgroup: @CPU@\n");
	if (!strstr(text, "\nlog:"))
		put_expanded(h, f, "log:\n  path: @DIR@/kill.log\n");
	return fclose(f) == 0 ? 0 : -errno;
}

/*
 * QJ_VALGRIND=1 runs the daemon under valgrind: any memory error or definite
 * leak makes it exit 99, which harness_stop() reports and the tests fail on.
 */
static void exec_daemon(const char *exe, const struct harness *h, const char *state)
{
	const char *argv[16];
	size_t n = 0;

	if (getenv("QJ_VALGRIND")) {
		argv[n++] = "valgrind";
		argv[n++] = "--quiet";
		argv[n++] = "--error-exitcode=99";
		argv[n++] = "--leak-check=full";
		argv[n++] = "--errors-for-leak-kinds=definite";
	}
	argv[n++] = exe;
	if (harness_debug)
		argv[n++] = "-d";
	argv[n++] = "--policy";
	argv[n++] = h->policy;
	argv[n++] = "--socket";
	argv[n++] = h->socket;
	argv[n++] = "--state-dir";
	argv[n++] = state;
	if (harness_metrics_file) {
		argv[n++] = "--metrics-file";
		argv[n++] = harness_metrics_file;
	}
	argv[n] = NULL;
	execvp(argv[0], (char *const *)argv);
}

/* Forks and execs qosjaild on h's socket, policy and state directory; waits until it answers. */
static int start_daemon(struct harness *h)
{
	const char *build = getenv("QJ_BUILD_DIR");
	char exe[512];

	snprintf(exe, sizeof(exe), "%s/controller/qosjaild", build ? build : ".");
	h->pid = fork();
	if (h->pid < 0)
		return -errno;
	if (h->pid == 0) {
		char state[320];
		int fd = open(h->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		/* Never outlive the test, even when ctest kills it. */
		(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
		snprintf(state, sizeof(state), "%s/run", h->dir);
		if (fd >= 0) {
			dup2(fd, STDERR_FILENO);
			dup2(fd, STDOUT_FILENO);
		}
		if (harness_no_pidfd && deny_pidfd_open() < 0)
			_exit(126);
		if (harness_notify_socket)
			(void)setenv("NOTIFY_SOCKET", harness_notify_socket, 1);
		exec_daemon(exe, h, state);
		_exit(127);
	}
	if (harness_notify_socket)
		return 0;
	for (int i = 0; i < 1000; i++) {
		struct qj_conn *c = NULL;
		int status;

		if (qj_open(h->socket, &c) == 0) {
			qj_close(c);
			return 0;
		}
		if (waitpid(h->pid, &status, WNOHANG) == h->pid) {
			h->pid = 0;
			harness_dump_log(h);
			return -ECHILD;
		}
		msleep(10);
	}
	return -ETIMEDOUT;
}

int harness_start(struct harness *h, const char *policy_text)
{
	int r;

	memset(h, 0, sizeof(*h));
	h->it = itest_new(USEC_PER_SEC);
	if (!h->it)
		return -EOPNOTSUPP;
	snprintf(h->dir, sizeof(h->dir), "/tmp/qjtest-XXXXXX");
	if (!mkdtemp(h->dir))
		return -errno;
	(void)chmod(h->dir, 0755); /* other uids connect in the access tests */
	/*
	 * As installed: the socket in the state directory, which the daemon makes
	 * (other uids must reach the socket there, as launchers do in /run/qosjail).
	 */
	snprintf(h->socket, sizeof(h->socket), "%s/run/qosjail.sock", h->dir);
	snprintf(h->policy, sizeof(h->policy), "%s/policy.yaml", h->dir);
	snprintf(h->log, sizeof(h->log), "%s/daemon.log", h->dir);
	r = harness_write_policy(h, h->policy, policy_text);
	if (r < 0)
		return r;
	return start_daemon(h);
}

int harness_kill9_restart(struct harness *h)
{
	if (h->pid <= 0)
		return -ESRCH;
	(void)kill(h->pid, SIGKILL);
	if (waitpid(h->pid, NULL, 0) != h->pid)
		return -ECHILD;
	h->pid = 0;
	return start_daemon(h);
}

int harness_restart(struct harness *h)
{
	int status = harness_stop(h);

	if (status != 0)
		return status < 0 ? status : -ECHILD;
	return start_daemon(h);
}

int harness_respawn(struct harness *h)
{
	if (h->pid > 0)
		return -EBUSY;
	return start_daemon(h);
}

int harness_need_root(const char *test)
{
	if (geteuid() == 0)
		return -1;
	if (itest_ci()) {
		fprintf(stderr, "%s needs root (CI=true: failing)\n", test);
		return 1;
	}
	fprintf(stderr, "%s needs root, skipped\n", test);
	return 77;
}

int harness_stop(struct harness *h)
{
	int status;

	if (h->pid <= 0)
		return -1;
	(void)kill(h->pid, SIGTERM);
	if (waitpid(h->pid, &status, 0) != h->pid)
		return -1;
	h->pid = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void harness_cleanup(struct harness *h)
{
	char cmd[400];

	if (h->pid > 0)
		(void)harness_stop(h);
	if (strncmp(h->dir, "/tmp/qjtest-", 12) == 0) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", h->dir);
		(void)!system(cmd);
	}
	itest_free(h->it); /* kills what is left in the jail subtree and removes it */
	h->it = NULL;
}

void harness_dump_log(struct harness *h)
{
	char buf[4096];
	FILE *f = fopen(h->log, "re");
	size_t n;

	if (!f)
		return;
	fprintf(stderr, "---- qosjaild log ----\n");
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stderr);
	fprintf(stderr, "----------------------\n");
	fclose(f);
}

json_t *harness_status(struct harness *h)
{
	struct qj_conn *c = NULL;
	char *text = NULL;
	json_t *j = NULL;

	if (qj_open(h->socket, &c) < 0)
		return NULL;
	if (qj_status(c, &text) == 0)
		j = json_loads(text, 0, NULL);
	free(text);
	qj_close(c);
	return j;
}

long long harness_wait_int(struct harness *h, const char *key, long long min, int timeout_ms)
{
	long long v = -1;

	for (int waited = 0;; waited += 10) {
		json_t *j = harness_status(h);

		v = j ? (long long)json_integer_value(json_object_get(j, key)) : -1;
		json_decref(j);
		if (v >= min || waited >= timeout_ms)
			return v;
		msleep(10);
	}
}

bool harness_wait_state(struct harness *h, const char *state, int timeout_ms)
{
	for (int waited = 0;; waited += 10) {
		json_t *j = harness_status(h);
		bool ok = j && strcmp(json_string_value(json_object_get(j, "state")), state) == 0;

		json_decref(j);
		if (ok)
			return true;
		if (waited >= timeout_ms)
			return false;
		msleep(10);
	}
}

int raw_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

char *raw_call(int fd, const char *text, size_t len)
{
	char *buf = malloc(70000);
	ssize_t n;

	if (!buf)
		return NULL;
	if (send(fd, text, len, MSG_NOSIGNAL) < 0) {
		free(buf);
		return NULL;
	}
	n = recv(fd, buf, 69999, 0);
	if (n <= 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

long harness_rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

int harness_setup(void **state, const char *policy_text)
{
	struct harness *h;
	const char *why;

	*state = NULL;
	if (!itest_available(&why)) {
		fprintf(stderr, "no daemon harness: %s\n", why);
		return itest_ci() ? -1 : 0;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -1;
	if (harness_start(h, policy_text) < 0) {
		harness_dump_log(h);
		free(h);
		return -1;
	}
	*state = h;
	return 0;
}

/* Through pidfds taken while the processes surely run: no pid reuse can misdirect a kill. */
static struct {
	pid_t pid;
	int pidfd;
} tracked[64];
static size_t n_tracked;

void harness_track(pid_t pid)
{
	int fd = pidfd_open(pid, 0);

	if (fd < 0)
		return;
	if (n_tracked == ARRAY_SIZE(tracked)) {
		(void)pidfd_send_signal(fd, SIGKILL, NULL, 0); /* never left behind */
		close(fd);
		return;
	}
	tracked[n_tracked].pid = pid;
	tracked[n_tracked++].pidfd = fd;
}

int harness_teardown(void **state)
{
	struct harness *h = *state;
	int status;

	for (size_t i = 0; i < n_tracked; i++) {
		(void)pidfd_send_signal(tracked[i].pidfd, SIGKILL, NULL, 0);
		(void)waitpid(tracked[i].pid, NULL, 0); /* ECHILD: reaped, or not our child */
		close(tracked[i].pidfd);
	}
	n_tracked = 0;
	if (!h)
		return 0;
	status = harness_stop(h);
	if (status != 0)
		harness_dump_log(h);
	harness_cleanup(h);
	free(h);
	*state = NULL;
	return status == 0 ? 0 : -1;
}
