// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The policy language, version 1.  Two passes:
 *
 * 1. build_tree(): libyaml events -> a small node tree that keeps each node's exact mark.
 *    libyaml has no schema and no limits, so aliases are counted here (alias bombs), an
 *    anchor becomes visible only once its node is complete (no cycles), and every node is
 *    owned by one flat list (shared alias targets are freed once).
 * 2. walk_*(): a table-driven schema walk over the tree that fills a struct qj_policy and
 *    records every problem with its position and key path.  It never stops at the first
 *    error; the caller gets the policy only when there was none.
 *
 * Pure: no syscalls except reading the file in qj_policy_load().
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <fnmatch.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "policy.h"
#include "util.h"

#define MAX_DEPTH 64 /* nesting of YAML collections; the schema needs 5 */
#define QUOTE_MAX 48 /* user text quoted in a message is cut after this many bytes */
#define USEC_PER_MINUTE (60 * USEC_PER_SEC)
#define USEC_PER_HOUR (60 * USEC_PER_MINUTE)
#define USEC_PER_DAY (24 * USEC_PER_HOUR)

DEFINE_TRIVIAL_CLEANUP_FUNC(struct qj_policy *, qj_policy_free);

/* ---- strings ---------------------------------------------------------------------------- */

static const char *const backend_names[_QJ_BACKEND_MAX] = {
	[QJ_BACKEND_AUTO] = "auto",
	[QJ_BACKEND_QOS] = "qos",
	[QJ_BACKEND_WAKEUP_COUNT] = "wakeup-count",
	[QJ_BACKEND_MEM] = "mem",
	[QJ_BACKEND_FREEZE] = "freeze",
	[QJ_BACKEND_DRY_RUN] = "dry-run",
};

static const char *const trust_names[_QJ_TRUST_MAX] = {
	[QJ_TRUST_JAILED] = "jailed",
	[QJ_TRUST_TRUSTED] = "trusted",
};

const char *qj_backend_to_string(enum qj_backend b)
{
	return b >= 0 && b < _QJ_BACKEND_MAX ? backend_names[b] : NULL;
}

enum qj_backend qj_backend_from_string(const char *s)
{
	for (int i = 0; s && i < _QJ_BACKEND_MAX; i++)
		if (strcmp(s, backend_names[i]) == 0)
			return i;
	return _QJ_BACKEND_INVALID;
}

const char *qj_trust_to_string(enum qj_trust t)
{
	return t >= 0 && t < _QJ_TRUST_MAX ? trust_names[t] : NULL;
}

enum qj_trust qj_trust_from_string(const char *s)
{
	for (int i = 0; s && i < _QJ_TRUST_MAX; i++)
		if (strcmp(s, trust_names[i]) == 0)
			return i;
	return _QJ_TRUST_INVALID;
}

/* ---- value syntax ----------------------------------------------------------------------- */

