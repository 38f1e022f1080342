/* SPDX-License-Identifier: MIT */
#include "optin-entry.h"

int optin_entry_validate_cgroup(const char *path) {
        if (!path || path[0] != '/')
                return -EINVAL;
        if (strlen(path) >= 4096)
                return -ENAMETOOLONG;
        /* ".." would let an opt-in escape its hierarchy. */
        for (const char *p = path; *p;) {
                const char *e = strchrnul(p + 1, '/');
                size_t n = (size_t) (e - p - 1);
                if ((n == 2 && strncmp(p + 1, "..", 2) == 0) || (n == 1 && p[1] == '.'))
                        return -EINVAL;
                p = e;
        }
        for (const char *p = path; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return -EINVAL;
        return 0;
}

void optin_entries_free(OptInEntry *e, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(e[i].cgroup);
        free(e);
}
