/* SPDX-License-Identifier: MIT */
#include "settings.h"

static const char *const mode_table[_MODE_MAX] = {
        [MODE_OFF] = "off",
        [MODE_OBSERVE] = "observe",
        [MODE_LATENCY] = "latency",
        [MODE_BALANCED] = "balanced",
};

DEFINE_STRING_TABLE_LOOKUP(mode, Mode, _MODE_MAX);

static const char *const sticky_scope_table[_STICKY_SCOPE_MAX] = {
        [STICKY_SCOPE_CORE] = "core",
        [STICKY_SCOPE_CPU] = "cpu",
};

DEFINE_STRING_TABLE_LOOKUP(sticky_scope, StickyScope, _STICKY_SCOPE_MAX);

void settings_init_defaults(Settings *s) {
        /* Field by field after a memset, so that two default Settings compare
         * equal byte for byte (padding included). */
        memset(s, 0, sizeof(*s));
        s->mode = MODE_OBSERVE;
        s->sample_period_ms = 100;
        s->smoothing_half_life_ms = 200;
        s->count_steal = true;
        s->max_scan_threads = 20000;
        s->runnable_interval_ms = 500;
        s->persist_runtime = true;
        s->metrics_interval_ms = 10000;
        s->metrics_cgroups = 64;
        s->rescan_interval_ms = 5000;
        s->min_window_cores = 1;
        s->window_headroom = 0.25;
        s->min_llc_cpus = 2;
        s->sticky_idle_percent = 5;
        s->sticky_ticks = 3;
        s->sticky_release_percent = 25;
        s->sticky_max_wait_percent = 5;
        s->sticky_min_wakeups = 10;
        s->sticky_max_pins = 16;
        s->sticky_pair_wakeups = 1000;
        s->wake_groups = true;
        s->consolidate = true;
        s->sticky_pair_idle_percent = 30;
        s->sticky_scope = STICKY_SCOPE_CORE;
        s->imbalance_percent = 117;
        s->max_moves_per_tick = 4;
        s->min_residency_ms = 1000;
        s->guard_window_ms = 1000;
        s->guard_percent = 50;
        s->window_widen_scan_percent = 75;
        s->balance_min_wait = 20;
        s->guard_wait_floor = 10;
        s->guard_pressure_floor = 1.0;
        s->guard_backoff_max = 64;
        s->evaluate = false;
        s->harm_percent = 2;
        s->evaluate_duty = 8;
        s->evaluate_block_ms = 30000;
        s->evaluate_retry_ms = 6 * 3600 * 1000;
        s->search = false;
        s->search_block_ms = 5000;
        s->search_duty = 8;
}
