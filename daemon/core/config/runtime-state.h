/* SPDX-License-Identifier: MIT */
#pragma once

/* What an operator changed at run time (mode, opt-ins, opt-outs) survives a
 * restart: kept in STATE_DIR/runtime.json (default /var/lib/steerd), unless
 * the config says PersistRuntime=no. */

#include "optin-entry.h"
#include "settings.h"

typedef struct RuntimeState {
        bool has_mode;
        Mode mode;
        uint64_t mode_set_usec; /* CLOCK_REALTIME when steerctl set it; 0: unknown (an older file) */
        OptInEntry *opt_ins;    /* steerctl opt-in */
        size_t n_opt_ins;
        char **opt_outs; /* steerctl opt-out of a cgroup the config or an xattr opted in */
        size_t n_opt_outs;
} RuntimeState;

void runtime_state_done(RuntimeState *s);
/* A missing file is an empty state; a malformed one is reported, renamed
 * to runtime.json.bad, and an empty state is returned. */
int runtime_state_load(const char *path, RuntimeState *ret);
int runtime_state_save(const RuntimeState *s, const char *path);

/* Edits: each keeps opt_ins and opt_outs exclusive of each other. */
int runtime_state_opt_in(RuntimeState *s, const char *cgroup, CgroupPolicy p);
int runtime_state_opt_out(RuntimeState *s, const char *cgroup);
bool runtime_state_opted_out(const RuntimeState *s, const char *cgroup);