static bool is_digit(char c)
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
static int parse_u64(const char *s, uint64_t *ret)
{
	uint64_t v = 0;

	if (!s || !is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++)
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

	if (!s || !is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++)
		if (add_digit(&whole, *s) < 0)
			return -ERANGE;
	if (*s == '.') {
		s++;
		if (!is_digit(*s))
			return -EINVAL;
		for (; is_digit(*s); s++) {
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

	if (!s || !is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++)
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
static int parse_percent(const char *s, double *ret)
{
	const char *p = s;
	char *end;
	double v;

	if (!is_digit(*p))
		return -EINVAL;
	while (is_digit(*p))
		p++;
	if (*p == '.') {
		p++;
		if (!is_digit(*p))
			return -EINVAL;
		for (int k = 0; is_digit(*p); p++, k++)
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
static const char *format_duration(uint64_t usec, char buf[static 32])
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

static const char *format_size(uint64_t bytes, char buf[static 32])
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

/* Names of apps, rungs and groups: no spaces or control characters, so logs stay parseable. */
static bool name_is_valid(const char *s, bool allow_upper)
{
	size_t n = strlen(s);

	if (n == 0 || n > QJ_POLICY_NAME_MAX ||
	    !(is_digit(s[0]) || (s[0] >= 'a' && s[0] <= 'z') ||
	      (allow_upper && s[0] >= 'A' && s[0] <= 'Z')))
		return false;
	for (; *s; s++)
		if (!(is_digit(*s) || (*s >= 'a' && *s <= 'z') ||
		      (allow_upper && *s >= 'A' && *s <= 'Z') || *s == '-' || *s == '_' ||
		      *s == '.'))
			return false;
	return true;
}

/* ---- diagnostics ------------------------------------------------------------------------ */

void qj_diags_done(struct qj_diags *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].path);
		free(d->v[i].message);
	}
	free(d->v);
	free(d->file);
	*d = (struct qj_diags){};
}

void qj_diags_print(const struct qj_diags *d, FILE *f)
{
	const char *file = d->file ? d->file : "<input>";

	for (size_t i = 0; i < d->n; i++) {
		const struct qj_diag *g = &d->v[i];

		if (g->path && g->path[0])
			fprintf(f, "%s:%u:%u: %s: %s\n", file, g->line, g->col, g->path,
				g->message);
		else
			fprintf(f, "%s:%u:%u: %s\n", file, g->line, g->col, g->message);
	}
}

/* ---- parse context and node tree -------------------------------------------------------- */

enum node_kind {
	NODE_SCALAR,
	NODE_SEQ,
	NODE_MAP,
	NODE_ALIAS,
	NODE_BAD, /* already diagnosed (undefined or excess alias): accepted silently */
};

struct node {
	enum node_kind kind;
	unsigned line, col; /* 0-based, as libyaml marks them */
	bool plain; /* unquoted scalar: may be null, a number or a boolean */
	char *value; /* scalar text, NUL-terminated */
	size_t len;
	struct node **items; /* sequence items; mapping: key, value, key, value, ... */
	size_t n_items, a_items;
	struct node *target; /* alias */
};

struct anchor {
	char *name;
	struct node *node;
};

struct ctx {
	const char *text;
	size_t len;
	struct qj_diags *diags;
	size_t first_diag; /* diags->v[first_diag...] are ours */
	size_t n_dropped;
	unsigned drop_line, drop_col;
	bool diags_closing; /* the "more errors" line bypasses the cap */
	int error; /* -ENOMEM: stop everything */

	struct node **nodes; /* owns every node */
	size_t n_nodes, a_nodes;
	struct anchor *anchors;
	size_t n_anchors, a_anchors;
	unsigned n_aliases;

	char *path; /* key path of the node being walked */
	size_t path_len, a_path;

	struct qj_policy *p;
	bool ladder_ok; /* rung names may be resolved */
};

static int grow(void **v, size_t *alloc, size_t need, size_t size)
{
	size_t n;
	void *nv;

	if (need <= *alloc)
		return 0;
	n = *alloc ? *alloc * 2 : 8;
	if (n < need)
		n = need;
	nv = reallocarray(*v, n, size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*alloc = n;
	return 0;
}

/* Bounded, single-line copy of user text for a message: control bytes become '?'. */
static const char *printable(const char *s, size_t len, char buf[static QUOTE_MAX + 4])
{
	size_t n = len, o = 0;
	bool cut = false;

	if (n > QUOTE_MAX) {
		n = QUOTE_MAX;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--; /* do not cut a UTF-8 sequence */
		cut = true;
	}
	for (size_t i = 0; i < n; i++)
		buf[o++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	if (cut) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = 0;
	return buf;
}

static void diag_pos(struct ctx *c, unsigned line0, unsigned col0, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void diag_pos(struct ctx *c, unsigned line0, unsigned col0, const char *fmt, ...)
{
	struct qj_diags *d = c->diags;
	struct qj_diag g = { .line = line0 + 1, .col = col0 + 1 }, *v;
	va_list ap;
	int r;

	if (c->error)
		return;
	/* Keep one slot for the "more errors" line. */
	if (d->n - c->first_diag >= QJ_POLICY_MAX_DIAGS - 1 && !c->diags_closing) {
		if (c->n_dropped++ == 0) {
			c->drop_line = line0;
			c->drop_col = col0;
		}
		return;
	}
	va_start(ap, fmt);
	r = vasprintf(&g.message, fmt, ap);
	va_end(ap);
	if (r < 0) {
		c->error = -ENOMEM;
		return;
	}
	g.path = strndup(c->path ? c->path : "", c->path_len);
	/* At most QJ_POLICY_MAX_DIAGS entries: growing one at a time is fine. */
	v = g.path ? reallocarray(d->v, d->n + 1, sizeof(*d->v)) : NULL;
	if (!v) {
		free(g.path);
		free(g.message);
		c->error = -ENOMEM;
		return;
	}
	d->v = v;
	d->v[d->n++] = g;
}

#define diag(c, node, ...) diag_pos((c), (node)->line, (node)->col, __VA_ARGS__)

/* Stable sort by position (n <= QJ_POLICY_MAX_DIAGS), then the "more errors" line. */
static void diags_finish(struct ctx *c)
{
	struct qj_diags *d = c->diags;

	for (size_t i = c->first_diag + 1; i < d->n; i++) {
		struct qj_diag g = d->v[i];
		size_t j = i;

		for (;
		     j > c->first_diag && (d->v[j - 1].line > g.line ||
					   (d->v[j - 1].line == g.line && d->v[j - 1].col > g.col));
		     j--)
			d->v[j] = d->v[j - 1];
		d->v[j] = g;
	}
	if (c->n_dropped) {
		size_t n = c->n_dropped;

		c->diags_closing = true;
		c->path_len = 0;
		diag_pos(c, c->drop_line, c->drop_col, "too many errors; %zu more not shown", n);
	}
}

static size_t path_push(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends to the key path; returns the length to restore with path_pop(). */
static size_t path_push(struct ctx *c, const char *fmt, ...)
{
	size_t old = c->path_len;
	char buf[QUOTE_MAX + 32];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return old;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	if (grow((void **)&c->path, &c->a_path, c->path_len + (size_t)n + 1, 1) < 0) {
		c->error = -ENOMEM;
		return old;
	}
	memcpy(c->path + c->path_len, buf, (size_t)n);
	c->path_len += (size_t)n;
	c->path[c->path_len] = 0;
	return old;
}

static size_t path_push_key(struct ctx *c, const char *key, size_t len)
{
	char q[QUOTE_MAX + 4];

	return path_push(c, "%s%s", c->path_len ? "." : "", printable(key, len, q));
}

static void path_pop(struct ctx *c, size_t old)
{
	c->path_len = old;
	if (c->path)
		c->path[old] = 0;
}

static struct node *node_new(struct ctx *c, enum node_kind kind, const yaml_mark_t *m)
{
	struct node *n;

	if (grow((void **)&c->nodes, &c->a_nodes, c->n_nodes + 1, sizeof(*c->nodes)) < 0)
		return NULL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->kind = kind;
	n->line = (unsigned)m->line;
	n->col = (unsigned)m->column;
	c->nodes[c->n_nodes++] = n;
	return n;
}

static int node_append(struct node *parent, struct node *child)
{
	if (grow((void **)&parent->items, &parent->a_items, parent->n_items + 1,
		 sizeof(*parent->items)) < 0)
		return -ENOMEM;
	parent->items[parent->n_items++] = child;
	return 0;
}

static int anchor_add(struct ctx *c, const yaml_char_t *name, struct node *n)
{
	char *s;

	if (!name)
		return 0;
	s = strdup((const char *)name);
	if (!s ||
	    grow((void **)&c->anchors, &c->a_anchors, c->n_anchors + 1, sizeof(*c->anchors)) < 0) {
		free(s);
		return -ENOMEM;
	}
	c->anchors[c->n_anchors++] = (struct anchor){ s, n };
	return 0;
}

static struct node *anchor_find(struct ctx *c, const char *name)
{
	for (size_t i = c->n_anchors; i > 0; i--) /* a redefined anchor: the latest wins */
		if (strcmp(c->anchors[i - 1].name, name) == 0)
			return c->anchors[i - 1].node;
	return NULL;
}

static void ctx_done(struct ctx *c)
{
	for (size_t i = 0; i < c->n_nodes; i++) {
		free(c->nodes[i]->value);
		free(c->nodes[i]->items);
		free(c->nodes[i]);
	}
	free(c->nodes);
	for (size_t i = 0; i < c->n_anchors; i++)
		free(c->anchors[i].name);
	free(c->anchors);
	free(c->path);
}

/* Byte offset -> 0-based line and column (in characters, as libyaml counts them). */
static void offset_to_pos(const char *text, size_t len, size_t offset, unsigned *line,
			  unsigned *col)
{
	*line = *col = 0;
	for (size_t i = 0; i < offset && i < len; i++) {
		unsigned char b = (unsigned char)text[i];

		if (b == '\n' || (b == '\r' && (i + 1 >= len || text[i + 1] != '\n'))) {
			(*line)++;
			*col = 0;
		} else if ((b & 0xc0) != 0x80 && b != '\r') {
			(*col)++;
		}
	}
}

/*
 * Offset of the first byte that is not part of well-formed UTF-8 (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF), or @len.  libyaml detects the same but reports the
 * byte after a truncated sequence; this finds the sequence's first byte.
 */
static size_t utf8_invalid_offset(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char b = s[i];
		size_t n;
		uint32_t cp;

		if (b < 0x80) {
			i++;
			continue;
		}
		if (b >= 0xc2 && b <= 0xdf) {
			n = 1;
			cp = b & 0x1f;
		} else if (b >= 0xe0 && b <= 0xef) {
			n = 2;
			cp = b & 0x0f;
		} else if (b >= 0xf0 && b <= 0xf4) {
			n = 3;
			cp = b & 0x07;
		} else {
			return i;
		}
		if (len - i <= n)
			return i;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return i;
		i += n + 1;
	}
	return len;
}

static void syntax_error(struct ctx *c, const yaml_parser_t *y)
{
	unsigned line, col;

	switch (y->error) {
	case YAML_MEMORY_ERROR:
		c->error = -ENOMEM;
		return;
	case YAML_READER_ERROR:
		offset_to_pos(c->text, c->len, y->problem_offset, &line, &col);
		if (y->problem && strstr(y->problem, "control characters"))
			diag_pos(c, line, col,
				 "control character 0x%02X is not allowed in a policy file",
				 (unsigned)y->problem_value);
		else if (y->problem_value >= 0)
			diag_pos(
				c, line, col,
				"not valid UTF-8 (%s, byte 0x%02X); a policy file must be UTF-8 text",
				y->problem ? y->problem : "invalid input",
				(unsigned)y->problem_value & 0xff);
		else
			diag_pos(c, line, col,
				 "not valid UTF-8 (%s); a policy file must be UTF-8 text",
				 y->problem ? y->problem : "invalid input");
		return;
	default:
		if (y->context)
			diag_pos(c, (unsigned)y->problem_mark.line,
				 (unsigned)y->problem_mark.column, "syntax error: %s (%s at %u:%u)",
				 y->problem ? y->problem : "unknown", y->context,
				 (unsigned)y->context_mark.line + 1,
				 (unsigned)y->context_mark.column + 1);
		else
			diag_pos(c, (unsigned)y->problem_mark.line,
				 (unsigned)y->problem_mark.column, "syntax error: %s",
				 y->problem ? y->problem : "unknown");
		return;
	}
}

/*
 * Builds the tree of the first document.  Returns 1 with *ret_root set (NULL for a stream
 * without documents) when the schema walk may run, 0 after a fatal diagnostic (syntax,
 * encoding, nesting), -ENOMEM.
 */
static int build_tree(struct ctx *c, struct node **ret_root)
{
	struct node *stack[MAX_DEPTH];
	char *stack_anchor[MAX_DEPTH];
	struct node *root = NULL;
	yaml_parser_t y;
	unsigned n_docs = 0;
	size_t depth = 0;
	int r = 1;

	if (!yaml_parser_initialize(&y))
		return -ENOMEM;
	yaml_parser_set_input_string(&y, (const unsigned char *)(c->text ?: ""), c->len);
	yaml_parser_set_encoding(&y, YAML_UTF8_ENCODING); /* no UTF-16 guessing: UTF-8 only */

	for (bool done = false; !done && r > 0 && !c->error;) {
		yaml_event_t ev;
		struct node *n = NULL;
		const yaml_char_t *anchor = NULL;

		if (!yaml_parser_parse(&y, &ev)) {
			syntax_error(c, &y);
			r = 0;
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++n_docs > 1) {
				diag_pos(c, (unsigned)ev.start_mark.line,
					 (unsigned)ev.start_mark.column,
					 "a second YAML document; a policy file holds exactly one");
				done = true; /* walk the first one */
			}
			break;
		case YAML_SCALAR_EVENT:
			n = node_new(c, NODE_SCALAR, &ev.start_mark);
			if (!n)
				break;
			n->value = malloc(ev.data.scalar.length + 1);
			if (!n->value)
				break;
			memcpy(n->value, ev.data.scalar.value, ev.data.scalar.length);
			n->value[ev.data.scalar.length] = 0;
			n->len = ev.data.scalar.length;
			n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
			anchor = ev.data.scalar.anchor;
			break;
		case YAML_ALIAS_EVENT: {
			const char *name = (const char *)ev.data.alias.anchor;
			struct node *target = NULL;

			if (++c->n_aliases <= QJ_POLICY_MAX_ALIASES)
				target = anchor_find(c, name);
			n = node_new(c, target ? NODE_ALIAS : NODE_BAD, &ev.start_mark);
			if (!n)
				break;
			n->target = target;
			if (c->n_aliases == QJ_POLICY_MAX_ALIASES + 1)
				diag(c, n,
				     "more than %d aliases; aliases are limited to stop alias bombs",
				     QJ_POLICY_MAX_ALIASES);
			else if (!target && c->n_aliases <= QJ_POLICY_MAX_ALIASES) {
				char q[QUOTE_MAX + 4];

				diag(c, n, "alias '*%s' refers to no anchor defined before it",
				     printable(name, strlen(name), q));
			}
			break;
		}
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			n = node_new(c, ev.type == YAML_SEQUENCE_START_EVENT ? NODE_SEQ : NODE_MAP,
				     &ev.start_mark);
			if (!n)
				break;
			if (depth == MAX_DEPTH) {
				diag(c, n, "nested more than %d levels deep", MAX_DEPTH);
				r = 0;
			}
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			assert(depth > 0);
			depth--;
			/* Only now may an alias refer to it: no cycles. */
			if (stack_anchor[depth] &&
			    anchor_add(c, (const yaml_char_t *)stack_anchor[depth], stack[depth]) <
				    0)
				c->error = -ENOMEM;
			free(stack_anchor[depth]);
			break;
		default:
			break;
		}
		if (!c->error && r > 0 &&
		    (ev.type == YAML_SCALAR_EVENT || ev.type == YAML_ALIAS_EVENT ||
		     ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT)) {
			if (!n || (n->kind == NODE_SCALAR && !n->value))
				c->error = -ENOMEM;
			else if (depth == 0)
				root = n;
			else if (node_append(stack[depth - 1], n) < 0)
				c->error = -ENOMEM;
			if (!c->error && ev.type == YAML_SCALAR_EVENT &&
			    anchor_add(c, anchor, n) < 0)
				c->error = -ENOMEM;
			if (!c->error && (ev.type == YAML_SEQUENCE_START_EVENT ||
					  ev.type == YAML_MAPPING_START_EVENT)) {
				const yaml_char_t *a = ev.type == YAML_SEQUENCE_START_EVENT ?
							       ev.data.sequence_start.anchor :
							       ev.data.mapping_start.anchor;

				stack_anchor[depth] = a ? strdup((const char *)a) : NULL;
				if (a && !stack_anchor[depth])
					c->error = -ENOMEM;
				stack[depth++] = n;
			}
		}
		yaml_event_delete(&ev);
	}
	while (depth > 0)
		free(stack_anchor[--depth]);
	yaml_parser_delete(&y);
	if (c->error)
		return c->error;
	*ret_root = root;
	return r;
}

/* ---- schema walk: node helpers ---------------------------------------------------------- */

static struct node *deref(struct node *n)
{
	while (n && n->kind == NODE_ALIAS)
		n = n->target;
	return n;
}

/* The value of @key in mapping @map, for positions of cross-field errors; NULL if absent. */
static struct node *map_get(struct node *map, const char *key)
{
	map = deref(map);
	for (size_t m = 0; map->kind == NODE_MAP && m + 1 < map->n_items; m += 2) {
		struct node *k = deref(map->items[m]);

		if (k->kind == NODE_SCALAR && strcmp(k->value, key) == 0)
			return deref(map->items[m + 1]);
	}
	return NULL;
}

static bool is_null(const struct node *n)
{
	return n->kind == NODE_SCALAR && n->plain &&
	       (n->len == 0 || strcmp(n->value, "~") == 0 || strcmp(n->value, "null") == 0 ||
		strcmp(n->value, "Null") == 0 || strcmp(n->value, "NULL") == 0);
}

/* What the user wrote, for "expected X, got Y". */
static const char *describe(const struct node *n, char buf[static QUOTE_MAX + 16])
{
	char q[QUOTE_MAX + 4];

	switch (n->kind) {
	case NODE_SEQ:
		return "a list";
	case NODE_MAP:
		return "a mapping";
	case NODE_SCALAR:
		if (is_null(n))
			return "nothing (null)";
		snprintf(buf, QUOTE_MAX + 16, "%s'%s'", n->plain ? "" : "the quoted string ",
			 printable(n->value, n->len, q));
		return buf;
	default:
		return "an invalid value";
	}
}

static bool expect_kind(struct ctx *c, struct node *n, enum node_kind kind, const char *what)
{
	char buf[QUOTE_MAX + 16];

	if (n->kind == NODE_BAD)
		return false;
	if (n->kind == kind && !(kind == NODE_SCALAR && is_null(n)))
		return true;
	diag(c, n, "expected %s, got %s", what, describe(n, buf));
	return false;
}

/*
 * Control characters (C0, DEL, C1 such as NEL), Unicode line and paragraph separators and the
 * noncharacters U+FFFE/U+FFFF, reachable through double-quoted escapes: they have no place in
 * names, paths or globs, would break one-line log records, and YAML would read some of them
 * back as line breaks.  @s is valid UTF-8 (checked before parsing, and libyaml's escapes).
 */
static bool text_is_clean(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < len; i++) {
		if (u[i] < 0x20 || u[i] == 0x7f)
			return false;
		if (u[i] == 0xc2 && i + 1 < len && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f)
			return false;
		if (u[i] == 0xe2 && i + 2 < len && u[i + 1] == 0x80 &&
		    (u[i + 2] == 0xa8 || u[i + 2] == 0xa9))
			return false;
		if (u[i] == 0xef && i + 2 < len && u[i + 1] == 0xbf &&
		    (u[i + 2] == 0xbe || u[i + 2] == 0xbf))
			return false;
	}
	return true;
}

/* A non-null scalar without control characters, or NULL after a diagnostic. */
static const char *want_scalar(struct ctx *c, struct node *n, const char *what)
{
	if (!expect_kind(c, n, NODE_SCALAR, what))
		return NULL;
	if (!text_is_clean(n->value, n->len)) {
		diag(c, n, "must not contain control characters or line breaks");
		return NULL;
	}
	return n->value;
}

/* A plain (unquoted) scalar: numbers and booleans are not strings. */
static const char *want_plain(struct ctx *c, struct node *n, const char *what)
{
	char buf[QUOTE_MAX + 16];

	if (n->kind == NODE_SCALAR && !n->plain) {
		diag(c, n, "expected %s, got %s", what, describe(n, buf));
		return NULL;
	}
	return want_scalar(c, n, what);
}

static bool get_string(struct ctx *c, struct node *n, char **ret)
{
	const char *s = want_scalar(c, n, "a string");
	char *copy;

	if (!s)
		return false;
	if (!*s) {
		diag(c, n, "must not be empty");
		return false;
	}
	copy = strdup(s);
	if (!copy) {
		c->error = -ENOMEM;
		return false;
	}
	free(*ret);
	*ret = copy;
	return true;
}

static bool get_path(struct ctx *c, struct node *n, char **ret)
{
	char q[QUOTE_MAX + 4];
	const char *s = want_scalar(c, n, "an absolute path");

	if (!s)
		return false;
	if (s[0] != '/') {
		diag(c, n, "expected an absolute path, got '%s'", printable(s, n->len, q));
		return false;
	}
	return get_string(c, n, ret);
}

static bool get_bool(struct ctx *c, struct node *n, bool *ret)
{
	static const char *const yes[] = { "true", "True", "TRUE" };
	static const char *const no[] = { "false", "False", "FALSE" };
	char buf[QUOTE_MAX + 16];
	const char *s = want_plain(c, n, "true or false");

	if (!s)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcmp(s, yes[i]) == 0) {
			*ret = true;
			return true;
		}
		if (strcmp(s, no[i]) == 0) {
			*ret = false;
			return true;
		}
	}
	diag(c, n, "expected true or false, got %s", describe(n, buf));
	return false;
}

static bool get_uint(struct ctx *c, struct node *n, uint64_t min, uint64_t max, uint64_t *ret)
{
	char buf[QUOTE_MAX + 16];
	const char *s = want_plain(c, n, "an integer");
	uint64_t v;
	int r;

	if (!s)
		return false;
	r = parse_u64(s[0] == '-' && is_digit(s[1]) ? s + 1 : s, &v);
	if (r == -EINVAL) {
		diag(c, n, "expected an integer, got %s", describe(n, buf));
		return false;
	}
	if (r < 0 || s[0] == '-' || v < min || v > max) {
		diag(c, n, "%s is out of range (%" PRIu64 "..%" PRIu64 ")", describe(n, buf), min,
		     max);
		return false;
	}
	*ret = v;
	return true;
}

static bool get_duration(struct ctx *c, struct node *n, uint64_t min, uint64_t max, uint64_t *ret)
{
	char buf[QUOTE_MAX + 16], a[32], b[32];
	const char *s = want_scalar(c, n, "a duration");
	uint64_t v;
	int r;

	if (!s)
		return false;
	r = qj_parse_duration(s, &v);
	if (r == -EINVAL) {
		diag(c, n,
		     "expected a duration such as 250ms, 5s, 2m or 1h (units: us, ms, s, m, h), got %s",
		     describe(n, buf));
		return false;
	}
	if (r < 0 || v < min || v > max) {
		diag(c, n, "duration %s is out of range (%s..%s)", describe(n, buf),
		     format_duration(min, a), format_duration(max, b));
		return false;
	}
	*ret = v;
	return true;
}

static bool get_size(struct ctx *c, struct node *n, uint64_t min, uint64_t max, uint64_t *ret)
{
	char buf[QUOTE_MAX + 16], a[32], b[32];
	const char *s = want_scalar(c, n, "a size");
	uint64_t v;
	int r;

	if (!s)
		return false;
	r = qj_parse_size(s, &v);
	if (r == -EINVAL) {
		diag(c, n, "expected a size in bytes with an optional K, M or G suffix, got %s",
		     describe(n, buf));
		return false;
	}
	if (r < 0 || v < min || v > max) {
		diag(c, n, "size %s is out of range (%s..%s)", describe(n, buf),
		     format_size(min, a), format_size(max, b));
		return false;
	}
	*ret = v;
	return true;
}

/* ---- schema walk: tables ---------------------------------------------------------------- */

enum field_type {
	F_STRING, /* char * */
	F_PATH, /* char *, absolute */
	F_BOOL, /* bool */
	F_UNSIGNED, /* unsigned, min..max */
	F_DURATION, /* uint64_t microseconds, min..max */
	F_SIZE, /* uint64_t bytes, min..max */
	F_CUSTOM, /* walk() */
};

struct field;
typedef void (*walk_fn)(struct ctx *c, struct node *n, void *obj, const struct field *f);

struct field {
	const char *key;
	enum field_type type;
	size_t offset; /* into obj */
	uint64_t min, max;
	walk_fn walk;
	bool required;
};

#define FIELD_MAX 16

static void walk_field(struct ctx *c, const struct field *f, struct node *v, void *obj)
{
	char *base = obj;
	uint64_t u;

	switch (f->type) {
	case F_STRING:
		(void)get_string(c, v, (char **)(base + f->offset));
		break;
	case F_PATH:
		(void)get_path(c, v, (char **)(base + f->offset));
		break;
	case F_BOOL:
		(void)get_bool(c, v, (bool *)(base + f->offset));
		break;
	case F_UNSIGNED:
		if (get_uint(c, v, f->min, f->max, &u))
			*(unsigned *)(base + f->offset) = (unsigned)u;
		break;
	case F_DURATION:
		(void)get_duration(c, v, f->min, f->max, (uint64_t *)(base + f->offset));
		break;
	case F_SIZE:
		(void)get_size(c, v, f->min, f->max, (uint64_t *)(base + f->offset));
		break;
	case F_CUSTOM:
		f->walk(c, v, obj, f);
		break;
	}
}

/*
 * Checks a mapping against @fields (unknown, duplicate and missing keys), then walks the
 * values in table order, so a table lists what others depend on first.  Returns a bitmask
 * of the keys present.
 */
static uint64_t walk_map(struct ctx *c, struct node *n, const struct field *fields, size_t n_fields,
			 void *obj)
{
	struct node *keys[FIELD_MAX] = {}, *vals[FIELD_MAX] = {};
	uint64_t present = 0;

	assert(n_fields <= FIELD_MAX);
	if (!expect_kind(c, n, NODE_MAP, "a mapping"))
		return 0;
	for (size_t i = 0; i + 1 < n->n_items && !c->error; i += 2) {
		struct node *k = deref(n->items[i]);
		char buf[QUOTE_MAX + 16], list[FIELD_MAX * 24];
		size_t j, mark, o = 0;

		if (k->kind == NODE_BAD)
			continue;
		if (k->kind != NODE_SCALAR || is_null(k)) {
			diag(c, k, "expected a key name, got %s", describe(k, buf));
			continue;
		}
		for (j = 0; j < n_fields; j++)
			if (strlen(k->value) == k->len && strcmp(k->value, fields[j].key) == 0)
				break;
		mark = path_push_key(c, k->value, k->len);
		if (j < n_fields && keys[j]) {
			diag(c, k, "duplicate key (first at %u:%u)", keys[j]->line + 1,
			     keys[j]->col + 1);
		} else if (j < n_fields) {
			keys[j] = k;
			vals[j] = deref(n->items[i + 1]);
			present |= 1ULL << j;
		} else {
			for (j = 0; j < n_fields; j++)
				o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s",
						      j ? ", " : "", fields[j].key);
			if (strcmp(k->value, "<<") == 0)
				diag(c, k, "YAML merge keys (<<) are not supported; known keys: %s",
				     list);
			else
				diag(c, k, "unknown key; known keys here: %s", list);
		}
		path_pop(c, mark);
	}
	for (size_t j = 0; j < n_fields && !c->error; j++) {
		size_t mark;

		if (!keys[j]) {
			if (fields[j].required)
				diag(c, n, "missing required key '%s'", fields[j].key);
			continue;
		}
		mark = path_push_key(c, fields[j].key, strlen(fields[j].key));
		walk_field(c, &fields[j], vals[j], obj);
		path_pop(c, mark);
	}
	return present;
}

