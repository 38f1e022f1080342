/* SPDX-License-Identifier: MIT */
#pragma once

/* The daemon's JSON helpers: the ownership helpers shared with steerctl,
 * and the figure and CPU-set formats of snapshots and plans. */

#include "cpuset.h"
#include "steerd-json.h"

/* json-c prints doubles with 17 digits; a figure steerd reports is good to
 * 0.1 on the capacity scale, and fixed formatting keeps replays byte-stable. */
json_object *json_double_1(double d);
/* A CPU set in cpulist syntax; NULL for a NULL set (JSON null with
 * json_add_full(..., nullable)). */
json_object *json_cpuset(hwloc_const_bitmap_t set);
