/* SPDX-License-Identifier: MIT */
#pragma once

/* The set of opted-in cgroups, from three sources: the config's [OptIn]
 * section, the extended attribute user.steerd.policy on a cgroup directory,
 * and runtime opt-ins over the bus. Where two name the same cgroup, runtime
 * wins over config, and config over the xattr: the operator's latest word
 * counts most, and the host's config over what a workload says of itself. */

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
        char *name; /* as the operator wrote it, or the path under its mount for xattrs */
        CgroupPolicy policy;
        OptInSource source;
        CgroupLocation loc; /* loc.dir NULL: it does not exist (now) */
} OptIn;

typedef struct OptInSet {
        OptIn *items; /* sorted by name */
        size_t n;
} OptInSet;

void optin_set_done(OptInSet *s);
const OptIn *optin_set_find(const OptInSet *s, const char *name);

/* Walk the cgroup hierarchies (cgroup2 and the cpuset v1 mount) for
 * directories with STEERD_XATTR, at most max_depth levels deep. A value
 * that is not a policy is logged once per scan and ignored. */
int optin_scan_xattrs(const RootDir *root, const CgroupMounts *m, unsigned max_depth, OptInEntry **ret,
                      size_t *ret_n);

/* Merge the three sources (any may be NULL/0) and resolve each cgroup. A
 * cgroup that does not exist stays in the set with loc.dir == NULL, so that
 * it is steered as soon as it appears. */
int optin_set_build(const RootDir *root, const CgroupMounts *m, const OptInEntry *runtime, size_t n_runtime,
                    const OptInEntry *config, size_t n_config, const OptInEntry *xattr, size_t n_xattr,
                    OptInSet *ret);
