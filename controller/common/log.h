/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Daemon and CLI logging: stderr (with -d, or for the CLI) or the journal, syslog where
 * there is no journal.  Library code logs only at debug level.  The message text is for
 * people: the code location (relative to the source tree, -ffile-prefix-map) goes to the
 * journal as CODE_FILE/CODE_LINE fields and to stderr only at debug level.
 */
#ifndef QJ_LOG_H
#define QJ_LOG_H

#include <stdbool.h>
#include <syslog.h>

void qj_log_open(const char *ident, bool to_stderr, int max_level);
/* Logs to the journal's native socket @path (the journal's own, or a test's); -errno. */
int qj_log_open_journal(const char *ident, const char *path, int max_level);
void qj_log_set_level(int max_level);
/*
 * While @on, errors also go to stderr when the log goes elsewhere: a daemon that fails
 * to start, run by hand on a host without a journal or syslog, must still say why.
 */
void qj_log_set_starting(bool on);

/* Logs at @level; "%m" expands to strerror(-error) when error != 0.  Returns -abs(error). */
int qj_log_internal(int level, int error, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#define log_full_errno(level, error, ...) \
	qj_log_internal((level), (error), __FILE__, __LINE__, __VA_ARGS__)
#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, (e), __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, (e), __VA_ARGS__)

#endif
