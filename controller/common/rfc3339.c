// SPDX-License-Identifier: LGPL-2.1-or-later
/* RFC 3339 timestamps: the kill log writes them, its readers and the CLI's --since parse them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rfc3339.h"
#include "util.h"

int qj_format_rfc3339(uint64_t realtime_usec, char *buf, size_t size)
{
	time_t sec = (time_t)(realtime_usec / USEC_PER_SEC);
	struct tm tm;
	char date[24];

	if (!gmtime_r(&sec, &tm))
		return -EOVERFLOW;
	if (strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		return -EOVERFLOW;
	if ((size_t)snprintf(buf, size, "%s.%03uZ", date,
			     (unsigned)(realtime_usec % USEC_PER_SEC / USEC_PER_MSEC)) >= size)
		return -ENOBUFS;
	return 0;
}

int qj_parse_rfc3339(const char *s, uint64_t *ret_usec)
{
	struct tm tm = {};
	const char *p;
	uint64_t frac = 0, scale = USEC_PER_SEC;
	long offset = 0;
	time_t t;

	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return -EINVAL;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (scale > 1) {
				scale /= 10;
				frac += (uint64_t)(*p - '0') * scale;
			}
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
		int hh, mm;

		if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2)
			return -EINVAL;
		offset = (hh * 60L + mm) * 60L * (*p == '+' ? 1 : -1);
		p += 6;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	t = timegm(&tm);
	if (t == (time_t)-1 || t - offset < 0)
		return -ERANGE;
	*ret_usec = (uint64_t)(t - offset) * USEC_PER_SEC + frac;
	return 0;
}