/* ---- schema walk: sections -------------------------------------------------------------- */

static void walk_version(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	uint64_t v;

	if (!get_uint(c, n, 0, UINT32_MAX, &v))
		return;
	if (v != 1)
		diag(c, n, "unsupported policy version %" PRIu64 "; this qosjail reads version 1",
		     v);
}

static void walk_backend(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	const char *s = want_scalar(c, n, "a backend name");
	char q[QUOTE_MAX + 4];
	enum qj_backend b;

	if (!s)
		return;
	b = qj_backend_from_string(s);
	if (b < 0) {
		diag(c, n,
		     "unknown backend '%s'; expected auto, qos, wakeup-count, mem, freeze or dry-run",
		     printable(s, n->len, q));
		return;
	}
	c->p->backend = b;
}

static void walk_wakeup_state(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	const char *s = want_scalar(c, n, "mem or freeze");
	char q[QUOTE_MAX + 4];

	if (!s)
		return;
	if (strcmp(s, "mem") != 0 && strcmp(s, "freeze") != 0) {
		diag(c, n, "unknown sleep state '%s'; expected mem or freeze",
		     printable(s, n->len, q));
		return;
	}
	(void)get_string(c, n, &c->p->wakeup_state);
}

static void walk_retry(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "initial",
		  .type = F_DURATION,
		  .offset = offsetof(struct qj_policy, retry_initial_usec),
		  .min = USEC_PER_MSEC,
		  .max = USEC_PER_HOUR },
		{ .key = "max",
		  .type = F_DURATION,
		  .offset = offsetof(struct qj_policy, retry_max_usec),
		  .min = USEC_PER_MSEC,
		  .max = USEC_PER_DAY },
	};
	size_t before = c->diags->n;
	char a[32], b[32];

	walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
	if (c->diags->n == before && c->p->retry_max_usec < c->p->retry_initial_usec)
		diag(c, n, "max (%s) is shorter than initial (%s)",
		     format_duration(c->p->retry_max_usec, a),
		     format_duration(c->p->retry_initial_usec, b));
}

