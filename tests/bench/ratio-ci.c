/* SPDX-License-Identifier: MIT */
/* steerd-ratio-ci: the benchmark report's ratio, 95% interval and verdict,
 * computed by the same code as the daemon's trials (daemon/core/base/stats.c)
 * so that a report and a trial never disagree on the same numbers.
 *
 * stdin: one pair "A B" a line (blank lines and #-comments ignored); stdout:
 * one line of JSON. Exit 0 also with fewer than two pairs (the verdict is
 * then "can't tell"): the report must render whatever the run produced.
 * Exit 2 on a usage error or a malformed line, 1 on anything else. */
#include <getopt.h>
#include <math.h>

#include "stats.h"
#include "steerd-json.h"

typedef struct Args {
        bool higher_is_better;
        double margin;
        bool have_target, target_at_most;
        double target;
} Args;

static void help(void) {
        printf("Usage: steerd-ratio-ci [OPTIONS] < pairs\n"
               "\n"
               "Reads pairs \"A B\" (one a line; blank lines and lines starting with # are\n"
               "ignored) and prints the ratio A/B with its 95%% confidence interval (Student t\n"
               "on the log-ratios) and a verdict on A, as one line of JSON.\n"
               "\n"
               "  -h --help              Show this help\n"
               "     --lower-is-better   A and B are times or latencies (default)\n"
               "     --higher-is-better  A and B are throughputs\n"
               "     --margin PCT        Differences below PCT%% do not matter (default 2)\n"
               "     --target-max X      Also check the target \"A/B at most X\"\n"
               "     --target-min X      Also check the target \"A/B at least X\"\n"
               "\n"
               "Exit status: 0 on success (also with fewer than two pairs), 2 on a usage\n"
               "error or a malformed line, 1 otherwise.\n");
}

/* A whole, finite number, nothing after it. */
static int parse_double(const char *s, double *ret) {
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (end == s || *end || errno != 0 || !isfinite(v))
                return -EINVAL;
        *ret = v;
        return 0;
}

/* 1 to go on, 0 to exit 0 (--help), -EINVAL for a usage error (reported). */
static int parse_args(int argc, char *argv[], Args *args) {
        enum {
                ARG_LOWER = 0x100,
                ARG_HIGHER,
                ARG_MARGIN,
                ARG_TARGET_MAX,
                ARG_TARGET_MIN,
        };
        static const struct option options[] = {
                {"help", no_argument, NULL, 'h'},
                {"lower-is-better", no_argument, NULL, ARG_LOWER},
                {"higher-is-better", no_argument, NULL, ARG_HIGHER},
                {"margin", required_argument, NULL, ARG_MARGIN},
                {"target-max", required_argument, NULL, ARG_TARGET_MAX},
                {"target-min", required_argument, NULL, ARG_TARGET_MIN},
                {},
        };
        double v;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_LOWER:
                        args->higher_is_better = false;
                        break;
                case ARG_HIGHER:
                        args->higher_is_better = true;
                        break;
                case ARG_MARGIN:
                        if (parse_double(optarg, &v) < 0 || v < 0 || v > 100) {
                                fprintf(stderr,
                                        "steerd-ratio-ci: --margin: '%s' is not a percentage in 0..100.\n",
                                        optarg);
                                return -EINVAL;
                        }
                        args->margin = v / 100;
                        break;
                case ARG_TARGET_MAX:
                case ARG_TARGET_MIN:
                        if (args->have_target) {
                                fprintf(stderr,
                                        "steerd-ratio-ci: only one of --target-max and --target-min.\n");
                                return -EINVAL;
                        }
                        if (parse_double(optarg, &v) < 0 || v <= 0) {
                                fprintf(stderr, "steerd-ratio-ci: %s: '%s' is not a positive ratio.\n",
                                        c == ARG_TARGET_MAX ? "--target-max" : "--target-min", optarg);
                                return -EINVAL;
                        }
                        args->have_target = true;
                        args->target_at_most = c == ARG_TARGET_MAX;
                        args->target = v;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        abort();
                }

        if (optind < argc) {
                fprintf(stderr, "steerd-ratio-ci: unexpected argument '%s' (the pairs come on stdin).\n",
                        argv[optind]);
                return -EINVAL;
        }
        return 1;
}

/* "A B" into ret_a, ret_b: 1 for a pair, 0 for a line to skip, -EINVAL for
 * a malformed one (reported with its number). */
static int parse_line(const char *line, size_t lineno, double *ret_a, double *ret_b) {
        const char *p = line + strspn(line, " \t\r\n");
        double v[2];
        char *end;

        if (!*p || *p == '#')
                return 0;

        for (size_t i = 0; i < ELEMENTSOF(v); i++) {
                errno = 0;
                v[i] = strtod(p, &end);
                /* strtod() also eats "nan" and "inf"; a ratio needs neither. */
                if (end == p || errno != 0 || !isfinite(v[i]) || v[i] <= 0 ||
                    (*end && !strchr(" \t\r\n", *end))) {
                        fprintf(stderr,
                                "steerd-ratio-ci: line %zu: expected two positive numbers \"A B\", got "
                                "'%s'.\n",
                                lineno, line);
                        return -EINVAL;
                }
                p = end + strspn(end, " \t\r\n");
        }
        if (*p) {
                fprintf(stderr, "steerd-ratio-ci: line %zu: more than two numbers in '%s'.\n", lineno, line);
                return -EINVAL;
        }

        *ret_a = v[0];
        *ret_b = v[1];
        return 1;
}

