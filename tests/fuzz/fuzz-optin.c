/* SPDX-License-Identifier: MIT */
/* What a bus caller (steerctl opt-in/opt-out/mode), a config line or a
 * runtime state file names: optin_rule_kind(), optin_entry_validate_cgroup(),
 * optin_glob_match(), mode_from_string(), cgroup_policy_from_string().
 * The input is "RULE\0PATH": RULE goes through every check, and, as a
 * glob, is matched against PATH, a cgroup's path as a walk of the cgroup
 * tree finds it (any bytes but NUL: whoever may make a cgroup names it). */
#include <string.h>

#include "fuzz.h"
#include "optin-entry.h"
#include "settings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(freep) char *text = fuzz_string(data, size);
        const char *rule = text, *path = text + strlen(text);
        int k, v;

        if ((size_t) (path - text) < size)
                path++; /* past the NUL: the rest, up to the next NUL */

        Mode m = mode_from_string(rule);
        FUZZ_CHECK(m == _MODE_INVALID || (m >= 0 && m < _MODE_MAX && streq(mode_to_string(m), rule)));
        CgroupPolicy p = cgroup_policy_from_string(rule);
        FUZZ_CHECK(p == _CGROUP_POLICY_INVALID ||
                   (p >= 0 && p < _CGROUP_POLICY_MAX && streq(cgroup_policy_to_string(p), rule)));

        k = optin_rule_kind(rule);
        v = optin_entry_validate_cgroup(rule);
        FUZZ_CHECK(k == -EINVAL || k == -ENAMETOOLONG || (k >= 0 && k < _OPTIN_RULE_KIND_MAX));
        FUZZ_CHECK(v == 0 || v == -EINVAL || v == -ENAMETOOLONG);
        if (k >= 0)
                FUZZ_CHECK(optin_rule_kind_to_string(k) != NULL);
        /* A path or glob rule is a valid cgroup path; a unit is relative. */
        if (k == OPTIN_RULE_PATH || k == OPTIN_RULE_GLOB)
                FUZZ_CHECK(v == 0);
        if (k == OPTIN_RULE_UNIT)
                FUZZ_CHECK(rule[0] != '/' && !strchr(rule, '/'));
        if (v == 0) {
                FUZZ_CHECK(rule[0] == '/' && !strstr(rule, "/../") && !strstr(rule, "/./"));
                for (const char *c = rule; *c; c++)
                        FUZZ_CHECK((unsigned char) *c >= 0x20 && *c != 0x7f);
        }

        bool match = optin_glob_match(rule, path);
        if (match)
                FUZZ_CHECK(rule[0] == '/' && path[0] == '/');
        /* A trailing ** takes everything below, the mount itself included. */
        if (path[0] == '/')
                FUZZ_CHECK(optin_glob_match("/**", path));
        /* The match is of the path as given: the daemon also tries a
         * cgroup's other spelling, the same rule on the same function. */
        (void) optin_glob_match(path, rule);
        return 0;
}
