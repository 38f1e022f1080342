/* SPDX-License-Identifier: MIT */
#pragma once

/* The snapshot as one JSON object (DESIGN.md 6): `steerd --once --json`
 * and the lines of `--record`, read back by `--replay`. */

#include <json-c/json.h>

#include "snapshot.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(json_object *, json_object_put);

int snapshot_to_json(const Snapshot *s, json_object **ret);
/* One line, no trailing newline. Caller frees. */
int snapshot_to_json_string(const Snapshot *s, char **ret);
/* file/line name the input in errors; -EBADMSG on anything malformed. */
int snapshot_from_json_string(const char *text, const char *file, unsigned line, Snapshot **ret);

/* json-c prints doubles with 17 digits; a figure steerd reports is good to
 * 0.1 on the capacity scale, and fixed formatting keeps replays byte-stable. */
json_object *json_double_1(double d);
json_object *json_cpuset(const hwloc_const_bitmap_t set);
