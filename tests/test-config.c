/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "test-helpers.h"

#include "config.h"

static char *write_conf(const char *dir, const char *name, const char *text) {
        char *p;
        test_write_file(dir, name, text);
        assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
        return p;
}

static void test_defaults(void **state) {
        Config *c = NULL;
        assert_int_equal(config_load(NULL, true, &c), 0);
        assert_int_equal(c->settings.mode, MODE_OBSERVE);
        assert_int_equal(c->settings.sample_period_ms, 100);
        assert_int_equal(c->settings.smoothing_half_life_ms, 200);
        assert_int_equal(c->settings.imbalance_percent, 117);
        assert_int_equal(c->settings.min_llc_cpus, 2);
        assert_true(c->settings.window_headroom == 0.25);
        assert_int_equal(c->n_opt_ins, 0);
        config_free(c);
}

static void test_shipped_config_parses(void **state) {
        /* conf/steerd.conf documents every key with its default: loading it
         * must give exactly the built-in defaults. */
        Config *c = NULL, *d = NULL;
        assert_int_equal(config_load(TEST_SOURCE_DIR "/../conf/steerd.conf", false, &c), 0);
        assert_int_equal(config_load(NULL, true, &d), 0);
        assert_memory_equal(&c->settings, &d->settings, sizeof(Settings));
        config_free(c);
        config_free(d);
}

static void test_full_file_and_dropins(void **state) {
        char *dir = test_mkdtemp();
        char *p = write_conf(dir, "steerd.conf",
                             "# comment\n"
                             "[Manager]\n"
                             "Mode=latency\n"
                             "SamplePeriodMs=50\n"
                             "CountSteal=no\n"
                             "[Policy]\n"
                             "WindowHeadroom=50%\n"
                             "StickyIdlePercent=3.5\n"
                             "StickyScope=cpu\n"
                             "StickyMinWakeups=2.5\n"
                             "StickyMaxPinsPerTick=4\n"
                             "StickyPairWakeups=250\n"
                             "[OptIn]\n"
                             "/bench1=latency\n"
                             "/system.slice/app.service=balanced\n"
                             "/system.slice/docker-*.scope=latency\n"
                             "/kubepods.slice/**/cri-containerd-*.scope=latency\n"
                             "nginx.service=balanced\n"
                             "[Manager]\n"
                             "RescanIntervalMs=1s\n");
        test_write_file(dir, "steerd.conf.d/10-a.conf",
                        "[Manager]\nMode=balanced\n[OptIn]\n/bench1=balanced\n");
        test_write_file(dir, "steerd.conf.d/20-b.conf",
                        "[Policy]\nWindowHeadroom=0.1\n[OptIn]\nnginx.service=latency\n[Manager]"
                        "\nRescanIntervalMs=2s\n");
        test_write_file(dir, "steerd.conf.d/ignored.txt", "garbage that is not read\n");
        Config *c = NULL;

        assert_int_equal(config_load(p, false, &c), 0);
        assert_int_equal(c->settings.mode, MODE_BALANCED);
        assert_int_equal(c->settings.sample_period_ms, 50);
        assert_false(c->settings.count_steal);
        assert_true(c->settings.window_headroom == 0.1);
        assert_true(c->settings.sticky_idle_percent == 3.5);
        assert_int_equal(c->settings.sticky_scope, STICKY_SCOPE_CPU);
        assert_true(c->settings.sticky_min_wakeups == 2.5);
        assert_true(c->settings.sticky_pair_wakeups == 250);
        assert_int_equal(c->settings.sticky_max_pins, 4);
        assert_int_equal(c->n_opt_ins, 5);
        assert_string_equal(c->opt_ins[0].cgroup, "/bench1");
        assert_int_equal(c->opt_ins[0].policy, CGROUP_POLICY_BALANCED);
        assert_int_equal(c->opt_ins[1].policy, CGROUP_POLICY_BALANCED);
        /* Globs and unit names are rules, kept as written; a drop-in overrides one too. */
        assert_string_equal(c->opt_ins[2].cgroup, "/system.slice/docker-*.scope");
        assert_string_equal(c->opt_ins[3].cgroup, "/kubepods.slice/**/cri-containerd-*.scope");
        assert_string_equal(c->opt_ins[4].cgroup, "nginx.service");
        assert_int_equal(c->opt_ins[4].policy, CGROUP_POLICY_LATENCY);
        /* Each rule knows the line that set it last, for the checks that
         * need the cgroup mounts (the daemon's, with file:line). */
        char *where = NULL;
        assert_true(asprintf(&where, "%s:15", p) > 0);
        assert_string_equal(c->opt_ins[1].origin, where);
        free(where);
        assert_non_null(strstr(c->opt_ins[0].origin, "steerd.conf.d/10-a.conf:4"));
        assert_non_null(strstr(c->opt_ins[4].origin, "steerd.conf.d/20-b.conf:4"));
        assert_int_equal(c->settings.rescan_interval_ms, 2000);
        config_free(c);
        free(p);
        test_rm_rf(dir);
        free(dir);
}

