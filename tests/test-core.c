/* SPDX-License-Identifier: MIT */
/* The small pieces: cpulists, the SIS_UTIL formula, smoothing, the snapshot's
 * JSON round trip. */
#include <math.h>

#include "test-helpers.h"

#include "cpuset.h"
#include "ewma.h"
#include "log.h"
#include "plan.h"
#include "random.h"
#include "settings.h"
#include "snapshot-json.h"
#include "snapshot.h"

static void test_cpuset(void **state) {
        static const struct {
                const char *in, *out;
        } good[] = {
                {"", ""},         {"0", "0"},        {"0-3", "0-3"},     {"0-3,8-11", "0-3,8-11"},
                {"3,1,2", "1-3"}, {" 0-1\n", "0-1"}, {"5,7,9", "5,7,9"}, {"1000-1003", "1000-1003"},
        };
        static const char *const bad[] = {"-1", "a", "0-", "3-1", "1,,2", "1;2", "0-3,", "99999999"};

        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                CpuSet set = NULL;
                char *s = NULL;
                assert_int_equal(cpuset_parse(good[i].in, &set), 0);
                assert_int_equal(cpuset_format(set, &s), 0);
                assert_string_equal(s, good[i].out);
                free(s);
                hwloc_bitmap_free(set);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                CpuSet set = NULL;
                if (cpuset_parse(bad[i], &set) != -EINVAL)
                        fail_msg("'%s' was accepted", bad[i]);
                assert_null(set);
        }
}

/* steerd's own list writer (cpuset.c) against hwloc's, which it replaced
 * for speed: the same text for random sets of every density, sets past
 * 1,024 CPUs, infinite ones ("8-") and the empty one; and
 * cpuset_to_string()'s truncation at every buffer size. */
static void test_cpuset_format_as_hwloc(void **state) {
        uint64_t seed = 0x5eed;

        for (unsigned round = 0; round < 3000; round++) {
                _cleanup_cpuset_ CpuSet set = hwloc_bitmap_alloc();
                unsigned span = 1 + (unsigned) (splitmix64(&seed) % 2100),
                         density = (unsigned) (splitmix64(&seed) % 101);
                char *mine = NULL, *theirs = NULL, small[CPUSET_STRLEN];

                assert_non_null(set);
                for (unsigned c = 0; c < span; c++)
                        if (splitmix64(&seed) % 100 < density)
                                hwloc_bitmap_set(set, c);
                if (round % 7 == 0)
                        hwloc_bitmap_set_range(set, span, -1);
                assert_int_equal(cpuset_format(set, &mine), 0);
                assert_true(hwloc_bitmap_list_asprintf(&theirs, set) >= 0);
                assert_string_equal(mine, theirs);

                size_t size = (size_t) (splitmix64(&seed) % 40);
                char want[64];
                cpuset_to_string(set, small, MAX(size, (size_t) 1));
                if (hwloc_bitmap_iszero(set))
                        snprintf(want, sizeof(want), "(none)");
                else {
                        snprintf(want, MAX(size, (size_t) 1), "%s", theirs);
                        if (strlen(theirs) >= MAX(size, (size_t) 1) && size > 4)
                                strcpy(want + size - 4, "...");
                }
                want[MAX(size, (size_t) 1) - 1] = '\0';
                assert_string_equal(small, want);
                free(mine);
                free(theirs);
        }
}

/* DESIGN.md 1.1 with imbalance_pct 117: the kernel's integer arithmetic. */
static void test_sis_formula(void **state) {
        /* 0%: the whole LLC is scanned. */
        assert_int_equal(sis_nr_idle_scan(0, 16, 117), 16);
        assert_int_equal(sis_nr_idle_scan(0, 2, 117), 2);
        /* 50%: x = 512, x^2 p^2 / (10000*1024) = 350, y = 674, 16*674/1024 = 10. */
        assert_int_equal(sis_nr_idle_scan(512, 16, 117), 10);
        assert_int_equal(sis_nr_idle_scan(512, 128, 117), 84);
        /* 85.5% = 1024*100/117: the scan is gone. */
        assert_int_equal(sis_nr_idle_scan(1024.0 * 100 / 117, 16, 117), 0);
        assert_int_equal(sis_nr_idle_scan(1024.0 * 100 / 117, 256, 117), 0);
        /* Just below 85.5% a large LLC still scans a CPU or two. */
        assert_true(sis_nr_idle_scan(860, 256, 117) > 0);
        /* 100% and beyond. */
        assert_int_equal(sis_nr_idle_scan(1024, 16, 117), 0);
        assert_int_equal(sis_nr_idle_scan(5000, 16, 117), 0);
        /* Monotonic in x. */
        unsigned prev = 64;
        for (double x = 0; x <= 1024; x += 8) {
                unsigned n = sis_nr_idle_scan(x, 64, 117);
                assert_true(n <= prev);
                prev = n;
        }
}

