/* SPDX-License-Identifier: MIT */
#pragma once

/* An application's own metric, for the trials: the operator's --metric SPEC,
 * the Prometheus text exposition format 0.0.4 it is read from (what
 * node_exporter's textfile collector reads and what a /metrics endpoint
 * serves), and the number a trial compares between two readings.
 *
 * Everything here is pure: no I/O, no globals, no syscalls (the fetching is
 * metric-source.h). Functions return 0 or a negative errno; outputs are
 * written only on success.
 *
 * The SPEC grammar (--metric):
 *
 *     SPEC     = SOURCE "#" SELECTOR [ "@" AGG ]
 *     SOURCE   = an absolute file path (without '#')
 *              | "http://" HOST [ ":" PORT ] [ PATH ]   HOST: 127.x.y.z, [::1] or localhost
 *     SELECTOR = NAME [ "{" [ LABEL *( "," LABEL ) [ "," ] ] "}" ]
 *     LABEL    = LNAME "=" '"' VALUE '"'                 VALUE escapes: \\ \" \n
 *     AGG      = "rate" | "mean" | "p" NUMBER | "q" NUMBER
 *
 * The source ends at the first '#' (a label value may hold '#' and '@'); NAME
 * is [a-zA-Z_:][a-zA-Z0-9_:]*, LNAME [a-zA-Z_][a-zA-Z0-9_]*, blanks are
 * allowed around the tokens inside the braces. The labels are exact matches
 * and need not be all of a series' labels: every series of NAME whose labels
 * include them is read, and their values are summed (a histogram's per
 * bucket). "pNN" is the quantile NN/100 (p99, p99.9), "qF" the quantile F
 * (q0.95); both in (0, 1]. Examples:
 *
 *     /var/lib/node_exporter/textfile/app.prom#app_requests_total@rate
 *     http://127.0.0.1:9100/metrics#http_request_duration_seconds{handler="/api"}@p99
 *     http://localhost:8080/metrics#queue_depth@mean
 *
 * The aggregations and the types they fit (metric_agg_resolve()):
 *
 *     counter    rate (the default): the increase per second
 *     gauge      mean (the default): the mean of the readings, computed by
 *                the caller (metric_delta() does not: -EOPNOTSUPP)
 *     untyped    mean (the default) as a gauge, or rate as a counter
 *     histogram  mean (the default): Δsum / Δcount; pNN/qF: the quantile of
 *                the Δ buckets, interpolated as Prometheus'
 *                histogram_quantile() does
 *     summary    mean (the default): Δsum / Δcount (its precomputed
 *                quantiles are not read)
 *
 * Anything else is -EMEDIUMTYPE ("the wrong kind of metric"). A histogram's
 * or summary's NAME is its base name (the one of "# TYPE"); NAME_count
 * alone, which has no "# TYPE" line of its own, is an untyped series, so
 * "NAME_count@rate" is the rate of observations. */

#include <stdbool.h>
#include <stddef.h>

#include "steerd-macros.h"

typedef enum MetricType {
        METRIC_TYPE_UNTYPED,
        METRIC_TYPE_COUNTER,
        METRIC_TYPE_GAUGE,
        METRIC_TYPE_HISTOGRAM,
        METRIC_TYPE_SUMMARY,
        _METRIC_TYPE_MAX,
        _METRIC_TYPE_INVALID = -EINVAL,
} MetricType;

typedef enum MetricAgg {
        METRIC_AGG_AUTO, /* the type's default, see above */
        METRIC_AGG_RATE,
        METRIC_AGG_MEAN,
        METRIC_AGG_QUANTILE,
        _METRIC_AGG_MAX,
        _METRIC_AGG_INVALID = -EINVAL,
} MetricAgg;

/* "counter", "gauge", ... as in "# TYPE"; "auto", "rate", "mean", "quantile". */
const char *metric_type_to_string(MetricType t) _pure_;
MetricType metric_type_from_string(const char *s) _pure_;
const char *metric_agg_to_string(MetricAgg a) _pure_;
MetricAgg metric_agg_from_string(const char *s) _pure_;

typedef struct MetricLabel {
        char *name;
        char *value; /* unescaped */
} MetricLabel;

typedef struct MetricSpec {
        char *source;        /* an absolute path or an http:// URL, as given */
        char *name;          /* the series' name */
        MetricLabel *labels; /* the selector's labels, exact matches, names unique */
        size_t n_labels;
        MetricAgg agg;   /* METRIC_AGG_AUTO when no "@AGG" */
        double quantile; /* in (0, 1] for METRIC_AGG_QUANTILE, else 0 */
} MetricSpec;

/* Parse a SPEC (above). On failure *ret is untouched and, unless the error
 * is -ENOMEM, *ret_error (if not NULL) is a message for the operator that
 * starts with "metric spec: " (caller frees). -EINVAL for a malformed spec;
 * the errors of metric_url_parse() for an http:// source it refuses
 * (-EPERM: not the loopback address). metric_spec_done() frees what a
 * parsed spec holds (on a zeroed spec too). */
int metric_spec_parse(const char *text, MetricSpec *ret, char **ret_error);
void metric_spec_done(MetricSpec *spec);

