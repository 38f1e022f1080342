/* SPDX-License-Identifier: MIT */
#pragma once

/* A trial's --metric: the spec parsed once, the source read at each block's
 * measured start and end (and, for a gauge, every METRIC_PROBE_GAUGE_USEC
 * in between, its readings averaged), one number per block out. */

#include <stdbool.h>
#include <stdint.h>

#include "exposition.h"

/* Most bytes of one reading of the source. */
#define METRIC_PROBE_MAX_BYTES (4 * 1024 * 1024)
/* A gauge is read at most this often (an http:// read blocks for up to 2 s). */
#define METRIC_PROBE_GAUGE_USEC (1000 * 1000)

typedef struct MetricProbe MetricProbe;

/* Parses spec and reads the series once: a source that cannot be read, a
 * series that is not there, or an aggregation that does not fit its type is
 * an error now, with a message in ret_error. now_us: CLOCK_REALTIME or any
 * clock the later calls share. */
int metric_probe_new(const char *spec, uint64_t now_us, MetricProbe **ret, char **ret_error);
MetricProbe *metric_probe_free(MetricProbe *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(MetricProbe *, metric_probe_free);

/* Whether larger is better for this series (metric_spec_higher_is_better_default()). */
bool metric_probe_higher_is_better(const MetricProbe *p, bool *ret_known);

/* The measured part of a block starts: the first reading. */
int metric_probe_block_start(MetricProbe *p, uint64_t now_us);
/* Between the two: a gauge's reading (at most every METRIC_PROBE_GAUGE_USEC;
 * other types read nothing). */
int metric_probe_sample(MetricProbe *p, uint64_t now_us);
/* The block's number: a rate, a mean or a quantile. -ENODATA when the block
 * has none (no observation of a histogram, no reading at its start); other
 * errors (the source failed, a counter reset) with a message. */
int metric_probe_block_end(MetricProbe *p, uint64_t now_us, double *ret, char **ret_error);
