// SPDX-License-Identifier: LGPL-2.1-or-later
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "log.h"

static bool log_stderr = true;
static int log_max_level = LOG_INFO;
static const char *log_ident = "qosjail";

void qj_log_open(const char *ident, bool to_stderr, int max_level)
{
	log_ident = ident;
	log_stderr = to_stderr;
	log_max_level = max_level;
	if (!to_stderr)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

int qj_log_level(void)
{
	return log_max_level;
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
		syslog(level, "%s", msg);
	}
out:
	errno = saved;
	return -error;
}