static void walk_suspend(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "backend", .type = F_CUSTOM, .walk = walk_backend },
		{ .key = "sysfs", .type = F_PATH, .offset = offsetof(struct qj_policy, sysfs_root) },
		{ .key = "state", .type = F_CUSTOM, .walk = walk_wakeup_state },
		{ .key = "idle_delay",
		  .type = F_DURATION,
		  .offset = offsetof(struct qj_policy, idle_delay_usec),
		  .min = 0,
		  .max = USEC_PER_HOUR },
		{ .key = "retry", .type = F_CUSTOM, .walk = walk_retry },
		{ .key = "dry_run_length",
		  .type = F_DURATION,
		  .offset = offsetof(struct qj_policy, dry_run_length_usec),
		  .min = 0,
		  .max = USEC_PER_HOUR },
	};

	walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
}

static void walk_timer_slack(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	uint64_t usec;

	if (get_duration(c, n, 1, USEC_PER_SEC, &usec))
		c->p->timer_slack_nsec = usec * NSEC_PER_USEC;
}

static void walk_busy_threshold(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	char buf[QUOTE_MAX + 16];
	const char *s = want_scalar(c, n, "a percentage");
	double v;

	if (!s)
		return;
	if (parse_percent(s, &v) < 0) {
		diag(c, n,
		     "expected a percentage of one CPU such as 5%% or 2.5%% (at most 3 decimals), got %s",
		     describe(n, buf));
		return;
	}
	if (!(v > 0.0 && v <= 1.0)) {
		diag(c, n, "%s is out of range (more than 0%% and at most 100%%)",
		     describe(n, buf));
		return;
	}
	c->p->busy_threshold = v;
}

static void walk_jail(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	/* Counters are tick-grained (4 ms, PLATFORM.md): a window must be far longer. */
	static const struct field fields[] = {
		{ .key = "cgroup",
		  .type = F_PATH,
		  .offset = offsetof(struct qj_policy, cgroup_path) },
		{ .key = "cpu_cgroup",
		  .type = F_PATH,
		  .offset = offsetof(struct qj_policy, cpu_cgroup_path) },
		{ .key = "cpu_idle",
		  .type = F_BOOL,
		  .offset = offsetof(struct qj_policy, cpu_idle) },
		{ .key = "timer_slack", .type = F_CUSTOM, .walk = walk_timer_slack },
		{ .key = "busy_threshold", .type = F_CUSTOM, .walk = walk_busy_threshold },
		{ .key = "sample_window",
		  .type = F_DURATION,
		  .offset = offsetof(struct qj_policy, sample_window_usec),
		  .min = 100 * USEC_PER_MSEC,
		  .max = 10 * USEC_PER_MINUTE },
	};

	walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
}

/* A rung while it is parsed: which keys were given decides the defaults. */
struct rung_parse {
	struct qj_rung r;
	bool ok;
};

static void walk_action(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct rung_parse *rp = obj;
	char q[QUOTE_MAX + 4], sig[32];
	const char *s = want_scalar(c, n, "a signal name");
	enum qj_action a;

	if (!s) {
		rp->ok = false;
		return;
	}
	a = qj_action_from_string(s);
	if (a >= 0) {
		rp->r.action = a;
		return;
	}
	rp->ok = false;
	/* A real signal that is not a rung deserves its own message. */
	for (int i = 1; i < NSIG; i++) {
		const char *abbrev = sigabbrev_np(i);

		if (!abbrev)
			continue;
		snprintf(sig, sizeof(sig), "SIG%s", abbrev);
		if (strcasecmp(s, abbrev) == 0 || strcasecmp(s, sig) == 0) {
			diag(c, n,
			     "%s is not a supported rung action; supported: SIGXCPU, SIGSTOP, SIGTERM, SIGKILL, freeze",
			     sig);
			return;
		}
	}
	diag(c, n, "unknown action '%s'; expected SIGXCPU, SIGSTOP, SIGTERM, SIGKILL or freeze",
	     printable(s, n->len, q));
}

static void walk_rung_name(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct rung_parse *rp = obj;
	char q[QUOTE_MAX + 4];
	const char *s = want_scalar(c, n, "a rung name");

	if (!s) {
		rp->ok = false;
		return;
	}
	if (!name_is_valid(s, false)) {
		diag(c, n,
		     "invalid rung name '%s': use up to %d lowercase letters, digits, '-', '_' and '.'",
		     printable(s, n->len, q), QJ_POLICY_NAME_MAX);
		rp->ok = false;
		return;
	}
	if (!get_string(c, n, &rp->r.name))
		rp->ok = false;
}

static void walk_grace(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct rung_parse *rp = obj;

	if (!get_duration(c, n, 0, USEC_PER_HOUR, &rp->r.grace_usec))
		rp->ok = false;
}

static void walk_ladder(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "action", .type = F_CUSTOM, .walk = walk_action, .required = true },
		{ .key = "grace", .type = F_CUSTOM, .walk = walk_grace },
		{ .key = "name", .type = F_CUSTOM, .walk = walk_rung_name },
	};
	struct qj_rung rungs[QJ_POLICY_MAX_RUNGS] = {};
	struct node *name_nodes[QJ_POLICY_MAX_RUNGS] = {};
	size_t n_rungs = 0;
	bool ok = true;

	c->ladder_ok = false;
	if (!expect_kind(c, n, NODE_SEQ, "a list of rungs"))
		return;
	if (n->n_items == 0) {
		diag(c, n,
		     "empty ladder; give at least one rung, or remove ladder: to get the default");
		return;
	}
	for (size_t i = 0; i < n->n_items && !c->error; i++) {
		struct node *item = deref(n->items[i]);
		struct rung_parse rp = { .ok = true };
		size_t mark = path_push(c, "[%zu]", i);
		uint64_t present;

		if (i == QJ_POLICY_MAX_RUNGS) {
			diag(c, item, "too many rungs; a ladder has at most %d",
			     QJ_POLICY_MAX_RUNGS);
			path_pop(c, mark);
			ok = false;
			break;
		}
		present = walk_map(c, item, fields, ARRAY_SIZE(fields), &rp);
		if (!(present & 1))
			rp.ok = false;
		if (rp.ok) {
			if (!(present & 2))
				rp.r.grace_usec = qj_action_info(rp.r.action)->default_grace_usec;
			if (!rp.r.name) {
				rp.r.name = strdup(qj_action_info(rp.r.action)->default_rung_name);
				if (!rp.r.name)
					c->error = -ENOMEM;
			}
			name_nodes[n_rungs] = map_get(item, "name") ?: item;
			for (size_t k = 0; k < n_rungs && rp.r.name; k++)
				if (strcmp(rungs[k].name, rp.r.name) == 0) {
					size_t m2 = path_push(c, ".name");

					diag(c, name_nodes[n_rungs],
					     "duplicate rung name '%s' (first at %u:%u); give one of them another name:",
					     rp.r.name, name_nodes[k]->line + 1,
					     name_nodes[k]->col + 1);
					path_pop(c, m2);
					rp.ok = false;
					break;
				}
		}
		if (rp.ok)
			rungs[n_rungs++] = rp.r;
		else {
			free(rp.r.name);
			ok = false;
		}
		path_pop(c, mark);
	}
	if (ok && !c->error) {
		for (size_t i = 0; i < c->p->n_rungs; i++)
			free(c->p->rungs[i].name);
		memcpy(c->p->rungs, rungs, sizeof(rungs));
		c->p->n_rungs = n_rungs;
		c->ladder_ok = true;
	} else {
		for (size_t i = 0; i < n_rungs; i++)
			free(rungs[i].name);
	}
}

