/* SPDX-License-Identifier: MIT */
#pragma once

/* The few helpers systemd's code base has everywhere; steerd keeps its own
 * small copy so that no libsystemd-internal header is needed. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _pure_ __attribute__((pure))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_result_ __attribute__((warn_unused_result))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* Unique local names (as systemd's UNIQ_T) so that MIN(MAX(a, b), c) does not shadow. */
#define XCONCATENATE(x, y) x##y
#define CONCATENATE(x, y) XCONCATENATE(x, y)
#define UNIQ_T(x, uniq) CONCATENATE(__unique_prefix_, CONCATENATE(x, uniq))

#define __MIN(aq, a, bq, b)                                                                                 \
        __extension__({                                                                                     \
                __typeof__(a) UNIQ_T(A, aq) = (a);                                                          \
                __typeof__(b) UNIQ_T(B, bq) = (b);                                                          \
                UNIQ_T(A, aq) < UNIQ_T(B, bq) ? UNIQ_T(A, aq) : UNIQ_T(B, bq);                              \
        })
#define MIN(a, b) __MIN(__COUNTER__, a, __COUNTER__, b)
#define __MAX(aq, a, bq, b)                                                                                 \
        __extension__({                                                                                     \
                __typeof__(a) UNIQ_T(A, aq) = (a);                                                          \
                __typeof__(b) UNIQ_T(B, bq) = (b);                                                          \
                UNIQ_T(A, aq) > UNIQ_T(B, bq) ? UNIQ_T(A, aq) : UNIQ_T(B, bq);                              \
        })
#define MAX(a, b) __MAX(__COUNTER__, a, __COUNTER__, b)
#define CLAMP(x, lo, hi) MIN(MAX((x), (lo)), (hi))

/* Hand ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p)                                                                                         \
        __extension__({                                                                                     \
                __typeof__(p) _p = (p);                                                                     \
                (p) = NULL;                                                                                 \
                _p;                                                                                         \
        })
#define TAKE_FD(fd)                                                                                         \
        __extension__({                                                                                     \
                int _fd = (fd);                                                                             \
                (fd) = -EBADF;                                                                              \
                _fd;                                                                                        \
        })

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                             \
        static inline void func##p(type *p) {                                                               \
                if (*p)                                                                                     \
                        func(*p);                                                                           \
        }

static inline void freep(void *p) {
        free(*(void **) p);
}

/* A NULL-terminated array of strings that owns them. */
static inline void strv_freep(char ***p) {
        if (!*p)
                return;
        for (char **s = *p; *s; s++)
                free(*s);
        free(*p);
}
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* Closes and forgets: also called on a descriptor that lives on (a kept
 * file), where a second call closed whatever had reused the number since
 * (a cgroup whose window went back closed another file every tick: the
 * parent's kept CPUs file was closed, but its number kept). */
static inline void closep(int *fd) {
        if (*fd >= 0)
                close(*fd);
        *fd = -EBADF;
}

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}

/* errno as a negative return value, never 0 even if errno was not set. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

#define streq(a, b) (strcmp((a), (b)) == 0)

/* The one string table of an enum: NAME_table[] indexed by the enum, with
 * NAME_to_string() (NULL out of range) and NAME_from_string() (-EINVAL for
 * an unknown or NULL string), as systemd's DEFINE_STRING_TABLE_LOOKUP. */
#define DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type, max)                                               \
        const char *name##_to_string(type i) {                                                              \
                return i >= 0 && i < (max) ? name##_table[i] : NULL;                                        \
        }
#define DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type, max)                                             \
        type name##_from_string(const char *s) {                                                            \
                for (int i = 0; s && i < (max); i++)                                                        \
                        if (name##_table[i] && streq(s, name##_table[i]))                                   \
                                return (type) i;                                                            \
                return (type) -EINVAL;                                                                      \
        }
#define DEFINE_STRING_TABLE_LOOKUP(name, type, max)                                                         \
        DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type, max)                                               \
        DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type, max)
#define startswith_literal(s, lit) (strncmp((s), (lit), sizeof(lit) - 1) == 0 ? (s) + sizeof(lit) - 1 : NULL)

#define USEC_PER_SEC 1000000ULL
#define USEC_PER_MSEC 1000ULL
#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_SEC 1000000000ULL

/* Time since an instant that may lie ahead of `now`: a bus call stamps a
 * start with the loop's wake-up time, and the tick timer due before it can
 * run after it with its own earlier time. Zero then, not 584,000 years. */
static inline uint64_t usec_since(uint64_t now, uint64_t then) {
        return now > then ? now - then : 0;
}

/* The kernel's capacity scale: 1024 = one CPU fully busy. */
#define SCHED_CAPACITY_SCALE 1024
