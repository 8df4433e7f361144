// SPDX-License-Identifier: LGPL-2.1-or-later
/* The private system bus and logind mock of the logind tests (see logind-bus.h). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "logind-bus.h"

#define DEBIAN_SYSTEM_CONF "/usr/share/dbus-1/system.conf"

char logind_bus_address[LOGIND_BUS_ADDRESS_MAX];
static char bus_dir[] = "/tmp/qj-logind-XXXXXX";
static pid_t bus_pid = -1, mock_pid = -1;

int logind_run(const char *const *argv)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool logind_on_bus(void)
{
	const char *argv[] = {
		"busctl", "--address", logind_bus_address, "status", "org.freedesktop.login1", NULL
	};

	return logind_run(argv) == 0;
}

pid_t logind_spawn(const char *const *argv, uid_t uid)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, STDOUT_FILENO);
		if (uid != 0 && (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
				 setresuid(uid, uid, uid) < 0))
			_exit(99);
		(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

void logind_stop(pid_t *pid)
{
	if (*pid <= 0)
		return;
	(void)kill(*pid, SIGTERM);
	(void)waitpid(*pid, NULL, 0);
	*pid = -1;
}

/*
 * Debian's system bus configuration, as the system bus runs it, except where it listens
 * and how the bus daemon itself runs (no user switch, fork, pid file, syslog or
 * activation helper): every <policy> of system.conf and of system.d stays as it is.
 */
static int write_bus_config(const char *path)
{
	static const char *const skip[] = { "<user>",
					    "<fork/>",
					    "<pidfile>",
					    "<syslog/>",
					    "<listen>",
					    "<servicehelper>",
					    "<standard_system_servicedirs/>" };
	char line[1024];
	FILE *in = fopen(DEBIAN_SYSTEM_CONF, "re"), *out;
	bool ok = true;

	if (!in) {
		fprintf(stderr, "cannot read %s (package dbus)\n", DEBIAN_SYSTEM_CONF);
		return -1;
	}
	out = fopen(path, "we");
	if (!out) {
		fclose(in);
		return -1;
	}
	while (fgets(line, sizeof(line), in)) {
		bool drop = false;

		for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
			drop |= strstr(line, skip[i]) != NULL;
		if (drop)
			continue;
		if (strstr(line, "<includedir>system.d</includedir>"))
			fputs("  <includedir>/usr/share/dbus-1/system.d</includedir>\n", out);
		else
			fputs(line, out);
		if (strstr(line, "<type>system</type>"))
			fprintf(out, "  <listen>unix:path=%s/bus</listen>\n", bus_dir);
	}
	ok = !ferror(in);
	fclose(in);
	return fclose(out) == 0 && ok ? 0 : -1;
}

int logind_mock_start(void)
{
	const char *src = getenv("QJ_SOURCE_DIR");
	char template[512];
	/* Debian's python3-dbusmock is for /usr/bin/python3, whatever PATH says. */
	const char *argv[] = { "/usr/bin/python3", "-m",     "dbusmock", "--system",
			       "--template",	   template, NULL };

	snprintf(template, sizeof(template), "%s/tests/integration/logind-template.py",
		 src ? src : ".");
	mock_pid = logind_spawn(argv, 0);
	for (int i = 0; i < 300 && !logind_on_bus(); i++)
		msleep(50);
	if (!logind_on_bus()) {
		fprintf(stderr, "the logind mock did not come up on %s\n", logind_bus_address);
		return -1;
	}
	return 0;
}

void logind_mock_stop(void)
{
	logind_stop(&mock_pid);
}

