/* SPDX-License-Identifier: MIT */
#pragma once

/* The few json-c helpers every JSON writer of steerd needs. */

#include <json-c/json.h>

#include "cpuset.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(json_object *, json_object_put);

/* Adds v under key, taking ownership. v NULL (a constructor failed) is
 * -ENOMEM, unless nullable: then it is JSON null. */
int json_add_full(json_object *o, const char *key, json_object *v, bool nullable);
static inline int json_add(json_object *o, const char *key, json_object *v) {
        return json_add_full(o, key, v, false);
}
/* Appends v to an array, taking ownership; NULL is -ENOMEM. */
int json_append(json_object *a, json_object *v);

/* json-c prints doubles with 17 digits; a figure steerd reports is good to
 * 0.1 on the capacity scale, and fixed formatting keeps replays byte-stable. */
json_object *json_double_1(double d);
/* A CPU set in cpulist syntax; NULL for a NULL set (JSON null with
 * json_add_full(..., nullable)). */
json_object *json_cpuset(hwloc_const_bitmap_t set);
