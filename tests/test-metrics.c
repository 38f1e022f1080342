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

/* Every sample's family has a HELP and a TYPE line before it, and counters end in _total. */
static void assert_families_declared(const char *text) {
        _cleanup_(freep) char *copy = strdup(text);
        char *save = NULL, types[8192] = "";

        assert_non_null(copy);
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char name[256];
                if (sscanf(line, "# TYPE %255s", name) == 1) {
                        const char *type = line + strlen("# TYPE ") + strlen(name) + 1;
                        size_t len = strlen(name);
                        if (streq(type, "counter"))
                                assert_true(len > 6 && streq(name + len - 6, "_total"));
                        assert_true(strlen(types) + strlen(name) + 3 < sizeof(types));
                        strcat(types, " ");
                        strcat(types, name);
                        strcat(types, " ");
                        continue;
                }
                if (line[0] == '#')
                        continue;
                size_t n = strcspn(line, "{ ");
                assert_true(n > 0 && n < sizeof(name) - 2);
                snprintf(name, sizeof(name), " %.*s ", (int) n, line);
                if (!strstr(types, name))
                        fail_msg("sample before its TYPE: %s", line);
        }
}

static void test_cgroups_and_self(void **state) {
        MetricsCgroup g[] = {
                {.cgroup = "/a.slice/x.service",
                 .actions = 7,
                 .reverts = 1,
                 .givebacks = 2,
                 .window_cpus = 4,
                 .pinned_threads = 3,
                 .steering = true},
                {.cgroup = "/b.slice", .actions = 1, .steering = false},
                {.cgroup = "/c.slice",
                 .actions = 5,
                 .reverts = 2,
                 .givebacks = 1,
                 .window_cpus = 2,
                 .pinned_threads = 1,
                 .steering = true},
                {.cgroup = "/d.slice", .actions = 10, .window_cpus = 8, .steering = false},
        };
        MetricsCounters c = {.mode = "latency",
                             .cgroups = g,
                             .n_cgroups = 4,
                             .cgroups_limit = 2,
                             .givebacks_failed = 3,
                             .givebacks_pending = 1,
                             .cpu_seconds = 12.5,
                             .rss_bytes = 4096 * 1000,
                             .write_time = 1765000000.25};
        _cleanup_(freep) char *text = NULL;
        MetricSpec spec = {};
        MetricReading r = {};

        assert_int_equal(metrics_render(NULL, &c, &text), 0);
        assert_families_declared(text);
        assert_non_null(strstr(text, "steerd_cgroup_actions_total{cgroup=\"/a.slice/x.service\"} 7\n"));
        assert_non_null(strstr(text, "steerd_cgroup_reverts_total{cgroup=\"/a.slice/x.service\"} 1\n"));
        assert_non_null(strstr(text, "steerd_cgroup_window_cpus{cgroup=\"/a.slice/x.service\"} 4\n"));
        assert_non_null(strstr(text, "steerd_cgroup_pinned_threads{cgroup=\"/a.slice/x.service\"} 3\n"));
        assert_non_null(strstr(text, "steerd_cgroup_steering{cgroup=\"/b.slice\"} 0\n"));
        /* The two beyond the limit, summed; no series of their own. */
        assert_null(strstr(text, "cgroup=\"/c.slice\""));
        assert_null(strstr(text, "cgroup=\"/d.slice\""));
        assert_non_null(strstr(text, "steerd_cgroup_actions_total{cgroup=\"_other\"} 15\n"));
        assert_non_null(strstr(text, "steerd_cgroup_window_cpus{cgroup=\"_other\"} 10\n"));
        assert_non_null(strstr(text, "steerd_cgroup_steering{cgroup=\"_other\"} 1\n"));
        assert_non_null(strstr(text, "steerd_cgroups_aggregated 2\n"));
        assert_non_null(strstr(text, "steerd_givebacks_failed_total 3\n"));
        assert_non_null(strstr(text, "steerd_givebacks_pending 1\n"));
        assert_non_null(strstr(text, "steerd_cpu_seconds_total 12.5"));
        assert_non_null(strstr(text, "steerd_resident_memory_bytes 4096000\n"));
        assert_non_null(strstr(text, "steerd_last_write_timestamp_seconds 1765000000.250\n"));

        /* What a trial's --metric or a scraper reads back: the counter, by label. */
        assert_int_equal(metric_spec_parse("/x#steerd_cgroup_actions_total{cgroup=\"_other\"}", &spec, NULL),
                         0);
        assert_int_equal(exposition_read(text, &spec, &r, NULL), 0);
        assert_int_equal(r.type, METRIC_TYPE_COUNTER);
        assert_true(r.value == 15);
        metric_reading_done(&r);
        metric_spec_done(&spec);

        /* Within the limit: every cgroup its own series, no _other. */
        free(text);
        text = NULL;
        c.cgroups_limit = 64;
        assert_int_equal(metrics_render(NULL, &c, &text), 0);
        assert_families_declared(text);
        assert_non_null(strstr(text, "steerd_cgroup_actions_total{cgroup=\"/d.slice\"} 10\n"));
        assert_null(strstr(text, "_other\"}"));
        assert_non_null(strstr(text, "steerd_cgroups_aggregated 0\n"));

        /* Unknown self figures are left out, not written as 0. */
        free(text);
        text = NULL;
        c.cpu_seconds = -1;
        c.rss_bytes = 0;
        c.write_time = 0;
        c.cgroups_limit = 0;
        assert_int_equal(metrics_render(NULL, &c, &text), 0);
        assert_families_declared(text);
        assert_null(strstr(text, "steerd_cpu_seconds_total"));
        assert_null(strstr(text, "steerd_resident_memory_bytes"));
        assert_null(strstr(text, "steerd_last_write_timestamp_seconds"));
        assert_non_null(strstr(text, "steerd_cgroup_actions_total{cgroup=\"_other\"} 23\n"));
        /* Two of the four are steered: a count, not a yes or no. */
        assert_non_null(strstr(text, "steerd_cgroup_steering{cgroup=\"_other\"} 2\n"));
        assert_non_null(strstr(text, "steerd_cgroups_aggregated 4\n"));
}

int main(void) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_render_and_write),
                                           cmocka_unit_test(test_trials),
                                           cmocka_unit_test(test_cgroups_and_self)};
        return cmocka_run_group_tests(tests, NULL, NULL);
}
