/* SPDX-License-Identifier: MIT */
#include "settings.h"

static const char *const mode_table[_MODE_MAX] = {
        [MODE_OFF] = "off",
        [MODE_OBSERVE] = "observe",
        [MODE_LATENCY] = "latency",
        [MODE_BALANCED] = "balanced",
};

const char *mode_to_string(Mode m) {
        return m >= 0 && m < _MODE_MAX ? mode_table[m] : NULL;
}

Mode mode_from_string(const char *s) {
        for (int i = 0; s && i < _MODE_MAX; i++)
                if (streq(s, mode_table[i]))
                        return (Mode) i;
        return _MODE_INVALID;
}

static const char *const sticky_scope_table[_STICKY_SCOPE_MAX] = {
        [STICKY_SCOPE_CORE] = "core",
        [STICKY_SCOPE_CPU] = "cpu",
};

const char *sticky_scope_to_string(StickyScope s) {
        return s >= 0 && s < _STICKY_SCOPE_MAX ? sticky_scope_table[s] : NULL;
}

StickyScope sticky_scope_from_string(const char *s) {
        for (int i = 0; s && i < _STICKY_SCOPE_MAX; i++)
                if (streq(s, sticky_scope_table[i]))
                        return (StickyScope) i;
        return _STICKY_SCOPE_INVALID;
}

void settings_init_defaults(Settings *s) {
        *s = (Settings) {
                .mode = MODE_OBSERVE,
                .sample_period_ms = 100,
                .smoothing_half_life_ms = 200,
                .count_steal = true,
                .max_scan_threads = 20000,
                .min_window_cores = 1,
                .window_headroom = 0.25,
                .min_llc_cpus = 2,
                .sticky_idle_percent = 5,
                .sticky_ticks = 3,
                .sticky_release_percent = 25,
                .sticky_max_wait_percent = 5,
                .sticky_scope = STICKY_SCOPE_CORE,
                .imbalance_percent = 117,
                .max_moves_per_tick = 4,
                .min_residency_ms = 1000,
                .guard_window_ms = 1000,
                .guard_percent = 10,
        };
}
