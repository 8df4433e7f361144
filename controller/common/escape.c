// SPDX-License-Identifier: LGPL-2.1-or-later
/* Escaping of untrusted text for JSON (invalid UTF-8) and for terminals (controls too). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"

/*
 * Decodes the UTF-8 sequence at @p: its length, and the code point in *ret_cp;
 * 0 when it is not valid (stray continuation, overlong, surrogate, beyond
 * U+10FFFF, cut short).
 */
static size_t utf8_decode(const unsigned char *p, uint32_t *ret_cp)
{
	static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	uint32_t cp;
	size_t n;

	if (p[0] < 0x80) {
		*ret_cp = p[0];
		return 1;
	}
	if ((p[0] & 0xe0) == 0xc0) {
		n = 2;
		cp = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		n = 3;
		cp = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		n = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*ret_cp = cp;
	return n;
}

/* Code points a terminal acts on or that reorder or split what is shown. */
static bool terminal_unsafe(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c || cp == 0x200e ||
	       cp == 0x200f || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

/* The escape of @cp (terminal_unsafe(): at most U+2069) into @out[8]. */
static void terminal_escape(uint32_t cp, char out[static 8])
{
	switch (cp) {
	case '\n':
		strcpy(out, "\\n");
		return;
	case '\r':
		strcpy(out, "\\r");
		return;
	case '\t':
		strcpy(out, "\\t");
		return;
	case 0x1b:
		strcpy(out, "\\e");
		return;
	}
	if (cp <= 0x7f)
		snprintf(out, 8, "\\x%02x", (unsigned)cp & 0x7f);
	else
		snprintf(out, 8, "\\u%04x", (unsigned)cp & 0xffff);
}

size_t qj_escape_buf(const char *s, unsigned flags, char *buf, size_t size)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = 0, written = 0;
	bool cut = false;

	while (*p) {
		char esc[8];
		const char *piece = esc;
		size_t n, take;
		uint32_t cp;

		n = utf8_decode(p, &cp);
		if (n == 0) {
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
			take = 1;
		} else if ((flags & QJ_ESCAPE_TERMINAL) && terminal_unsafe(cp)) {
			terminal_escape(cp, esc);
			take = n;
		} else if ((flags & QJ_ESCAPE_TERMINAL) && cp == '\\') {
			strcpy(esc, "\\\\");
			take = 1;
		} else {
			piece = (const char *)p;
			take = n;
		}
		n = piece == esc ? strlen(esc) : take;
		/* Cut between escapes (and characters), never inside one. */
		if (!cut && written + n < size) {
			memcpy(buf + written, piece, n);
			written += n;
		} else {
			cut = true;
		}
		len += n;
		p += take;
	}
	if (size > 0)
		buf[written] = '\0';
	return len;
}

char *qj_escape(const char *s, unsigned flags)
{
	size_t n = qj_escape_buf(s, flags, NULL, 0);
	char *buf = malloc(n + 1);

	if (buf)
		(void)qj_escape_buf(s, flags, buf, n + 1);
	return buf;
}

json_t *qj_json_string_escaped(const char *s)
{
	char *e;
	json_t *j;

	if (!s)
		return json_null();
	j = json_string(s);
	if (j)
		return j; /* valid UTF-8: as it is */
	e = qj_escape(s, QJ_ESCAPE_UTF8);
	if (!e)
		return NULL;
	j = json_string(e);
	free(e);
	return j;
}

int qj_json_escape_strings(json_t *j, unsigned flags)
{
	const char *key;
	json_t *v;
	size_t i;
	int r;

	if (json_is_string(j)) {
		char *e = qj_escape(json_string_value(j), flags);

		if (!e)
			return -ENOMEM;
		r = json_string_set(j, e) < 0 ? -ENOMEM : 0;
		free(e);
		return r;
	}
	if (json_is_object(j))
		json_object_foreach (j, key, v) {
			r = qj_json_escape_strings(v, flags);
			if (r < 0)
				return r;
		}
	if (json_is_array(j))
		json_array_foreach (j, i, v) {
			r = qj_json_escape_strings(v, flags);
			if (r < 0)
				return r;
		}
	return 0;
}
