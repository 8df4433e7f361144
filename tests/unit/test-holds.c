// SPDX-License-Identifier: LGPL-2.1-or-later
/* Hold table and per-name statistics over simulated time: every value exact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "holds.h"
#include "util.h"

static const struct qj_hold_owner owner = { .pid = 42, .uid = 1000, .comm = "holder" };

static int setup(void **state)
{
	return qj_holds_new((struct qj_holds **)state);
}

static int teardown(void **state)
{
	qj_holds_free(*state);
	return 0;
}

static void test_holds_acquire_release_stats(void **state)
{
	struct qj_holds *t = *state;
	struct qj_hold_stats s;

	assert_int_equal(qj_holds_acquire(t, 1, "net", "download", &owner, 0, 1000), 0);
	assert_int_equal(qj_holds_count(t), 1);
	assert_string_equal(qj_holds_get(t, 0)->owner.comm, "holder");
	assert_int_equal(qj_holds_release(t, 1, "net", 1500), 0);
	assert_int_equal(qj_holds_count(t), 0);
	assert_int_equal(qj_holds_release(t, 1, "net", 1600), -ENOENT);

	assert_int_equal(qj_holds_acquire(t, 1, "net", "again", &owner, 0, 2000), 0);
	assert_int_equal(qj_holds_release(t, 1, "net", 2200), 0);

	assert_int_equal(qj_holds_stats_find(t, "net", 3000, &s), 0);
	assert_int_equal(s.active, 0);
	assert_int_equal(s.active_count, 2);
	assert_int_equal(s.event_count, 2);
	assert_int_equal(s.expire_count, 0);
	assert_int_equal(s.total_time_usec, 700);
	assert_int_equal(s.max_time_usec, 500);
	assert_int_equal(s.last_change_usec, 2200);
	assert_int_equal(s.prevent_suspend_time_usec, 0); /* suspend never wanted */
}

static void test_holds_acquire_refresh_counts_event_only(void **state)
{
	struct qj_holds *t = *state;
	struct qj_hold_stats s;

	assert_int_equal(qj_holds_acquire(t, 1, "a", "r1", &owner, 100, 0), 0);
	assert_int_equal(qj_holds_acquire(t, 1, "a", "r2", &owner, 100, 50), 1);
	assert_int_equal(qj_holds_count(t), 1);
	assert_string_equal(qj_holds_get(t, 0)->reason, "r2");
	assert_int_equal(qj_holds_next_deadline(t), 150);
	assert_int_equal(qj_holds_stats_find(t, "a", 60, &s), 0);
	assert_int_equal(s.active_count, 1);
	assert_int_equal(s.event_count, 2);
	assert_int_equal(s.total_time_usec, 60); /* current period included */
	assert_int_equal(s.max_time_usec, 60);
}

static void test_holds_shared_name_two_connections(void **state)
{
	struct qj_holds *t = *state;
	struct qj_hold_stats s;

	assert_int_equal(qj_holds_acquire(t, 1, "x", "r", &owner, 0, 0), 0);
	assert_int_equal(qj_holds_acquire(t, 2, "x", "r", &owner, 0, 10), 0);
	assert_int_equal(qj_holds_release(t, 1, "x", 20), 0);
	assert_int_equal(qj_holds_stats_find(t, "x", 20, &s), 0);
	assert_int_equal(s.active, 1);
	assert_int_equal(s.active_count, 1);
	assert_int_equal(qj_holds_release(t, 2, "x", 30), 0);
	assert_int_equal(qj_holds_stats_find(t, "x", 99, &s), 0);
	assert_int_equal(s.total_time_usec, 30);
	assert_int_equal(s.max_time_usec, 30);
	assert_int_equal(s.event_count, 2);
	assert_int_equal(s.last_change_usec, 30);
}

