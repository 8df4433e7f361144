// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The schema walk's machinery: a mapping checked against a table of fields (unknown,
 * duplicate and missing keys) and each value read by its type; every section's table
 * (schema.c and the schema-*.c files) is walked by it.
 */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "policy-internal.h"
#include "policy.h"
#include "util.h"

/* Names of apps, rungs and groups: no spaces or control characters, so logs stay parseable. */
bool qj_schema_name_is_valid(const char *s, bool allow_upper)
{
	size_t n = strlen(s);

	if (n == 0 || n > QJ_POLICY_NAME_MAX ||
	    !(qj_units_is_digit(s[0]) || (s[0] >= 'a' && s[0] <= 'z') ||
	      (allow_upper && s[0] >= 'A' && s[0] <= 'Z')))
		return false;
	for (; *s; s++)
		if (!(qj_units_is_digit(*s) || (*s >= 'a' && *s <= 'z') ||
		      (allow_upper && *s >= 'A' && *s <= 'Z') || *s == '-' || *s == '_' ||
		      *s == '.'))
			return false;
	return true;
}

static void walk_field(struct ctx *c, const struct field *f, struct node *v, void *obj)
{
	char *base = obj;
	uint64_t u;

	switch (f->type) {
	case F_STRING:
		(void)qj_yaml_get_string(c, v, (char **)(base + f->offset));
		break;
	case F_PATH:
		(void)qj_yaml_get_path(c, v, (char **)(base + f->offset));
		break;
	case F_BOOL:
		(void)qj_yaml_get_bool(c, v, (bool *)(base + f->offset));
		break;
	case F_UNSIGNED:
		if (qj_yaml_get_uint(c, v, f->min, f->max, &u))
			*(unsigned *)(base + f->offset) = (unsigned)u;
		break;
	case F_DURATION:
		(void)qj_yaml_get_duration(c, v, f->min, f->max, (uint64_t *)(base + f->offset));
		break;
	case F_SIZE:
		(void)qj_yaml_get_size(c, v, f->min, f->max, (uint64_t *)(base + f->offset));
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
uint64_t qj_schema_walk_map(struct ctx *c, struct node *n, const struct field *fields,
			    size_t n_fields, void *obj)
{
	struct node *keys[FIELD_MAX] = {}, *vals[FIELD_MAX] = {};
	uint64_t present = 0;

	assert(n_fields <= FIELD_MAX);
	if (!qj_yaml_expect_kind(c, n, NODE_MAP, "a mapping"))
		return 0;
	for (size_t i = 0; i + 1 < n->n_items && !c->error; i += 2) {
		struct node *k = qj_yaml_deref(n->items[i]);
		char buf[QUOTE_MAX + 16], list[FIELD_MAX * 24];
		size_t j, mark, o = 0;

		if (k->kind == NODE_BAD)
			continue;
		if (k->kind != NODE_SCALAR || qj_yaml_is_null(k)) {
			diag(c, k, "expected a key name, got %s", qj_yaml_describe(k, buf));
			continue;
		}
		for (j = 0; j < n_fields; j++)
			if (strlen(k->value) == k->len && strcmp(k->value, fields[j].key) == 0)
				break;
		mark = qj_yaml_path_push_key(c, k->value, k->len);
		if (j < n_fields && keys[j]) {
			diag(c, k, "duplicate key (first at %u:%u)", keys[j]->line + 1,
			     keys[j]->col + 1);
		} else if (j < n_fields) {
			keys[j] = k;
			vals[j] = qj_yaml_deref(n->items[i + 1]);
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
		qj_yaml_path_pop(c, mark);
	}
	for (size_t j = 0; j < n_fields && !c->error; j++) {
		size_t mark;

		if (!keys[j]) {
			if (fields[j].required)
				diag(c, n, "missing required key '%s'", fields[j].key);
			continue;
		}
		mark = qj_yaml_path_push_key(c, fields[j].key, strlen(fields[j].key));
		walk_field(c, &fields[j], vals[j], obj);
		qj_yaml_path_pop(c, mark);
	}
	return present;
}
