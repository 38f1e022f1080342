/* SPDX-License-Identifier: MIT */
#pragma once

/* The org.steerd1.Manager object: no policy logic here, only argument
 * checks, privilege checks and calls into the manager. */

#include "manager.h"

int bus_setup(Manager *m);
void bus_emit_mode_changed(Manager *m);
/* After a tick: LLCOverload for each LLC whose overloaded flag flipped
 * against prev (NULL: none flipped yet), ActionsApplied when plan applied. */
void bus_emit_tick(Manager *m, const Snapshot *prev, const Snapshot *cur, const Plan *applied);
