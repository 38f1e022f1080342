/* SPDX-License-Identifier: MIT */
#pragma once

/* Shared by the manager's files, one responsibility each:
 *   manager.c          life cycle: new (no side effects), start (one function per
 *                      event source), run, free; signals; the proc connector
 *   manager-tick.c     the tick: sample, decide, apply, publish
 *   manager-optins.c   the opted-in set from steerctl, the config and xattrs
 *   manager-control.c  what the bus asks for: mode, opt-in/out, counters,
 *                      describe, reload */

#include "manager.h"

static inline bool mode_applies(Mode m) {
        return m == MODE_LATENCY || m == MODE_BALANCED;
}

/* The proc connector's events since the last tick (manager.c). */
void manager_drain_proc_events(Manager *m);

/* The sample timer's callback (manager-tick.c). */
int manager_on_tick(sd_event_source *s, uint64_t usec, void *userdata);
/* Rewrites MetricsFile when MetricsIntervalMs has passed since the last write. */
void manager_write_metrics(Manager *m, uint64_t now_us);
