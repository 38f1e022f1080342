/* SPDX-License-Identifier: MIT */
#pragma once

/* The one confinement check for a cgroup directory that comes from outside
 * steerd (a config line, a bus call, the xattr walk, runtime.json, the state
 * file): steerd reads and writes a directory only when it is
 *   1. a canonical absolute path: no "." or ".." component, no empty one
 *      ("//", a trailing "/"), no control character, shorter than PATH_MAX;
 *   2. as a string, at or below one of the cgroup mounts (CgroupMounts, read
 *      from ROOT/proc/self/mounts), the longest that holds it;
 *   3. reached from the root one component at a time without following a
 *      symbolic link (openat O_PATH|O_NOFOLLOW), each component a directory,
 *      and, below the mount point, on the mount point's own device (nothing
 *      else bind-mounted into the tree);
 *   4. on the live host ("/" root, CgroupMounts.host), on a cgroup file
 *      system: fstatfs() f_type CGROUP2_SUPER_MAGIC under the cgroup2 mount,
 *      CGROUP_SUPER_MAGIC under the cpuset v1 mount.
 * /proc/self/root/..., /proc/PID/cwd and their like are never below a mount,
 * and are symbolic links besides. On a fixture root (tests) 1-3 apply. */

#include "cgroup-path.h"

/* Room for a refusal's reason. */
#define CGROUP_WHY_MAX 512

/* What a refusal returns: the directory is not confined. */
#define CGROUP_NOT_CONFINED (-EXDEV)

/* 0 if path is canonical (rule 1), else -EINVAL and why says what is wrong. */
int cgroup_path_canonical(const char *path, char *why, size_t why_size);

/* Rules 1 and 2 alone, no file system access: 0 (ret_v2: under the cgroup2
 * mount), else CGROUP_NOT_CONFINED with why. */
int cgroup_path_confined(const CgroupMounts *m, const char *dir, bool *ret_v2, char *why, size_t why_size);

/* All four rules. 0: confined; ret_v2 says the hierarchy, ret_fd (if not
 * NULL) gets an O_PATH descriptor of the directory, for openat() of its
 * files. CGROUP_NOT_CONFINED: refused, why says why. -ENOENT: rules 1 and 2
 * hold but a component does not exist (a cgroup gone, or not there yet);
 * why names it. Another -errno: the walk failed. why may be NULL. */
int cgroup_dir_confined(const RootDir *root, const CgroupMounts *m, const char *dir, bool *ret_v2,
                        int *ret_fd, char *why, size_t why_size);