static void test_holds_expire_timeout(void **state)
{
	struct qj_holds *t = *state;
	struct qj_hold_stats s;

	assert_int_equal(qj_holds_acquire(t, 1, "a", "r", &owner, 100, 0), 0);
	assert_int_equal(qj_holds_acquire(t, 1, "b", "r", &owner, 300, 0), 0);
	assert_int_equal(qj_holds_acquire(t, 1, "c", "r", &owner, 0, 0), 0);
	assert_int_equal(qj_holds_next_deadline(t), 100);
	assert_int_equal(qj_holds_expire(t, 99), 0);
	assert_int_equal(qj_holds_expire(t, 100), 1);
	assert_int_equal(qj_holds_next_deadline(t), 300);
	assert_int_equal(qj_holds_expire(t, 1000), 1);
	assert_int_equal(qj_holds_next_deadline(t), USEC_INFINITY);
	assert_int_equal(qj_holds_count(t), 1);
	assert_string_equal(qj_holds_get(t, 0)->name, "c");
	assert_int_equal(qj_holds_stats_find(t, "a", 5000, &s), 0);
	assert_int_equal(s.expire_count, 1);
	assert_int_equal(s.total_time_usec, 100);
	assert_int_equal(qj_holds_stats_find(t, "b", 5000, &s), 0);
	assert_int_equal(s.expire_count, 1);
	assert_int_equal(s.total_time_usec, 1000); /* expired when noticed, as the kernel does */
}

static void test_holds_release_conn(void **state)
{
	struct qj_holds *t = *state;

	assert_int_equal(qj_holds_acquire(t, 7, "a", "r", &owner, 0, 0), 0);
	assert_int_equal(qj_holds_acquire(t, 8, "b", "r", &owner, 0, 0), 0);
	assert_int_equal(qj_holds_acquire(t, 7, "c", "r", &owner, 0, 0), 0);
	assert_int_equal(qj_holds_count_conn(t, 7), 2);
	assert_int_equal(qj_holds_release_conn(t, 7, 10), 2);
	assert_int_equal(qj_holds_count(t), 1);
	assert_string_equal(qj_holds_get(t, 0)->name, "b");
	assert_int_equal(qj_holds_release_conn(t, 7, 10), 0);
	assert_null(qj_holds_find(t, 7, "a"));
	assert_non_null(qj_holds_find(t, 8, "b"));
}

/* The quota counters follow every way a hold ends, and refreshes do not count twice. */
static void test_holds_count_conn_and_uid(void **state)
{
	struct qj_holds *t = *state;
	struct qj_hold_owner other = owner;

	other.uid = owner.uid + 1;
	assert_int_equal(qj_holds_acquire(t, 1, "a", "r", &owner, 0, 0), 0);
	assert_int_equal(qj_holds_acquire(t, 1, "a", "r2", &owner, 0, 0), 1); /* refresh */
	assert_int_equal(qj_holds_acquire(t, 1, "b", "r", &owner, 100, 0), 0);
	assert_int_equal(qj_holds_acquire(t, 2, "a", "r", &owner, 0, 0), 0);
	assert_int_equal(qj_holds_acquire(t, 3, "a", "r", &other, 0, 0), 0);
	assert_int_equal(qj_holds_count_conn(t, 1), 2);
	assert_int_equal(qj_holds_count_conn(t, 2), 1);
	assert_int_equal(qj_holds_count_conn(t, 4), 0);
	assert_int_equal(qj_holds_count_uid(t, owner.uid), 3);
	assert_int_equal(qj_holds_count_uid(t, other.uid), 1);
	assert_int_equal(qj_holds_expire(t, 100), 1); /* "b" */
	assert_int_equal(qj_holds_count_conn(t, 1), 1);
	assert_int_equal(qj_holds_count_uid(t, owner.uid), 2);
	assert_int_equal(qj_holds_release(t, 2, "a", 200), 0);
	assert_int_equal(qj_holds_count_conn(t, 2), 0);
	assert_int_equal(qj_holds_release_conn(t, 1, 300), 1);
	assert_int_equal(qj_holds_count_uid(t, owner.uid), 0);
	assert_int_equal(qj_holds_count_uid(t, other.uid), 1);
}

static void test_holds_prevent_suspend_time(void **state)
{
	struct qj_holds *t = *state;
	struct qj_hold_stats s;

	assert_int_equal(qj_holds_acquire(t, 1, "a", "r", &owner, 0, 0), 0);
	qj_holds_set_suspend_wanted(t, true, 100);
	qj_holds_set_suspend_wanted(t, false, 250);
	qj_holds_set_suspend_wanted(t, true, 400);
	assert_int_equal(qj_holds_stats_find(t, "a", 450, &s), 0);
	assert_int_equal(s.prevent_suspend_time_usec, 200);
	assert_int_equal(qj_holds_release(t, 1, "a", 500), 0);
	assert_int_equal(qj_holds_stats_find(t, "a", 900, &s), 0);
	assert_int_equal(s.prevent_suspend_time_usec, 250);
	assert_int_equal(s.total_time_usec, 500);
	/* A hold taken while suspend is wanted prevents for its whole life. */
	assert_int_equal(qj_holds_acquire(t, 1, "b", "r", &owner, 0, 1000), 0);
	assert_int_equal(qj_holds_release(t, 1, "b", 1300), 0);
	assert_int_equal(qj_holds_stats_find(t, "b", 2000, &s), 0);
	assert_int_equal(s.prevent_suspend_time_usec, 300);
}