/* Each bad file is refused whole, and the caller's config is untouched. */
static void test_bad_files(void **state) {
        static const struct {
                const char *text;
                const char *why;
        } cases[] = {
                {"[Manager]\nMode=turbo\n", "unknown mode"},
                {"[Manager]\nSamplePeriodMs=abc\n", "not a number"},
                {"[Manager]\nSamplePeriodMs=5\n", "below range"},
                {"[Manager]\nSamplePeriodMs=100.5\n", "not whole"},
                {"[Policy]\nNoSuchKey=1\n", "unknown key"},
                {"[Nope]\nA=1\n", "unknown section"},
                {"[Policy]\nStickyIdlePercent=-1\n", "negative"},
                {"[Policy]\nWindowHeadroom=\n", "empty"},
                {"[OptIn]\nrelative/path=latency\n", "relative cgroup"},
                {"[OptIn]\nnginx=latency\n", "a name that is no unit"},
                {"[OptIn]\ngetty@.service=latency\n", "a template unit"},
                {"[OptIn]\n/a/../b*=latency\n", "dot-dot in a glob"},
                {"[Manager]\nRescanIntervalMs=10ms\n", "rescan below range"},
                {"[OptIn]\n/a/../b=latency\n", "dot-dot"},
                {"[OptIn]\n/a//b=latency\n", "an empty component"},
                {"[OptIn]\n/a/=latency\n", "a trailing slash"},
                {"[OptIn]\n/a/./b=latency\n", "a dot component"},
                {"[OptIn]\n/a=fast\n", "unknown policy"},
                {"[Manager]\nthis line has no equals sign\n", "syntax"},
                {"[Manager]\nCountSteal=maybe\n", "not a boolean"},
                {"[Manager]\nEvaluate=yes\n", "Evaluate is auto or no"},
                {"[Manager]\nHarmPercent=0\n", "no harm is no threshold"},
                {"[Manager]\nEvaluateDuty=1\n", "a duty of one block has no steered block"},
                {"[Manager]\nEvaluateBlockMs=10ms\n", "blocks too short"},
                {"[OptIn]\n/a=latency evaluate=maybe\n", "evaluate is auto or no"},
                {"[OptIn]\n/a=latency fast=yes\n", "an unknown option"},
                {"[OptIn]\n/a=latency evaluate=\n", "an empty evaluate"},
        };
        char *dir = test_mkdtemp();

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Config *c = NULL;
                char *p = write_conf(dir, "bad.conf", cases[i].text);
                int r = config_load(p, false, &c);
                if (r != -EBADMSG)
                        fail_msg("case %zu (%s): got %d", i, cases[i].why, r);
                assert_null(c);
                free(p);
        }
        test_rm_rf(dir);
        free(dir);
}

/* Time spans as systemd's units write them, and plain milliseconds. */
static void test_time_spans(void **state) {
        static const struct {
                const char *value;
                uint64_t ms;
        } good[] = {
                {"100", 100},        {"100ms", 100}, {"1s", 1000},      {"1.5s", 1500}, {"2min", 120000},
                {"1min 30s", 90000}, {"1 s", 1000},  {"250 msec", 250}, {"2000us", 2},
        };
        static const char *const bad[] = {"1x",      "s", "-1s", "1s 500", "100.5",
                                          "1.0005s", "",  "1ss", "1500us"};
        char *dir = test_mkdtemp();

        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                Config *c = NULL;
                char text[128];
                snprintf(text, sizeof(text), "[Policy]\nGuardWindowMs=%s\n", good[i].value);
                char *p = write_conf(dir, "t.conf", text);
                if (config_load(p, false, &c) != 0)
                        fail_msg("'%s' refused", good[i].value);
                if (c->settings.guard_window_ms != good[i].ms)
                        fail_msg("'%s' -> %llu ms, expected %llu", good[i].value,
                                 (unsigned long long) c->settings.guard_window_ms,
                                 (unsigned long long) good[i].ms);
                config_free(c);
                free(p);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                Config *c = NULL;
                char text[128];
                snprintf(text, sizeof(text), "[Policy]\nGuardWindowMs=%s\n", bad[i]);
                char *p = write_conf(dir, "t.conf", text);
                if (config_load(p, false, &c) != -EBADMSG)
                        fail_msg("'%s' accepted", bad[i]);
                assert_null(c);
                free(p);
        }
        test_rm_rf(dir);
        free(dir);
}

