// SPDX-License-Identifier: LGPL-2.1-or-later
/* Kill log reader: parses JSON Lines and applies the CLI's filters. */
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "killlog-read.h"
#include "rfc3339.h"
#include "util.h"

static bool str_field_is(json_t *rec, const char *key, const char *want)
{
	const char *v = json_string_value(json_object_get(rec, key));

	return v && strcmp(v, want) == 0;
}

static bool str_field_is_nocase(json_t *rec, const char *key, const char *want)
{
	const char *v = json_string_value(json_object_get(rec, key));

	return v && strcasecmp(v, want) == 0;
}

static bool filter_match(const struct qj_killlog_filter *f, json_t *rec)
{
	if (!f)
		return true;
	if (f->app && !str_field_is(rec, "app", f->app))
		return false;
	/* Rung actions are spelled "SIGSTOP" today and were "sigstop" before: either matches. */
	if (f->action && !str_field_is_nocase(rec, "action", f->action))
		return false;
	if (f->pid > 0 && json_integer_value(json_object_get(rec, "pid")) != f->pid)
		return false;
	if (f->has_cycle && (uint64_t)json_integer_value(json_object_get(rec, "cycle")) != f->cycle)
		return false;
	if (f->since_usec > 0) {
		const char *ts = json_string_value(json_object_get(rec, "ts"));
		uint64_t t;

		if (!ts || qj_parse_rfc3339(ts, &t) < 0 || t < f->since_usec)
			return false;
	}
	return true;
}

int qj_killlog_read(FILE *f, const struct qj_killlog_filter *flt,
		    int (*cb)(json_t *rec, void *userdata), void *userdata)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int count = 0;

	while ((n = getline(&line, &cap, f)) >= 0) {
		json_t *rec;
		int r = 0;

		if (line[n - 1] != '\n') {
			/* A line still being written: leave it for the next read (--follow). */
			(void)fseeko(f, -(off_t)n, SEEK_CUR);
			break;
		}
		rec = json_loadb(line, (size_t)n, JSON_DISABLE_EOF_CHECK, NULL);
		if (!rec)
			continue;
		if (json_is_object(rec) && filter_match(flt, rec)) {
			count++;
			if (cb)
				r = cb(rec, userdata);
		}
		json_decref(rec);
		if (r < 0)
			return r;
	}
	return count;
}

int qj_killlog_last_cycle(int fd, uint64_t *ret)
{
	char buf[65536];
	struct stat st;
	uint64_t start, best = 0;
	ssize_t n;
	char *p, *end, *nl;

	if (fstat(fd, &st) < 0)
		return negative_errno();
	start = (uint64_t)st.st_size > sizeof(buf) ? (uint64_t)st.st_size - sizeof(buf) : 0;
	n = pread(fd, buf, (size_t)((uint64_t)st.st_size - start), (off_t)start);
	if (n < 0)
		return negative_errno();
	p = buf;
	end = buf + n;
	if (start > 0) { /* the window starts inside a line: skip it */
		nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	/* Records are appended in cycle order, but a gap record has none: take the largest. */
	for (; p < end && (nl = memchr(p, '\n', (size_t)(end - p))); p = nl + 1) {
		json_t *rec = json_loadb(p, (size_t)(nl - p), 0, NULL);
		json_int_t c = json_integer_value(json_object_get(rec, "cycle"));

		if (c > 0 && (uint64_t)c > best)
			best = (uint64_t)c;
		json_decref(rec);
	}
	*ret = best;
	return 0;
}