static int rung_index(const struct qj_policy *p, const char *name)
{
	for (size_t i = 0; i < p->n_rungs; i++)
		if (strcmp(p->rungs[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

/* Resolves a rung name; returns the index, or -EINVAL after a diagnostic (or when unknowable). */
static int get_rung(struct ctx *c, struct node *n)
{
	char q[QUOTE_MAX + 4], list[QJ_POLICY_MAX_RUNGS * (QJ_POLICY_NAME_MAX + 2)];
	const char *s = want_scalar(c, n, "a rung name");
	size_t o = 0;
	int i;

	if (!s || !c->ladder_ok)
		return -EINVAL; /* a broken ladder was reported already */
	i = rung_index(c->p, s);
	if (i >= 0)
		return i;
	for (size_t k = 0; k < c->p->n_rungs; k++)
		o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", k ? ", " : "",
				      c->p->rungs[k].name);
	diag(c, n, "unknown rung '%s'; the ladder has: %s", printable(s, n->len, q), list);
	return -EINVAL;
}

static void walk_strike_rung(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	int i = get_rung(c, n);

	if (i >= 0)
		c->p->strike_rung = i;
}

/* quiesce_bound is derived (--dump prints it); accepted back as a duration and not used. */
static void walk_quiesce_bound(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	uint64_t ignored;

	(void)obj;
	(void)f;
	(void)get_duration(c, n, 0, UINT64_MAX, &ignored);
}

static void walk_escalation(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "ladder", .type = F_CUSTOM, .walk = walk_ladder },
		{ .key = "max_strikes",
		  .type = F_UNSIGNED,
		  .offset = offsetof(struct qj_policy, max_strikes),
		  .min = 0,
		  .max = 1000 },
		{ .key = "strike_rung", .type = F_CUSTOM, .walk = walk_strike_rung },
		{ .key = "quiesce_bound", .type = F_CUSTOM, .walk = walk_quiesce_bound },
	};
	uint64_t present = walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
	int i;

	if ((present & 1) && !(present & 4) && c->ladder_ok) {
		/* Default strike rung: "stop" when the ladder has one, else its second rung. */
		i = rung_index(c->p, "stop");
		if (i < 0)
			i = c->p->n_rungs > 1 ? 1 : 0;
		c->p->strike_rung = i;
	}
}

/* An app while it is parsed. */
struct app_parse {
	struct qj_app a;
	struct node *start_node, *max_node;
	bool hold_max_set;
};

static void walk_app_name(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct app_parse *ap = obj;
	char q[QUOTE_MAX + 4];
	const char *s = want_scalar(c, n, "an app name");

	if (!s)
		return;
	if (!name_is_valid(s, true)) {
		diag(c, n,
		     "invalid app name '%s': use up to %d letters, digits, '-', '_' and '.', starting with a letter or digit",
		     printable(s, n->len, q), QJ_POLICY_NAME_MAX);
		return;
	}
	(void)get_string(c, n, &ap->a.name);
}

static void walk_match_exe(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct app_parse *ap = obj;
	char q[QUOTE_MAX + 4];
	const char *s = want_scalar(c, n, "a string");

	if (!s)
		return;
	/* /proc/PID/exe is always absolute: "firefox" can never match, "*firefox" can. */
	if (s[0] && s[0] != '/' && s[0] != '*' && s[0] != '?' && s[0] != '[') {
		diag(c, n,
		     "exe pattern '%s' can never match: executables are absolute paths; try '*/%s'",
		     printable(s, n->len, q), q);
		return;
	}
	(void)get_string(c, n, &ap->a.match_exe);
}

static void walk_match_uid(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct app_parse *ap = obj;
	uint64_t v;

	if (!get_uint(c, n, 0, UINT32_MAX - 1, &v))
		return;
	ap->a.has_match_uid = true;
	ap->a.match_uid = (uid_t)v;
}

static void walk_match(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "exe", .type = F_CUSTOM, .walk = walk_match_exe },
		{ .key = "cmdline",
		  .type = F_STRING,
		  .offset = offsetof(struct app_parse, a.match_cmdline) },
		{ .key = "uid", .type = F_CUSTOM, .walk = walk_match_uid },
	};
	walk_map(c, n, fields, ARRAY_SIZE(fields), obj);
	if (n->kind == NODE_MAP && n->n_items == 0)
		diag(c, n,
		     "empty match; give exe, cmdline or uid, or remove match: for an app the launcher places by name");
}

static void walk_trust(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct app_parse *ap = obj;
	char q[QUOTE_MAX + 4];
	const char *s = want_scalar(c, n, "jailed or trusted");
	enum qj_trust t;

	if (!s)
		return;
	t = qj_trust_from_string(s);
	if (t < 0) {
		diag(c, n, "unknown trust '%s'; expected jailed or trusted",
		     printable(s, n->len, q));
		return;
	}
	ap->a.trust = t;
}

static void walk_start_rung(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct app_parse *ap = obj;
	int i = get_rung(c, n);

	if (i >= 0) {
		ap->a.start_rung = i;
		ap->start_node = n;
	}
}

static void walk_max_rung(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct app_parse *ap = obj;
	int i = get_rung(c, n);

	if (i >= 0) {
		ap->a.max_rung = i;
		ap->max_node = n;
	}
}

static void walk_hold_max(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct app_parse *ap = obj;
	uint64_t v;

	if (get_uint(c, n, 0, 1024, &v)) {
		ap->a.hold_max = (unsigned)v;
		ap->hold_max_set = true;
	}
}

static void walk_holds(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "max", .type = F_CUSTOM, .walk = walk_hold_max },
		{ .key = "max_timeout",
		  .type = F_DURATION,
		  .offset = offsetof(struct app_parse, a.hold_max_timeout_usec),
		  .min = 0,
		  .max = 7 * USEC_PER_DAY },
	};

	walk_map(c, n, fields, ARRAY_SIZE(fields), obj);
}

#define TRUSTED_HOLD_MAX 64 /* default for trusted apps; jailed apps default to 0 */

static void app_done(struct qj_app *a)
{
	free(a->name);
	free(a->match_exe);
	free(a->match_cmdline);
}

struct app_ref {
	const char *name;
	size_t index;
};

static int app_ref_cmp(const void *x, const void *y)
{
	const struct app_ref *a = x, *b = y;
	int r = strcmp(a->name, b->name);

	if (r)
		return r;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* Duplicate names: sorted, so a file with thousands of apps stays O(n log n). */
static void check_app_names(struct ctx *c, struct node *list)
{
	struct qj_policy *p = c->p;
	_cleanup_free_ struct app_ref *refs = calloc(p->n_apps ? p->n_apps : 1, sizeof(*refs));
	size_t n = 0, first = 0;

	if (!refs) {
		c->error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < p->n_apps; i++)
		if (p->apps[i].name) /* unnamed ones were reported already */
			refs[n++] = (struct app_ref){ p->apps[i].name, i };
	/* Sorted by name, then by position: the first of each run of equal names came first. */
	qsort(refs, n, sizeof(*refs), app_ref_cmp);
	for (size_t i = 1; i < n; i++) {
		struct node *dup, *orig;
		size_t mark;

		if (strcmp(refs[i].name, refs[first].name) != 0) {
			first = i;
			continue;
		}
		dup = map_get(list->items[refs[i].index], "name");
		orig = map_get(list->items[refs[first].index], "name");
		mark = path_push(c, "[%zu].name", refs[i].index);
		diag(c, dup, "duplicate app name '%s' (first defined at apps[%zu], %u:%u)",
		     refs[i].name, refs[first].index, orig->line + 1, orig->col + 1);
		path_pop(c, mark);
	}
}

static void walk_apps(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "name", .type = F_CUSTOM, .walk = walk_app_name, .required = true },
		{ .key = "match", .type = F_CUSTOM, .walk = walk_match },
		{ .key = "trust", .type = F_CUSTOM, .walk = walk_trust },
		{ .key = "exempt", .type = F_BOOL, .offset = offsetof(struct app_parse, a.exempt) },
		{ .key = "notify", .type = F_BOOL, .offset = offsetof(struct app_parse, a.notify) },
		{ .key = "start_rung", .type = F_CUSTOM, .walk = walk_start_rung },
		{ .key = "max_rung", .type = F_CUSTOM, .walk = walk_max_rung },
		{ .key = "holds", .type = F_CUSTOM, .walk = walk_holds },
	};
	struct qj_policy *p = c->p;

	if (!expect_kind(c, n, NODE_SEQ, "a list of apps"))
		return;
	p->apps = calloc(n->n_items ? n->n_items : 1, sizeof(*p->apps));
	if (!p->apps) {
		c->error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n->n_items && !c->error; i++) {
		struct app_parse ap = {
			.a = { .trust = QJ_TRUST_JAILED,
			       .start_rung = 0,
			       .max_rung = (int)p->n_rungs - 1 },
		};
		size_t mark = path_push(c, "[%zu]", i);

		walk_map(c, deref(n->items[i]), fields, ARRAY_SIZE(fields), &ap);
		if (!ap.hold_max_set)
			ap.a.hold_max = ap.a.trust == QJ_TRUST_TRUSTED ? TRUSTED_HOLD_MAX : 0;
		if (ap.start_node && ap.a.start_rung > ap.a.max_rung) {
			size_t m2 = path_push(c, ".start_rung");

			diag(c, ap.start_node, "start_rung '%s' comes after max_rung '%s'",
			     p->rungs[ap.a.start_rung].name, p->rungs[ap.a.max_rung].name);
			path_pop(c, m2);
		} else if (ap.max_node && ap.a.start_rung > ap.a.max_rung) {
			size_t m2 = path_push(c, ".max_rung");

			diag(c, ap.max_node, "max_rung '%s' comes before start_rung '%s'",
			     p->rungs[ap.a.max_rung].name, p->rungs[ap.a.start_rung].name);
			path_pop(c, m2);
		}
		p->apps[p->n_apps++] = ap.a;
		path_pop(c, mark);
	}
	if (!c->error)
		check_app_names(c, n);
}

