/* SPDX-License-Identifier: MIT */
#pragma once

/* Trials (core/trial/trial.h) as the manager runs them: one per opted-in
 * cgroup at a time, records under STATE_DIR/trials. */

#include "metric-probe.h"
#include "metrics.h"
#include "trial.h"

typedef struct Manager Manager;
typedef struct Plan Plan;
typedef struct ManagerTrial ManagerTrial;

typedef enum TrialDirection {
        TRIAL_DIRECTION_DEFAULT, /* the signal's own: latency lower, slices higher, a counter's rate higher
                                    ... */
        TRIAL_DIRECTION_HIGHER,
        TRIAL_DIRECTION_LOWER,
} TrialDirection;

/* What the bus and steerctl show of a trial; the strings are borrowed from it. */
typedef struct TrialSummary {
        const char *id, *cgroup, *state, *arm; /* arm "" once it ended */
        double progress;                       /* 0..1 */
        double ratio, ci_low, ci_high;         /* steered / hands-off of the primary signal; NaN: none yet */
        const char *verdict;                   /* better | worse | same | can't tell */
        char text[256];
} TrialSummary;

void trial_summary(const Trial *t, uint64_t now_us, TrialSummary *ret);

/* A cgroup's last ended trial, for the exporter (kept across restarts: read
 * from the records at the start). */
typedef struct TrialLatest {
        char *cgroup;
        char *id;
        StatsVerdict verdict;
        bool has_estimate;
        double ratio, ci_low, ci_high;
} TrialLatest;

/* The latest trial of every opted-in cgroup, running ones first (for
 * metrics.h; borrowed strings; free(*ret)). */
int manager_trial_metrics(const Manager *m, MetricsTrial **ret, size_t *ret_n);
/* At the start: each cgroup's last ended trial from the records. */
void manager_trials_load_latest(Manager *m);

/* Starts a trial of an opted-in cgroup (its name or directory); duration or
 * block 0: the defaults. metric: NULL or "" (latency), a built-in signal's
 * name (latency, slices, pressure), or an application metric's spec
 * (metric-probe.h). -ENOENT: not opted in; -ENODEV: it does not exist now;
 * -EOPNOTSUPP: the mode steers nothing; -EBUSY: a trial of it runs; -EINVAL
 * and others with a message in ret_error. */
int manager_trial_start(Manager *m, const char *cgroup, uint64_t duration_us, uint64_t block_us,
                        const char *metric, TrialDirection direction, char **ret_id, char **ret_error);
/* -ENOENT: no trial of it runs. */
int manager_trial_stop(Manager *m, const char *cgroup, char **ret_id);
/* After each tick's plan was applied (plan NULL: nothing applied). */
void manager_trials_tick(Manager *m, uint64_t now_us, const Plan *plan);
/* The cgroup is in a hands-off block: left out of the tick. */
bool manager_trial_hands_off(const Manager *m, const char *cgroup);
bool manager_trials_running(const Manager *m);
bool manager_trial_running_for(const Manager *m, const char *cgroup);
/* Each tick of a hands-off block (a trial's, Evaluate=auto's): whatever the
 * ledger still holds of the cgroup is given back. */
void manager_hands_off_hold_nothing(Manager *m, const char *cgroup);
/* Every running trial ends (steerd stops, the mode steers nothing any more). */
void manager_trials_end_all(Manager *m, TrialState state, const char *reason);
void manager_trials_free(Manager *m);

/* The running trials (ret_n may be 0; free(*ret)). */
int manager_trial_summaries(const Manager *m, TrialSummary **ret, size_t *ret_n);
/* Every kept record, oldest first, running ones live; the summaries borrow
 * from *ret_owned (trial_list_free()). */
int manager_trial_list(const Manager *m, TrialSummary **ret, size_t *ret_n, Trial ***ret_owned,
                       size_t *ret_n_owned);
/* A trial's record by id, or the running trial of a cgroup: -ENOENT. */
int manager_trial_json(const Manager *m, const char *id_or_cgroup, char **ret);