/* An http:// source taken apart, for metric-source.c. host is canonical:
 * "127.0.0.1"-style dotted quad, "::1" (without brackets) or "localhost"
 * (which the fetch pins to 127.0.0.1). */
typedef struct MetricUrl {
        char *host;
        unsigned port; /* 80 when not given */
        char *path;    /* starts with '/'; "/" when not given */
        bool ipv6;
} MetricUrl;

/* Parse "http://HOST[:PORT][PATH]". The scheme must be http (any other one,
 * https included, is -EPERM), HOST a loopback literal (127.0.0.0/8, [::1]) or
 * localhost, else -EPERM; userinfo ("http://user@127.0.0.1") is -EPERM too:
 * it is how a URL is made to look like another host's. -EINVAL for a
 * malformed URL (a bad port, a control character or blank anywhere). On
 * failure, unless -ENOMEM, *ret_error (if not NULL) is a message starting
 * with "metric source: " (caller frees). */
int metric_url_parse(const char *url, MetricUrl *ret, char **ret_error);
void metric_url_done(MetricUrl *url);

/* The aggregation agg means for a series of type t: AUTO becomes the type's
 * default. -EMEDIUMTYPE when agg does not fit t (the rate of a gauge, the
 * quantile of a counter ...), -EINVAL for an agg or t out of range. */
int metric_agg_resolve(MetricAgg agg, MetricType t, MetricAgg *ret);

typedef struct MetricReading {
        MetricType type;   /* from "# TYPE NAME", untyped when there is none */
        MetricAgg agg;     /* the spec's aggregation, resolved for type */
        double value;      /* counter, gauge, untyped: the sum of the matched samples */
        double sum, count; /* histogram, summary: the sums of NAME_sum and NAME_count */
        double *le;        /* histogram: the buckets' upper bounds, strictly increasing */
        double *buckets;   /* ... and their cumulative counts, summed over the series */
        size_t n_buckets;
        size_t n_matched; /* the series read: samples of NAME, or of NAME_count */
} MetricReading;

/* Read the series spec selects from an exposition text (spec->source is
 * not looked at). Every line is checked, not only the selected series':
 *  - blank lines and comments are skipped; "# HELP NAME text" and
 *    "# TYPE NAME TYPE" must be well-formed; a second "# TYPE" for spec's
 *    NAME is malformed; the "# TYPE" may come after the samples;
 *  - a sample is NAME[{LABELS}] VALUE [TIMESTAMP]: VALUE a float (+Inf, -Inf,
 *    NaN included), TIMESTAMP an integer (milliseconds, ignored); label
 *    values with the escapes \\ \" \n only; a trailing comma in the braces is
 *    allowed; blanks are spaces and tabs;
 *  - a selected sample must not repeat a label name, nor carry more than 256
 *    labels, and a selected NAME_bucket needs a numeric le label (not NaN).
 * -EBADMSG on a malformed line, whose number (from 1) is written to
 * *ret_line (if not NULL; only then); -EMEDIUMTYPE when spec's aggregation
 * does not fit the type; -ENOENT when no sample matches (for a histogram or
 * summary: no NAME_count, or no NAME_sum; for a quantile also no le="+Inf"
 * bucket). On success *ret is a new reading (metric_reading_done() frees
 * it). */
int exposition_read(const char *text, const MetricSpec *spec, MetricReading *ret, unsigned *ret_line);
void metric_reading_done(MetricReading *r);

/* The number one trial block gives, from the readings a (its start) and b
 * (its end), dt_sec apart:
 *  - rate: (b - a) / dt_sec; -ESTALE when the counter went down (a reset)
 *    or the number of matched series changed; -EINVAL unless dt_sec > 0;
 *  - histogram/summary mean: Δsum / Δcount; -ESTALE when count went down,
 *    -ENODATA when Δcount is 0;
 *  - quantile: from the Δ buckets, as Prometheus' histogram_quantile(): the
 *    bucket that holds rank q * Δcount, linear interpolation inside it (from
 *    0 for the first bucket when its bound is positive), the largest finite
 *    bound when the rank falls in the +Inf bucket; -ESTALE when the bucket
 *    bounds differ between a and b or a bucket went down, -ENODATA without
 *    observations or finite bound;
 *  - a gauge's (or an untyped series') mean: -EOPNOTSUPP. The caller averages
 *    the readings' values over the block itself (the readings in between
 *    count, not just the ends).
 * -ESTALE also when a and b differ in type or aggregation; -EDOM when the
 * result is not finite (a NaN sample). */
int metric_delta(const MetricSpec *spec, const MetricReading *a, const MetricReading *b, double dt_sec,
                 double *ret);

/* Whether a larger number is the better one for spec's series of type t
 * (a reading's type): a rate (of requests, of work done) is, a histogram's
 * or summary's mean or quantile (a latency) is not. For a gauge's mean (or
 * an aggregation that does not fit t) *ret_known is false and the operator
 * must say; the return value is then false. */
bool metric_spec_higher_is_better_default(const MetricSpec *spec, MetricType t, bool *ret_known);
