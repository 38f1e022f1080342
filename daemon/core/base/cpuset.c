/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <string.h>

#include "cpuset.h"

int cpuset_parse(const char *s, CpuSet *ret) {
        _cleanup_cpuset_ CpuSet set = NULL;

        if (!s || !ret)
                return -EINVAL;

        /* hwloc accepts some things the kernel would not (e.g. "0-");
         * validate the grammar ourselves: N or N-M, comma separated. */
        const char *p = s;
        while (*p && isspace((unsigned char) *p))
                p++;
        size_t len = strlen(p);
        while (len > 0 && isspace((unsigned char) p[len - 1]))
                len--;

        set = hwloc_bitmap_alloc();
        if (!set)
                return -ENOMEM;
        if (len == 0) {
                *ret = TAKE_PTR(set);
                return 0;
        }

        _cleanup_(freep) char *buf = strndup(p, len);
        if (!buf)
                return -ENOMEM;
        for (char *tok = buf; tok;) {
                char *comma = strchr(tok, ',');
                if (comma)
                        *comma = '\0';
                char *end;
                if (!isdigit((unsigned char) *tok))
                        return -EINVAL;
                errno = 0;
                unsigned long lo = strtoul(tok, &end, 10), hi = lo;
                if (errno || lo > 1UL << 20)
                        return -EINVAL;
                if (*end == '-') {
                        char *b = end + 1;
                        if (!isdigit((unsigned char) *b))
                                return -EINVAL;
                        hi = strtoul(b, &end, 10);
                        if (errno || hi < lo || hi > 1UL << 20)
                                return -EINVAL;
                }
                if (*end != '\0')
                        return -EINVAL;
                if (hwloc_bitmap_set_range(set, (unsigned) lo, (int) hi) < 0)
                        return -ENOMEM;
                tok = comma ? comma + 1 : NULL;
        }

        *ret = TAKE_PTR(set);
        return 0;
}

int cpuset_format(const hwloc_const_bitmap_t set, char **ret) {
        char *s = NULL;

        if (!set || !ret)
                return -EINVAL;
        if (hwloc_bitmap_iszero(set)) {
                s = strdup("");
                if (!s)
                        return -ENOMEM;
        } else if (hwloc_bitmap_list_asprintf(&s, set) < 0)
                return -ENOMEM;

        *ret = s;
        return 0;
}

const char *cpuset_to_string(const hwloc_const_bitmap_t set, char *buf, size_t size) {
        if (!set || hwloc_bitmap_iszero(set)) {
                snprintf(buf, size, "(none)");
                return buf;
        }
        int n = hwloc_bitmap_list_snprintf(buf, size, set);
        if (n >= 0 && (size_t) n >= size && size > 4)
                strcpy(buf + size - 4, "...");
        return buf;
}
