/* SPDX-License-Identifier: MIT */
#pragma once

/* The one struct that owns the daemon's state. Data flows one way per tick:
 * sampler -> snapshot -> policy engine -> plan -> actuator. */

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "actuator.h"
#include "config.h"
#include "optin.h"
#include "plan.h"
#include "policy.h"
#include "proc-connector.h"
#include "runtime-state.h"
#include "sampler.h"
#include "topology.h"

/* Who set the mode in force: the config's Mode= (or its default), or
 * steerctl (SetMode), saved in the runtime state when PersistRuntime=yes. */
typedef enum ModeSource {
        MODE_SOURCE_CONFIG,
        MODE_SOURCE_RUNTIME,
        _MODE_SOURCE_MAX,
        _MODE_SOURCE_INVALID = -EINVAL,
} ModeSource;

const char *mode_source_to_string(ModeSource s);

typedef struct Manager {
        sd_event *event;
        sd_event_source *sample_timer;
        sd_bus *bus; /* the system bus (watch-bind: may be waiting for it), NULL if it cannot be had */
        sd_event_source *bus_reconnect;
        struct PendingAuth **pending_auths; /* method calls parked until polkit answers */
        size_t n_pending_auths;

        RootDir *root;
        Topology *topo;
        Config *config;
        char *config_path;
        char *runtime_dir;    /* /run/steerd: ownership, for restore after a crash */
        char *ownership_file; /* runtime_dir/state.json */
        char *state_dir;      /* /var/lib/steerd: what steerctl changed */
        char *runtime_file;   /* state_dir/runtime.json */
        RuntimeState runtime;
        Mode mode; /* the config's Mode= unless changed at run time */
        ModeSource mode_source;
        uint64_t mode_set_usec; /* MODE_SOURCE_RUNTIME: CLOCK_REALTIME when set; 0: unknown */

        Sampler *sampler;
        PolicyState *policy;
        Actuator *actuator;
        ProcConnector *proc;
        bool proc_failed; /* the connector failed: task lists are read every tick again */

        CgroupMounts mounts;
        OptInScan scan; /* the last walk: xattrs, and what the glob and unit rules matched */
        uint64_t xattr_scanned_us;
        OptInSet optins;

        Snapshot *last_snapshot;
        Plan *last_plan;
        uint64_t ticks;
        /* Sample periods between ticks: 1, or while steerd is idle (nothing
         * opted in is busy and nothing is held) 2, 4, up to
         * SAMPLER_IDLE_MAX_TICKS (manager-tick.c). */
        unsigned idle_periods;
        uint64_t actions_failed;
        uint64_t threads_adopted;
        uint64_t metrics_written_us;

        /* Give-backs that failed (the bus was down, the kernel refused) are
         * kept and tried again, sooner when the bus comes back. */
        bool retry_now;
        uint64_t retry_at_us, retry_interval_us;
        int exit_error;  /* < 0: the stop could not give everything back */
        bool given_back; /* the stop gave back (or tried): manager_free() does not again */

        /* Trials (manager-trial.h): the running ones, one per cgroup; their
         * records in trials_dir (state_dir/trials). */
        struct ManagerTrial **trials;
        size_t n_trials;
        struct TrialLatest *trial_latest; /* per cgroup, the last trial that ended */
        size_t n_trial_latest;
        struct ManagerEval **evals; /* Evaluate=auto, per cgroup (manager-evaluate.h) */
        size_t n_evals;
        struct ManagerSearch **searches; /* Search=yes, per cgroup (manager-search.h) */
        size_t n_searches;
        unsigned trial_seq;
        char *trials_dir;

        bool topology_live;   /* the host's own topology: reloaded when CPUs come or go */
        CpuSet online_seen;   /* the online CPUs the topology was last loaded for */
        char *test_hang_file; /* $STEERD_TEST_HANG_FILE: the watchdog test's fault switch */

        /* Benchmarks (tests/sim): a simulated host's affinity table, and
         * the per-tick figures (manager-tick.c). */
        char *affinity_table_path;
        AffinityTable *affinity;
        FILE *tick_stats;
        bool keep_open;
        unsigned tick_kinds[_ACTION_KIND_MAX];      /* this tick's applied plan, by kind */
        unsigned tick_fds;                          /* descriptors at the last count (--tick-stats) */
        unsigned tick_policies[_ACTION_POLICY_MAX]; /* and by the policy that decided it */
} Manager;

