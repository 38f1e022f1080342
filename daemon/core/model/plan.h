/* SPDX-License-Identifier: MIT */
#pragma once

/* A plan: what the policy engine wants done in one tick. The actuator applies
 * it (or, in observe mode, the daemon only logs it); replay prints it. Every
 * action carries its reason in words and figures so that an operator can see
 * which signal crossed which threshold. */

#include <stdio.h>
#include <sys/types.h>

#include "cpuset.h"

typedef enum ActionKind {
        ACTION_SET_CGROUP_CPUS, /* "set_cgroup_cpus" */
        ACTION_SET_THREAD_CPUS, /* "set_thread_cpus" */
        ACTION_RESTORE,         /* "restore": tid 0 = the cgroup's CPUs, else the thread's affinity */
        _ACTION_KIND_MAX,
        _ACTION_KIND_INVALID = -EINVAL,
} ActionKind;

typedef enum ActionPolicy {
        ACTION_POLICY_WINDOW,  /* "window": limited scan, DESIGN.md 1.1 */
        ACTION_POLICY_STICKY,  /* "sticky": prev-CPU stickiness, 1.2 */
        ACTION_POLICY_BALANCE, /* "balance": contention-aware balancing, 1.3 */
        ACTION_POLICY_GUARD,   /* "guard": a revert by the guard, 1.4 */
        ACTION_POLICY_SEARCH,  /* "search": the placement search's candidate (the manager's, never the
                                  engine's) */
        _ACTION_POLICY_MAX,
        _ACTION_POLICY_INVALID = -EINVAL,
} ActionPolicy;

const char *action_kind_to_string(ActionKind k);
ActionKind action_kind_from_string(const char *s);
const char *action_policy_to_string(ActionPolicy p);
ActionPolicy action_policy_from_string(const char *s);

typedef struct Action {
        ActionKind kind;
        ActionPolicy policy;
        char *cgroup;       /* the cgroup's path as in the snapshot */
        pid_t tid;          /* 0 = the whole cgroup */
        uint64_t starttime; /* with tid, the thread's identity; 0 for cgroup actions */
        CpuSet cpus;        /* the mask to set, or for restore the mask restored */
        char *reason;       /* "llc 0 nr_idle_scan 0 < 8; demand 612" */
} Action;

typedef struct Plan {
        Action *actions;
        size_t n_actions;
} Plan;

int plan_new(Plan **ret);
Plan *plan_free(Plan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Plan *, plan_free);
#define _cleanup_plan_ _cleanup_(plan_freep)

/* Appends a copy of its inputs (cgroup, cpus, reason). */
int plan_add(Plan *p, ActionKind kind, ActionPolicy policy, const char *cgroup, pid_t tid,
             uint64_t starttime, const hwloc_const_bitmap_t cpus, const char *reason);

/* Moves are the actions that change which LLC a thread runs in: set_* actions
 * of the balance policy. MaxMovesPerTick bounds them. */
bool action_is_move(const Action *a);
size_t plan_count_moves(const Plan *p);

/* One line, the plan line of DESIGN.md section 6, without a trailing newline:
 * {"tick":0,"actions":[{"kind":"restore","cgroup":"/a","tid":1,"cpus":"0",...}]}
 * Compact (JSON_C_TO_STRING_PLAIN, slashes unescaped) so that a stream is one
 * object per line and byte-identical for identical input. "tid" is omitted
 * for cgroup-wide actions. */
int plan_to_json(const Plan *p, unsigned tick, char **ret);

/* For humans: one line per action, "tick N: no actions" when empty. */
int plan_format_text(const Plan *p, unsigned tick, FILE *f);