static void test_holds_acquire_invalid(void **state)
{
	struct qj_holds *t = *state;
	char longname[QJ_HOLD_NAME_MAX + 2];

	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(qj_holds_acquire(t, 1, "", "r", &owner, 0, 0), -EINVAL);
	assert_int_equal(qj_holds_acquire(t, 1, "a", "", &owner, 0, 0), -EINVAL);
	assert_int_equal(qj_holds_acquire(t, 1, longname, "r", &owner, 0, 0), -EINVAL);
	assert_int_equal(qj_holds_count(t), 0);
	assert_int_equal(qj_holds_n_stats(t), 0);
}

static void test_holds_stats_recycle_lru(void **state)
{
	struct qj_holds *t = *state;
	struct qj_hold_stats s;
	char name[32];

	for (unsigned i = 0; i < QJ_HOLDS_MAX_NAMES; i++) {
		snprintf(name, sizeof(name), "n%u", i);
		assert_int_equal(qj_holds_acquire(t, 1, name, "r", &owner, 0, i), 0);
		assert_int_equal(qj_holds_release(t, 1, name, i + 1), 0);
	}
	assert_int_equal(qj_holds_n_stats(t), QJ_HOLDS_MAX_NAMES);
	assert_int_equal(qj_holds_acquire(t, 1, "fresh", "r", &owner, 0, 100000), 0);
	assert_int_equal(qj_holds_n_stats(t), QJ_HOLDS_MAX_NAMES);
	assert_int_equal(qj_holds_stats_find(t, "n0", 100000, &s), -ENOENT); /* stalest went */
	assert_int_equal(qj_holds_stats_find(t, "n1", 100000, &s), 0);
	assert_int_equal(qj_holds_stats_find(t, "fresh", 100000, &s), 0);
}

/*
 * One uid's distinct names fill the table as far as it goes for users; root's next name
 * still fits (issue 24: 4,096 names of uid 65534 made root's hold ENOSPC).
 */
static void test_holds_names_room_for_root(void **state)
{
	struct qj_holds *t = *state;
	const struct qj_hold_owner root = { .pid = 1, .uid = 0, .comm = "root" };
	unsigned n = 0;
	char name[32];
	int r;

	for (;; n++) {
		snprintf(name, sizeof(name), "flood%u", n);
		r = qj_holds_acquire(t, 1000 + n, name, "r", &owner, 0, n);
		if (r < 0)
			break;
	}
	assert_int_equal(r, -ENOSPC);
	assert_int_equal(n, QJ_HOLDS_MAX_NAMES - QJ_HOLDS_ROOT_NAMES);
	/* A name already active is no new name: users share it still. */
	assert_int_equal(qj_holds_acquire(t, 1, "flood0", "r", &owner, 0, n), 0);
	for (unsigned i = 0; i < QJ_HOLDS_ROOT_NAMES; i++) {
		snprintf(name, sizeof(name), "root%u", i);
		assert_int_equal(qj_holds_acquire(t, 1, name, "r", &root, 0, n), 0);
	}
	assert_int_equal(qj_holds_acquire(t, 1, "one-more", "r", &root, 0, n), -ENOSPC);
}

/* Holds of one name on as many connections as users may take: root's still fit. */
static void test_holds_room_for_root(void **state)
{
	struct qj_holds *t = *state;
	const struct qj_hold_owner root = { .pid = 1, .uid = 0, .comm = "root" };
	unsigned n = 0;
	int r;

	while ((r = qj_holds_acquire(t, 1000 + n, "same", "r", &owner, 0, 0)) == 0)
		n++;
	assert_int_equal(r, -ENOSPC);
	assert_int_equal(n, QJ_HOLDS_MAX - QJ_HOLDS_ROOT);
	assert_int_equal(qj_holds_acquire(t, 1, "call", "r", &root, 0, 0), 0);
	assert_int_equal(qj_holds_acquire(t, 2, "same", "r", &root, 0, 0), 0);
}

