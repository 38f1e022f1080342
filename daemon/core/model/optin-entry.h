/* SPDX-License-Identifier: MIT */
#pragma once

/* One opt-in as an operator wrote it (config [OptIn], steerctl's runtime
 * state, a cgroup's xattr), before it is resolved to a directory
 * (cgroup/optin.h). Its cgroup is a rule of one of three kinds:
 *
 *   path  /system.slice/app.service, /bench1 (under its hierarchy's mount),
 *         or an absolute directory /sys/fs/cgroup/cpuset/bench1
 *   glob  a path with * (within one component), ** as a whole component
 *         (any number of components, none included), ? or [...] (fnmatch(3)),
 *         e.g. /system.slice/docker-*.scope; machine.slice followed by
 *         a lone * matches each direct child of machine.slice; kubepods.slice,
 *         then **, then cri-containerd-*.scope matches a container scope at
 *         any depth below it (docs/DECISIONS.md has the examples as written)
 *   unit  a systemd unit name: nginx.service, app.scope, batch.slice;
 *         its cgroup is the unit's (systemd's ControlGroup) */

#include "snapshot.h"

/* Evaluate=auto for one opt-in: as the global Evaluate= (inherit), or not. */
typedef enum OptInEvaluate {
        OPTIN_EVALUATE_INHERIT,
        OPTIN_EVALUATE_NO,
        OPTIN_EVALUATE_AUTO,
        _OPTIN_EVALUATE_MAX,
        _OPTIN_EVALUATE_INVALID = -EINVAL,
} OptInEvaluate;

/* "", "no", "auto" */
const char *optin_evaluate_to_string(OptInEvaluate e);
OptInEvaluate optin_evaluate_from_string(const char *s);

/* The placement search for one opt-in: as the global Search= (inherit), or
 * yes, or no. */
typedef enum OptInSearch {
        OPTIN_SEARCH_INHERIT,
        OPTIN_SEARCH_NO,
        OPTIN_SEARCH_YES,
        _OPTIN_SEARCH_MAX,
        _OPTIN_SEARCH_INVALID = -EINVAL,
} OptInSearch;

/* "", "no", "yes" */
const char *optin_search_to_string(OptInSearch s);
OptInSearch optin_search_from_string(const char *s);

typedef struct OptInEntry {
        char *cgroup; /* "/bench1", "/system.slice/app.service", or an absolute directory path */
        CgroupPolicy policy;
        OptInEvaluate evaluate;
        OptInSearch search;
        char *origin; /* a config line: "FILE:LINE" of the line that set it, for messages; else NULL */
} OptInEntry;

void optin_entries_free(OptInEntry *e, size_t n);

typedef enum OptInRuleKind {
        OPTIN_RULE_PATH,
        OPTIN_RULE_GLOB,
        OPTIN_RULE_UNIT,
        _OPTIN_RULE_KIND_MAX,
        _OPTIN_RULE_KIND_INVALID = -EINVAL,
} OptInRuleKind;

const char *optin_rule_kind_to_string(OptInRuleKind k);

/* The kind of a valid rule; -EINVAL (or -ENAMETOOLONG) for one that is
 * none: a relative path that is no unit name, '.', '..' or empty
 * components, control characters. */
OptInRuleKind optin_rule_kind(const char *rule);

/* path (a cgroup's path under its mount, "/" for the mount itself, or an
 * absolute directory) matches a glob rule. */
bool optin_glob_match(const char *pattern, const char *path);

/* 0 if path can name a cgroup: absolute, no "." or ".." component (which
 * would let an opt-in escape its hierarchy), no empty one ("//", a trailing
 * "/"), no control characters, shorter than PATH_MAX; else -EINVAL or
 * -ENAMETOOLONG. */
int optin_entry_validate_cgroup(const char *path);
