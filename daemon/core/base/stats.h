/* SPDX-License-Identifier: MIT */
#pragma once

/* Paired ratio estimates with a 95% confidence interval, and the verdict
 * drawn from them: the one implementation the benchmark's report (through
 * steerd-ratio-ci) and the daemon's trials share, so that both call the same
 * numbers "better" or "can't tell".
 *
 * Each pair (a run of A next to a run of B, or a block of the daemon's trial)
 * gives one log-ratio ln(a/b); the estimate is the mean log-ratio with a
 * Student t interval, mapped back with exp(). Why a t interval on log-ratios
 * and not a bootstrap:
 *  - paired rounds are few (2..50). The percentile bootstrap under-covers
 *    badly below ~10 samples: its interval can never be wider than the range
 *    of the sample itself, whereas with 3 pairs the true uncertainty is much
 *    larger than the spread of those 3;
 *  - the t interval on log-ratios is exact when the noise is log-normal
 *    (multiplicative), which is what run-time and throughput noise looks like;
 *  - it is symmetric in A and B: swapping them negates every log-ratio, so the
 *    ratio and the interval become exactly their inverses, and a verdict
 *    cannot depend on which side was called "A";
 *  - it is deterministic (no resampling seed), so a report and a trial that
 *    see the same numbers always agree.
 *
 * Everything here is pure: no I/O, no globals, no syscalls. */

#include <stdbool.h>
#include <stddef.h>

#include "steerd-macros.h"

/* The two-sided 95% Student t quantile (the 0.975 point) for df >= 1:
 * tabulated for df 1..30, the Cornish-Fisher expansion above (within 1e-3 of
 * the true quantile there). -EINVAL for df 0. */
int stats_t975(unsigned df, double *ret);

typedef struct RatioEstimate {
        size_t n;               /* pairs */
        double ratio;           /* exp(mean_log): the geometric mean of a/b */
        double ci_low, ci_high; /* the 95% interval of the ratio */
        double mean_log;        /* mean of ln(a/b) */
        double sd_log;          /* sample standard deviation (n - 1) of ln(a/b) */
        double half_width_log;  /* t975(n - 1) * sd_log / sqrt(n) */
} RatioEstimate;

/* The estimate from already-computed log-ratios (the daemon's trials compute
 * one per pair of blocks). -EINVAL when n < 2 or a value is not finite,
 * -ERANGE when the ratio or a bound over- or underflows a double. ret is only
 * written on success. A constant series has sd_log 0 and
 * ci_low == ci_high == ratio exactly. */
int stats_log_ratios(const double *logs, size_t n, RatioEstimate *ret);
/* The same, with prior_df more degrees of freedom of the pairs' noise known
 * from elsewhere (their squared deviations summed in prior_ss) pooled into
 * the variance: a trial's readiness blocks, two hands-off blocks whose
 * log-ratio is one more draw of what a pair varies by when nothing
 * differs. Without it two pairs that happen to agree give a hair-wide
 * interval and a verdict (an A/A trial said "hurts by 75% [55%, 98%]"
 * from 2 pairs while its readiness blocks differed by 75%). -EINVAL also
 * for prior_ss < 0 or not finite, or prior_ss > 0 with prior_df 0. One pair
 * is enough when prior_df >= 1: the noise is known from elsewhere, and the
 * placement search judges a candidate's first block by it (search.h). */
int stats_log_ratios_pooled(const double *logs, size_t n, double prior_ss, unsigned prior_df,
                            RatioEstimate *ret);
/* The estimate of a/b from n pairs (a[i], b[i]). -EINVAL when n < 2 or any
 * value is not finite or <= 0; otherwise as stats_log_ratios(). */
int stats_paired_ratio(const double *a, const double *b, size_t n, RatioEstimate *ret);

typedef enum StatsVerdict {
        STATS_VERDICT_BETTER,
        STATS_VERDICT_WORSE,
        STATS_VERDICT_SAME,
        STATS_VERDICT_CANT_TELL,
        _STATS_VERDICT_MAX,
        _STATS_VERDICT_INVALID = -EINVAL,
} StatsVerdict;

const char *stats_verdict_to_string(StatsVerdict v) _pure_;
StatsVerdict stats_verdict_from_string(const char *s) _pure_;

/* What the estimate of a/b ("A compared to B") says about A, with the
 * relative margin m (0.02 = 2%) as the smallest difference that matters.
 * For lower-is-better figures (times, latencies), checked in this order:
 *   BETTER    ci_high < 1: A is faster, however little (the interval
 *             excludes 1, so the gain is real; a claimed gain needs no margin);
 *   WORSE     ci_low > 1 + m: A is slower by more than the margin, a harm a
 *             target would care about (a slowdown within the margin is noise
 *             or does not matter);
 *   SAME      the interval lies within [1/(1+m), 1+m]: any difference is
 *             smaller than the margin either way;
 *   CANT_TELL otherwise: the interval is too wide, more pairs are needed
 *             (stats_more_pairs()).
 * For higher-is-better figures (throughput) the same rule applies to the
 * inverse ratio b/a, whose interval is [1/ci_high, 1/ci_low]. The band being
 * [1/(1+m), 1+m] keeps the rule symmetric in A and B.
 * -EINVAL when the interval is not 0 < ci_low <= ci_high < inf, or m is not
 * finite or < 0. */
int stats_verdict(const RatioEstimate *e, bool higher_is_better, double margin, StatsVerdict *ret);

/* How far, in log units, the interval's half-width has to shrink (the mean
 * staying where it is) for stats_verdict() to stop saying CANT_TELL: the
 * distance from mean_log to the nearest boundary that would decide. Never
 * below 1e-9, so that stats_more_pairs() reads a mean sitting on a boundary
 * as "no number of pairs would tell" rather than as its default effect.
 * -EINVAL as stats_verdict(), and when mean_log is not finite. */
int stats_verdict_effect_log(const RatioEstimate *e, bool higher_is_better, double margin, double *ret);

typedef enum TargetResult {
        TARGET_MET,
        TARGET_MISSED,
        TARGET_CANT_TELL,
        _TARGET_RESULT_MAX,
        _TARGET_RESULT_INVALID = -EINVAL,
} TargetResult;

const char *target_result_to_string(TargetResult r) _pure_;
TargetResult target_result_from_string(const char *s) _pure_;

/* A target on the ratio: "at most limit" (at_most) is MET when
 * ci_high <= limit and MISSED when ci_low > limit; "at least limit" is MET
 * when ci_low >= limit and MISSED when ci_high < limit; CANT_TELL while the
 * interval straddles the limit. -EINVAL when the limit is not finite or <= 0,
 * or the interval is not 0 < ci_low <= ci_high < inf. */
int stats_target(const RatioEstimate *e, double limit, bool at_most, TargetResult *ret);

/* The cap of stats_more_pairs(): beyond it the answer is "far too many". */
#define STATS_MORE_PAIRS_MAX 10000

/* About how many more pairs would bring the half-width below |effect_log|
 * (below ln(1.02) when effect_log is 0), assuming sd_log stays what it is:
 * the smallest n' >= n with t975(n' - 1) * sd_log / sqrt(n') < |effect_log|,
 * as n' - n. 0 when already resolved (and always when sd_log is 0);
 * STATS_MORE_PAIRS_MAX when it would take more than that. -EINVAL when
 * e->n < 2, sd_log is not finite or < 0, or effect_log is not finite. */
int stats_more_pairs(const RatioEstimate *e, double effect_log, size_t *ret);
