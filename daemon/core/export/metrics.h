/* SPDX-License-Identifier: MIT */
#pragma once

/* Prometheus metrics in node_exporter's textfile-collector format: one
 * file, written whole to a temporary name in the same directory and renamed
 * over the old one, so the collector never reads half a file. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

/* A cgroup's latest trial (the running one, else the last that ended):
 * steered / hands-off of its primary signal with the 95% interval. */
typedef struct MetricsTrial {
        const char *cgroup;
        const char *verdict; /* better | worse | same | can't tell */
        bool running;
        bool has_estimate; /* false: fewer than 2 pairs, no ratio is exported */
        double ratio, ci_low, ci_high;
} MetricsTrial;

typedef struct MetricsCounters {
        uint64_t ticks, applied, kept, reverted, restored, failed, adopted, dropped;
        uint64_t opted_in_cgroups;
        const char *mode;
        const MetricsTrial *trials;
        size_t n_trials;
} MetricsCounters;

/* Render to a string (for tests); caller frees. */
int metrics_render(const Snapshot *s, const MetricsCounters *c, char **ret);
int metrics_write(const char *path, const Snapshot *s, const MetricsCounters *c);