static void test_ewma(void **state) {
        assert_true(ewma_alpha(100000, 0) == 1.0);
        assert_true(fabs(ewma_alpha(200000, 200000) - 0.5) < 1e-12);
        /* Two periods of half a half-life each are one half-life. */
        double a = ewma_alpha(100000, 200000);
        double v = ewma_update(ewma_update(1024, 0, a), 0, a);
        assert_true(fabs(v - 512) < 1e-9);
}

static Snapshot *make_snapshot(void) {
        Snapshot *s = calloc(1, sizeof(Snapshot));
        assert_non_null(s);
        s->time_us = 123456789;
        s->period_us = 100000;
        s->source = RUNNABLE_SOURCE_THREADS;
        s->n_cpus = 3;
        s->cpus = calloc(3, sizeof(CpuSample));
        s->cpus[0] = (CpuSample){0, 0, 0, true, 512.25, 700, 700};
        s->cpus[1] = (CpuSample){1, 0, 0, true, 1024, 1500, 1024};
        s->cpus[2] = (CpuSample){4, -1, -1, false, 0, 0, 0};
        s->n_llcs = 1;
        s->llcs = calloc(1, sizeof(LlcSample));
        s->llcs[0] = (LlcSample){.id = 0,
                                 .weight = 2,
                                 .util = 768.1,
                                 .boosted = 862,
                                 .nr_idle_scan = 0,
                                 .overloaded = true,
                                 .package = -1};
        assert_int_equal(cpuset_parse("0-1,4", &s->llcs[0].cpus), 0);
        s->psi_some_avg10 = 4.88;
        s->n_cgroups = 1;
        s->cgroups = calloc(1, sizeof(CgroupSample));
        CgroupSample *c = &s->cgroups[0];
        c->path = strdup("/bench \"1\"");
        c->policy = CGROUP_POLICY_BALANCED;
        assert_int_equal(cpuset_parse("0-1", &c->allowed), 0);
        assert_int_equal(cpuset_parse("1", &c->cpus), 0);
        c->n_threads = 1;
        c->threads = calloc(1, sizeof(ThreadSample));
        c->threads[0] = (ThreadSample){.tid = 4242,
                                       .tgid = 4200,
                                       .starttime = 99,
                                       .cpu = 1,
                                       .util = 300,
                                       .wait = 12.5,
                                       .nr_migrations = 7,
                                       .wake_unknown = true};
        assert_int_equal(cpuset_parse("0-1", &c->threads[0].allowed), 0);
        return s;
}

static void test_json_round_trip(void **state) {
        Snapshot *s = make_snapshot(), *back = NULL;
        char *a = NULL, *b = NULL;

        assert_int_equal(snapshot_to_json_string(s, &a), 0);
        assert_int_equal(snapshot_from_json_string(a, "test", 1, &back), 0);
        assert_int_equal(snapshot_to_json_string(back, &b), 0);
        assert_string_equal(a, b);
        assert_int_equal(back->n_cpus, 3);
        assert_int_equal(back->cpus[2].cpu, 4);
        assert_false(back->cpus[2].online);
        assert_true(fabs(back->cpus[0].util - 512.2) < 0.11);
        assert_string_equal(back->cgroups[0].path, "/bench \"1\"");
        assert_int_equal(back->cgroups[0].threads[0].tid, 4242);
        assert_int_equal(back->cgroups[0].threads[0].tgid, 4200);
        assert_true(back->cgroups[0].threads[0].wake_unknown);
        assert_int_equal(back->cgroups[0].policy, CGROUP_POLICY_BALANCED);
        /* The DESIGN.md section 6 fields. */
        assert_non_null(strstr(a, "\"source\": { \"runnable\": \"threads\""));
        assert_non_null(strstr(a, "\"nr_idle_scan\": 0"));
        assert_non_null(strstr(a, "\"cpus\": \"0-1,4\""));
        free(a);
        free(b);
        snapshot_free(back);
        snapshot_free(s);
}