/* A reload shows every bad line at once, not only the first. */
static void test_every_bad_line(void **state) {
        char *dir = test_mkdtemp();
        char *p = write_conf(dir, "steerd.conf",
                             "[Manager]\nMode=turbo\nno equals here\nSamplePeriodMs=1\n[Policy]\nNope=1\n"
                             "also not ini\n");
        Config *c = NULL;
        _cleanup_(freep) char *why = NULL;
        assert_int_equal(config_load_full(p, false, &c, &why), -EBADMSG);
        assert_null(c);
        assert_non_null(why);
        for (unsigned line = 2; line <= 7; line++) {
                if (line == 5)
                        continue; /* [Policy] is fine */
                char needle[32];
                snprintf(needle, sizeof(needle), "steerd.conf:%u: ", line);
                if (!strstr(why, needle))
                        fail_msg("line %u missing from: %s", line, why);
        }
        free(p);
        test_rm_rf(dir);
        free(dir);
}

static void test_bad_dropin_refuses_all(void **state) {
        char *dir = test_mkdtemp();
        char *p = write_conf(dir, "steerd.conf", "[Manager]\nMode=latency\n");
        test_write_file(dir, "steerd.conf.d/50-bad.conf", "[Manager]\n\nMode=nope\n");
        Config *c = NULL;
        assert_int_equal(config_load(p, false, &c), -EBADMSG);
        assert_null(c);
        free(p);
        test_rm_rf(dir);
        free(dir);
}

static void test_missing(void **state) {
        Config *c = NULL;
        assert_int_equal(config_load("/nonexistent/steerd.conf", false, &c), -ENOENT);
        assert_int_equal(config_load("/nonexistent/steerd.conf", true, &c), 0);
        assert_int_equal(c->settings.mode, MODE_OBSERVE);
        config_free(c);
}

/* Evaluate=: global, and per [OptIn] line after the policy. */
static void test_evaluate(void **state) {
        char *dir = test_mkdtemp();
        char *p = write_conf(dir, "e.conf",
                             "[Manager]\nEvaluate=auto\nHarmPercent=5\nEvaluateDuty=4\nEvaluateBlockMs=10s\n"
                             "EvaluateRetryMs=2h\n[OptIn]\n/a=latency\n/b=latency evaluate=no\n"
                             "/c=balanced, evaluate=auto\n");
        Config *c = NULL;

        assert_int_equal(config_load(p, false, &c), 0);
        assert_true(c->settings.evaluate);
        assert_true(c->settings.harm_percent == 5);
        assert_int_equal(c->settings.evaluate_duty, 4);
        assert_int_equal(c->settings.evaluate_block_ms, 10000);
        assert_int_equal(c->settings.evaluate_retry_ms, 2 * 3600 * 1000);
        assert_int_equal(c->n_opt_ins, 3);
        assert_int_equal(c->opt_ins[0].evaluate, OPTIN_EVALUATE_INHERIT);
        assert_int_equal(c->opt_ins[1].evaluate, OPTIN_EVALUATE_NO);
        assert_int_equal(c->opt_ins[2].evaluate, OPTIN_EVALUATE_AUTO);
        assert_int_equal(c->opt_ins[2].policy, CGROUP_POLICY_BALANCED);
        config_free(c);
        free(p);

        /* The defaults: off, 2%, one block in 8 of 30 s, 6 h. */
        p = write_conf(dir, "d.conf", "[Manager]\n");
        assert_int_equal(config_load(p, false, &c), 0);
        assert_false(c->settings.evaluate);
        assert_true(c->settings.harm_percent == 2);
        assert_int_equal(c->settings.evaluate_duty, 8);
        assert_int_equal(c->settings.evaluate_block_ms, 30000);
        assert_int_equal(c->settings.evaluate_retry_ms, 6 * 3600 * 1000);
        config_free(c);
        free(p);
        test_rm_rf(dir);
        free(dir);
}

static void test_cgroup_paths(void **state) {
        assert_int_equal(optin_entry_validate_cgroup("/bench1"), 0);
        assert_int_equal(optin_entry_validate_cgroup("/sys/fs/cgroup/cpuset/bench1"), 0);
        assert_int_equal(optin_entry_validate_cgroup("/"), 0);
        assert_int_equal(optin_entry_validate_cgroup("bench1"), -EINVAL);
        assert_int_equal(optin_entry_validate_cgroup("/a/.."), -EINVAL);
        assert_int_equal(optin_entry_validate_cgroup("/a/./b"), -EINVAL);
        assert_int_equal(optin_entry_validate_cgroup("/a\nb"), -EINVAL);
        assert_int_equal(optin_entry_validate_cgroup("/..."), 0); /* a legal, if odd, name */
        char big[5000];
        memset(big, 'a', sizeof(big));
        big[0] = '/';
        big[sizeof(big) - 1] = '\0';
        assert_int_equal(optin_entry_validate_cgroup(big), -ENAMETOOLONG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_shipped_config_parses),
                cmocka_unit_test(test_full_file_and_dropins),
                cmocka_unit_test(test_bad_files),
                cmocka_unit_test(test_time_spans),
                cmocka_unit_test(test_every_bad_line),
                cmocka_unit_test(test_bad_dropin_refuses_all),
                cmocka_unit_test(test_missing),
                cmocka_unit_test(test_cgroup_paths),
                cmocka_unit_test(test_evaluate),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
