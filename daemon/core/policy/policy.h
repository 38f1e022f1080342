/* SPDX-License-Identifier: MIT */
#pragma once

/* The policy engine (DESIGN.md 1 and 3): a pure function from (snapshot,
 * settings, previous state, time) to a plan. No I/O, no clock, no globals, no
 * randomness: a recorded snapshot stream replays to the same plans anywhere.
 * docs/POLICY.md describes every policy, threshold and decision. */

#include "plan.h"
#include "settings.h"
#include "snapshot.h"

/* Opaque: what the engine has changed and is tracking. Per cgroup: the
 * cgroup's CPUs before steerd's first change, its window and balance layers,
 * the LLC it left and when, per-policy guard backoff; per thread (keyed by
 * (tid, starttime)): its mask before steerd's first change, its balance and
 * sticky layers, when it last moved and which LLC it left, its sticky streak;
 * per layer the open guard experiment; the counters. */
typedef struct PolicyState PolicyState;

/* One line of policy_explain(): its topic (cgroup, window, guard, balance,
 * sticky, plan, policy) and a sentence with the inputs against the
 * thresholds, e.g. "no window: LLC 0 util 41% < 60% overloaded threshold". */
typedef struct ExplainLine {
        char *topic;
        char *text;
} ExplainLine;

typedef struct Explanation {
        ExplainLine *lines;
        size_t n;
} Explanation;

void explanation_done(Explanation *e);
/* Why the decision that took snap and left state (with its plan, NULL for
 * none) did what it did for cgroup, as of now_us. -ENOENT when the cgroup is
 * not in snap. */
int policy_explain(const Snapshot *snap, const Settings *settings, const PolicyState *state,
                   const Plan *plan, const char *cgroup, uint64_t now_us, Explanation *ret);

/* The overload rule (DESIGN.md 1.1, docs/DECISIONS.md): the kernel's SIS_UTIL
 * wakeup scan would visit fewer than half of the LLC's CPUs (mean util
 * above ~60% at imbalance_pct 117). Every policy asks this, never the
 * snapshot's flag, so that a recorded stream replays under today's rule. */
bool policy_llc_overloaded(const LlcSample *l);
/* Set each LLC's overloaded flag of snap by that rule: what --once, --record,
 * the bus and the metrics show, and what a replayed recording's flags are
 * recomputed to. */
void policy_mark_overloaded(Snapshot *snap);

int policy_state_new(PolicyState **ret);
PolicyState *policy_state_free(PolicyState *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(PolicyState *, policy_state_free);
#define _cleanup_policy_state_ _cleanup_(policy_state_freep)

/* A deep copy: for checking a plan against the state it was decided from, and
 * for what-if replays. */
int policy_state_dup(const PolicyState *s, PolicyState **ret);

/* The actuator found that someone else changed a mask steerd had set (DESIGN.md
 * 5.3): the mask is theirs now, forget it without restoring. tid 0 = the
 * cgroup's own CPUs. -ENOENT if the state holds nothing for it. */
int policy_state_let_go(PolicyState *s, const char *cgroup, pid_t tid, uint64_t starttime);

/* The threads of the cgroup on which the state holds a layer (a pin or a
 * move), sorted, appended to *tids (n, alloc as for realloc): the sampler
 * reads them even while the cgroup is quiet, so that each stays judged. */
int policy_state_held_tids(const PolicyState *s, const char *cgroup, pid_t **tids, size_t *n, size_t *alloc);

typedef struct PolicyCounters {
        uint64_t applied;  /* set_* actions emitted */
        uint64_t kept;     /* guard experiments judged not worse */
        uint64_t reverted; /* guard experiments judged worse, each reverted by a restore with policy "guard"
                            */
        uint64_t restored; /* restore actions not caused by the guard */
        uint64_t dropped;  /* actions a policy decided that broke an invariant, not emitted: a bug */
} PolicyCounters;

void policy_state_counters(const PolicyState *s, PolicyCounters *ret);

/* What the state holds of one cgroup, for the exporter: its counters (since
 * the state first held it: gone with it, as Prometheus counters may be),
 * the CPUs of its window now (0: none) and the threads it holds a mask on. */
typedef struct PolicyCgroupFigures {
        PolicyCounters counters;
        unsigned window_cpus;
        unsigned held_threads;
} PolicyCgroupFigures;

/* -ENOENT if the state holds nothing of the cgroup. */
int policy_state_cgroup_figures(const PolicyState *s, const char *cgroup, PolicyCgroupFigures *ret);

/* Whether the state holds a layer anywhere (a window, a cgroup's or a
 * thread's mask, observe mode's shadows too): while it does, every tick
 * must judge it. */
bool policy_state_holds(const PolicyState *s);

/* Decide one tick. The state is updated deterministically as if the plan were
 * applied: the daemon applies it; in observe mode it is only logged, and the
 * engine still decides as in latency mode. now_us is the snapshot's clock
 * (normally snap->time_us). On failure the plan is not returned and the state
 * may hold part of the tick's changes. */
int policy_decide(const Snapshot *snap, const Settings *settings, PolicyState *state, uint64_t now_us,
                  Plan **ret_plan);

/* The invariants (DESIGN.md 5 and docs/POLICY.md "Invariants"), for the engine
 * (which drops an offending action rather than emit it, and logs why) and for
 * tests. state_before is the state the plan was decided from. Returns 0 when
 * the plan holds every invariant, 1 when it does not (with ret_reason naming
 * the first offending action, if ret_reason is non-NULL), negative errno on
 * failure. */
int policy_check_plan(const Snapshot *snap, const Settings *settings, const PolicyState *state_before,
                      const Plan *plan, uint64_t now_us, char **ret_reason);
