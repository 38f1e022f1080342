/* SPDX-License-Identifier: MIT */
#include <fnmatch.h>

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

static const char *const optin_rule_kind_table[_OPTIN_RULE_KIND_MAX] = {
        [OPTIN_RULE_PATH] = "path",
        [OPTIN_RULE_GLOB] = "glob",
        [OPTIN_RULE_UNIT] = "unit",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(optin_rule_kind, OptInRuleKind, _OPTIN_RULE_KIND_MAX);

/* systemd's unit name rules (unit_name_is_valid()): [A-Za-z0-9:_.\\@-]
 * and a type suffix; the types that own a cgroup. */
static bool is_unit_name(const char *s) {
        static const char *const suffixes[] = {".service", ".scope", ".slice", ".socket", ".mount", ".swap"};
        size_t n = strlen(s);

        if (n == 0 || n > 255 || s[0] == '.')
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      strchr(":_.\\@-", *p)))
                        return false;
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                size_t l = strlen(suffixes[i]);
                if (n > l && streq(s + n - l, suffixes[i]) && s[n - l - 1] != '@')
                        return true; /* "foo@.service" is a template: no cgroup of its own */
        }
        return false;
}

OptInRuleKind optin_rule_kind(const char *rule) {
        if (!rule)
                return -EINVAL;
        if (rule[0] != '/')
                return is_unit_name(rule) ? OPTIN_RULE_UNIT : -EINVAL;
        int r = optin_entry_validate_cgroup(rule);
        if (r < 0)
                return r;
        return strpbrk(rule, "*?[") ? OPTIN_RULE_GLOB : OPTIN_RULE_PATH;
}

/* One component pattern against one component, both of length given. */
static bool component_match(const char *pat, size_t np, const char *s, size_t ns) {
        char p[256], c[256];

        if (np >= sizeof(p) || ns >= sizeof(c))
                return false;
        memcpy(p, pat, np);
        p[np] = '\0';
        memcpy(c, s, ns);
        c[ns] = '\0';
        return fnmatch(p, c, FNM_PERIOD) == 0;
}

/* pat and path without their leading '/'; "**" matches zero or more whole
 * components. Recursion depth is bounded by the components of the pattern
 * (a rule is at most PATH_MAX long and cgroup trees are shallow). */
static bool glob_match(const char *pat, const char *path) {
        for (;;) {
                const char *pe = strchrnul(pat, '/'), *se = strchrnul(path, '/');
                size_t np = (size_t) (pe - pat);

                if (np == 2 && pat[0] == '*' && pat[1] == '*') {
                        const char *rest = *pe ? pe + 1 : pe;
                        if (!*rest)
                                return true; /* a trailing ** takes everything below */
                        for (const char *s = path;;) {
                                if (glob_match(rest, s))
                                        return true;
                                const char *next = strchr(s, '/');
                                if (!next)
                                        return false;
                                s = next + 1;
                        }
                }
                if (!*path || !component_match(pat, np, path, (size_t) (se - path)))
                        return false;
                if (!*pe || !*se)
                        return !*pe && !*se;
                pat = pe + 1;
                path = se + 1;
        }
}

bool optin_glob_match(const char *pattern, const char *path) {
        if (!pattern || !path || pattern[0] != '/' || path[0] != '/')
                return false;
        if (streq(path, "/"))
                return streq(pattern, "/") || streq(pattern, "/**");
        return glob_match(pattern + 1, path + 1);
}
