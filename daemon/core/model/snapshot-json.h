/* SPDX-License-Identifier: MIT */
#pragma once

/* The snapshot as one JSON object (DESIGN.md 6): `steerd --once --json`
 * and the lines of `--record`, read back by `--replay`. */

#include "json-util.h"
#include "snapshot.h"

int snapshot_to_json(const Snapshot *s, json_object **ret);
/* One line, no trailing newline. Caller frees. */
int snapshot_to_json_string(const Snapshot *s, char **ret);
/* file/line name the input in errors; -EBADMSG on anything malformed. */
int snapshot_from_json_string(const char *text, const char *file, unsigned line, Snapshot **ret);
