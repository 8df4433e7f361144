// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/loop.c: fd sources on a real epoll set (a pipe), timers, and posted work: it runs after
 * the dispatch that posted it, in order, once however often it was posted, and never
 * inside other posted work (a flush from within one is a no-op).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "loop.h"
#include "util.h"

struct rec {
	struct qj_loop_work w;
	struct qj_loop *l;
	char *trace; /* one letter per run */
	char name;
	int depth, max_depth, runs, repost;
	struct rec *other; /* posted from run() */
};

static int depth;

static void run(struct qj_loop_work *w)
{
	struct rec *r = (struct rec *)w;
	size_t n = strlen(r->trace);

	r->trace[n] = r->name;
	r->runs++;
	if (++depth > r->max_depth)
		r->max_depth = depth;
	if (r->other)
		qj_loop_post(r->l, &r->other->w);
	if (r->repost-- > 0)
		qj_loop_post(r->l, &r->w);
	qj_loop_flush(r->l); /* what a module calling back would do: must not nest */
	depth--;
}

struct src {
	struct qj_event_source s;
	int fd;
	struct rec *post;
	bool ran_before_return; /* the posted work ran inside dispatch */
};

static void dispatch(struct qj_event_source *s, uint32_t events)
{
	struct src *x = (struct src *)s;
	char c;

	(void)events;
	(void)!read(x->fd, &c, 1);
	qj_loop_post(x->post->l, &x->post->w);
	qj_loop_post(x->post->l, &x->post->w); /* twice: runs once */
	x->ran_before_return = x->post->runs > 0;
}

/* Posted from a source: runs once, after the dispatch returned. */
static void test_post_runs_after_dispatch(void **state)
{
	struct qj_loop *l = NULL;
	char trace[16] = "";
	struct rec a = { .w.run = run, .trace = trace, .name = 'a' };
	struct src x = { .s.dispatch = dispatch, .post = &a };
	int p[2];

	(void)state;
	assert_int_equal(qj_loop_new(&l), 0);
	a.l = l;
	assert_int_equal(pipe(p), 0);
	x.fd = p[0];
	assert_int_equal(qj_loop_add(l, &x.s, p[0], 0), 0);
	assert_int_equal(qj_loop_step(l, 0), 0); /* nothing ready */
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(qj_loop_step(l, 1000), 1);
	assert_false(x.ran_before_return);
	assert_int_equal(a.runs, 1);
	assert_string_equal(trace, "a");
	assert_int_equal(qj_loop_add(l, &x.s, -1, 0), -EBADF);
	qj_loop_del(l, p[0]);
	close(p[0]);
	close(p[1]);
	qj_loop_free(l);
}

/*
 * Work that posts other work and itself again, and flushes from within (as a module
 * calling the daemon back would): nothing nests, the later work runs after, in order.
 */
static void test_no_reentry(void **state)
{
	struct qj_loop *l = NULL;
	char trace[16] = "";
	struct rec b = { .w.run = run, .trace = trace, .name = 'b' };
	struct rec a = { .w.run = run, .trace = trace, .name = 'a', .repost = 1, .other = &b };

	(void)state;
	assert_int_equal(qj_loop_new(&l), 0);
	a.l = b.l = l;
	qj_loop_post(l, &a.w);
	qj_loop_flush(l);
	assert_string_equal(trace, "abab");
	assert_int_equal(a.max_depth, 1);
	assert_int_equal(b.max_depth, 1);
	qj_loop_flush(l); /* nothing left */
	assert_string_equal(trace, "abab");
	qj_loop_free(l);
}

struct tmr {
	struct qj_loop_timer t;
	int fired;
	uint64_t armed_when_fired;
};

static void fire(struct qj_loop_timer *t)
{
	struct tmr *x = (struct tmr *)t;

	x->fired++;
	x->armed_when_fired = qj_loop_timer_armed(t);
}

/*
 * A timer source: armed for a time already past it fires at the next step, disarmed by
 * then; disarmed (or armed far ahead) it does not; removed, its fd is closed.
 */
static void test_timer(void **state)
{
	struct qj_loop *l = NULL;
	struct tmr x = {};
	uint64_t now = now_usec(CLOCK_MONOTONIC);
	int fd;

	(void)state;
	qj_loop_timer_del(&x.t); /* never added: a no-op */
	assert_int_equal(qj_loop_new(&l), 0);
	assert_int_equal(qj_loop_timer_add(l, &x.t, fire), 0);
	assert_true(qj_loop_timer_armed(&x.t) == USEC_INFINITY);
	assert_int_equal(qj_loop_step(l, 0), 0);
	assert_int_equal(qj_loop_timer_arm(&x.t, now - 1), 0);
	assert_true(qj_loop_timer_armed(&x.t) == now - 1);
	assert_int_equal(qj_loop_step(l, 1000), 1);
	assert_int_equal(x.fired, 1);
	assert_true(x.armed_when_fired == USEC_INFINITY);
	assert_int_equal(qj_loop_step(l, 0), 0); /* one shot */
	assert_int_equal(qj_loop_timer_arm(&x.t, 0), 0); /* 0 is a time, not "disarm" */
	assert_int_equal(qj_loop_step(l, 1000), 1);
	assert_int_equal(x.fired, 2);
	assert_int_equal(qj_loop_timer_arm(&x.t, now + 3600 * USEC_PER_SEC), 0);
	assert_int_equal(qj_loop_step(l, 0), 0);
	assert_int_equal(qj_loop_timer_arm(&x.t, now - 1), 0);
	assert_int_equal(qj_loop_timer_disarm(&x.t), 0);
	assert_true(qj_loop_timer_armed(&x.t) == USEC_INFINITY);
	assert_int_equal(qj_loop_step(l, 0), 0);
	assert_int_equal(x.fired, 2);
	fd = x.t.fd;
	qj_loop_timer_del(&x.t);
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	qj_loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_post_runs_after_dispatch),
		cmocka_unit_test(test_no_reentry),
		cmocka_unit_test(test_timer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
