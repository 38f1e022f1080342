/* SPDX-License-Identifier: MIT */
#pragma once

/* Prometheus metrics in node_exporter's textfile-collector format: one
 * file, written whole to a temporary name in the same directory and renamed
 * over the old one, so the collector never reads half a file. */

#include <stdint.h>

#include "snapshot.h"

typedef struct MetricsCounters {
        uint64_t ticks, applied, kept, reverted, restored, failed, adopted, dropped;
        uint64_t opted_in_cgroups;
        const char *mode;
} MetricsCounters;

/* Render to a string (for tests); caller frees. */
int metrics_render(const Snapshot *s, const MetricsCounters *c, char **ret);
int metrics_write(const char *path, const Snapshot *s, const MetricsCounters *c);
