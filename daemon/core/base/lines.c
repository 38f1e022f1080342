/* SPDX-License-Identifier: MIT */
#include "lines.h"

size_t lines_count_prefix(const char *contents, const char *prefix) {
        size_t n = 0, l = strlen(prefix);

        FOREACH_LINE(p, eol, contents)
        if (strncmp(p, prefix, l) == 0)
                n++;
        return n;
}