static void test_json_malformed(void **state) {
        static const char *const bad[] = {
                "", "[]", "{\"time_us\": 1}", "{\"time_us\": -5, \"period_us\": 1}", "{not json",
        };
        Snapshot *s = make_snapshot(), *back = NULL;
        char *good = NULL;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_int_equal(snapshot_from_json_string(bad[i], "test", (unsigned) i + 1, &back),
                                 -EBADMSG);
                assert_null(back);
        }
        /* Each field mangled in turn. */
        assert_int_equal(snapshot_to_json_string(s, &good), 0);
        static const struct {
                const char *from, *to;
        } edits[] = {
                {"\"cpus\": \"0-1,4\"", "\"cpus\": \"0-x\""},
                {"\"runnable\": \"threads\"", "\"runnable\": \"magic\""},
                {"\"policy\": \"balanced\"", "\"policy\": \"fast\""},
                {"\"tid\": 4242", "\"tid\": -1"},
                {"\"tgid\": 4200", "\"tgid\": 0"},
                {"\"util\": 300.0", "\"util\": \"high\""},
                {"\"cpu\": 4,", "\"cpu\": 0,"},
                {"\"llc\": 0,", "\"llc\": 7,"},
        };
        for (size_t i = 0; i < ELEMENTSOF(edits); i++) {
                char *p = strstr(good, edits[i].from);
                if (!p)
                        fail_msg("edit %zu: '%s' not in %s", i, edits[i].from, good);
                char *m = NULL;
                assert_true(asprintf(&m, "%.*s%s%s", (int) (p - good), good, edits[i].to,
                                     p + strlen(edits[i].from)) > 0);
                if (snapshot_from_json_string(m, "test", 1, &back) != -EBADMSG)
                        fail_msg("edit %zu accepted: %s", i, m);
                free(m);
        }
        free(good);
        snapshot_free(s);
}

static int evaluated;

static int count_evaluation(void) {
        return ++evaluated;
}

/* log_debug() costs a branch when debug is off: its arguments (a cpuset
 * string per sticky action, say) are not evaluated. */
static void test_log_debug_lazy(void **state) {
        assert_int_equal(unsetenv("STEERD_DEBUG"), 0);
        assert_int_equal(setenv("STEERD_LOG_STDERR", "1", 1), 0);
        log_setup();
        assert_false(log_debug_enabled());
        evaluated = 0;
        log_debug("never shown %d", count_evaluation());
        assert_int_equal(evaluated, 0);

        assert_int_equal(setenv("STEERD_DEBUG", "1", 1), 0);
        log_setup();
        assert_true(log_debug_enabled());
        log_debug("shown once: %d", count_evaluation());
        assert_int_equal(evaluated, 1);

        /* Read once: changing the environment alone changes nothing. */
        assert_int_equal(setenv("STEERD_DEBUG", "0", 1), 0);
        assert_true(log_debug_enabled());
        log_setup();
        assert_false(log_debug_enabled());
        assert_int_equal(unsetenv("STEERD_DEBUG"), 0);
        log_setup();
}

/* One string table per enum, both ways, out of range and unknown refused. */
static void test_string_tables(void **state) {
        for (Mode m = 0; m < _MODE_MAX; m++)
                assert_int_equal(mode_from_string(mode_to_string(m)), m);
        assert_null(mode_to_string(_MODE_MAX));
        assert_null(mode_to_string((Mode) -1));
        assert_int_equal(mode_from_string("fast"), -EINVAL);
        assert_int_equal(mode_from_string(NULL), -EINVAL);
        for (ActionPolicy p = 0; p < _ACTION_POLICY_MAX; p++)
                assert_int_equal(action_policy_from_string(action_policy_to_string(p)), p);
        assert_int_equal(cgroup_policy_from_string("latency"), CGROUP_POLICY_LATENCY);
        assert_int_equal(runnable_source_from_string("debugfs"), RUNNABLE_SOURCE_DEBUGFS);
        assert_string_equal(sticky_scope_to_string(STICKY_SCOPE_CPU), "cpu");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cpuset),          cmocka_unit_test(test_cpuset_format_as_hwloc),
                cmocka_unit_test(test_sis_formula),     cmocka_unit_test(test_ewma),
                cmocka_unit_test(test_json_round_trip), cmocka_unit_test(test_json_malformed),
                cmocka_unit_test(test_log_debug_lazy),  cmocka_unit_test(test_string_tables),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