static void walk_uids(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct qj_principals *pr = obj;

	if (!expect_kind(c, n, NODE_SEQ, "a list of user ids"))
		return;
	free(pr->uids);
	pr->n_uids = 0;
	pr->uids = calloc(n->n_items ? n->n_items : 1, sizeof(*pr->uids));
	if (!pr->uids) {
		c->error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n->n_items; i++) {
		size_t mark = path_push(c, "[%zu]", i);
		uint64_t v;

		if (get_uint(c, deref(n->items[i]), 0, UINT32_MAX - 1, &v))
			pr->uids[pr->n_uids++] = (uid_t)v;
		path_pop(c, mark);
	}
}

static void walk_groups(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct qj_principals *pr = obj;

	if (!expect_kind(c, n, NODE_SEQ, "a list of group names"))
		return;
	for (size_t i = 0; i < pr->n_groups; i++)
		free(pr->groups[i]);
	free(pr->groups);
	pr->n_groups = 0;
	pr->groups = calloc(n->n_items ? n->n_items : 1, sizeof(*pr->groups));
	if (!pr->groups) {
		c->error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n->n_items; i++) {
		struct node *g = deref(n->items[i]);
		size_t mark = path_push(c, "[%zu]", i);
		char q[QUOTE_MAX + 4];
		const char *s = want_scalar(c, g, "a group name");

		if (s && !name_is_valid(s, true))
			diag(c, g, "invalid group name '%s'", printable(s, g->len, q));
		else if (s && get_string(c, g, &pr->groups[pr->n_groups]))
			pr->n_groups++;
		path_pop(c, mark);
	}
}

static void principals_clear(struct qj_principals *pr)
{
	for (size_t i = 0; i < pr->n_groups; i++)
		free(pr->groups[i]);
	free(pr->groups);
	free(pr->uids);
	free(pr->gids);
	*pr = (struct qj_principals){};
}

static void walk_principals(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "uids", .type = F_CUSTOM, .walk = walk_uids },
		{ .key = "groups", .type = F_CUSTOM, .walk = walk_groups },
	};
	struct qj_principals *pr = (struct qj_principals *)((char *)c->p + f->offset);
	char buf[QUOTE_MAX + 16];

	if (n->kind == NODE_SCALAR && !is_null(n)) {
		if (strcmp(n->value, "*") != 0) {
			diag(c, n, "expected \"*\" or a mapping with uids: and groups:, got %s",
			     describe(n, buf));
			return;
		}
		principals_clear(pr);
		pr->anyone = true;
		return;
	}
	if (n->kind != NODE_MAP) {
		if (n->kind != NODE_BAD)
			diag(c, n, "expected \"*\" or a mapping with uids: and groups:, got %s",
			     describe(n, buf));
		return;
	}
	principals_clear(pr); /* given: replaces the default */
	walk_map(c, n, fields, ARRAY_SIZE(fields), pr);
}

/* One uid or a range "FIRST-LAST"; uid 0 can never be placed by a launcher. */
static bool get_uid_range(struct ctx *c, struct node *n, struct qj_uid_range *ret)
{
	char buf[QUOTE_MAX + 16];
	const char *s = want_scalar(c, n, "a user id or a range FIRST-LAST");
	const char *dash;
	uint64_t a, b;

	if (!s)
		return false;
	dash = strchr(s, '-');
	if (!dash) {
		if (!get_uint(c, n, 0, UINT32_MAX - 1, &a))
			return false;
		b = a;
	} else {
		_cleanup_free_ char *first = strndup(s, (size_t)(dash - s));

		if (!first) {
			c->error = -ENOMEM;
			return false;
		}
		if (parse_u64(first, &a) < 0 || parse_u64(dash + 1, &b) < 0 || a > b ||
		    b > UINT32_MAX - 1) {
			diag(c, n,
			     "expected a user id or a range FIRST-LAST (FIRST <= LAST < %u), got %s",
			     UINT32_MAX, describe(n, buf));
			return false;
		}
	}
	if (a == 0) {
		diag(c, n, "uid 0: only root may place root's processes");
		return false;
	}
	*ret = (struct qj_uid_range){ .first = (uid_t)a, .last = (uid_t)b };
	return true;
}

static void walk_place_as_launcher(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct qj_place_as *pa = obj;
	uint64_t v;

	if (!get_uint(c, n, 1, UINT32_MAX - 1, &v))
		return;
	pa->launcher = (uid_t)v;
	for (size_t i = 0; i < c->p->n_place_as; i++)
		if (c->p->place_as[i].launcher == pa->launcher)
			diag(c, n, "launcher %u is listed twice", pa->launcher);
}

static void walk_place_as_uids(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	struct qj_place_as *pa = obj;

	if (!expect_kind(c, n, NODE_SEQ, "a list of user ids or ranges FIRST-LAST"))
		return;
	if (n->n_items == 0) {
		diag(c, n, "an empty list: leave the entry out");
		return;
	}
	pa->uids = calloc(n->n_items, sizeof(*pa->uids));
	if (!pa->uids) {
		c->error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n->n_items; i++) {
		size_t mark = path_push(c, "[%zu]", i);

		if (get_uid_range(c, deref(n->items[i]), &pa->uids[pa->n_uids]))
			pa->n_uids++;
		path_pop(c, mark);
	}
}

static void walk_place_as(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "launcher",
		  .type = F_CUSTOM,
		  .walk = walk_place_as_launcher,
		  .required = true },
		{ .key = "uids", .type = F_CUSTOM, .walk = walk_place_as_uids, .required = true },
	};
	struct qj_policy *p = c->p;

	if (!expect_kind(c, n, NODE_SEQ, "a list of { launcher: UID, uids: [...] }"))
		return;
	p->place_as = calloc(n->n_items ? n->n_items : 1, sizeof(*p->place_as));
	if (!p->place_as) {
		c->error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n->n_items && !c->error; i++) {
		size_t mark = path_push(c, "[%zu]", i);
		struct qj_place_as pa = {};

		walk_map(c, deref(n->items[i]), fields, ARRAY_SIZE(fields), &pa);
		p->place_as[p->n_place_as++] = pa; /* kept even when bad: freed with the policy */
		path_pop(c, mark);
	}
}

static void walk_access(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "place",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_place),
		  .walk = walk_principals },
		{ .key = "reload",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_reload),
		  .walk = walk_principals },
		{ .key = "suspend",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_suspend),
		  .walk = walk_principals },
		{ .key = "logs",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_logs),
		  .walk = walk_principals },
		{ .key = "hold",
		  .type = F_CUSTOM,
		  .offset = offsetof(struct qj_policy, access_hold),
		  .walk = walk_principals },
		{ .key = "place_as", .type = F_CUSTOM, .walk = walk_place_as },
	};

	walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
}

static void walk_log(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "path", .type = F_PATH, .offset = offsetof(struct qj_policy, log_path) },
		{ .key = "max_size",
		  .type = F_SIZE,
		  .offset = offsetof(struct qj_policy, log_max_bytes),
		  .min = 4096,
		  .max = 1ULL << 40 },
		{ .key = "keep",
		  .type = F_UNSIGNED,
		  .offset = offsetof(struct qj_policy, log_keep),
		  .min = 0,
		  .max = 100 },
	};

	walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
}

static void walk_limits(struct ctx *c, struct node *n, void *obj, const struct field *f)
{
	static const struct field fields[] = {
		{ .key = "clients",
		  .type = F_UNSIGNED,
		  .offset = offsetof(struct qj_policy, max_clients),
		  .min = 1,
		  .max = QJ_POLICY_MAX_CLIENTS },
		{ .key = "clients_per_uid",
		  .type = F_UNSIGNED,
		  .offset = offsetof(struct qj_policy, max_clients_per_uid),
		  .min = 1,
		  .max = QJ_POLICY_MAX_CLIENTS },
		{ .key = "holds_per_uid",
		  .type = F_UNSIGNED,
		  .offset = offsetof(struct qj_policy, max_holds_per_uid),
		  .min = 1,
		  .max = QJ_POLICY_MAX_HOLDS },
		{ .key = "holds_per_connection",
		  .type = F_UNSIGNED,
		  .offset = offsetof(struct qj_policy, max_holds_per_conn),
		  .min = 1,
		  .max = QJ_POLICY_MAX_HOLDS },
	};

	walk_map(c, n, fields, ARRAY_SIZE(fields), c->p);
}