/* Earliest deadline by brute force over the listing: the model the index must match. */
static uint64_t brute_next_deadline(const struct qj_holds *t)
{
	uint64_t d = USEC_INFINITY;

	for (size_t i = 0; qj_holds_get(t, i); i++)
		if (qj_holds_get(t, i)->deadline_usec < d)
			d = qj_holds_get(t, i)->deadline_usec;
	return d;
}

/*
 * The lookup trees and the cached earliest deadline against a brute-force
 * model, over a fixed pseudo-random mix of takes, refreshes and releases on
 * 50 connections and 20 names; the listing keeps the order holds were taken.
 */
static void test_holds_index_matches_model(void **state)
{
	struct qj_holds *t = *state;
	bool held[50][20] = {};
	uint32_t x = 12345;
	uint64_t now = 1000;

	for (int step = 0; step < 20000; step++) {
		unsigned conn, name;
		char n[16];
		size_t count = 0;

		x = x * 1103515245 + 12345;
		conn = (x >> 8) % 50;
		name = (x >> 16) % 20;
		snprintf(n, sizeof(n), "name-%u", name);
		now += 7;
		if (held[conn][name] && (x & 3) == 0) {
			assert_int_equal(qj_holds_release(t, conn, n, now), 0);
			held[conn][name] = false;
		} else {
			uint64_t timeout = (x & 4) ? 0 : ((x >> 3) % 5000) + 1;

			assert_int_equal(qj_holds_acquire(t, conn, n, "r", &owner, timeout, now),
					 held[conn][name] ? 1 : 0);
			held[conn][name] = true;
		}
		if (step % 97 == 0) {
			(void)qj_holds_expire(t, now);
			for (unsigned c = 0; c < 50; c++)
				for (unsigned k = 0; k < 20; k++) {
					snprintf(n, sizeof(n), "name-%u", k);
					held[c][k] = qj_holds_find(t, c, n) != NULL;
				}
		}
		assert_int_equal(qj_holds_next_deadline(t), brute_next_deadline(t));
		for (unsigned c = 0; c < 50; c++)
			for (unsigned k = 0; k < 20; k++)
				count += held[c][k];
		assert_int_equal(qj_holds_count(t), count);
	}
	for (size_t i = 1; qj_holds_get(t, i); i++)
		assert_true(qj_holds_get(t, i - 1)->start_usec < qj_holds_get(t, i)->start_usec);
	for (unsigned c = 0; c < 50; c++)
		for (unsigned k = 0; k < 20; k++) {
			char n[16];
			const struct qj_hold *h;

			snprintf(n, sizeof(n), "name-%u", k);
			h = qj_holds_find(t, c, n);
			assert_int_equal(h != NULL, held[c][k]);
			if (h) {
				assert_int_equal(h->conn, c);
				assert_string_equal(h->name, n);
			}
		}
}

/* Ended periods of a name (not of each hold) are kept in order, the newest when the ring is full. */
static void test_holds_history_periods_of_names(void **state)
{
	struct qj_holds *t = *state;
	const struct qj_hold_interval *h;

	assert_null(qj_holds_history(t, 0));
	assert_int_equal(qj_holds_acquire(t, 1, "net", "a", &owner, 0, 100), 0);
	assert_int_equal(qj_holds_acquire(t, 2, "net", "b", &owner, 0, 150), 0);
	assert_int_equal(qj_holds_release(t, 1, "net", 200), 0);
	assert_int_equal(qj_holds_n_history(t), 0); /* still held by connection 2 */
	assert_int_equal(qj_holds_release(t, 2, "net", 300), 0);
	assert_int_equal(qj_holds_acquire(t, 1, "sync", "c", &owner, 50, 400), 0);
	assert_int_equal(qj_holds_expire(t, 450), 1);
	assert_int_equal(qj_holds_n_history(t), 2);
	h = qj_holds_history(t, 0);
	assert_string_equal(h->name, "net");
	assert_int_equal(h->start_usec, 100);
	assert_int_equal(h->end_usec, 300);
	assert_false(h->expired);
	h = qj_holds_history(t, 1);
	assert_string_equal(h->name, "sync");
	assert_int_equal(h->start_usec, 400);
	assert_int_equal(h->end_usec, 450);
	assert_true(h->expired);
	assert_null(qj_holds_history(t, 2));

	for (uint64_t i = 0; i < QJ_HOLDS_HISTORY_MAX + 5; i++) {
		assert_int_equal(qj_holds_acquire(t, 3, "x", "r", &owner, 0, 1000 + 10 * i), 0);
		assert_int_equal(qj_holds_release(t, 3, "x", 1005 + 10 * i), 0);
	}
	assert_int_equal(qj_holds_n_history(t), QJ_HOLDS_HISTORY_MAX);
	/* 2 + 261 periods ended: the first 7 are gone, "x" number 5 is the oldest kept. */
	assert_int_equal(qj_holds_history(t, 0)->start_usec, 1000 + 10 * 5);
	assert_int_equal(qj_holds_history(t, QJ_HOLDS_HISTORY_MAX - 1)->end_usec,
			 1005 + 10 * (QJ_HOLDS_HISTORY_MAX + 4));
}

