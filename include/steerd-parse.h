/* SPDX-License-Identifier: MIT */
#pragma once

/* Number parsing for command-line and config values, shared by steerd and
 * steerctl (header-only: steerctl links no part of the daemon). */

#include "steerd-macros.h"

/* A whole decimal string in [lo, hi]: no sign, no trailing characters.
 * -EINVAL when it is not a number, -ERANGE when it is out of [lo, hi]. */
static inline int safe_atou64_range(const char *s, uint64_t lo, uint64_t hi, uint64_t *ret) {
        unsigned long long v;
        char *end;

        if (!s || s[0] < '0' || s[0] > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || end == s || *end)
                return -EINVAL;
        if (v < lo || v > hi)
                return -ERANGE;
        *ret = v;
        return 0;
}
