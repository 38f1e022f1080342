/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "stats.h"

/* Student t, two-sided 95%, df 1..30: the textbook values. The expansion
 * used above 30 drifts off below that (by 0.02 at df 3, by 3 at df 1). */
static const double t975_table[] = {
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
};

int stats_t975(unsigned df, double *ret) {
        /* The 0.975 quantile of the standard normal. */
        const double z = 1.959964;
        double d, z3, z5, z7;

        if (df == 0)
                return -EINVAL;
        if (df <= ELEMENTSOF(t975_table)) {
                *ret = t975_table[df - 1];
                return 0;
        }

        /* Cornish-Fisher: z plus the first three terms in 1/df, within 1e-4 of
         * the true quantile from df 31 on. */
        d = df;
        z3 = z * z * z;
        z5 = z3 * z * z;
        z7 = z5 * z * z;
        *ret = z + (z3 + z) / (4 * d) + (5 * z5 + 16 * z3 + 3 * z) / (96 * d * d) +
               (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * d * d * d);
        return 0;
}

/* The log-ratio of pair i: given directly (logs), or from the pair (a, b). */
static double log_ratio(const double *logs, const double *a, const double *b, size_t i) {
        /* The difference of logs, not the log of a / b: that quotient can
         * overflow or underflow for finite inputs, the logs cannot. */
        return logs ? logs[i] : log(a[i]) - log(b[i]);
}

/* Both entry points in one pass over either form of input, so that pairs
 * need no temporary array of their logs. prior_ss, prior_df: squared
 * deviations known from elsewhere, pooled into the variance. */
static int estimate(const double *logs, const double *a, const double *b, size_t n, double prior_ss,
                    unsigned prior_df, RatioEstimate *ret) {
        double shift, sum = 0, ss = 0, mean, sd, t, hw, ratio, lo, hi;
        int r;

        if (n < 1 || n - 1 > UINT32_MAX - prior_df || n - 1 + prior_df < 1)
                return -EINVAL;

        /* Sums of the differences to the first value: a constant series then
         * gives a mean of exactly that value and an sd of exactly 0 (a plain
         * sum / n would leave rounding dust and a hair-wide interval), and
         * large offsets do not eat the precision of the variance. */
        shift = log_ratio(logs, a, b, 0);
        for (size_t i = 0; i < n; i++)
                sum += log_ratio(logs, a, b, i) - shift;
        mean = shift + sum / (double) n;
        for (size_t i = 0; i < n; i++) {
                double dev = log_ratio(logs, a, b, i) - shift - sum / (double) n;
                ss += dev * dev;
        }
        sd = sqrt((ss + prior_ss) / (double) (n - 1 + prior_df));

        r = stats_t975((unsigned) (n - 1 + prior_df), &t);
        if (r < 0)
                return r;
        hw = t * sd / sqrt((double) n);

        ratio = exp(mean);
        lo = exp(mean - hw);
        hi = exp(mean + hw);
        if (!isfinite(mean) || !isfinite(hw) || !isfinite(hi) || lo <= 0)
                return -ERANGE;

        *ret = (RatioEstimate){
                .n = n,
                .ratio = ratio,
                .ci_low = lo,
                .ci_high = hi,
                .mean_log = mean,
                .sd_log = sd,
                .half_width_log = hw,
        };
        return 0;
}

int stats_log_ratios(const double *logs, size_t n, RatioEstimate *ret) {
        if (!logs || n < 2)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!isfinite(logs[i]))
                        return -EINVAL;

        return estimate(logs, NULL, NULL, n, 0, 0, ret);
}

int stats_log_ratios_pooled(const double *logs, size_t n, double prior_ss, unsigned prior_df,
                            RatioEstimate *ret) {
        if (!logs || n < 1 || (n < 2 && prior_df == 0) || !isfinite(prior_ss) || prior_ss < 0 ||
            (prior_df == 0 && prior_ss > 0))
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!isfinite(logs[i]))
                        return -EINVAL;

        return estimate(logs, NULL, NULL, n, prior_ss, prior_df, ret);
}

int stats_paired_ratio(const double *a, const double *b, size_t n, RatioEstimate *ret) {
        if (!a || !b || n < 2)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!isfinite(a[i]) || !isfinite(b[i]) || a[i] <= 0 || b[i] <= 0)
                        return -EINVAL;

        return estimate(NULL, a, b, n, 0, 0, ret);
}