typedef struct ManagerCounters {
        /* dropped: actions the policy engine decided but its own checker
         * refused (a bug if ever not 0: logged as a warning each time). */
        uint64_t ticks, applied, kept, reverted, restored, failed, adopted, dropped;
} ManagerCounters;

/* Where the daemon runs: the command line's part of the Manager. */
typedef struct ManagerOptions {
        const char *config_path; /* for reloads; NULL: the default file */
        const char *root;        /* NULL: "/" */
        const char *topology;    /* hwloc XML or synthetic string; NULL: the host's (reloaded on hotplug) */
        const char *runtime_dir; /* NULL: /run/steerd */
        const char *state_dir;   /* NULL: /var/lib/steerd */
        const char *affinity_table; /* a simulated host's request log (affinity-table.h); NULL: syscalls */
        const char *tick_stats;     /* a line of figures per tick appended here; NULL: none */
        bool keep_open;             /* the root's files are rewritten in place: keep them open (sampler.h) */
} ManagerOptions;

/* manager_new() builds and reads, without side effects; manager_start()
 * connects, gives back what a predecessor left and attaches the event
 * sources. Takes ownership of config. */
int manager_new(const ManagerOptions *o, Config *config, Manager **ret);
int manager_start(Manager *m);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* The event loop; returns the stop's result: < 0 when something could not
 * be given back (it stays in the state file for the next start). */
int manager_run(Manager *m);

/* Switch mode: leaving latency/balanced gives everything back. */
int manager_set_mode(Manager *m, Mode mode);
/* SetMode over the bus: also remembered across restarts. */
int manager_set_mode_runtime(Manager *m, Mode mode);
/* Drop steerctl's saved mode: the config's Mode= applies again. 0 if
 * nothing was saved, 1 if the override was dropped. */
int manager_reset_mode(Manager *m);
/* Where the mode in force comes from, for people: "config /etc/steerd/steerd.conf",
 * "steerctl at 2026-12-01 21:04:05 UTC (saved in ...; the config says observe)". */
const char *manager_mode_origin(const Manager *m, char *buf, size_t size);
/* -ENOENT if the cgroup exists nowhere (opt-in) or is not opted in
 * (opt-out); -EINVAL or CGROUP_NOT_CONFINED (-EXDEV) if the rule is refused
 * (optin_rule_check()); -E2BIG if it is new and STEERD_RUNTIME_RULES_MAX
 * runtime opt-ins (opt-outs) are kept already. */
int manager_opt_in(Manager *m, const char *cgroup, CgroupPolicy policy);
/* The same with the opt-in's own Evaluate= and Search= (INHERIT: the global ones). */
int manager_opt_in_full(Manager *m, const char *cgroup, CgroupPolicy policy, OptInEvaluate evaluate,
                        OptInSearch search);
int manager_opt_out(Manager *m, const char *cgroup);
void manager_counters(const Manager *m, ManagerCounters *ret);
/* Why the last tick did what it did for an opted-in cgroup (its name, or
 * its directory): policy_explain() on the last snapshot, plan and state.
 * -ENOENT when it is not opted in; a cgroup opted in but not sampled (it
 * does not exist now, or no tick yet) gets one line saying so. */
int manager_explain(const Manager *m, const char *cgroup, Explanation *ret);
/* {"mode", "snapshot", "plan", "counters"}: what Describe returns. */
int manager_describe_json(const Manager *m, char **ret);
/* Re-read the config; a bad file keeps the running one (and says so). */
/* On a bad file, ret_error (optional) gets its first error as file:line: reason. */
int manager_reload(Manager *m, char **ret_error);
/* Every [OptIn] rule of c confined to the cgroup mounts (optin_rule_check()
 * with its directory): -EBADMSG if one is not, each logged and, in
 * ret_error (optional), all as "file:line: [OptIn] RULE: refused: why; ...". */
int manager_check_config_rules(const Manager *m, const Config *c, char **ret_error);
/* Load the runtime state (runtime.json) with each rule confined likewise: a
 * file with a refused rule is set aside as runtime.json.bad. */
int manager_load_runtime(Manager *m);
/* Re-resolve the opted-in cgroups; a cgroup that left is given back.
 * rescan_trees: walk the cgroup trees again (xattrs, globs, units), as
 * every RescanIntervalMs. */
int manager_refresh_optins(Manager *m, uint64_t now_us, bool rescan_trees);
/* An idle steerd samples at once and at its period again: what an
 * operator changed (a mode, an opt-in, a reload) is seen at once. */
void manager_sample_soon(Manager *m);
