/* SPDX-License-Identifier: MIT */
#pragma once

/* The one line splitter of every parser of a file read whole (/proc,
 * debugfs, cgroup files): no copies, no allocation. */

#include "steerd-macros.h"

/* The start of the line after the one that ends at eol (its '\n', or the
 * final NUL, where the walk stops). */
static inline const char *line_next(const char *eol) {
        return *eol ? eol + 1 : eol;
}

/* for each line of contents: p its start, eol its '\n' or the final NUL. */
#define FOREACH_LINE(p, eol, contents)                                                                      \
        for (const char *p = (contents), *eol = strchrnul(p, '\n'); *p;                                     \
             p = line_next(eol), eol = strchrnul(p, '\n'))

/* How many lines of contents start with prefix. */
size_t lines_count_prefix(const char *contents, const char *prefix);
