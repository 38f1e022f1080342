/* SPDX-License-Identifier: MIT */
#pragma once

/* One opt-in as an operator wrote it (config [OptIn], steerctl's runtime
 * state, a cgroup's xattr), before it is resolved to a directory
 * (cgroup/optin.h). */

#include "snapshot.h"

typedef struct OptInEntry {
        char *cgroup; /* "/bench1", "/system.slice/app.service", or an absolute directory path */
        CgroupPolicy policy;
} OptInEntry;

void optin_entries_free(OptInEntry *e, size_t n);

/* 0 if path can name a cgroup: absolute, no "." or ".." component (which
 * would let an opt-in escape its hierarchy), no control characters, shorter
 * than PATH_MAX; else -EINVAL or -ENAMETOOLONG. */
int optin_entry_validate_cgroup(const char *path);
