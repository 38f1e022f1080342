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
        uint64_t sample_period_ms;      /* 100 */
        uint64_t smoothing_half_life_ms; /* 200 */
        bool count_steal;               /* busy includes steal time; true */
        unsigned max_scan_threads;      /* bound of the THREADS runnable source; 20000 */

        /* [Policy] */
        unsigned min_window_cores;       /* 1 */
        double window_headroom;          /* 0.25 */
        unsigned min_llc_cpus;           /* 2 */
        double sticky_idle_percent;      /* 5 */
        unsigned sticky_ticks;           /* 3 */
        double sticky_release_percent;   /* 25 */
        double sticky_max_wait_percent;  /* 5 */
        StickyScope sticky_scope;        /* core */
        unsigned imbalance_percent;      /* 117 */
        unsigned max_moves_per_tick;     /* 4 */
        uint64_t min_residency_ms;       /* 1000 */
        uint64_t guard_window_ms;        /* 1000 */
        double guard_percent;            /* 10 */
} Settings;

void settings_init_defaults(Settings *s);
