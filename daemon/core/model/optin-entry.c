/* SPDX-License-Identifier: MIT */
#include <fnmatch.h>

#include "optin-entry.h"

int optin_entry_validate_cgroup(const char *path) {
        if (!path || path[0] != '/')
                return -EINVAL;
        if (strlen(path) >= 4096)
                return -ENAMETOOLONG;
        /* ".." would let an opt-in escape its hierarchy; "." and empty
         * components ("//", a trailing "/") make two spellings of one cgroup. */
        for (const char *p = path; *p && !streq(path, "/");) {
                const char *e = strchrnul(p + 1, '/');
                size_t n = (size_t) (e - p - 1);
                if (n == 0 || (n == 2 && strncmp(p + 1, "..", 2) == 0) || (n == 1 && p[1] == '.'))
                        return -EINVAL;
                p = e;
        }
        for (const char *p = path; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return -EINVAL;
        return 0;
}

void optin_entries_free(OptInEntry *e, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(e[i].cgroup);
                free(e[i].origin);
        }
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

typedef struct Component {
        const char *s;
        size_t n;
} Component;

/* The '/'-separated components of s ("" is one empty component); into
 * ret unless NULL; how many. */
static size_t split_components(const char *s, Component *ret) {
        for (size_t k = 0;; k++) {
                const char *e = strchrnul(s, '/');
                if (ret)
                        ret[k] = (Component){s, (size_t) (e - s)};
                if (!*e)
                        return k + 1;
                s = e + 1;
        }
}

static bool is_doublestar(const Component *c) {
        return c->n == 2 && c->s[0] == '*' && c->s[1] == '*';
}

/* pat and path without their leading '/'; "**" matches zero or more whole
 * components, a trailing one everything below. Dynamic programming over
 * (pattern component i, path component j), from the ends: m[j] is whether
 * pattern components i.. match path components j.., next the same for
 * i + 1. Trying each split of the path for each "**" in turn, as a
 * recursion does, is exponential in the "**" of a rule: a rule with a dozen
 * of them against a cgroup some 30 deep (a delegated subtree can be that
 * deep) hung the daemon for minutes. This is at most one fnmatch() per
 * pair of components. */
static bool glob_match(const char *pat, const char *path) {
        size_t np = split_components(pat, NULL), ns = split_components(path, NULL);
        _cleanup_(freep) void *mem = calloc(1, (np + ns) * sizeof(Component) + 2 * (ns + 1) * sizeof(bool));

        if (!mem)
                return false;
        Component *p = mem, *t = p + np;
        bool *m = (bool *) (t + ns), *next = m + ns + 1;
        split_components(pat, p);
        split_components(path, t);

        /* next starts as the row past the last component: nothing matches */
        for (size_t i = np; i-- > 0;) {
                bool last = i == np - 1;
                /* a trailing "**" takes everything below, also when an empty
                 * component follows it (the rule ends in '/') */
                bool trailing = is_doublestar(&p[i]) && (last || (i == np - 2 && p[np - 1].n == 0));

                m[ns] = false; /* past the end: a "**" before the end leaves the rest one or more */
                for (size_t j = ns; j-- > 0;) {
                        if (trailing)
                                m[j] = true;
                        else if (is_doublestar(&p[i]))
                                /* none of the path's components, or one more */
                                m[j] = next[j] || m[j + 1];
                        else if (j == ns - 1 && t[j].n == 0)
                                m[j] = false; /* the path ends in '/': nothing left to match */
                        else if (last || j == ns - 1)
                                m[j] = last && j == ns - 1 &&
                                       component_match(p[i].s, p[i].n, t[j].s, t[j].n);
                        else
                                m[j] = next[j + 1] && component_match(p[i].s, p[i].n, t[j].s, t[j].n);
                }
                bool *x = next;
                next = m;
                m = x;
        }
        return next[0];
}

bool optin_glob_match(const char *pattern, const char *path) {
        if (!pattern || !path || pattern[0] != '/' || path[0] != '/')
                return false;
        if (streq(path, "/"))
                return streq(pattern, "/") || streq(pattern, "/**");
        return glob_match(pattern + 1, path + 1);
}

static const char *const optin_evaluate_table[_OPTIN_EVALUATE_MAX] = {
        [OPTIN_EVALUATE_INHERIT] = "",
        [OPTIN_EVALUATE_NO] = "no",
        [OPTIN_EVALUATE_AUTO] = "auto",
};

DEFINE_STRING_TABLE_LOOKUP(optin_evaluate, OptInEvaluate, _OPTIN_EVALUATE_MAX);

static const char *const optin_search_table[_OPTIN_SEARCH_MAX] = {
        [OPTIN_SEARCH_INHERIT] = "",
        [OPTIN_SEARCH_NO] = "no",
        [OPTIN_SEARCH_YES] = "yes",
};

DEFINE_STRING_TABLE_LOOKUP(optin_search, OptInSearch, _OPTIN_SEARCH_MAX);
