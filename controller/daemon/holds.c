// SPDX-License-Identifier: LGPL-2.1-or-later
/* The hold table and its wakeup_source-like statistics (pure, see holds.h). */
#include <assert.h>
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "holds.h"
#include "util.h"

/*
 * Lookups by name and by (connection, name) go through glibc's tsearch trees:
 * with 1000 clients each holding, linear scans with strcmp() were a third of a
 * hold round trip.  The arrays keep the listing order and point at
 * individually allocated entries, so the trees' pointers stay valid.
 */
struct qj_holds {
	struct qj_hold **holds; /* in the order taken */
	size_t n_holds;
	size_t alloc_holds;
	void *hold_index; /* struct qj_hold * by (conn, name) */

	struct qj_hold_stats **stats;
	size_t n_stats;
	size_t n_active_names; /* names with a live hold */
	size_t alloc_stats;
	void *stats_index; /* struct qj_hold_stats * by name */

	void *by_conn; /* struct counter * by connection: live holds of each */
	void *by_uid; /* struct counter * by owner uid */

	struct qj_hold_interval history[QJ_HOLDS_HISTORY_MAX]; /* a ring */
	size_t history_next; /* slot the next ended period goes to */
	size_t n_history;

	uint64_t next_deadline; /* valid unless next_deadline_stale */
	bool next_deadline_stale;
	bool suspend_wanted;

	uint64_t (*boottime)(void *userdata);
	void *boottime_ud;
};

