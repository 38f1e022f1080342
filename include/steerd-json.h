/* SPDX-License-Identifier: MIT */
#pragma once

/* The json-c ownership helpers of every JSON writer, steerd's and
 * steerctl's: header-only, since steerctl links no part of the daemon. */

#include <json-c/json.h>

#include "steerd-macros.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(json_object *, json_object_put);

/* Adds v under key, taking ownership also on failure. v NULL (a
 * constructor failed) is -ENOMEM, unless nullable: then it is JSON null. */
static inline int json_add_full(json_object *o, const char *key, json_object *v, bool nullable) {
        if (!v && !nullable)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static inline int json_add(json_object *o, const char *key, json_object *v) {
        return json_add_full(o, key, v, false);
}

/* Appends v to an array, taking ownership also on failure; NULL is -ENOMEM. */
static inline int json_append(json_object *a, json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_array_add(a, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}
