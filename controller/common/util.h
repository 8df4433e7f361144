/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Small helpers shared by every qosjail source: scoped cleanup (systemd style),
 * ownership transfer, time in microseconds.  Internal; never installed.
 */
#ifndef QJ_UTIL_H
#define QJ_UTIL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define USEC_PER_MSEC 1000ULL
#define USEC_PER_SEC 1000000ULL
#define NSEC_PER_USEC 1000ULL
#define USEC_INFINITY UINT64_MAX

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;

		(void)close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f)
		(void)fclose(*f);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Take ownership: returns the pointer and leaves NULL behind for the cleanup handler. */
#define TAKE_PTR(p)                      \
	({                               \
		__typeof__(p) _p_ = (p); \
		(p) = NULL;              \
		_p_;                     \
	})

/* The struct @type whose @member @ptr points to. */
#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#define TAKE_FD(fd)              \
	({                       \
		int _fd_ = (fd); \
		(fd) = -EBADF;   \
		_fd_;            \
	})

/* Define a cleanup helper for a type with a NULL-tolerant destructor returning NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
	static inline void func##p(type *p)     \
	{                                       \
		if (*p)                         \
			*p = func(*p);          \
	}

static inline uint64_t timespec_to_usec(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * USEC_PER_SEC + (uint64_t)ts->tv_nsec / NSEC_PER_USEC;
}

static inline uint64_t now_usec(clockid_t clock)
{
	struct timespec ts;

	(void)clock_gettime(clock, &ts);
	return timespec_to_usec(&ts);
}

static inline int negative_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

#endif
