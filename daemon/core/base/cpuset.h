/* SPDX-License-Identifier: MIT */
#pragma once

/* CPU sets are hwloc bitmaps: dynamic, sparse-id safe, and hwloc already
 * parses and prints the kernel's cpulist syntax ("0-3,8-11"). */

#include <hwloc.h>

#include "steerd-macros.h"

typedef hwloc_bitmap_t CpuSet;

DEFINE_TRIVIAL_CLEANUP_FUNC(hwloc_bitmap_t, hwloc_bitmap_free);
#define _cleanup_cpuset_ _cleanup_(hwloc_bitmap_freep)

/* Parse a kernel cpulist; "" is the empty set. -EINVAL on anything else. */
int cpuset_parse(const char *s, CpuSet *ret);
/* Format in cpulist syntax ("" for the empty set). Caller frees. */
int cpuset_format(const hwloc_const_bitmap_t set, char **ret);
/* Formats into a caller buffer, for logs; truncates with "..." */
const char *cpuset_to_string(const hwloc_const_bitmap_t set, char *buf, size_t size);
#define CPUSET_STRLEN 256