static int hold_cmp(const void *a, const void *b)
{
	const struct qj_hold *x = a, *y = b;

	if (x->conn != y->conn)
		return x->conn < y->conn ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int stats_cmp(const void *a, const void *b)
{
	return strcmp(((const struct qj_hold_stats *)a)->name,
		      ((const struct qj_hold_stats *)b)->name);
}

static void nop_free(void *p)
{
}

/*
 * Live holds per connection and per uid, for the daemon's quotas: a tree, so checking
 * a quota stays O(log n) however many holds others have.
 */
struct counter {
	uint64_t key;
	size_t n;
};

static int counter_cmp(const void *a, const void *b)
{
	const struct counter *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static size_t counter_get(void *const *root, uint64_t key)
{
	const struct counter k = { .key = key };
	void *const *node = tfind(&k, root, counter_cmp);

	return node ? (*(struct counter *const *)node)->n : 0;
}

/* +1, or -1 (the counter goes at 0).  -ENOMEM. */
static int counter_add(void **root, uint64_t key, int delta)
{
	struct counter k = { .key = key }, *c;
	void **node = tfind(&k, root, counter_cmp);

	if (!node) {
		assert(delta > 0);
		c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		c->key = key;
		node = tsearch(c, root, counter_cmp);
		if (!node || *node != c) {
			free(c);
			return -ENOMEM;
		}
	}
	c = *node;
	c->n += (size_t)delta;
	if (c->n == 0) {
		tdelete(c, root, counter_cmp);
		free(c);
	}
	return 0;
}

int qj_holds_new(struct qj_holds **ret)
{
	struct qj_holds *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->next_deadline = USEC_INFINITY;
	*ret = t;
	return 0;
}

struct qj_holds *qj_holds_free(struct qj_holds *t)
{
	if (!t)
		return NULL;
	tdestroy(t->hold_index, nop_free);
	tdestroy(t->stats_index, nop_free);
	tdestroy(t->by_conn, free);
	tdestroy(t->by_uid, free);
	for (size_t i = 0; i < t->n_holds; i++) {
		free(t->holds[i]->name);
		free(t->holds[i]->reason);
		free(t->holds[i]);
	}
	for (size_t i = 0; i < t->n_stats; i++) {
		free(t->stats[i]->name);
		free(t->stats[i]);
	}
	for (size_t i = 0; i < QJ_HOLDS_HISTORY_MAX; i++)
		free(t->history[i].name);
	free(t->holds);
	free(t->stats);
	free(t);
	return NULL;
}

static struct qj_hold_stats *stats_lookup(const struct qj_holds *t, const char *name)
{
	const struct qj_hold_stats key = { .name = (char *)name };
	void *const *node = tfind(&key, &t->stats_index, stats_cmp);

	return node ? *node : NULL;
}

/* Finds or creates the statistics of @name, recycling the stalest inactive entry when full. */
static struct qj_hold_stats *stats_get(struct qj_holds *t, const char *name)
{
	struct qj_hold_stats *s = stats_lookup(t, name);
	char *copy;

	if (s)
		return s;
	copy = strdup(name);
	if (!copy)
		return NULL;
	if (t->n_stats >= QJ_HOLDS_MAX_NAMES) {
		for (size_t i = 0; i < t->n_stats; i++)
			if (!t->stats[i]->active &&
			    (!s || t->stats[i]->last_change_usec < s->last_change_usec))
				s = t->stats[i];
		if (!s) {
			free(copy);
			errno = ENOSPC;
			return NULL;
		}
		tdelete(s, &t->stats_index, stats_cmp);
		free(s->name);
	} else {
		if (t->n_stats == t->alloc_stats) {
			size_t n = t->alloc_stats ? t->alloc_stats * 2 : 16;
			struct qj_hold_stats **v = reallocarray(t->stats, n, sizeof(*v));

			if (!v)
				goto nomem;
			t->stats = v;
			t->alloc_stats = n;
		}
		s = malloc(sizeof(*s));
		if (!s)
			goto nomem;
		t->stats[t->n_stats++] = s;
	}
	*s = (struct qj_hold_stats){ .name = copy };
	if (tsearch(s, &t->stats_index, stats_cmp))
		return s;
	/* No memory for the tree node: drop the entry rather than keep it unindexed. */
	for (size_t i = 0; i < t->n_stats; i++)
		if (t->stats[i] == s) {
			memmove(&t->stats[i], &t->stats[i + 1],
				(t->n_stats - i - 1) * sizeof(*t->stats));
			t->n_stats--;
			break;
		}
	free(s);
nomem:
	free(copy);
	errno = ENOMEM;
	return NULL;
}

static uint64_t real_boottime(void *userdata)
{
	return now_usec(CLOCK_BOOTTIME);
}

void qj_holds_set_boottime(struct qj_holds *t, uint64_t (*now)(void *userdata), void *userdata)
{
	t->boottime = now ? now : real_boottime;
	t->boottime_ud = userdata;
}

uint64_t qj_holds_boottime(const struct qj_holds *t)
{
	return t->boottime ? t->boottime(t->boottime_ud) : real_boottime(NULL);
}

uint64_t qj_holds_boot_to_realtime(uint64_t boot_usec, uint64_t now_boot_usec,
				   uint64_t now_real_usec)
{
	uint64_t ago = now_boot_usec > boot_usec ? now_boot_usec - boot_usec : 0;

	return now_real_usec > ago ? now_real_usec - ago : 0;
}

static void stats_activate(struct qj_holds *t, struct qj_hold_stats *s, uint64_t now)
{
	s->event_count++;
	if (s->active++ > 0)
		return;
	t->n_active_names++;
	s->active_count++;
	s->active_since_usec = now;
	s->active_since_boot_usec = qj_holds_boottime(t);
	s->prevent_since_usec = now;
	s->last_change_usec = now;
}

/* The period that just ended goes to the ring; lost (not fatal) when out of memory. */
static void history_add(struct qj_holds *t, const struct qj_hold_stats *s, bool expired,
			uint64_t now)
{
	struct qj_hold_interval *h = &t->history[t->history_next];
	char *name = strdup(s->name);

	if (!name)
		return;
	free(h->name);
	*h = (struct qj_hold_interval){ .name = name,
					.start_usec = s->active_since_usec,
					.end_usec = now,
					.start_boot_usec = s->active_since_boot_usec,
					.end_boot_usec = qj_holds_boottime(t),
					.expired = expired };
	t->history_next = (t->history_next + 1) % QJ_HOLDS_HISTORY_MAX;
	if (t->n_history < QJ_HOLDS_HISTORY_MAX)
		t->n_history++;
}

static void stats_deactivate(struct qj_holds *t, struct qj_hold_stats *s, bool expired,
			     uint64_t now)
{
	uint64_t d;

	assert(s->active > 0);
	if (expired)
		s->expire_count++;
	if (--s->active > 0)
		return;
	t->n_active_names--;
	d = now - s->active_since_usec;
	s->total_time_usec += d;
	if (d > s->max_time_usec)
		s->max_time_usec = d;
	if (t->suspend_wanted)
		s->prevent_suspend_time_usec += now - s->prevent_since_usec;
	s->last_change_usec = now;
	history_add(t, s, expired, now);
}

static bool valid_text(const char *s, size_t max)
{
	size_t n = s ? strnlen(s, max + 1) : 0;

	return n > 0 && n <= max;
}

static struct qj_hold *hold_lookup(const struct qj_holds *t, uint64_t conn, const char *name)
{
	const struct qj_hold key = { .conn = conn, .name = (char *)name };
	void *const *node = tfind(&key, &t->hold_index, hold_cmp);

	return node ? *node : NULL;
}

static void deadline_added(struct qj_holds *t, uint64_t deadline)
{
	if (deadline < t->next_deadline)
		t->next_deadline = deadline;
}

static void deadline_removed(struct qj_holds *t, uint64_t deadline)
{
	if (deadline != USEC_INFINITY && deadline == t->next_deadline)
		t->next_deadline_stale = true;
}

int qj_holds_acquire(struct qj_holds *t, uint64_t conn, const char *name, const char *reason,
		     const struct qj_hold_owner *owner, uint64_t timeout_usec, uint64_t now_usec)
{
	uint64_t deadline = timeout_usec ? now_usec + timeout_usec : USEC_INFINITY;
	struct qj_hold_stats *s;
	struct qj_hold *h;
	char *r;

	if (!valid_text(name, QJ_HOLD_NAME_MAX) || !valid_text(reason, QJ_HOLD_REASON_MAX))
		return -EINVAL;
	if (timeout_usec && deadline < now_usec)
		deadline = USEC_INFINITY; /* overflow: as good as never */

	h = hold_lookup(t, conn, name);
	if (h) {
		r = strdup(reason);
		if (!r)
			return -ENOMEM;
		free(h->reason);
		h->reason = r;
		h->refresh_usec = now_usec;
		deadline_removed(t, h->deadline_usec);
		h->deadline_usec = deadline;
		deadline_added(t, deadline);
		stats_lookup(t, name)->event_count++;
		return 1;
	}

	/* Users stop short of the room kept for root; a name active already is no new name. */
	if (t->n_holds >= QJ_HOLDS_MAX - (owner->uid == 0 ? 0 : QJ_HOLDS_ROOT))
		return -ENOSPC;
	s = stats_lookup(t, name);
	if (owner->uid != 0 && (!s || !s->active) &&
	    t->n_active_names >= QJ_HOLDS_MAX_NAMES - QJ_HOLDS_ROOT_NAMES)
		return -ENOSPC;
	if (t->n_holds == t->alloc_holds) {
		size_t n = t->alloc_holds ? t->alloc_holds * 2 : 16;
		struct qj_hold **v = reallocarray(t->holds, n, sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->holds = v;
		t->alloc_holds = n;
	}
	s = stats_get(t, name);
	if (!s)
		return negative_errno();

	h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	*h = (struct qj_hold){
		.conn = conn,
		.owner = *owner,
		.start_usec = now_usec,
		.refresh_usec = now_usec,
		.deadline_usec = deadline,
		.name = strdup(name),
		.reason = strdup(reason),
	};
	if (!h->name || !h->reason || counter_add(&t->by_conn, conn, 1) < 0)
		goto fail;
	if (counter_add(&t->by_uid, owner->uid, 1) < 0) {
		(void)counter_add(&t->by_conn, conn, -1);
		goto fail;
	}
	if (!tsearch(h, &t->hold_index, hold_cmp)) {
		(void)counter_add(&t->by_uid, owner->uid, -1);
		(void)counter_add(&t->by_conn, conn, -1);
		goto fail;
	}
	t->holds[t->n_holds++] = h;
	deadline_added(t, deadline);
	stats_activate(t, s, now_usec);
	return 0;
fail:
	free(h->name);
	free(h->reason);
	free(h);
	return -ENOMEM;
}

static void hold_remove(struct qj_holds *t, size_t i, bool expired, uint64_t now)
{
	struct qj_hold *h = t->holds[i];

	stats_deactivate(t, stats_lookup(t, h->name), expired, now);
	deadline_removed(t, h->deadline_usec);
	tdelete(h, &t->hold_index, hold_cmp);
	(void)counter_add(&t->by_conn, h->conn, -1);
	(void)counter_add(&t->by_uid, h->owner.uid, -1);
	free(h->name);
	free(h->reason);
	free(h);
	/* Keep insertion order: operators read the list oldest first. */
	memmove(&t->holds[i], &t->holds[i + 1], (t->n_holds - i - 1) * sizeof(*t->holds));
	t->n_holds--;
}

int qj_holds_release(struct qj_holds *t, uint64_t conn, const char *name, uint64_t now_usec)
{
	struct qj_hold *h = hold_lookup(t, conn, name);
	size_t i = t->n_holds;

	if (!h)
		return -ENOENT;
	while (t->holds[--i] != h) /* from the newest: short-lived holds are recent */
		;
	hold_remove(t, i, false, now_usec);
	return 0;
}

size_t qj_holds_release_conn(struct qj_holds *t, uint64_t conn, uint64_t now_usec)
{
	size_t n = 0;

	for (size_t i = t->n_holds; i-- > 0;)
		if (t->holds[i]->conn == conn) {
			hold_remove(t, i, false, now_usec);
			n++;
		}
	return n;
}

size_t qj_holds_expire(struct qj_holds *t, uint64_t now_usec)
{
	size_t n = 0;

	if (qj_holds_next_deadline(t) > now_usec)
		return 0;
	for (size_t i = t->n_holds; i-- > 0;)
		if (t->holds[i]->deadline_usec <= now_usec) {
			hold_remove(t, i, true, now_usec);
			n++;
		}
	return n;
}

uint64_t qj_holds_next_deadline(struct qj_holds *t)
{
	if (t->next_deadline_stale) {
		t->next_deadline = USEC_INFINITY;
		for (size_t i = 0; i < t->n_holds; i++)
			deadline_added(t, t->holds[i]->deadline_usec);
		t->next_deadline_stale = false;
	}
	return t->next_deadline;
}

void qj_holds_set_suspend_wanted(struct qj_holds *t, bool wanted, uint64_t now_usec)
{
	if (wanted == t->suspend_wanted)
		return;
	for (size_t i = 0; i < t->n_stats; i++) {
		struct qj_hold_stats *s = t->stats[i];

		if (!s->active)
			continue;
		if (t->suspend_wanted)
			s->prevent_suspend_time_usec += now_usec - s->prevent_since_usec;
		s->prevent_since_usec = now_usec;
	}
	t->suspend_wanted = wanted;
}

size_t qj_holds_count(const struct qj_holds *t)
{
	return t->n_holds;
}

size_t qj_holds_count_conn(const struct qj_holds *t, uint64_t conn)
{
	return counter_get(&t->by_conn, conn);
}

size_t qj_holds_count_uid(const struct qj_holds *t, uid_t uid)
{
	return counter_get(&t->by_uid, uid);
}

const struct qj_hold *qj_holds_get(const struct qj_holds *t, size_t i)
{
	return i < t->n_holds ? t->holds[i] : NULL;
}

const struct qj_hold *qj_holds_find(const struct qj_holds *t, uint64_t conn, const char *name)
{
	return hold_lookup(t, conn, name);
}

size_t qj_holds_n_stats(const struct qj_holds *t)
{
	return t->n_stats;
}

static void stats_snapshot(const struct qj_holds *t, const struct qj_hold_stats *s, uint64_t now,
			   struct qj_hold_stats *ret)
{
	*ret = *s;
	if (!s->active)
		return;
	ret->total_time_usec += now - s->active_since_usec;
	if (now - s->active_since_usec > ret->max_time_usec)
		ret->max_time_usec = now - s->active_since_usec;
	if (t->suspend_wanted)
		ret->prevent_suspend_time_usec += now - s->prevent_since_usec;
}

int qj_holds_stats_at(const struct qj_holds *t, size_t i, uint64_t now_usec,
		      struct qj_hold_stats *ret)
{
	if (i >= t->n_stats)
		return -ENOENT;
	stats_snapshot(t, t->stats[i], now_usec, ret);
	return 0;
}

int qj_holds_stats_find(const struct qj_holds *t, const char *name, uint64_t now_usec,
			struct qj_hold_stats *ret)
{
	const struct qj_hold_stats *s = stats_lookup(t, name);

	if (!s)
		return -ENOENT;
	stats_snapshot(t, s, now_usec, ret);
	return 0;
}

size_t qj_holds_n_history(const struct qj_holds *t)
{
	return t->n_history;
}

const struct qj_hold_interval *qj_holds_history(const struct qj_holds *t, size_t i)
{
	if (i >= t->n_history)
		return NULL;
	return &t->history[(t->history_next + QJ_HOLDS_HISTORY_MAX - t->n_history + i) %
			   QJ_HOLDS_HISTORY_MAX];
}
