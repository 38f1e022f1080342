/* SPDX-License-Identifier: MIT */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <sys/types.h>

/* Appends tid to a growing array (*tids, *n used, *alloc allocated), as the
 * listers of held and owned threads fill the caller's buffer. */
static inline int tids_append(pid_t **tids, size_t *n, size_t *alloc, pid_t tid) {
        if (*n == *alloc) {
                size_t na = *alloc ? *alloc * 2 : 16;
                pid_t *p = reallocarray(*tids, na, sizeof(pid_t));
                if (!p)
                        return -ENOMEM;
                *tids = p;
                *alloc = na;
        }
        (*tids)[(*n)++] = tid;
        return 0;
}
