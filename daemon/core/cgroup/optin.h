/* SPDX-License-Identifier: MIT */
#pragma once

/* The set of opted-in cgroups, from three sources: the config's [OptIn]
 * section, the extended attribute user.steerd.policy on a cgroup directory,
 * and runtime opt-ins over the bus. The config and the runtime opt-ins are
 * rules (model/optin-entry.h): paths, globs and unit names, so that cgroups
 * that do not exist yet (containers, pods, transient scopes) are taken in
 * when they appear. Where two name the same cgroup, runtime wins over
 * config, and config over the xattr (the operator's latest word counts
 * most, the host's config over what a workload says of itself); within a
 * source an explicit path or unit wins over a glob, and of two globs the
 * earlier one. */

#include "cgroup-path.h"
#include "optin-entry.h"

#define STEERD_XATTR "user.steerd.policy"

typedef enum OptInSource {
        OPTIN_SOURCE_RUNTIME,
        OPTIN_SOURCE_CONFIG,
        OPTIN_SOURCE_XATTR,
        _OPTIN_SOURCE_MAX,
        _OPTIN_SOURCE_INVALID = -EINVAL,
} OptInSource;

const char *optin_source_to_string(OptInSource s);

typedef struct OptIn {
        char *name; /* the cgroup: as the operator wrote it, a glob's match, or a unit's cgroup path */
        char *rule; /* what brought it in: the path, the glob, the unit name, or STEERD_XATTR */
        CgroupPolicy policy;
        OptInEvaluate evaluate; /* the rule's own Evaluate= (INHERIT: the global one) */
        OptInSearch search;     /* the rule's own Search= (INHERIT: the global one) */
        OptInSource source;
        CgroupLocation loc; /* loc.dir NULL: it does not exist (now), or it is refused */
        char *refused;      /* why its directory is refused (cgroup_dir_confined()), else NULL */
} OptIn;

typedef struct OptInSet {
        OptIn *items; /* sorted by name */
        size_t n;
} OptInSet;

void optin_set_done(OptInSet *s);
const OptIn *optin_set_find(const OptInSet *s, const char *name);

/* A cgroup that a glob or unit rule matched. */
typedef struct OptInMatch {
        char *rule;   /* the rule's text */
        char *cgroup; /* the path under its mount, as a path rule would name it */
} OptInMatch;

/* What one walk of the cgroup trees found. */
typedef struct OptInScan {
        OptInEntry *xattr; /* directories whose STEERD_XATTR names a policy */
        size_t n_xattr;
        OptInMatch *matches; /* sorted by rule, then path */
        size_t n_matches, alloc_matches;
} OptInScan;

void optin_scan_done(OptInScan *s);
/* Add a match found elsewhere (a unit's cgroup that systemd named); keeps the order. */
int optin_scan_add_match(OptInScan *s, const char *rule, const char *cgroup);
/* The first match of rule in s (the others follow it), NULL if none. */
const OptInMatch *optin_scan_find(const OptInScan *s, const char *rule);

/* Walk the cgroup hierarchies (cgroup2, then the cpuset v1 mount) at most
 * max_depth levels deep, once, for directories with STEERD_XATTR (a value
 * that is not a policy is logged and ignored) and for the directories that
 * the glob and unit rules among rules[] match (others are skipped). A glob
 * is matched against the path under the mount and the absolute path; a
 * unit against the last component of a cgroup2 directory, which systemd
 * names after its unit (the fallback where systemd cannot be asked). */
int optin_scan(const RootDir *root, const CgroupMounts *m, unsigned max_depth, const char *const *rules,
               size_t n_rules, OptInScan *ret);
/* optin_scan() for the xattrs alone. */
int optin_scan_xattrs(const RootDir *root, const CgroupMounts *m, unsigned max_depth, OptInEntry **ret,
                      size_t *ret_n);

/* One cgroup and what brought it in: the input of optin_set_build(). */
typedef struct OptInCandidate {
        const char *cgroup; /* a path (a rule of kind path, or what a glob or unit matched) */
        const char *rule;
        CgroupPolicy policy;
        OptInEvaluate evaluate;
        OptInSearch search;
        OptInSource source;
} OptInCandidate;

/* The candidates of the three sources, in precedence order: runtime, then
 * config (each: paths, then units, then globs, each kind in the order
 * written; a unit or glob rule stands for what scan found it matching),
 * then the xattrs of scan. They borrow their strings from scan and the
 * entries; the caller frees the array. */
int optin_candidates(const OptInScan *scan, const OptInEntry *runtime, size_t n_runtime,
                     const OptInEntry *config, size_t n_config, OptInCandidate **ret, size_t *ret_n);

/* The set from candidates in precedence order (the first for a cgroup
 * wins), each resolved to its directory. A cgroup that does not exist
 * stays in the set with loc.dir == NULL, so that it is steered as soon as
 * it appears; one whose directory is refused by the confinement stays with
 * loc.dir == NULL and refused saying why (never steered while so). */
int optin_set_build(const RootDir *root, const CgroupMounts *m, const OptInCandidate *c, size_t n,
                    OptInSet *ret);

/* Whether a rule from outside (a config line, a bus call, runtime.json) may
 * be taken in: 0 if so. -EINVAL: it is no rule (optin_rule_kind()), or a
 * path that is not canonical ("//", a trailing "/"). CGROUP_NOT_CONFINED
 * (-EXDEV): it names a directory outside the cgroup mounts: an absolute path
 * whose first component is proc, sys or dev (/proc/self/root/...,
 * /proc/PID/cwd, /sys/fs/cgroup/cpu/...) is a host directory, not a cgroup
 * under a hierarchy, unless it is at or below a cgroup mount; with
 * check_dir, also a path rule whose directory exists and is refused by
 * cgroup_dir_confined() (a symbolic link, a bind mount). A path that does not
 * exist (yet) is fine. why (CGROUP_WHY_MAX) says what is wrong. */
int optin_rule_check(const RootDir *root, const CgroupMounts *m, const char *rule, bool check_dir, char *why,
                     size_t why_size);
