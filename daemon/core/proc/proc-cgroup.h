/* SPDX-License-Identifier: MIT */
#pragma once

/* Parsers of a cgroup's own CPU accounting, the cgroup layer of the sampler:
 * text in, cumulative nanoseconds out. Errors as in proc-stat.h: -EBADMSG,
 * logged as "fname:line: reason". */

#include <stdint.h>

/* cgroup v2 cpu.stat: the "usage_usec N" line (other keys ignored, so that
 * a kernel that adds some does not break the daemon). Missing: malformed. */
int cgroup_cpu_stat_parse(const char *contents, const char *fname, uint64_t *ret_usage_ns);

/* cgroup v1 cpuacct.usage: one number of nanoseconds. */
int cpuacct_usage_parse(const char *contents, const char *fname, uint64_t *ret_usage_ns);