/* All pairs of f; -EINVAL for a malformed line (reported), -ENOMEM. */
static int read_pairs(FILE *f, double **ret_a, double **ret_b, size_t *ret_n) {
        _cleanup_(freep) double *a = NULL, *b = NULL;
        _cleanup_(freep) char *line = NULL;
        size_t n = 0, allocated = 0, size = 0, lineno = 0;
        ssize_t len;

        while ((len = getline(&line, &size, f)) >= 0) {
                double x, y;
                int r;

                lineno++;
                if (len > 0 && line[len - 1] == '\n')
                        line[len - 1] = 0;
                r = parse_line(line, lineno, &x, &y);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;

                if (n == allocated) {
                        size_t k = MAX(allocated * 2, (size_t) 64);
                        double *na, *nb;

                        na = reallocarray(a, k, sizeof(double));
                        if (!na)
                                return -ENOMEM;
                        a = na;
                        nb = reallocarray(b, k, sizeof(double));
                        if (!nb)
                                return -ENOMEM;
                        b = nb;
                        allocated = k;
                }
                a[n] = x;
                b[n] = y;
                n++;
        }
        if (ferror(f))
                return -EIO;

        *ret_a = TAKE_PTR(a);
        *ret_b = TAKE_PTR(b);
        *ret_n = n;
        return 0;
}

static json_object *json_double_or_null(bool have, double d) {
        return have ? json_object_new_double(d) : NULL;
}

static int build_json(const Args *args, const double *a, const double *b, size_t n, json_object **ret) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        RatioEstimate e = {};
        StatsVerdict verdict = STATS_VERDICT_CANT_TELL;
        TargetResult target = TARGET_CANT_TELL;
        bool have = n >= 2, have_more = false;
        size_t more = 0;
        double ratio = 0;
        int r;

        if (have) {
                r = stats_paired_ratio(a, b, n, &e);
                if (r < 0)
                        return r;
                ratio = e.ratio;

                r = stats_verdict(&e, args->higher_is_better, args->margin, &verdict);
                if (r < 0)
                        return r;
                if (args->have_target) {
                        r = stats_target(&e, args->target, args->target_at_most, &target);
                        if (r < 0)
                                return r;
                }

                /* Pairs enough to turn "can't tell" into a verdict, if the mean and
                 * sd hold; nothing more is needed for a verdict already drawn. */
                if (verdict == STATS_VERDICT_CANT_TELL) {
                        double effect;

                        r = stats_verdict_effect_log(&e, args->higher_is_better, args->margin, &effect);
                        if (r < 0)
                                return r;
                        r = stats_more_pairs(&e, effect, &more);
                        if (r < 0)
                                return r;
                }
                have_more = true;
        } else if (n == 1)
                /* One pair is still a ratio to show, if no interval. */
                ratio = a[0] / b[0];

        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        if (json_add(o, "n", json_object_new_uint64(n)) < 0 ||
            json_add_full(o, "ratio", json_double_or_null(n >= 1 && isfinite(ratio), ratio), true) < 0 ||
            json_add_full(o, "ci_low", json_double_or_null(have, e.ci_low), true) < 0 ||
            json_add_full(o, "ci_high", json_double_or_null(have, e.ci_high), true) < 0 ||
            json_add_full(o, "mean_log", json_double_or_null(have, e.mean_log), true) < 0 ||
            json_add_full(o, "sd_log", json_double_or_null(have, e.sd_log), true) < 0 ||
            json_add_full(o, "half_width_log", json_double_or_null(have, e.half_width_log), true) < 0 ||
            json_add(o, "verdict", json_object_new_string(stats_verdict_to_string(verdict))) < 0)
                return -ENOMEM;
        if (args->have_target &&
            json_add(o, "target", json_object_new_string(target_result_to_string(target))) < 0)
                return -ENOMEM;
        if (json_add_full(o, "more_pairs", have_more ? json_object_new_uint64(more) : NULL, true) < 0)
                return -ENOMEM;

        *ret = TAKE_PTR(o);
        return 0;
}

int main(int argc, char *argv[]) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_(freep) double *a = NULL, *b = NULL;
        Args args = {.margin = 0.02};
        size_t n = 0;
        int r;

        r = parse_args(argc, argv, &args);
        if (r <= 0)
                return r < 0 ? 2 : 0;

        r = read_pairs(stdin, &a, &b, &n);
        if (r == -EINVAL)
                return 2;
        if (r < 0) {
                fprintf(stderr, "steerd-ratio-ci: failed to read the pairs: %s\n", strerror(-r));
                return 1;
        }

        r = build_json(&args, a, b, n, &o);
        if (r < 0) {
                fprintf(stderr, "steerd-ratio-ci: failed to compute the estimate: %s\n", strerror(-r));
                return 1;
        }

        if (puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) < 0 || fflush(stdout) != 0) {
                fprintf(stderr, "steerd-ratio-ci: failed to write the result: %m\n");
                return 1;
        }
        return 0;
}
