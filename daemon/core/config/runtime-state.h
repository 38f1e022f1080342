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

/* A check of each rule of the file by its reader (the daemon: confinement to
 * the cgroup mounts, which this stage does not see), opt_in: of opt_ins,
 * else of opt_outs; < 0 refuses the rule, why (RUNTIME_WHY_MAX) saying why. */
#define RUNTIME_WHY_MAX 512
typedef int (*RuntimeRuleCheck)(const char *rule, bool opt_in, void *userdata, char *why, size_t why_size);

/* A missing file is an empty state; a malformed one (not JSON, an unknown
 * mode or policy, a rule that is none, more than STEERD_RUNTIME_RULES_MAX
 * opt-ins or opt-outs, a rule that check refuses) is reported, renamed to
 * runtime.json.bad, and an empty state is returned: nothing of it is acted
 * on. check may be NULL. */
int runtime_state_load_checked(const char *path, RuntimeRuleCheck check, void *userdata, RuntimeState *ret);
int runtime_state_load(const char *path, RuntimeState *ret);
int runtime_state_save(const RuntimeState *s, const char *path);

/* Edits: each keeps opt_ins and opt_outs exclusive of each other. A new
 * rule beyond STEERD_RUNTIME_RULES_MAX in its list is -E2BIG, and then
 * nothing changed. */
int runtime_state_opt_in(RuntimeState *s, const char *cgroup, CgroupPolicy p);
/* The same with Evaluate= and Search= for this opt-in (-EINVAL out of
 * range; INHERIT: the global setting). */
int runtime_state_opt_in_full(RuntimeState *s, const char *cgroup, CgroupPolicy p, OptInEvaluate ev,
                              OptInSearch search);
int runtime_state_opt_out(RuntimeState *s, const char *cgroup);
bool runtime_state_opted_out(const RuntimeState *s, const char *cgroup);