static const char *const stats_verdict_table[_STATS_VERDICT_MAX] = {
        [STATS_VERDICT_BETTER] = "better",
        [STATS_VERDICT_WORSE] = "worse",
        [STATS_VERDICT_SAME] = "same",
        [STATS_VERDICT_CANT_TELL] = "can't tell",
};

DEFINE_STRING_TABLE_LOOKUP(stats_verdict, StatsVerdict, _STATS_VERDICT_MAX);

static const char *const target_result_table[_TARGET_RESULT_MAX] = {
        [TARGET_MET] = "met",
        [TARGET_MISSED] = "missed",
        [TARGET_CANT_TELL] = "can't tell",
};

DEFINE_STRING_TABLE_LOOKUP(target_result, TargetResult, _TARGET_RESULT_MAX);

static bool interval_valid(const RatioEstimate *e) {
        return e && isfinite(e->ci_low) && isfinite(e->ci_high) && e->ci_low > 0 && e->ci_low <= e->ci_high;
}

/* The interval of the ratio whose lower values are better: the estimate's
 * own, or for higher-is-better that of its inverse. */
static void interval_lower_is_better(const RatioEstimate *e, bool higher_is_better, double *ret_lo,
                                     double *ret_hi) {
        if (higher_is_better) {
                *ret_lo = 1 / e->ci_high;
                *ret_hi = 1 / e->ci_low;
        } else {
                *ret_lo = e->ci_low;
                *ret_hi = e->ci_high;
        }
}

int stats_verdict(const RatioEstimate *e, bool higher_is_better, double margin, StatsVerdict *ret) {
        double lo, hi, band;

        if (!interval_valid(e) || !isfinite(margin) || margin < 0)
                return -EINVAL;

        interval_lower_is_better(e, higher_is_better, &lo, &hi);
        band = 1 + margin;

        if (hi < 1)
                *ret = STATS_VERDICT_BETTER;
        else if (lo > band)
                *ret = STATS_VERDICT_WORSE;
        else if (lo >= 1 / band && hi <= band)
                *ret = STATS_VERDICT_SAME;
        else
                *ret = STATS_VERDICT_CANT_TELL;
        return 0;
}

int stats_verdict_effect_log(const RatioEstimate *e, bool higher_is_better, double margin, double *ret) {
        double x, band, effect = 0;

        if (!interval_valid(e) || !isfinite(e->mean_log) || !isfinite(margin) || margin < 0)
                return -EINVAL;

        /* In log units, oriented so that negative is better; the verdict's
         * boundaries are then 0 (BETTER), +band (WORSE) and ±band (SAME). */
        x = higher_is_better ? -e->mean_log : e->mean_log;
        band = log1p(margin);

        /* Each boundary the mean is on the deciding side of is a way to a
         * verdict; the widest half-width any of them allows is the answer. */
        if (x < 0)
                effect = MAX(effect, -x);
        if (x > band)
                effect = MAX(effect, x - band);
        if (fabs(x) < band)
                effect = MAX(effect, band - fabs(x));

        *ret = MAX(effect, 1e-9);
        return 0;
}

int stats_target(const RatioEstimate *e, double limit, bool at_most, TargetResult *ret) {
        if (!interval_valid(e) || !isfinite(limit) || limit <= 0)
                return -EINVAL;

        if (at_most)
                *ret = e->ci_high <= limit ? TARGET_MET
                       : e->ci_low > limit ? TARGET_MISSED
                                           : TARGET_CANT_TELL;
        else
                *ret = e->ci_low >= limit   ? TARGET_MET
                       : e->ci_high < limit ? TARGET_MISSED
                                            : TARGET_CANT_TELL;
        return 0;
}

int stats_more_pairs(const RatioEstimate *e, double effect_log, size_t *ret) {
        double effect;

        if (!e || e->n < 2 || !isfinite(e->sd_log) || e->sd_log < 0 || !isfinite(effect_log))
                return -EINVAL;

        effect = effect_log == 0 ? log(1.02) : fabs(effect_log);

        /* t975 falls and sqrt(n') grows, so the half-width shrinks
         * monotonically: the first n' that fits is the answer. */
        for (size_t more = 0; more < STATS_MORE_PAIRS_MAX; more++) {
                size_t m = e->n + more;
                double t;
                int r;

                if (m - 1 > UINT32_MAX)
                        break;
                r = stats_t975((unsigned) (m - 1), &t);
                if (r < 0)
                        return r;
                if (t * e->sd_log / sqrt((double) m) < effect) {
                        *ret = more;
                        return 0;
                }
        }

        *ret = STATS_MORE_PAIRS_MAX;
        return 0;
}