static void walk_document(struct ctx *c, struct node *root)
{
	static const struct field fields[] = {
		{ .key = "version", .type = F_CUSTOM, .walk = walk_version, .required = true },
		{ .key = "escalation", .type = F_CUSTOM, .walk = walk_escalation },
		{ .key = "suspend", .type = F_CUSTOM, .walk = walk_suspend },
		{ .key = "jail", .type = F_CUSTOM, .walk = walk_jail },
		{ .key = "apps", .type = F_CUSTOM, .walk = walk_apps },
		{ .key = "access", .type = F_CUSTOM, .walk = walk_access },
		{ .key = "log", .type = F_CUSTOM, .walk = walk_log },
		{ .key = "limits", .type = F_CUSTOM, .walk = walk_limits },
	};
	char buf[QUOTE_MAX + 16];

	root = deref(root);
	if (!root || is_null(root)) {
		diag_pos(c, root ? root->line : 0, root ? root->col : 0,
			 "empty policy; a policy is a mapping that starts with 'version: 1'");
		return;
	}
	if (root->kind != NODE_MAP) {
		if (root->kind != NODE_BAD)
			diag(c, root,
			     "a policy must be a mapping of sections (version:, suspend:, ...), got %s",
			     describe(root, buf));
		return;
	}
	walk_map(c, root, fields, ARRAY_SIZE(fields), c->p);
}

/* ---- policy objects --------------------------------------------------------------------- */

struct qj_policy *qj_policy_free(struct qj_policy *p)
{
	if (!p)
		return NULL;
	free(p->source);
	free(p->sysfs_root);
	free(p->wakeup_state);
	free(p->cgroup_path);
	free(p->cpu_cgroup_path);
	for (size_t i = 0; i < p->n_rungs; i++)
		free(p->rungs[i].name);
	for (size_t i = 0; i < p->n_apps; i++)
		app_done(&p->apps[i]);
	free(p->apps);
	principals_clear(&p->access_place);
	principals_clear(&p->access_reload);
	principals_clear(&p->access_suspend);
	principals_clear(&p->access_logs);
	principals_clear(&p->access_hold);
	for (size_t i = 0; i < p->n_place_as; i++)
		free(p->place_as[i].uids);
	free(p->place_as);
	free(p->log_path);
	free(p);
	return NULL;
}

static int principals_set(struct qj_principals *pr, bool anyone, bool adm)
{
	principals_clear(pr);
	pr->anyone = anyone;
	if (anyone)
		return 0;
	pr->uids = calloc(1, sizeof(*pr->uids)); /* root */
	if (!pr->uids)
		return -ENOMEM;
	pr->n_uids = 1;
	if (adm) {
		pr->groups = calloc(1, sizeof(*pr->groups));
		if (!pr->groups)
			return -ENOMEM;
		pr->groups[0] = strdup("adm");
		if (!pr->groups[0])
			return -ENOMEM;
		pr->n_groups = 1;
	}
	return 0;
}

int qj_policy_new_default(struct qj_policy **ret)
{
	static const enum qj_action ladder[] = { QJ_ACTION_SIGXCPU, QJ_ACTION_SIGSTOP,
						 QJ_ACTION_SIGTERM, QJ_ACTION_SIGKILL };
	_cleanup_(qj_policy_freep) struct qj_policy *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->backend = QJ_BACKEND_AUTO;
	p->idle_delay_usec = 5 * USEC_PER_SEC;
	p->retry_initial_usec = 1 * USEC_PER_SEC;
	p->retry_max_usec = 1 * USEC_PER_MINUTE;
	p->dry_run_length_usec = 2 * USEC_PER_SEC;
	p->cpu_idle = true;
	p->timer_slack_nsec = 50 * USEC_PER_MSEC * NSEC_PER_USEC;
	p->busy_threshold = 0.05;
	p->sample_window_usec = 1 * USEC_PER_SEC;
	for (size_t i = 0; i < ARRAY_SIZE(ladder); i++) {
		p->rungs[i].action = ladder[i];
		p->rungs[i].grace_usec = qj_action_info(ladder[i])->default_grace_usec;
		p->rungs[i].name = strdup(qj_action_info(ladder[i])->default_rung_name);
		if (!p->rungs[i].name)
			return -ENOMEM;
		p->n_rungs++;
	}
	p->max_strikes = 3;
	p->strike_rung = 1; /* stop */
	p->max_clients = 1024;
	p->max_clients_per_uid = 64;
	p->max_holds_per_uid = 256;
	p->max_holds_per_conn = 64;
	p->log_max_bytes = 10ULL << 20;
	p->log_keep = 5;
	p->sysfs_root = strdup("/sys");
	p->wakeup_state = strdup("mem");
	p->cgroup_path = strdup("/sys/fs/cgroup/unified/qosjail");
	p->cpu_cgroup_path = strdup("/sys/fs/cgroup/cpu/qosjail");
	p->log_path = strdup("/var/log/qosjail/kill.log");
	if (!p->sysfs_root || !p->wakeup_state || !p->cgroup_path || !p->cpu_cgroup_path ||
	    !p->log_path)
		return -ENOMEM;
	if (principals_set(&p->access_place, false, false) < 0 ||
	    principals_set(&p->access_reload, false, false) < 0 ||
	    principals_set(&p->access_suspend, false, false) < 0 ||
	    principals_set(&p->access_logs, false, true) < 0 ||
	    principals_set(&p->access_hold, true, false) < 0)
		return -ENOMEM;
	*ret = TAKE_PTR(p);
	return 0;
}

int qj_policy_parse(const char *filename, const char *text, size_t len, struct qj_diags *diags,
		    struct qj_policy **ret)
{
	_cleanup_(qj_policy_freep) struct qj_policy *p = NULL;
	struct ctx c = { .text = text, .len = len, .diags = diags, .ladder_ok = true };
	struct node *root = NULL;
	size_t bad;
	int r;

	assert(diags);
	assert(text || len == 0);
	if (!diags->file) {
		diags->file = strdup(filename ? filename : "<input>");
		if (!diags->file)
			return -ENOMEM;
	}
	c.first_diag = diags->n;

	r = qj_policy_new_default(&p);
	if (r < 0)
		return r;
	c.p = p;
	if (filename) {
		p->source = strdup(filename);
		if (!p->source)
			return -ENOMEM;
	}

	if (len > QJ_POLICY_MAX_BYTES) {
		diag_pos(&c, 0, 0,
			 "the file is larger than 1 MiB (%d bytes), the limit for a policy",
			 QJ_POLICY_MAX_BYTES);
		r = 0;
	} else if (len && (bad = utf8_invalid_offset((const unsigned char *)text, len)) < len) {
		unsigned line, col;

		offset_to_pos(text, len, bad, &line, &col);
		diag_pos(&c, line, col,
			 "not valid UTF-8 (byte 0x%02X); a policy file must be UTF-8 text",
			 (unsigned char)text[bad]);
		r = 0;
	} else {
		r = build_tree(&c, &root);
		if (r > 0)
			walk_document(&c, root);
	}
	diags_finish(&c);
	ctx_done(&c);
	if (c.error)
		return c.error;
	if (diags->n > c.first_diag)
		return -EINVAL;
	*ret = TAKE_PTR(p);
	return 0;
}

int qj_policy_load(const char *path, struct qj_diags *diags, struct qj_policy **ret)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct stat st;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return negative_errno();
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	/* Read one byte more than allowed: enough to tell an oversize file, never all of it. */
	buf = malloc(QJ_POLICY_MAX_BYTES + 1);
	if (!buf)
		return -ENOMEM;
	while (len < QJ_POLICY_MAX_BYTES + 1) {
		ssize_t n = read(fd, buf + len, QJ_POLICY_MAX_BYTES + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return negative_errno();
		if (n == 0)
			break;
		len += (size_t)n;
	}
	return qj_policy_parse(path, buf, len, diags, ret);
}

/* ---- queries ---------------------------------------------------------------------------- */

const struct qj_app *qj_policy_match(const struct qj_policy *p, const char *exe,
				     const char *cmdline, uid_t uid)
{
	for (size_t i = 0; i < p->n_apps; i++) {
		const struct qj_app *a = &p->apps[i];

		/* No rules at all: placed by name only (launchers), never by matching. */
		if (!a->match_exe && !a->match_cmdline && !a->has_match_uid)
			continue;
		if (a->match_exe && (!exe || fnmatch(a->match_exe, exe, 0) != 0))
			continue;
		if (a->match_cmdline && (!cmdline || fnmatch(a->match_cmdline, cmdline, 0) != 0))
			continue;
		if (a->has_match_uid && a->match_uid != uid)
			continue;
		return a;
	}
	return NULL;
}

uint64_t qj_policy_quiesce_bound_usec(const struct qj_policy *p)
{
	uint64_t ladder = 0;

	for (size_t i = 0; i < p->n_rungs; i++)
		ladder += p->rungs[i].grace_usec + p->sample_window_usec;
	return 2 * (p->sample_window_usec + ladder);
}

const struct qj_app *qj_policy_find_app(const struct qj_policy *p, const char *name)
{
	for (size_t i = 0; name && i < p->n_apps; i++)
		if (strcmp(p->apps[i].name, name) == 0)
			return &p->apps[i];
	return NULL;
}

bool qj_principals_allow(const struct qj_principals *pr, uid_t uid, const gid_t *gids,
			 size_t n_gids)
{
	if (pr->anyone)
		return true;
	for (size_t i = 0; i < pr->n_uids; i++)
		if (pr->uids[i] == uid)
			return true;
	for (size_t i = 0; i < pr->n_gids; i++)
		for (size_t j = 0; j < n_gids; j++)
			if (pr->gids[i] == gids[j])
				return true;
	return false;
}

bool qj_policy_may_place_as(const struct qj_policy *p, uid_t launcher, uid_t uid)
{
	if (uid == 0)
		return false;
	for (size_t i = 0; i < p->n_place_as; i++) {
		const struct qj_place_as *pa = &p->place_as[i];

		if (pa->launcher != launcher)
			continue;
		for (size_t j = 0; j < pa->n_uids; j++)
			if (uid >= pa->uids[j].first && uid <= pa->uids[j].last)
				return true;
	}
	return false;
}

