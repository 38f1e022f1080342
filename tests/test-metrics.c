/* SPDX-License-Identifier: MIT */
#include <sys/stat.h>

#include "test-helpers.h"

#include "exposition.h"
#include "metrics.h"

static void test_render_and_write(void **state) {
        LlcSample llcs[2] = {
                {.id = 0,
                 .weight = 8,
                 .util = 900.5,
                 .boosted = 1000,
                 .nr_idle_scan = 0,
                 .overloaded = true},
                {.id = 1, .weight = 8, .util = 100, .boosted = 120, .nr_idle_scan = 7, .overloaded = false},
        };
        Snapshot s = {.llcs = llcs, .n_llcs = 2, .psi_some_avg10 = 3.5};
        MetricsCounters c = {.ticks = 10,
                             .applied = 4,
                             .kept = 2,
                             .reverted = 1,
                             .restored = 1,
                             .dropped = 0,
                             .opted_in_cgroups = 3,
                             .mode = "latency"};
        char *text = NULL;

        assert_int_equal(metrics_render(&s, &c, &text), 0);
        assert_non_null(strstr(text, "steerd_llc_util{llc=\"0\"} 900.5\n"));
        assert_non_null(strstr(text, "steerd_llc_overloaded{llc=\"0\"} 1\n"));
        assert_non_null(strstr(text, "steerd_llc_overloaded{llc=\"1\"} 0\n"));
        assert_non_null(strstr(text, "steerd_llc_nr_idle_scan{llc=\"1\"} 7\n"));
        assert_non_null(strstr(text, "steerd_llc_boosted{llc=\"1\"} 120.0\n"));
        assert_non_null(strstr(
                text, "# TYPE steerd_actions_reverted_total counter\nsteerd_actions_reverted_total 1\n"));
        assert_non_null(strstr(text, "steerd_mode{mode=\"latency\"} 1\n"));
        assert_non_null(strstr(
                text, "# TYPE steerd_actions_dropped_total counter\nsteerd_actions_dropped_total 0\n"));
        /* Every sample line belongs to a TYPE'd family. */
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
                if (line[0] != '#')
                        assert_non_null(strstr(line, "steerd_"));
        free(text);

        char *dir = test_mkdtemp(), *path = NULL;
        assert_true(asprintf(&path, "%s/steerd.prom", dir) > 0);
        assert_int_equal(metrics_write(path, &s, &c), 0);
        assert_int_equal(metrics_write(path, NULL, &c), 0); /* before the first snapshot */
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_true(st.st_size > 100);
        assert_int_equal(metrics_write("/nonexistent/dir/steerd.prom", &s, &c), -ENOENT);
        free(path);
        test_rm_rf(dir);
        free(dir);
}

/* The trial families, per cgroup: a cgroup without an estimate has no
 * ratio, only its verdict; label values are escaped, and the exposition
 * parser steerd's trials use reads the file back. */
static void test_trials(void **state) {
        MetricsTrial trials[] = {
                {.cgroup = "/system.slice/app.service",
                 .verdict = "better",
                 .has_estimate = true,
                 .ratio = 0.88,
                 .ci_low = 0.84,
                 .ci_high = 0.92},
                {.cgroup = "/odd\"name", .verdict = "can't tell", .running = true},
        };
        MetricsCounters c = {.mode = "latency", .trials = trials, .n_trials = 2};
        _cleanup_(freep) char *text = NULL;
        MetricSpec spec = {};
        MetricReading r = {};

        assert_int_equal(metrics_render(NULL, &c, &text), 0);
        assert_non_null(
                strstr(text, "steerd_trial_effect_ratio{cgroup=\"/system.slice/app.service\"} 0.88\n"));
        assert_non_null(strstr(
                text, "steerd_trial_effect_ratio_ci_low{cgroup=\"/system.slice/app.service\"} 0.84\n"));
        assert_non_null(strstr(
                text, "steerd_trial_effect_ratio_ci_high{cgroup=\"/system.slice/app.service\"} 0.92\n"));
        assert_null(strstr(text, "steerd_trial_effect_ratio{cgroup=\"/odd"));
        assert_non_null(strstr(
                text,
                "steerd_trial_verdict{cgroup=\"/odd\\\"name\",verdict=\"cant_tell\",running=\"yes\"} 1\n"));
        assert_int_equal(
                metric_spec_parse(
                        "/x#steerd_trial_effect_ratio_ci_high{cgroup=\"/system.slice/app.service\"}", &spec,
                        NULL),
                0);
        assert_int_equal(exposition_read(text, &spec, &r, NULL), 0);
        assert_int_equal(r.type, METRIC_TYPE_GAUGE);
        assert_true(r.value == 0.92);
        metric_reading_done(&r);
        metric_spec_done(&spec);
        assert_int_equal(metric_spec_parse("/x#steerd_trial_verdict{cgroup=\"/odd\\\"name\"}", &spec, NULL),
                         0);
        assert_int_equal(exposition_read(text, &spec, &r, NULL), 0);
        assert_int_equal(r.n_matched, 1);
        metric_reading_done(&r);
        metric_spec_done(&spec);
}

int main(void) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_render_and_write),
                                           cmocka_unit_test(test_trials)};
        return cmocka_run_group_tests(tests, NULL, NULL);
}