static uint64_t fake_boot;

static uint64_t fake_boottime(void *userdata)
{
	return fake_boot;
}

/*
 * A machine that sleeps: CLOCK_MONOTONIC stops, CLOCK_BOOTTIME and the wall clock run
 * on.  A period that ended before a 30 s sleep is, as wall-clock time, 30 s further in
 * the past than its monotonic stamps say; converted with today's offset it was drawn
 * 30 s late (issue 29).
 */
static void test_holds_history_wall_clock_across_a_sleep(void **state)
{
	struct qj_holds *t = *state;
	const struct qj_hold_interval *h;
	struct qj_hold_stats s;
	const uint64_t real_now = 1764900000 * USEC_PER_SEC, sleep = 30 * USEC_PER_SEC;
	uint64_t mono = USEC_PER_SEC;

	qj_holds_set_boottime(t, fake_boottime, NULL);
	fake_boot = 5 * USEC_PER_SEC; /* BOOTTIME ahead by earlier sleeps */
	assert_int_equal(qj_holds_acquire(t, 1, "modem", "check", &owner, 0, mono), 0);
	mono += 200 * USEC_PER_MSEC;
	fake_boot += 200 * USEC_PER_MSEC;
	assert_int_equal(qj_holds_release(t, 1, "modem", mono), 0);
	/* The machine sleeps 30 s, wakes, and someone holds again 1 s later. */
	fake_boot += sleep + USEC_PER_SEC;
	mono += USEC_PER_SEC;
	assert_int_equal(qj_holds_acquire(t, 2, "music", "play", &owner, 0, mono), 0);
	mono += USEC_PER_SEC;
	fake_boot += USEC_PER_SEC;

	/* Asked now: the daemon converts with both clocks read now. */
	h = qj_holds_history(t, 0);
	assert_non_null(h);
	assert_int_equal(qj_holds_boot_to_realtime(h->end_boot_usec, qj_holds_boottime(t),
						   real_now),
			 real_now - USEC_PER_SEC - USEC_PER_SEC - sleep);
	assert_int_equal(qj_holds_boot_to_realtime(h->start_boot_usec, qj_holds_boottime(t),
						   real_now),
			 real_now - 2 * USEC_PER_SEC - sleep - 200 * USEC_PER_MSEC);
	assert_int_equal(qj_holds_stats_find(t, "music", mono, &s), 0);
	assert_int_equal(qj_holds_boot_to_realtime(s.active_since_boot_usec, qj_holds_boottime(t),
						   real_now),
			 real_now - USEC_PER_SEC);
	/* A stamp "after" now (clocks read in the other order) is now, not the future. */
	assert_int_equal(qj_holds_boot_to_realtime(fake_boot + 5, fake_boot, real_now), real_now);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_holds_acquire_release_stats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_holds_acquire_refresh_counts_event_only, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_holds_shared_name_two_connections, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_holds_expire_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_holds_count_conn_and_uid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_holds_release_conn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_holds_prevent_suspend_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_holds_acquire_invalid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_holds_stats_recycle_lru, setup, teardown),
		cmocka_unit_test_setup_teardown(test_holds_names_room_for_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_holds_room_for_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_holds_index_matches_model, setup, teardown),
		cmocka_unit_test_setup_teardown(test_holds_history_wall_clock_across_a_sleep, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_holds_history_periods_of_names, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
