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

/* An opted-in cgroup as steerd holds it now. */
typedef struct MetricsCgroup {
        const char *cgroup;
        uint64_t actions, reverts, givebacks; /* since steerd first held it */
        unsigned window_cpus;                 /* 0: no window */
        unsigned pinned_threads;              /* threads with a mask of steerd's (pinned or moved) */
        bool steering; /* false: hands-off (a trial's block) or Evaluate=auto turned it off */
} MetricsCgroup;

/* The label of the cgroups beyond the limit, summed: no cgroup path (they
 * start with '/') can be it. */
#define METRICS_CGROUP_OTHER "_other"

typedef struct MetricsCounters {
        uint64_t ticks, applied, kept, reverted, restored, failed, adopted, dropped;
        uint64_t opted_in_cgroups;
        const char *mode;
        const MetricsTrial *trials;
        size_t n_trials;
        const MetricsCgroup *cgroups; /* sorted by name: the first cgroups_limit get a label of their own */
        size_t n_cgroups;
        unsigned cgroups_limit;
        uint64_t givebacks_failed;
        size_t givebacks_pending;
        double cpu_seconds; /* steerd's own, user + system; < 0: unknown */
        uint64_t rss_bytes; /* steerd's own; 0: unknown */
        double write_time;  /* seconds since the epoch, of this write */
} MetricsCounters;

/* Render to a string (for tests); caller frees. */
int metrics_render(const Snapshot *s, const MetricsCounters *c, char **ret);
int metrics_write(const char *path, const Snapshot *s, const MetricsCounters *c);