static int principals_resolve(struct qj_principals *pr,
			      int (*lookup)(const char *group, gid_t *ret_gid, void *userdata),
			      void *userdata)
{
	int unresolved = 0;

	free(pr->gids);
	pr->n_gids = 0;
	pr->gids = calloc(pr->n_groups ? pr->n_groups : 1, sizeof(*pr->gids));
	if (!pr->gids)
		return -ENOMEM;
	for (size_t i = 0; i < pr->n_groups; i++) {
		gid_t g;
		int r = lookup(pr->groups[i], &g, userdata);

		if (r == -ENOMEM)
			return r;
		if (r < 0)
			unresolved++;
		else
			pr->gids[pr->n_gids++] = g;
	}
	return unresolved;
}

int qj_policy_resolve_groups(struct qj_policy *p,
			     int (*lookup)(const char *group, gid_t *ret_gid, void *userdata),
			     void *userdata)
{
	struct qj_principals *all[] = { &p->access_place, &p->access_reload, &p->access_suspend,
					&p->access_logs, &p->access_hold };
	int total = 0;

	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		int r = principals_resolve(all[i], lookup, userdata);

		if (r < 0)
			return r;
		total += r;
	}
	return total;
}

/* ---- JSON dump -------------------------------------------------------------------------- */

/*
 * Same keys and value syntax as the YAML, so the dump is itself a valid policy (JSON is
 * YAML flow style): tests parse it back and expect the same dump.
 */
static int set_new(json_t *o, const char *key, json_t *v)
{
	if (!v || json_object_set_new(o, key, v) < 0)
		return -ENOMEM;
	return 0;
}

static json_t *json_duration(uint64_t usec)
{
	char buf[32];

	return json_string(format_duration(usec, buf));
}

static json_t *json_principals(const struct qj_principals *pr)
{
	json_t *o, *uids, *groups;

	if (pr->anyone)
		return json_string("*");
	o = json_object();
	if (!o)
		return NULL;
	/* set_new() and json_array_append_new() drop the value on failure: only o to free. */
	uids = json_array();
	if (set_new(o, "uids", uids) < 0)
		goto fail;
	groups = json_array();
	if (set_new(o, "groups", groups) < 0)
		goto fail;
	for (size_t i = 0; i < pr->n_uids; i++)
		if (json_array_append_new(uids, json_integer(pr->uids[i])) < 0)
			goto fail;
	for (size_t i = 0; i < pr->n_groups; i++)
		if (json_array_append_new(groups, json_string(pr->groups[i])) < 0)
			goto fail;
	return o;
fail:
	json_decref(o);
	return NULL;
}

static json_t *json_place_as(const struct qj_policy *p)
{
	json_t *list = json_array();

	for (size_t i = 0; list && i < p->n_place_as; i++) {
		const struct qj_place_as *pa = &p->place_as[i];
		json_t *uids = json_array();

		for (size_t j = 0; uids && j < pa->n_uids; j++) {
			const struct qj_uid_range *u = &pa->uids[j];
			char buf[32];

			snprintf(buf, sizeof(buf), "%u-%u", u->first, u->last);
			if (json_array_append_new(uids, u->first == u->last ?
								json_integer(u->first) :
								json_string(buf)) < 0) {
				json_decref(uids);
				uids = NULL;
			}
		}
		if (!uids || json_array_append_new(list, json_pack("{s:I,s:o}", "launcher",
								   (json_int_t)pa->launcher, "uids",
								   uids)) < 0) {
			json_decref(list);
			return NULL;
		}
	}
	return list;
}

static json_t *json_app(const struct qj_policy *p, const struct qj_app *a)
{
	json_t *o = json_object(), *m, *h;

	if (!o || set_new(o, "name", json_string(a->name)) < 0)
		goto fail;
	if (a->match_exe || a->match_cmdline || a->has_match_uid) {
		m = json_object();
		if (set_new(o, "match", m) < 0 ||
		    (a->match_exe && set_new(m, "exe", json_string(a->match_exe)) < 0) ||
		    (a->match_cmdline &&
		     set_new(m, "cmdline", json_string(a->match_cmdline)) < 0) ||
		    (a->has_match_uid && set_new(m, "uid", json_integer(a->match_uid)) < 0))
			goto fail;
	}
	if (set_new(o, "trust", json_string(qj_trust_to_string(a->trust))) < 0 ||
	    set_new(o, "exempt", json_boolean(a->exempt)) < 0 ||
	    set_new(o, "notify", json_boolean(a->notify)) < 0 ||
	    set_new(o, "start_rung", json_string(p->rungs[a->start_rung].name)) < 0 ||
	    set_new(o, "max_rung", json_string(p->rungs[a->max_rung].name)) < 0)
		goto fail;
	h = json_object();
	if (set_new(o, "holds", h) < 0 || set_new(h, "max", json_integer(a->hold_max)) < 0 ||
	    set_new(h, "max_timeout", json_duration(a->hold_max_timeout_usec)) < 0)
		goto fail;
	return o;
fail:
	json_decref(o);
	return NULL;
}

/* Builds a child object and attaches it; NULL on OOM. */
static json_t *child(json_t *parent, const char *key)
{
	json_t *o = json_object();

	if (set_new(parent, key, o) < 0)
		return NULL;
	return o;
}

static json_t *policy_to_json(const struct qj_policy *p)
{
	json_t *root = json_object(), *s, *r, *j, *e, *l, *apps, *a, *lg, *lim;
	char buf[64];

	if (!root || set_new(root, "version", json_integer(1)) < 0)
		goto fail;

	s = child(root, "suspend");
	if (!s || set_new(s, "backend", json_string(qj_backend_to_string(p->backend))) < 0 ||
	    set_new(s, "sysfs", json_string(p->sysfs_root)) < 0 ||
	    set_new(s, "state", json_string(p->wakeup_state)) < 0 ||
	    set_new(s, "idle_delay", json_duration(p->idle_delay_usec)) < 0)
		goto fail;
	r = child(s, "retry");
	if (!r || set_new(r, "initial", json_duration(p->retry_initial_usec)) < 0 ||
	    set_new(r, "max", json_duration(p->retry_max_usec)) < 0 ||
	    set_new(s, "dry_run_length", json_duration(p->dry_run_length_usec)) < 0)
		goto fail;

	j = child(root, "jail");
	snprintf(buf, sizeof(buf), "%g%%", p->busy_threshold * 100.0);
	if (!j || set_new(j, "cgroup", json_string(p->cgroup_path)) < 0 ||
	    set_new(j, "cpu_cgroup", json_string(p->cpu_cgroup_path)) < 0 ||
	    set_new(j, "cpu_idle", json_boolean(p->cpu_idle)) < 0 ||
	    set_new(j, "timer_slack", json_duration(p->timer_slack_nsec / NSEC_PER_USEC)) < 0 ||
	    set_new(j, "busy_threshold", json_string(buf)) < 0 ||
	    set_new(j, "sample_window", json_duration(p->sample_window_usec)) < 0)
		goto fail;

	e = child(root, "escalation");
	l = e ? json_array() : NULL;
	if (!l || set_new(e, "ladder", l) < 0)
		goto fail;
	for (size_t i = 0; i < p->n_rungs; i++) {
		json_t *o = json_object();

		if (!o || json_array_append_new(l, o) < 0 ||
		    set_new(o, "name", json_string(p->rungs[i].name)) < 0 ||
		    set_new(o, "action", json_string(qj_action_to_string(p->rungs[i].action))) <
			    0 ||
		    set_new(o, "grace", json_duration(p->rungs[i].grace_usec)) < 0)
			goto fail;
	}
	if (set_new(e, "max_strikes", json_integer(p->max_strikes)) < 0 ||
	    set_new(e, "strike_rung", json_string(p->rungs[p->strike_rung].name)) < 0 ||
	    set_new(e, "quiesce_bound", json_duration(qj_policy_quiesce_bound_usec(p))) < 0)
		goto fail;

	apps = json_array();
	if (!apps || set_new(root, "apps", apps) < 0)
		goto fail;
	for (size_t i = 0; i < p->n_apps; i++)
		if (json_array_append_new(apps, json_app(p, &p->apps[i])) < 0)
			goto fail;

	a = child(root, "access");
	if (!a || set_new(a, "place", json_principals(&p->access_place)) < 0 ||
	    set_new(a, "reload", json_principals(&p->access_reload)) < 0 ||
	    set_new(a, "suspend", json_principals(&p->access_suspend)) < 0 ||
	    set_new(a, "logs", json_principals(&p->access_logs)) < 0 ||
	    set_new(a, "hold", json_principals(&p->access_hold)) < 0 ||
	    set_new(a, "place_as", json_place_as(p)) < 0)
		goto fail;

	lg = child(root, "log");
	if (!lg || set_new(lg, "path", json_string(p->log_path)) < 0 ||
	    set_new(lg, "max_size", json_string(format_size(p->log_max_bytes, buf))) < 0 ||
	    set_new(lg, "keep", json_integer(p->log_keep)) < 0)
		goto fail;

	lim = child(root, "limits");
	if (!lim || set_new(lim, "clients", json_integer(p->max_clients)) < 0 ||
	    set_new(lim, "clients_per_uid", json_integer(p->max_clients_per_uid)) < 0 ||
	    set_new(lim, "holds_per_uid", json_integer(p->max_holds_per_uid)) < 0 ||
	    set_new(lim, "holds_per_connection", json_integer(p->max_holds_per_conn)) < 0)
		goto fail;
	return root;
fail:
	json_decref(root);
	return NULL;
}

int qj_policy_dump_json(const struct qj_policy *p, FILE *f)
{
	json_t *root = policy_to_json(p);
	int r;

	if (!root)
		return -ENOMEM;
	r = json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (r < 0 || fputc('\n', f) == EOF)
		return -EIO;
	return 0;
}
