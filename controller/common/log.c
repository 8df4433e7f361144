// SPDX-License-Identifier: LGPL-2.1-or-later
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "escape.h"
#include "log.h"

static bool log_stderr = true;
static bool log_starting;
static int log_max_level = LOG_INFO;
static const char *log_ident = "qosjail";
static int journal_fd = -EBADF;

#define JOURNAL_SOCKET "/run/systemd/journal/socket"

static void journal_close(void)
{
	if (journal_fd >= 0)
		close(journal_fd);
	journal_fd = -EBADF;
}

int qj_log_open_journal(const char *ident, const char *path, int max_level)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	journal_close();
	journal_fd = fd;
	log_ident = ident;
	log_stderr = false;
	log_max_level = max_level;
	return 0;
}

void qj_log_set_starting(bool on)
{
	log_starting = on;
}

void qj_log_open(const char *ident, bool to_stderr, int max_level)
{
	journal_close();
	log_ident = ident;
	log_stderr = to_stderr;
	log_max_level = max_level;
	if (!to_stderr && qj_log_open_journal(ident, JOURNAL_SOCKET, max_level) < 0)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

/*
 * One entry in the journal's native protocol: KEY=value lines.  Every value is one line
 * (the message is escaped, file names and the ident have no newline), so the simple form
 * serves.  Falls back to syslog when the journal refuses.
 */
static void journal_send(int level, const char *file, int line, const char *msg)
{
	char entry[2048];
	int n;

	n = snprintf(entry, sizeof(entry),
		     "MESSAGE=%s\nPRIORITY=%d\nSYSLOG_IDENTIFIER=%s\nCODE_FILE=%s\nCODE_LINE=%d\n",
		     msg, level, log_ident, file, line);
	if (n < 0 || (size_t)n >= sizeof(entry) ||
	    send(journal_fd, entry, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		syslog(level, "%s", msg);
}

void qj_log_set_level(int max_level)
{
	log_max_level = max_level;
}

int qj_log_internal(int level, int error, const char *file, int line, const char *fmt, ...)
{
	char raw[1024], msg[1024];
	char expanded[1024];
	size_t o = 0;
	int saved = errno;
	va_list ap;

	if (error < 0)
		error = -error;
	if (level > log_max_level)
		goto out;

	/* Expand %m ourselves: errno may have changed since the error was caught. */
	for (const char *p = fmt; *p && o + 1 < sizeof(expanded); p++) {
		if (p[0] == '%' && p[1] == 'm') {
			const char *s = strerror(error ? error : saved);
			size_t n = strlen(s);

			if (o + n >= sizeof(expanded))
				n = sizeof(expanded) - o - 1;
			memcpy(expanded + o, s, n);
			o += n;
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			expanded[o++] = '%';
			if (o + 1 < sizeof(expanded))
				expanded[o++] = '%';
			p++;
		} else {
			expanded[o++] = *p;
		}
	}
	expanded[o] = '\0';

	va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	(void)vsnprintf(raw, sizeof(raw), expanded, ap);
#pragma GCC diagnostic pop
	va_end(ap);
	/* Messages quote comms, hold names and reasons: one line, no control characters. */
	(void)qj_escape_buf(raw, QJ_ESCAPE_TERMINAL, msg, sizeof(msg));

	if (log_stderr) {
		if (log_max_level >= LOG_DEBUG)
			fprintf(stderr, "%s: %s (%s:%d)\n", log_ident, msg, file, line);
		else
			fprintf(stderr, "%s: %s\n", log_ident, msg);
	} else {
		if (journal_fd >= 0)
			journal_send(level, file, line, msg);
		else
			syslog(level, "%s", msg);
		/* Under systemd stderr is the journal already (JOURNAL_STREAM): once is enough. */
		if (log_starting && level <= LOG_ERR && !getenv("JOURNAL_STREAM"))
			fprintf(stderr, "%s: %s\n", log_ident, msg);
	}
out:
	errno = saved;
	return -error;
}
