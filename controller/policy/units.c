// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Values of the policy language: durations ("250ms", "5s", "2m"), sizes ("64K", "10M"),
 * percentages; parsed strictly (overflow is an error) and formatted back for --dump.
 * The CLI uses the parsers too.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "policy-internal.h"
#include "policy.h"
#include "util.h"

/* ---- value syntax ----------------------------------------------------------------------- */

bool qj_units_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* v = v * 10 + digit, or -ERANGE. */
static int add_digit(uint64_t *v, char digit)
{
	uint64_t d = (uint64_t)(digit - '0');

	if (*v > (UINT64_MAX - d) / 10)
		return -ERANGE;
	*v = *v * 10 + d;
	return 0;
}

/* Decimal digits only (no sign, no 0x, no spaces): the schema has no negative numbers. */
int qj_units_parse_u64(const char *s, uint64_t *ret)
{
	uint64_t v = 0;

	if (!s || !qj_units_is_digit(*s))
		return -EINVAL;
	for (; qj_units_is_digit(*s); s++)
		if (add_digit(&v, *s) < 0)
			return -ERANGE;
	if (*s)
		return -EINVAL;
	*ret = v;
	return 0;
}

int qj_parse_duration(const char *s, uint64_t *ret_usec)
{
	static const struct {
		const char *suffix;
		uint64_t usec;
	} units[] = {
		{ "us", 1 },
		{ "ms", USEC_PER_MSEC },
		{ "s", USEC_PER_SEC },
		{ "m", USEC_PER_MINUTE },
		{ "min", USEC_PER_MINUTE },
		{ "h", USEC_PER_HOUR },
	};
	uint64_t whole = 0, frac = 0, scale = 1, unit = 0, v, f;

	if (!s || !qj_units_is_digit(*s))
		return -EINVAL;
	for (; qj_units_is_digit(*s); s++)
		if (add_digit(&whole, *s) < 0)
			return -ERANGE;
	if (*s == '.') {
		s++;
		if (!qj_units_is_digit(*s))
			return -EINVAL;
		for (; qj_units_is_digit(*s); s++) {
			if (scale >= 1000000000ULL)
				return -EINVAL; /* finer than any unit allows */
			frac = frac * 10 + (uint64_t)(*s - '0');
			scale *= 10;
		}
	}
	if (!*s) {
		/* A bare "0" is unambiguous; any other number needs its unit. */
		if (whole == 0 && frac == 0) {
			*ret_usec = 0;
			return 0;
		}
		return -EINVAL;
	}
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (strcmp(s, units[i].suffix) == 0)
			unit = units[i].usec;
	if (!unit)
		return -EINVAL;
	if (whole > UINT64_MAX / unit)
		return -ERANGE;
	v = whole * unit;
	f = frac * unit; /* frac < 10^9, unit <= 3.6 * 10^9: no overflow */
	if (f % scale)
		return -EINVAL; /* "1.5us": below a microsecond */
	f /= scale;
	if (v > UINT64_MAX - f)
		return -ERANGE;
	*ret_usec = v + f;
	return 0;
}

int qj_parse_size(const char *s, uint64_t *ret_bytes)
{
	uint64_t v = 0, mult = 1;

	if (!s || !qj_units_is_digit(*s))
		return -EINVAL;
	for (; qj_units_is_digit(*s); s++)
		if (add_digit(&v, *s) < 0)
			return -ERANGE;
	if (*s) {
		switch (*s) {
		case 'K':
		case 'k':
			mult = 1ULL << 10;
			break;
		case 'M':
			mult = 1ULL << 20;
			break;
		case 'G':
			mult = 1ULL << 30;
			break;
		default:
			return -EINVAL;
		}
		if (s[1])
			return -EINVAL;
	}
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*ret_bytes = v * mult;
	return 0;
}

/* "5%", "2.5%" -> 0.05, 0.025.  At most three decimals: the dump prints them exactly. */
int qj_units_parse_percent(const char *s, double *ret)
{
	const char *p = s;
	char *end;
	double v;

	if (!qj_units_is_digit(*p))
		return -EINVAL;
	while (qj_units_is_digit(*p))
		p++;
	if (*p == '.') {
		p++;
		if (!qj_units_is_digit(*p))
			return -EINVAL;
		for (int k = 0; qj_units_is_digit(*p); p++, k++)
			if (k == 3)
				return -EINVAL;
	}
	if (p[0] != '%' || p[1])
		return -EINVAL;
	v = strtod(s, &end); /* digits and one dot checked above: locale-independent here */
	if (end != p)
		return -EINVAL;
	*ret = v / 100.0;
	return 0;
}

/* Largest unit that expresses @usec exactly: "2s", "250ms", "90s", "0". */
const char *qj_units_format_duration(uint64_t usec, char buf[static 32])
{
	if (usec == 0)
		snprintf(buf, 32, "0");
	else if (usec % USEC_PER_HOUR == 0)
		snprintf(buf, 32, "%" PRIu64 "h", (uint64_t)(usec / USEC_PER_HOUR));
	else if (usec % USEC_PER_MINUTE == 0)
		snprintf(buf, 32, "%" PRIu64 "m", (uint64_t)(usec / USEC_PER_MINUTE));
	else if (usec % USEC_PER_SEC == 0)
		snprintf(buf, 32, "%" PRIu64 "s", (uint64_t)(usec / USEC_PER_SEC));
	else if (usec % USEC_PER_MSEC == 0)
		snprintf(buf, 32, "%" PRIu64 "ms", (uint64_t)(usec / USEC_PER_MSEC));
	else
		snprintf(buf, 32, "%" PRIu64 "us", usec);
	return buf;
}

const char *qj_units_format_size(uint64_t bytes, char buf[static 32])
{
	if (bytes && bytes % (1ULL << 30) == 0)
		snprintf(buf, 32, "%" PRIu64 "G", bytes >> 30);
	else if (bytes && bytes % (1ULL << 20) == 0)
		snprintf(buf, 32, "%" PRIu64 "M", bytes >> 20);
	else if (bytes && bytes % (1ULL << 10) == 0)
		snprintf(buf, 32, "%" PRIu64 "K", bytes >> 10);
	else
		snprintf(buf, 32, "%" PRIu64, bytes);
	return buf;
}
