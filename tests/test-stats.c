/* SPDX-License-Identifier: MIT */
/* The paired ratio estimate, its verdict and its target check. The expected
 * numbers were worked out separately (python3, math module only) from the
 * formulas and the t values written next to them, not with this module. */
#include <math.h>

#include "test-helpers.h"

#include "stats.h"

#define assert_close(a, b, tol)                                                                             \
        do {                                                                                                \
                double _a = (a), _b = (b);                                                                  \
                if (!(fabs(_a - _b) <= (tol)))                                                              \
                        fail_msg("%s = %.17g, expected %.17g (within %g)", #a, _a, _b, (double) (tol));     \
        } while (0)

/* A RatioEstimate that only has an interval, for the verdict rules. */
static RatioEstimate interval(double lo, double hi) {
        return (RatioEstimate){
                .n = 10,
                .ratio = sqrt(lo * hi),
                .ci_low = lo,
                .ci_high = hi,
                .mean_log = (log(lo) + log(hi)) / 2,
                .half_width_log = (log(hi) - log(lo)) / 2,
        };
}

static void test_t975(void **state) {
        static const struct {
                unsigned df;
                double t;
        } known[] = {
                /* The true quantiles, to four decimals. */
                {1, 12.7062}, {2, 4.3027},  {10, 2.2281},  {30, 2.0423},
                {31, 2.0395}, {60, 2.0003}, {120, 1.9799}, {1000, 1.9623},
        };
        double t, prev = INFINITY;

        for (size_t i = 0; i < ELEMENTSOF(known); i++) {
                assert_int_equal(stats_t975(known[i].df, &t), 0);
                assert_close(t, known[i].t, 1e-3);
        }

        /* Decreasing across the switch from the table to the expansion, and
         * towards z for large df. */
        for (unsigned df = 1; df <= 200; df++) {
                assert_int_equal(stats_t975(df, &t), 0);
                assert_true(t < prev);
                prev = t;
        }
        assert_int_equal(stats_t975(UINT32_MAX, &t), 0);
        assert_close(t, 1.959964, 1e-6);

        t = 42;
        assert_int_equal(stats_t975(0, &t), -EINVAL);
        assert_true(t == 42);
}

/* Pooled with a prior: the variance is (ss + prior_ss) / (n - 1 + df) at
 * t975(n - 1 + df); no prior is the plain estimate. */
static void test_pooled(void **state) {
        (void) state;
        static const double logs[] = {0.56, 0.55};
        RatioEstimate e, plain;

        assert_int_equal(stats_log_ratios(logs, 2, &plain), 0);
        assert_int_equal(stats_log_ratios_pooled(logs, 2, 0, 0, &e), 0);
        assert_close(e.half_width_log, plain.half_width_log, 1e-15);
        /* ss 0.00005, prior 0.3136 (one readiness difference of 0.56):
         * sd sqrt(0.31365 / 2), half-width 4.303 * sd / sqrt(2). */
        assert_int_equal(stats_log_ratios_pooled(logs, 2, 0.56 * 0.56, 1, &e), 0);
        assert_close(e.mean_log, 0.555, 1e-12);
        assert_close(e.sd_log, sqrt(0.31365 / 2), 1e-12);
        assert_close(e.half_width_log, 4.303 * sqrt(0.31365 / 2) / sqrt(2), 1e-12);
        assert_true(e.ci_low < 1 && plain.ci_low > 1.5);
        assert_int_equal(stats_log_ratios_pooled(logs, 2, -1, 1, &e), -EINVAL);
        assert_int_equal(stats_log_ratios_pooled(logs, 2, 0.1, 0, &e), -EINVAL);
        assert_int_equal(stats_log_ratios_pooled(logs, 2, INFINITY, 1, &e), -EINVAL);
        /* One pair is judged by the noise known from elsewhere alone. */
        assert_int_equal(stats_log_ratios_pooled(logs, 1, 0.1, 1, &e), 0);
        assert_close(e.mean_log, 0.56, 1e-12);
        assert_close(e.half_width_log, 12.706 * sqrt(0.1), 1e-3);
        assert_int_equal(stats_log_ratios_pooled(logs, 1, 0, 0, &e), -EINVAL);
        assert_int_equal(stats_log_ratios_pooled(logs, 0, 0.1, 1, &e), -EINVAL);
}

static void test_known_sample(void **state) {
        /* Mean 0.015; squared deviations sum to 0.0042, sd = sqrt(0.0042/7);
         * half-width 2.365 * sd / sqrt(8) (t975 at df 7). */
        static const double logs[] = {0.05, -0.02, 0.03, 0.01, 0.04, -0.01, 0.02, 0.00};
        RatioEstimate e;

        assert_int_equal(stats_log_ratios(logs, ELEMENTSOF(logs), &e), 0);
        assert_int_equal(e.n, 8);
        assert_close(e.mean_log, 0.015, 1e-12);
        assert_close(e.sd_log, 0.024494897427831782, 1e-12);
        assert_close(e.half_width_log, 0.020481500799501975, 1e-12);
        assert_close(e.ratio, 1.015113064615719, 1e-12);
        assert_close(e.ci_low, 0.9945334952132752, 1e-12);
        assert_close(e.ci_high, 1.0361184805872612, 1e-12);

        /* The same through pairs: a = b * exp(log). */
        double a[ELEMENTSOF(logs)], b[ELEMENTSOF(logs)];
        RatioEstimate p;
        for (size_t i = 0; i < ELEMENTSOF(logs); i++) {
                b[i] = 100 + 10 * i;
                a[i] = b[i] * exp(logs[i]);
        }
        assert_int_equal(stats_paired_ratio(a, b, ELEMENTSOF(logs), &p), 0);
        assert_close(p.ratio, e.ratio, 1e-12);
        assert_close(p.ci_low, e.ci_low, 1e-12);
        assert_close(p.ci_high, e.ci_high, 1e-12);
}

static void test_two_pairs(void **state) {
        /* ln 1.2 and 0: mean 0.0911607783969773, sd ln(1.2)/sqrt(2),
         * half-width 12.706 * sd / sqrt(2): wide, as two pairs should be. */
        static const double a[] = {12, 10}, b[] = {10, 10};
        RatioEstimate e;

        assert_int_equal(stats_paired_ratio(a, b, 2, &e), 0);
        assert_int_equal(e.n, 2);
        assert_close(e.ratio, 1.0954451150103321, 1e-12);
        assert_close(e.sd_log, 0.12892080916549356, 1e-12);
        assert_close(e.half_width_log, 1.1582888503119935, 1e-12);
        assert_close(e.ci_low, 0.3439950291305559, 1e-12);
        assert_close(e.ci_high, 3.488422501432617, 1e-12);

        StatsVerdict v;
        assert_int_equal(stats_verdict(&e, false, 0.02, &v), 0);
        assert_int_equal(v, STATS_VERDICT_CANT_TELL);
}

static void test_fifty_pairs(void **state) {
        /* log_i = 0.01 + 0.03 sin(i), i = 0..49; t975 at df 49 from the
         * expansion: 2.0095752. */
        double logs[50];
        RatioEstimate e;

        for (size_t i = 0; i < ELEMENTSOF(logs); i++)
                logs[i] = 0.01 + 0.03 * sin((double) i);
        assert_int_equal(stats_log_ratios(logs, ELEMENTSOF(logs), &e), 0);
        assert_int_equal(e.n, 50);
        assert_close(e.mean_log, 0.01009795123251758, 1e-12);
        assert_close(e.sd_log, 0.02144841799640121, 1e-12);
        assert_close(e.half_width_log, 0.006095572155569162, 1e-9);
        assert_close(e.ratio, 1.0101491075885316, 1e-12);
        assert_close(e.ci_low, 1.0040103992924974, 1e-9);
        assert_close(e.ci_high, 1.0163253491009252, 1e-9);

        /* 1% slower, and surely so, but within the 2% margin. */
        StatsVerdict v;
        assert_int_equal(stats_verdict(&e, false, 0.02, &v), 0);
        assert_int_equal(v, STATS_VERDICT_SAME);
        /* As a throughput it is surely better. */
        assert_int_equal(stats_verdict(&e, true, 0.02, &v), 0);
        assert_int_equal(v, STATS_VERDICT_BETTER);
}

static void test_skewed(void **state) {
        /* Four equal pairs and one 50% outlier: mean ln(1.5)/5, t975 at df 4
         * = 2.776. The interval is symmetric in logs, so it reaches well
         * below 1 although no pair was below 1. */
        static const double a[] = {1.0, 1.0, 1.0, 1.0, 1.5}, b[] = {1, 1, 1, 1, 1};
        RatioEstimate e;

        assert_int_equal(stats_paired_ratio(a, b, ELEMENTSOF(a), &e), 0);
        assert_close(e.mean_log, 0.08109302162163287, 1e-12);
        assert_close(e.sd_log, 0.18132950884683133, 1e-12);
        assert_close(e.ratio, 1.0844717711976986, 1e-12);
        assert_close(e.ci_low, 0.8658693858919457, 1e-12);
        assert_close(e.ci_high, 1.3582637770628372, 1e-12);

        StatsVerdict v;
        assert_int_equal(stats_verdict(&e, false, 0.02, &v), 0);
        assert_int_equal(v, STATS_VERDICT_CANT_TELL);
}

static void test_constant(void **state) {
        static const double ones[] = {1, 1, 1, 1}, same[] = {3.7, 3.7, 3.7, 3.7},
                            nines[] = {0.9, 0.9, 0.9, 0.9};
        RatioEstimate e;
        StatsVerdict v;

        /* A == B in every pair. */
        assert_int_equal(stats_paired_ratio(same, same, ELEMENTSOF(same), &e), 0);
        assert_true(e.sd_log == 0);
        assert_true(e.half_width_log == 0);
        assert_true(e.ratio == 1);
        assert_true(e.ci_low == e.ci_high && e.ci_low == e.ratio);
        assert_int_equal(stats_verdict(&e, false, 0.02, &v), 0);
        assert_int_equal(v, STATS_VERDICT_SAME);
        assert_int_equal(stats_verdict(&e, true, 0, &v), 0);
        assert_int_equal(v, STATS_VERDICT_SAME);

        /* 0.9 in every pair: ln 0.9 is not a round number in binary. */
        assert_int_equal(stats_paired_ratio(nines, ones, ELEMENTSOF(ones), &e), 0);
        assert_true(e.sd_log == 0);
        assert_true(e.ci_low == e.ci_high && e.ci_low == e.ratio);
        assert_close(e.ratio, 0.9, 1e-12);
        assert_int_equal(stats_verdict(&e, false, 0.02, &v), 0);
        assert_int_equal(v, STATS_VERDICT_BETTER);
        assert_int_equal(stats_verdict(&e, true, 0.02, &v), 0);
        assert_int_equal(v, STATS_VERDICT_WORSE);

        /* A constant log-ratio that is not a round number in binary. */
        static const double logs[] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
        assert_int_equal(stats_log_ratios(logs, ELEMENTSOF(logs), &e), 0);
        assert_true(e.mean_log == 0.1);
        assert_true(e.sd_log == 0);
        assert_true(e.ci_low == e.ci_high && e.ci_high == e.ratio);
}

static void test_invalid(void **state) {
        static const double good[] = {1, 2, 3};
        const double bad_values[] = {0, -1, NAN, INFINITY, -INFINITY};
        RatioEstimate e = {.n = 4242}, untouched = e;

        /* Too few pairs. */
        assert_int_equal(stats_paired_ratio(good, good, 0, &e), -EINVAL);
        assert_int_equal(stats_paired_ratio(good, good, 1, &e), -EINVAL);
        assert_int_equal(stats_log_ratios(good, 0, &e), -EINVAL);
        assert_int_equal(stats_log_ratios(good, 1, &e), -EINVAL);
        assert_int_equal(stats_paired_ratio(NULL, good, 3, &e), -EINVAL);
        assert_int_equal(stats_log_ratios(NULL, 3, &e), -EINVAL);
        assert_memory_equal(&e, &untouched, sizeof(e));

        /* A bad value anywhere, on either side. */
        for (size_t i = 0; i < ELEMENTSOF(bad_values); i++)
                for (size_t at = 0; at < 3; at++) {
                        double x[] = {1, 2, 3};
                        x[at] = bad_values[i];
                        assert_int_equal(stats_paired_ratio(x, good, 3, &e), -EINVAL);
                        assert_int_equal(stats_paired_ratio(good, x, 3, &e), -EINVAL);
                        if (!isfinite(bad_values[i]))
                                assert_int_equal(stats_log_ratios(x, 3, &e), -EINVAL);
                }
        assert_memory_equal(&e, &untouched, sizeof(e));

        /* Negative and zero log-ratios are fine: they are ratios <= 1. */
        static const double logs[] = {0, -1, -0.5};
        assert_int_equal(stats_log_ratios(logs, 3, &e), 0);

        /* Logs so large that the interval overflows a double. */
        static const double huge[] = {700, 710, 720};
        e = untouched;
        assert_int_equal(stats_log_ratios(huge, 3, &e), -ERANGE);
        assert_memory_equal(&e, &untouched, sizeof(e));
}

static void test_symmetry(void **state) {
        static const double a[] = {10.2, 9.7, 11.5, 10.0, 10.9, 10.3},
                            b[] = {10.0, 10.1, 10.4, 9.6, 10.2, 10.0};
        RatioEstimate ab, ba;

        assert_int_equal(stats_paired_ratio(a, b, ELEMENTSOF(a), &ab), 0);
        assert_int_equal(stats_paired_ratio(b, a, ELEMENTSOF(a), &ba), 0);
        assert_close(ba.ratio, 1 / ab.ratio, 1e-12);
        assert_close(ba.ci_low, 1 / ab.ci_high, 1e-12);
        assert_close(ba.ci_high, 1 / ab.ci_low, 1e-12);
        assert_close(ba.sd_log, ab.sd_log, 1e-15);
        assert_close(ba.mean_log, -ab.mean_log, 1e-15);

        /* Lower-is-better for a/b is higher-is-better for b/a. */
        for (double m = 0; m <= 0.1; m += 0.01) {
                StatsVerdict v1, v2;
                assert_int_equal(stats_verdict(&ab, false, m, &v1), 0);
                assert_int_equal(stats_verdict(&ba, true, m, &v2), 0);
                assert_int_equal(v1, v2);
        }
}

static void test_verdict(void **state) {
        static const struct {
                double lo, hi;
                bool higher_is_better;
                StatsVerdict v;
        } cases[] = {
                /* Lower is better, margin 2%: SAME band [0.98039, 1.02]. */
                {0.95, 0.99, false, STATS_VERDICT_BETTER},
                {0.99, 0.995, false, STATS_VERDICT_BETTER}, /* excludes 1: better, if only a little */
                {1.03, 1.10, false, STATS_VERDICT_WORSE},
                {1.0201, 1.03, false, STATS_VERDICT_WORSE},
                {1.01, 1.03, false, STATS_VERDICT_CANT_TELL}, /* slower, but maybe within the margin */
                {1.001, 1.019, false, STATS_VERDICT_SAME},    /* slower, surely, but not by 2% */
                {0.99, 1.01, false, STATS_VERDICT_SAME},
                {0.981, 1.02, false, STATS_VERDICT_SAME},
                {0.97, 1.01, false, STATS_VERDICT_CANT_TELL},
                {0.90, 1.10, false, STATS_VERDICT_CANT_TELL},
                /* Higher is better: the same rules on b/a. */
                {1.01, 1.05, true, STATS_VERDICT_BETTER},
                {0.90, 0.97, true, STATS_VERDICT_WORSE},
                {0.99, 1.01, true, STATS_VERDICT_SAME},
                {0.97, 0.99, true, STATS_VERDICT_CANT_TELL},
                {0.90, 1.10, true, STATS_VERDICT_CANT_TELL},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                RatioEstimate e = interval(cases[i].lo, cases[i].hi);
                StatsVerdict v = _STATS_VERDICT_INVALID;
                assert_int_equal(stats_verdict(&e, cases[i].higher_is_better, 0.02, &v), 0);
                if (v != cases[i].v)
                        fail_msg("[%g, %g] %s: %s, expected %s", cases[i].lo, cases[i].hi,
                                 cases[i].higher_is_better ? "higher is better" : "lower is better",
                                 stats_verdict_to_string(v), stats_verdict_to_string(cases[i].v));
        }

        /* No margin: only an interval of exactly 1 is SAME. */
        RatioEstimate one = interval(1, 1), near = interval(0.999, 1.001);
        StatsVerdict v;
        assert_int_equal(stats_verdict(&one, false, 0, &v), 0);
        assert_int_equal(v, STATS_VERDICT_SAME);
        assert_int_equal(stats_verdict(&near, false, 0, &v), 0);
        assert_int_equal(v, STATS_VERDICT_CANT_TELL);

        /* Invalid intervals and margins; ret untouched. */
        RatioEstimate bad[] = {interval(0, 1), interval(1.1, 1.0), interval(NAN, 1), interval(1, INFINITY)};
        v = 77;
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(stats_verdict(&bad[i], false, 0.02, &v), -EINVAL);
        assert_int_equal(stats_verdict(&one, false, -0.01, &v), -EINVAL);
        assert_int_equal(stats_verdict(&one, false, NAN, &v), -EINVAL);
        assert_int_equal(stats_verdict(NULL, false, 0.02, &v), -EINVAL);
        assert_int_equal(v, 77);

        assert_string_equal(stats_verdict_to_string(STATS_VERDICT_BETTER), "better");
        assert_string_equal(stats_verdict_to_string(STATS_VERDICT_WORSE), "worse");
        assert_string_equal(stats_verdict_to_string(STATS_VERDICT_SAME), "same");
        assert_string_equal(stats_verdict_to_string(STATS_VERDICT_CANT_TELL), "can't tell");
        assert_null(stats_verdict_to_string(_STATS_VERDICT_MAX));
        assert_null(stats_verdict_to_string(_STATS_VERDICT_INVALID));
        assert_int_equal(stats_verdict_from_string("can't tell"), STATS_VERDICT_CANT_TELL);
        assert_int_equal(stats_verdict_from_string("maybe"), _STATS_VERDICT_INVALID);
}

static void test_target(void **state) {
        static const struct {
                double lo, hi, limit;
                bool at_most;
                TargetResult r;
        } cases[] = {
                /* "At most 5% slower". */
                {0.90, 1.05, 1.05, true, TARGET_MET},
                {1.06, 1.20, 1.05, true, TARGET_MISSED},
                {1.00, 1.10, 1.05, true, TARGET_CANT_TELL},
                {1.05, 1.05, 1.05, true, TARGET_MET},
                /* "At least 10% more throughput". */
                {1.10, 1.30, 1.10, false, TARGET_MET},
                {0.90, 1.09, 1.10, false, TARGET_MISSED},
                {1.00, 1.20, 1.10, false, TARGET_CANT_TELL},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                RatioEstimate e = interval(cases[i].lo, cases[i].hi);
                TargetResult r = _TARGET_RESULT_INVALID;
                assert_int_equal(stats_target(&e, cases[i].limit, cases[i].at_most, &r), 0);
                if (r != cases[i].r)
                        fail_msg("[%g, %g] %s %g: %s, expected %s", cases[i].lo, cases[i].hi,
                                 cases[i].at_most ? "at most" : "at least", cases[i].limit,
                                 target_result_to_string(r), target_result_to_string(cases[i].r));
        }

        RatioEstimate e = interval(0.9, 1.1), bad = interval(1.1, 0.9);
        TargetResult r = 77;
        assert_int_equal(stats_target(&e, 0, true, &r), -EINVAL);
        assert_int_equal(stats_target(&e, -1, false, &r), -EINVAL);
        assert_int_equal(stats_target(&e, NAN, true, &r), -EINVAL);
        assert_int_equal(stats_target(&bad, 1, true, &r), -EINVAL);
        assert_int_equal(r, 77);

        assert_string_equal(target_result_to_string(TARGET_MET), "met");
        assert_string_equal(target_result_to_string(TARGET_MISSED), "missed");
        assert_string_equal(target_result_to_string(TARGET_CANT_TELL), "can't tell");
        assert_null(target_result_to_string(_TARGET_RESULT_MAX));
}

/* The smallest n' >= n whose half-width is below effect, as a plain loop. */
static size_t more_pairs_direct(size_t n, double sd, double effect) {
        for (size_t m = n; m < n + STATS_MORE_PAIRS_MAX; m++) {
                double t;
                assert_int_equal(stats_t975(m - 1, &t), 0);
                if (t * sd / sqrt(m) < effect)
                        return m - n;
        }
        return STATS_MORE_PAIRS_MAX;
}

static void test_more_pairs(void **state) {
        RatioEstimate e = {.n = 5, .sd_log = 0.05};
        size_t k = 4242;

        /* ln(1.02) by default: 27 pairs (t975(26) * 0.05 / sqrt(27) = 0.01975). */
        assert_int_equal(stats_more_pairs(&e, 0, &k), 0);
        assert_int_equal(k, 22);
        assert_int_equal(k, more_pairs_direct(5, 0.05, log(1.02)));
        /* Already resolved: 2.776 * 0.05 / sqrt(5) = 0.062 < 0.1. */
        assert_int_equal(stats_more_pairs(&e, 0.1, &k), 0);
        assert_int_equal(k, 0);
        assert_int_equal(stats_more_pairs(&e, -0.1, &k), 0);
        assert_int_equal(k, 0);
        /* A tiny effect: the cap. */
        assert_int_equal(stats_more_pairs(&e, 1e-6, &k), 0);
        assert_int_equal(k, STATS_MORE_PAIRS_MAX);
        /* No spread: nothing more to learn. */
        e.sd_log = 0;
        assert_int_equal(stats_more_pairs(&e, 1e-9, &k), 0);
        assert_int_equal(k, 0);

        /* Across the table and the expansion. */
        for (size_t n = 2; n < 40; n += 3)
                for (double sd = 0.005; sd < 0.2; sd *= 1.7)
                        for (double eff = 0.005; eff < 0.3; eff *= 2.3) {
                                e = (RatioEstimate){.n = n, .sd_log = sd};
                                assert_int_equal(stats_more_pairs(&e, eff, &k), 0);
                                assert_int_equal(k, more_pairs_direct(n, sd, eff));
                        }

        /* Invalid: ret untouched. */
        k = 4242;
        e = (RatioEstimate){.n = 1, .sd_log = 0.1};
        assert_int_equal(stats_more_pairs(&e, 0.1, &k), -EINVAL);
        e = (RatioEstimate){.n = 5, .sd_log = -0.1};
        assert_int_equal(stats_more_pairs(&e, 0.1, &k), -EINVAL);
        e = (RatioEstimate){.n = 5, .sd_log = NAN};
        assert_int_equal(stats_more_pairs(&e, 0.1, &k), -EINVAL);
        e = (RatioEstimate){.n = 5, .sd_log = 0.1};
        assert_int_equal(stats_more_pairs(&e, NAN, &k), -EINVAL);
        assert_int_equal(stats_more_pairs(NULL, 0.1, &k), -EINVAL);
        assert_int_equal(k, 4242);
}

static void test_verdict_effect(void **state) {
        static const struct {
                double mean_log;
                bool higher_is_better;
                double effect;
        } cases[] = {
                {0, false, 0.019802627296179712},    /* ln 1.02: SAME */
                {-0.03, false, 0.03},                /* BETTER once 1 is excluded */
                {0.05, false, 0.030197372703820288}, /* WORSE once 1.02 is */
                {0.01, false, 0.009802627296179712}, /* SAME, narrowly */
                {-0.01, false, 0.01},                /* BETTER beats SAME's 0.0098 */
                {0.03, true, 0.03},                  /* the mirror of -0.03 */
                {0.019802627296179712, false, 1e-9}, /* on the band's edge: never */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                RatioEstimate e = interval(0.5, 2);
                double effect;
                e.mean_log = cases[i].mean_log;
                assert_int_equal(stats_verdict_effect_log(&e, cases[i].higher_is_better, 0.02, &effect), 0);
                assert_close(effect, cases[i].effect, 1e-12);
        }

        /* The promise of "about K more pairs would tell": the same mean and sd
         * with n + K pairs decide; with n + K - 1 they do not yet. */
        static const double logs[] = {0.04, -0.03, 0.01, 0.05, -0.02, 0.03};
        RatioEstimate e, later;
        double effect;
        size_t k;
        StatsVerdict v;

        assert_int_equal(stats_log_ratios(logs, ELEMENTSOF(logs), &e), 0);
        assert_int_equal(stats_verdict(&e, false, 0.02, &v), 0);
        assert_int_equal(v, STATS_VERDICT_CANT_TELL);
        assert_int_equal(stats_verdict_effect_log(&e, false, 0.02, &effect), 0);
        assert_int_equal(stats_more_pairs(&e, effect, &k), 0);
        assert_true(k > 0 && k < STATS_MORE_PAIRS_MAX);

        for (size_t extra = k - 1; extra <= k; extra++) {
                double t;
                size_t n = e.n + extra;
                assert_int_equal(stats_t975(n - 1, &t), 0);
                later = e;
                later.n = n;
                later.half_width_log = t * e.sd_log / sqrt(n);
                later.ci_low = exp(e.mean_log - later.half_width_log);
                later.ci_high = exp(e.mean_log + later.half_width_log);
                assert_int_equal(stats_verdict(&later, false, 0.02, &v), 0);
                if (extra == k)
                        assert_int_not_equal(v, STATS_VERDICT_CANT_TELL);
                else
                        assert_int_equal(v, STATS_VERDICT_CANT_TELL);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_t975),           cmocka_unit_test(test_known_sample),
                cmocka_unit_test(test_two_pairs),      cmocka_unit_test(test_fifty_pairs),
                cmocka_unit_test(test_skewed),         cmocka_unit_test(test_constant),
                cmocka_unit_test(test_invalid),        cmocka_unit_test(test_symmetry),
                cmocka_unit_test(test_pooled),         cmocka_unit_test(test_verdict),
                cmocka_unit_test(test_target),         cmocka_unit_test(test_more_pairs),
                cmocka_unit_test(test_verdict_effect),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
