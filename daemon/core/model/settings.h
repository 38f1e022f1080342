/* SPDX-License-Identifier: MIT */
#pragma once

/* Settings: the [Manager] and [Policy] keys of steerd.conf (DESIGN.md 6). */

#include <stdint.h>

#include "snapshot.h"

typedef enum Mode {
        MODE_OFF,      /* restore everything, sample nothing heavy */
        MODE_OBSERVE,  /* sample, decide, log the plan, apply nothing */
        MODE_LATENCY,  /* all three policies */
        MODE_BALANCED, /* contention-aware balancing only */
        _MODE_MAX,
        _MODE_INVALID = -EINVAL,
} Mode;

const char *mode_to_string(Mode m);
Mode mode_from_string(const char *s);

typedef enum StickyScope {
        STICKY_SCOPE_CORE,
        STICKY_SCOPE_CPU,
        _STICKY_SCOPE_MAX,
        _STICKY_SCOPE_INVALID = -EINVAL,
} StickyScope;

const char *sticky_scope_to_string(StickyScope s);
StickyScope sticky_scope_from_string(const char *s);

typedef struct Settings {
        /* [Manager] */
        Mode mode;
        uint64_t sample_period_ms;       /* 100 */
        uint64_t smoothing_half_life_ms; /* 200 */
        bool count_steal;                /* busy includes steal time; true */
        unsigned max_scan_threads;       /* bound of the THREADS runnable source; 20000 */
        uint64_t runnable_interval_ms;   /* the debugfs runnable source is read at most this often; 500 */
        bool persist_runtime;            /* runtime mode and opt-ins survive a restart; true */
        char metrics_file[4096];         /* Prometheus textfile; "" = off */
        uint64_t metrics_interval_ms;    /* how often it is rewritten; 10000 */
        unsigned metrics_cgroups;        /* cgroups with a label of their own, the rest summed; 64 */
        uint64_t rescan_interval_ms;     /* cgroup trees walked for xattrs, globs and units; 5000 */

        /* [Policy] */
        unsigned min_window_cores;       /* 1 */
        double window_headroom;          /* 0.25 */
        unsigned min_llc_cpus;           /* 2 */
        double sticky_idle_percent;      /* 5 */
        unsigned sticky_ticks;           /* 3 */
        double sticky_release_percent;   /* 25 */
        double sticky_max_wait_percent;  /* 5 */
        StickyScope sticky_scope;        /* core */
        double sticky_min_wakeups;       /* StickyMinWakeups=, 10 per second: a thread scheduled in
                                          * less often gains too little from a pin */
        unsigned sticky_max_pins;        /* StickyMaxPinsPerTick=, 16: pins spread over ticks */
        double sticky_pair_idle_percent; /* StickyPairIdlePercent=, 30: the unit a pair is pinned to,
                                          * without the pair; released above this plus the single
                                          * pins' hysteresis (StickyReleasePercent - StickyIdlePercent) */
        double sticky_pair_wakeups;      /* StickyPairWakeups=, 1000 per second: a thread scheduled in
                                          * this often for short runs talks, and is pinned only
                                          * together with its partner; 0: every thread alone */
        bool wake_groups;                /* WakeGroups=, yes: sample who wakes whom (sched_waking
                                          * through perf) in cgroups with three or more talkers, and
                                          * place the groups that talk among themselves */
        bool consolidate;                /* Consolidate=, yes: a latency cgroup whose threads hand work
                                          * to each other and whose demand fits in fewer cores than
                                          * it runs on gets a demand-sized window below overload */
        unsigned imbalance_percent;      /* 117 */
        unsigned max_moves_per_tick;     /* 4 */
        uint64_t min_residency_ms;       /* 1000 */
        uint64_t guard_window_ms;        /* 1000 */
        double guard_percent;            /* 10 */

        /* [Policy], the engine's own thresholds where DESIGN.md gives none
         * (docs/POLICY.md says why each default). */
        double window_widen_scan_percent; /* WindowWidenScanPercent=, 75: windows widen back once
                                           * nr_idle_scan >= 75% of the LLC's weight (mean util
                                           * below ~43% at imbalance_pct 117); they open at
                                           * nr_idle_scan < 50% (~60%), the gap is the hysteresis */
        double balance_min_wait;          /* BalanceMinWait=, 20 (capacity scale, ~2% of an interval):
                                           * a thread waiting less is not worth moving */
        double guard_wait_floor;          /* GuardWaitFloor=, 10 per affected thread (~1% of an
                                           * interval): wait noise the guard ignores */
        double guard_pressure_floor;      /* GuardPressureFloor=, 1.0: cpu.pressure some avg10 points
                                           * the guard ignores */
        unsigned guard_backoff_max;       /* GuardBackoffMax=, 64: a policy backs off GuardWindowMs * 2^n
                                           * after its n-th revert in a row, at most this many
                                           * GuardWindowMs */
        /* Evaluate=auto (docs/TRIALS.md): a light trial for good per opted-in
         * cgroup, steering turned off where it hurts. The engine never reads
         * these; the manager does. */
        bool evaluate;              /* Evaluate=, no (auto: yes) */
        double harm_percent;        /* HarmPercent=, 2: the harm that turns steering off */
        unsigned evaluate_duty;     /* EvaluateDuty=, 8: one hands-off block in this many */
        uint64_t evaluate_block_ms; /* EvaluateBlockMs=, 30000 */
        uint64_t evaluate_retry_ms; /* EvaluateRetryMs=, 6 h: steering is tried again after */
        /* The placement search (docs/POLICY.md, "Placement search"), run
         * by the manager like Evaluate=; its harm is HarmPercent, its phase
         * change GuardPercent. */
        bool search;              /* Search=, no */
        uint64_t search_block_ms; /* SearchBlockMs=, 5000 */
        unsigned search_duty; /* SearchDuty=, 8: one re-check pair after this many blocks of the winner */
} Settings;

void settings_init_defaults(Settings *s);