int logind_bus_up(void **state)
{
	char path[512], cfg[600];
	const char *argv[] = { "dbus-daemon", "--nofork", "--nopidfile", cfg, NULL };

	(void)state;
	if (geteuid() != 0)
		return 0; /* harness_setup() skips or fails the cases */
	if (!mkdtemp(bus_dir) || chmod(bus_dir, 0755) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/bus.conf", bus_dir);
	if (write_bus_config(path) < 0)
		return -1;
	snprintf(logind_bus_address, sizeof(logind_bus_address), "unix:path=%s/bus", bus_dir);
	snprintf(cfg, sizeof(cfg), "--config-file=%s", path);
	bus_pid = logind_spawn(argv, 0);
	setenv("DBUS_SYSTEM_BUS_ADDRESS", logind_bus_address, 1);
	for (int i = 0; i < 500; i++) {
		snprintf(path, sizeof(path), "%s/bus", bus_dir);
		if (access(path, F_OK) == 0)
			break;
		msleep(10);
	}
	return logind_mock_start();
}

int logind_bus_down(void **state)
{
	char cmd[600];

	(void)state;
	logind_mock_stop();
	logind_stop(&bus_pid);
	if (bus_dir[strlen(bus_dir) - 1] != 'X') {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", bus_dir);
		(void)!system(cmd);
	}
	return 0;
}

int logind_mock_set_list_error(const char *name)
{
	const char *argv[] = { "busctl",
			       "--address",
			       logind_bus_address,
			       "call",
			       "org.freedesktop.login1",
			       "/org/freedesktop/login1",
			       "org.freedesktop.DBus.Mock",
			       "SetListError",
			       "s",
			       name,
			       NULL };

	return logind_run(argv);
}

pid_t logind_inhibit(const char *who, const char *why, const char *mode, uid_t uid)
{
	char w[160], y[160], m[64];
	const char *argv[] = { "systemd-inhibit", "--what=sleep", w, y, m, "sleep", "600", NULL };
	pid_t pid;

	snprintf(w, sizeof(w), "--who=%s", who);
	snprintf(y, sizeof(y), "--why=%s", why);
	snprintf(m, sizeof(m), "--mode=%s", mode);
	pid = logind_spawn(argv, uid);
	assert_true(pid > 0);
	harness_track(pid);
	return pid;
}

json_t *logind_find_hold(json_t *st, const char *name)
{
	json_t *holds = json_object_get(st, "holds"), *h;
	size_t i;

	json_array_foreach (holds, i, h)
		if (strcmp(json_string_value(json_object_get(h, "name")), name) == 0)
			return h;
	return NULL;
}

bool logind_wait_hold(struct harness *h, const char *name, bool present, pid_t pid, uid_t uid)
{
	for (int i = 0; i < 1000; i++) {
		json_t *st = harness_status(h), *ho;
		bool ok;

		assert_non_null(st);
		ho = logind_find_hold(st, name);
		ok = present ? ho != NULL : ho == NULL;
		if (ok && ho && pid > 0) {
			assert_int_equal(json_integer_value(json_object_get(ho, "pid")), pid);
			assert_int_equal(json_integer_value(json_object_get(ho, "uid")), uid);
		}
		json_decref(st);
		if (ok)
			return true;
		msleep(20);
	}
	harness_dump_log(h);
	return false;
}

const char *logind_status_state(struct harness *h, char *buf, size_t size)
{
	json_t *st = harness_status(h);

	assert_non_null(st);
	snprintf(buf, size, "%s", json_string_value(json_object_get(st, "state")));
	json_decref(st);
	return buf;
}

/* ListNames and GetConnectionUnixProcessID: the bus driver answers them to anyone. */
int logind_unique_name_of(pid_t pid, char *buf, size_t size)
{
	sd_bus *bus = NULL;
	char **names = NULL;
	int r;

	buf[0] = '\0';
	r = sd_bus_new(&bus);
	if (r >= 0)
		r = sd_bus_set_address(bus, logind_bus_address);
	if (r >= 0)
		r = sd_bus_set_bus_client(bus, 1);
	if (r >= 0)
		r = sd_bus_start(bus);
	if (r >= 0)
		r = sd_bus_list_names(bus, &names, NULL);
	for (char **n = names; r >= 0 && n && *n; n++) {
		sd_bus_creds *c = NULL;
		pid_t p = 0;

		if ((*n)[0] == ':' && sd_bus_get_name_creds(bus, *n, SD_BUS_CREDS_PID, &c) >= 0 &&
		    sd_bus_creds_get_pid(c, &p) >= 0 && p == pid && !buf[0])
			snprintf(buf, size, "%s", *n);
		sd_bus_creds_unref(c);
	}
	for (char **n = names; n && *n; n++)
		free(*n);
	free(names);
	sd_bus_flush_close_unref(bus);
	return r < 0 ? r : buf[0] ? 0 : -ENOENT;
}
