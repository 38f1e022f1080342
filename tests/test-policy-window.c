/* SPDX-License-Identifier: MIT */
/* The scan window (DESIGN.md 1.1, docs/POLICY.md). */

#include <math.h>

#include "test-policy-util.h"

#include "policy-internal.h"

/* AMD EPYC 9654: 24 LLCs (CCDs) of 8 cores x SMT2; here CPU 2k and 2k+1 are
 * core k's siblings. Every LLC but 0 at a calm 30%. */
static Snapshot *epyc(uint64_t t) {
        Snapshot *s = topo_new(24, 8, 2, t);
        for (unsigned l = 1; l < 24; l++)
                topo_set_llc(s, l, 300, 300);
        return s;
}

/* LLC 0 at 90% mean util: 12 CPUs at 973, core 3 (CPUs 6-7) at 512, core 7
 * (CPUs 14-15) at 1024 where /bench1's two threads run (epyc_90(): at 1000
 * each), so core 7 is all but idle without them. No wait: nothing for
 * balance to move. */
static Snapshot *epyc_90_demand(uint64_t t, double util) {
        Snapshot *s = epyc(t);
        topo_set_llc(s, 0, 973, 973);
        topo_set_cpu(s, 6, 512, 512);
        topo_set_cpu(s, 7, 512, 512);
        topo_set_cpu(s, 14, 1024, 1024);
        topo_set_cpu(s, 15, 1024, 1024);
        size_t cg = topo_add_cgroup(s, "/bench1", CGROUP_POLICY_LATENCY, NULL);
        topo_add_thread(s, cg, 101, 1, 14, util, 0);
        topo_add_thread(s, cg, 102, 1, 15, util, 0);
        topo_finish(s);
        return s;
}

static Snapshot *epyc_90(uint64_t t) {
        return epyc_90_demand(t, 1000);
}

static void test_epyc_90_window(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        _cleanup_(snapshot_freep) Snapshot *s = epyc_90(0);
        _cleanup_plan_ Plan *plan = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        assert_true(s->llcs[0].util > 0.899 * 1024 && s->llcs[0].util < 0.901 * 1024);
        assert_int_equal(s->llcs[0].nr_idle_scan, 0);
        assert_true(s->llcs[0].overloaded);

        plan = decide_checked(s, &st, state);
        dump_plan(plan, 0);
        assert_int_equal(plan->n_actions, 1);
        /* max(nr_idle_scan 0 -> 0 cores, demand 2000 x 1.25 = 2500 -> 3 CPUs ->
         * 2 cores, MinWindowCores 1) = 2 cores = 4 CPUs: core 7 (idle without
         * the cgroup's own threads) first, then core 3, the least busy. */
        const Action *a = plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/bench1", 0);
        assert_cpus(a, "6-7,14-15");
        assert_int_equal(hwloc_bitmap_weight(a->cpus), 4);
        assert_non_null(strstr(a->reason, "nr_idle_scan 0"));
        assert_non_null(strstr(a->reason, "demand 2000"));

        PolicyCounters c;
        policy_state_counters(state, &c);
        assert_int_equal(c.applied, 1);

        /* The same snapshot again: the window stands, nothing to do. */
        plan = plan_free(plan);
        s->time_us += TICK_US;
        plan = decide_checked(s, &st, state);
        assert_int_equal(plan->n_actions, 0);
}

/* nr_idle_scan decides the size when it is the largest term: 75% util gives
 * nr_idle_scan 3, rounded up to 2 whole cores. */
static void test_epyc_scan_term_and_min_cores(void **unused) {
        Settings st;

        for (unsigned min_cores = 1; min_cores <= 3; min_cores += 2) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                _cleanup_(snapshot_freep) Snapshot *s = epyc(0);
                _cleanup_plan_ Plan *plan = NULL;

                settings_latency(&st);
                st.min_window_cores = min_cores;
                topo_set_llc(s, 0, 768, 768);
                size_t cg = topo_add_cgroup(s, "/small", CGROUP_POLICY_LATENCY, NULL);
                topo_add_thread(s, cg, 7, 1, 0, 300, 0);
                topo_finish(s);
                assert_int_equal(s->llcs[0].nr_idle_scan, 3);
                assert_true(s->llcs[0].overloaded);

                assert_int_equal(policy_state_new(&state), 0);
                plan = decide_checked(s, &st, state);
                dump_plan(plan, 0);
                const Action *a = plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/small", 0);
                /* Core 0 has the thread (least busy without it), then cores by index. */
                assert_cpus(a, min_cores == 1 ? "0-3" : "0-5");
        }
}

/* A cgroup with less work than a quarter of a CPU gets no window in an
 * overloaded LLC (its threads would queue behind others on the window's
 * cores); from there on it does. */
static void test_light_cgroup_no_window(void **unused) {
        Settings st;

        settings_latency(&st);
        for (unsigned demand = 100; demand <= 300; demand += 100) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                _cleanup_(snapshot_freep) Snapshot *s = epyc(0);
                _cleanup_plan_ Plan *plan = NULL;

                topo_set_llc(s, 0, 1000, 1000);
                size_t cg = topo_add_cgroup(s, "/light", CGROUP_POLICY_LATENCY, NULL);
                topo_add_thread(s, cg, 7, 1, 0, demand / 2.0, 0);
                topo_add_thread(s, cg, 8, 1, 2, demand / 2.0, 0);
                topo_finish(s);
                assert_true(s->llcs[0].overloaded);
                assert_int_equal(policy_state_new(&state), 0);
                plan = decide_checked(s, &st, state);
                dump_plan(plan, 0);
                const Action *a = plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/light", 0);
                if (demand < 256)
                        assert_null(a);
                else
                        assert_non_null(a);
        }
}

/* A window the cgroup outgrows at once (all the LLC's CPUs) is given back
 * and backs off (2 s, then 4 s), instead of coming back as soon as the LLC
 * looks overloaded again. */
static void test_outgrown_window_backs_off(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        unsigned set_at[8], n_set = 0, restored_at[8], n_restored = 0;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned tick = 0; tick < 80; tick++) {
                bool windowed = n_set > n_restored;
                _cleanup_(snapshot_freep) Snapshot *s = topo_new(1, 2, 1, tick * TICK_US);
                /* Confined, it uses its whole CPU and the LLC calms a little
                 * (not below the widen-back line); free, the LLC is overloaded. */
                topo_set_llc(s, 0, windowed ? 560 : 1000, windowed ? 560 : 1000);
                size_t cg = topo_add_cgroup(s, "/g", CGROUP_POLICY_LATENCY, NULL);
                topo_add_thread(s, cg, 11, 1, 0, windowed ? 480 : 300, 0);
                topo_add_thread(s, cg, 12, 1, 1, windowed ? 480 : 300, 0);
                topo_finish(s);
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                dump_plan(plan, tick);
                if (plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/g", 0) && n_set < 8)
                        set_at[n_set++] = tick;
                const Action *r = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_WINDOW, "/g", 0);
                if (r && n_restored < 8) {
                        assert_non_null(strstr(r->reason, "needs all of 0-1; window backs off"));
                        restored_at[n_restored++] = tick;
                }
        }
        assert_true(n_set >= 3);
        assert_true(n_restored >= 2);
        assert_true(set_at[1] >= restored_at[0] + 20); /* 2 s */
        assert_true(set_at[2] >= restored_at[1] + 40); /* 4 s */
}

/* Never more than the cgroup is allowed; a window of everything it may use is
 * no window. */
static void test_epyc_window_capped(void **unused) {
        static const struct {
                const char *allowed, *expected;
        } cases[] = {
                {"0-5,16-31", "0-5"},
                {"0-5", NULL},
        };
        Settings st;

        settings_latency(&st);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                _cleanup_(snapshot_freep) Snapshot *s = epyc(0);
                _cleanup_plan_ Plan *plan = NULL;

                topo_set_llc(s, 0, 1000, 1000);
                size_t cg = topo_add_cgroup(s, "/big", CGROUP_POLICY_LATENCY, cases[i].allowed);
                for (int k = 0; k < 6; k++)
                        topo_add_thread(s, cg, 10 + k, 1, k, 1000, 0);
                topo_finish(s);

                assert_int_equal(policy_state_new(&state), 0);
                plan = decide_checked(s, &st, state);
                dump_plan(plan, 0);
                const Action *a = plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/big", 0);
                if (cases[i].expected)
                        assert_cpus(a, cases[i].expected);
                else
                        assert_null(a);
        }
}

static void test_epyc_50_no_window(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        _cleanup_(snapshot_freep) Snapshot *s = epyc(0);
        _cleanup_plan_ Plan *plan = NULL;
        Settings st;

        settings_latency(&st);
        topo_set_llc(s, 0, 512, 512);
        size_t cg = topo_add_cgroup(s, "/bench1", CGROUP_POLICY_LATENCY, NULL);
        topo_add_thread(s, cg, 101, 1, 0, 400, 0);
        topo_add_thread(s, cg, 102, 1, 1, 400, 0);
        topo_finish(s);
        /* Below the LLC's size but not overloaded. */
        assert_int_equal(s->llcs[0].nr_idle_scan, 10);
        assert_false(s->llcs[0].overloaded);

        assert_int_equal(policy_state_new(&state), 0);
        plan = decide_checked(s, &st, state);
        assert_int_equal(plan->n_actions, 0);
}

static Snapshot *epyc_level(uint64_t t, double util) {
        Snapshot *s = epyc(t);
        topo_set_llc(s, 0, util, util);
        size_t cg = topo_add_cgroup(s, "/bench1", CGROUP_POLICY_LATENCY, NULL);
        topo_add_thread(s, cg, 101, 1, 14, 600, 0);
        topo_add_thread(s, cg, 102, 1, 15, 600, 0);
        topo_finish(s);
        return s;
}

/* Opens above ~60%, stays between, widens back below ~43%. At 70% (overloaded)
 * nr_idle_scan 5 needs 3 cores: the window grows only once that shortfall has
 * lasted MinResidencyMs (the steps are 2 s apart), not on the first tick. */
static void test_epyc_hysteresis(void **unused) {
        static const struct {
                double util;
                int expect; /* 1 window set, -1 restore, 0 nothing */
        } steps[] = {
                {0.55, 0}, {0.90, 1}, {0.90, 0}, {0.50, 0}, {0.45, 0}, {0.70, 0}, {0.70, 1},
                /* One calm look between busy ones gives nothing back; calm at
                 * every look for WINDOW_CALM_PERSIST_US (3 s) does. */
                {0.40, 0}, {0.70, 0}, {0.40, 0}, {0.40, 0}, {0.40, -1}, {0.40, 0}, {0.50, 0}, {0.65, 1},
        };
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                _cleanup_(snapshot_freep) Snapshot *s = epyc_level(i * 20 * TICK_US, steps[i].util * 1024);
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);

                dump_plan(plan, (unsigned) i);
                const Action *set =
                        plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/bench1", 0);
                const Action *restore = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_WINDOW, "/bench1", 0);
                assert_int_equal(plan->n_actions, steps[i].expect != 0);
                if (steps[i].expect > 0)
                        assert_non_null(set);
                if (steps[i].expect < 0) {
                        /* Back to what it had before: every CPU. */
                        assert_cpus(restore, "0-383");
                        assert_non_null(strstr(restore->reason, "calm"));
                }
        }
        PolicyCounters c;
        policy_state_counters(state, &c);
        assert_int_equal(c.applied, 3);
        assert_int_equal(c.restored, 1);
}

/* Weight of /bench1's window set in this plan, 0 if none. */
static int window_set_weight(PolicyState *state, const Settings *st, uint64_t t, double util) {
        _cleanup_(snapshot_freep) Snapshot *s = epyc_90_demand(t, util);
        _cleanup_plan_ Plan *plan = decide_checked(s, st, state);
        dump_plan(plan, (unsigned) (t / USEC_PER_SEC));
        const Action *a = plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/bench1", 0);
        assert_null(plan_find(plan, ACTION_RESTORE, ACTION_POLICY_WINDOW, "/bench1", 0));
        return a ? hwloc_bitmap_weight(a->cpus) : 0;
}

/* A held window shrinks only once its demand has wanted fewer CPUs at every
 * look for WINDOW_SHRINK_HOLD_US; a demand that swings across a size's
 * boundary leaves it as it is (the guest's rings: 2 or 3 CPUs by turns). */
static void test_window_shrink_holds(void **unused) {
        Settings st;

        settings_latency(&st);
        {
                _cleanup_policy_state_ PolicyState *state = NULL;
                assert_int_equal(policy_state_new(&state), 0);
                /* 2 x 1000 +25% -> 3 CPUs -> 2 cores. */
                assert_int_equal(window_set_weight(state, &st, 0, 1000), 4);
                /* 2 x 400 +25% -> 1 CPU -> 1 core, wanted from t = 1 s on. */
                for (uint64_t sec = 1; sec < 6; sec++)
                        assert_int_equal(window_set_weight(state, &st, sec * USEC_PER_SEC, 400), 0);
                assert_int_equal(window_set_weight(state, &st, 6 * USEC_PER_SEC, 400), 2);
        }
        {
                _cleanup_policy_state_ PolicyState *state = NULL;
                assert_int_equal(policy_state_new(&state), 0);
                assert_int_equal(window_set_weight(state, &st, 0, 1000), 4);
                for (uint64_t sec = 1; sec <= 30; sec++)
                        assert_int_equal(window_set_weight(state, &st, sec * USEC_PER_SEC, sec % 2 ? 400 : 1000), 0);
        }
}

/* Four equal cgroups on a 2-CPU LLC: two per CPU (DESIGN.md 1.1's hackbench
 * finding), one CPU each. */
static void test_four_cgroups_two_cpus(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        _cleanup_(snapshot_freep) Snapshot *s = topo_new(1, 2, 1, 0);
        _cleanup_plan_ Plan *plan = NULL;
        const char *paths[] = {"/g1", "/g2", "/g3", "/g4"};
        unsigned per_cpu[2] = {};
        Settings st;

        settings_latency(&st);
        topo_set_llc(s, 0, 1024, 1024);
        for (size_t i = 0; i < 4; i++) {
                size_t cg = topo_add_cgroup(s, paths[i], CGROUP_POLICY_LATENCY, NULL);
                topo_add_thread(s, cg, (pid_t) (100 + i), 1, (int) (i / 2), 400, 0);
        }
        topo_finish(s);
        assert_true(s->llcs[0].overloaded);

        assert_int_equal(policy_state_new(&state), 0);
        plan = decide_checked(s, &st, state);
        dump_plan(plan, 0);
        assert_int_equal(plan->n_actions, 4);
        for (size_t i = 0; i < 4; i++) {
                const Action *a = plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, paths[i], 0);
                assert_non_null(a);
                assert_int_equal(hwloc_bitmap_weight(a->cpus), 1);
                per_cpu[hwloc_bitmap_first(a->cpus)]++;
        }
        assert_int_equal(per_cpu[0], 2);
        assert_int_equal(per_cpu[1], 2);
}

/* Cgroups that fit get disjoint windows, largest demand first on the least
 * loaded cores. */
static void test_epyc_disjoint(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        _cleanup_(snapshot_freep) Snapshot *s = epyc(0);
        _cleanup_plan_ Plan *plan = NULL;
        const char *paths[] = {"/a", "/b", "/c"};
        const double demand[] = {500, 1500, 1000};
        Settings st;

        settings_latency(&st);
        topo_set_llc(s, 0, 1000, 1000);
        for (size_t i = 0; i < 3; i++) {
                size_t cg = topo_add_cgroup(s, paths[i], CGROUP_POLICY_LATENCY, NULL);
                topo_add_thread(s, cg, (pid_t) (10 + i), 1, 0, demand[i], 0);
        }
        topo_finish(s);

        assert_int_equal(policy_state_new(&state), 0);
        plan = decide_checked(s, &st, state);
        dump_plan(plan, 0);
        assert_int_equal(plan->n_actions, 3);
        _cleanup_cpuset_ CpuSet all = hwloc_bitmap_alloc();
        for (size_t i = 0; i < 3; i++) {
                const Action *a = plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, paths[i], 0);
                assert_non_null(a);
                assert_int_equal(hwloc_bitmap_weight(a->cpus), 2);
                assert_false(hwloc_bitmap_intersects(all, a->cpus));
                hwloc_bitmap_or(all, all, a->cpus);
        }
        /* The threads all ran on core 0, so its background is the lowest and
         * the largest demand, /b, gets it. */
        assert_cpus(plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/b", 0), "0-1");
}

/* POWER9: an LLC is two SMT4 cores, 8 CPUs. With MinLLCCPUs=16, the kernel
 * patches' own conclusion, no window at any load. */
static void test_power9_no_window(void **unused) {
        Settings st;

        for (unsigned min_llc = 2; min_llc <= 16; min_llc += 14) {
                unsigned windows = 0;

                settings_latency(&st);
                st.min_llc_cpus = min_llc;
                for (unsigned u = 0; u <= 1024; u += 64) {
                        _cleanup_policy_state_ PolicyState *state = NULL;
                        _cleanup_(snapshot_freep) Snapshot *s = topo_new(4, 2, 4, 0);
                        _cleanup_plan_ Plan *plan = NULL;

                        for (unsigned l = 0; l < 4; l++)
                                topo_set_llc(s, l, u, u);
                        size_t cg = topo_add_cgroup(s, "/bench1", CGROUP_POLICY_LATENCY, NULL);
                        topo_add_thread(s, cg, 101, 1, 0, MIN(u, 200u), 0);
                        topo_add_thread(s, cg, 102, 1, 1, MIN(u, 200u), 0);
                        topo_finish(s);

                        assert_int_equal(policy_state_new(&state), 0);
                        plan = decide_checked(s, &st, state);
                        windows += plan_count(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW);
                }
                if (min_llc == 16)
                        assert_int_equal(windows, 0);
                else
                        assert_true(windows > 0); /* the same loads do open windows on 8-CPU LLCs */
        }
}

/* A balanced cgroup never gets a window; in mode balanced nobody does. */
static void test_window_policy_narrowing(void **unused) {
        Settings st;

        for (int i = 0; i < 2; i++) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                _cleanup_(snapshot_freep) Snapshot *s = epyc(0);
                _cleanup_plan_ Plan *plan = NULL;

                settings_latency(&st);
                if (i == 1)
                        st.mode = MODE_BALANCED;
                topo_set_llc(s, 0, 1000, 1000);
                size_t cg = topo_add_cgroup(s, "/b", i == 0 ? CGROUP_POLICY_BALANCED : CGROUP_POLICY_LATENCY,
                                            NULL);
                topo_add_thread(s, cg, 5, 1, 0, 500, 0);
                topo_finish(s);
                assert_int_equal(policy_state_new(&state), 0);
                plan = decide_checked(s, &st, state);
                assert_int_equal(plan->n_actions, 0);
        }
}

/* A VM that shows one L3 per vCPU (or Ampere Altra's private L2s): LLCs of
 * one core each. n_llcs such LLCs, every CPU busy (1024), four cgroups with
 * two threads each, one on each of the first two CPUs; packages as given
 * (-1: unknown). */
static Snapshot *one_core_llcs(unsigned n_llcs, const int *packages, uint64_t t) {
        Snapshot *s = topo_new(n_llcs, 1, 1, t);
        for (unsigned l = 0; l < n_llcs; l++) {
                topo_set_package(s, l, 1, packages[l]);
                topo_set_llc(s, l, 1024, 1024);
        }
        for (size_t i = 0; i < 4; i++) {
                char path[8];
                snprintf(path, sizeof(path), "/g%zu", i + 1);
                size_t cg = topo_add_cgroup(s, path, CGROUP_POLICY_LATENCY, NULL);
                topo_add_thread(s, cg, (pid_t) (100 + 2 * i), 1, 0, 256, 0);
                topo_add_thread(s, cg, (pid_t) (101 + 2 * i), 1, 1, 256, 0);
        }
        topo_finish(s);
        return s;
}

/* One-core LLCs of one package are one window domain: four busy groups on
 * two such CPUs get a CPU each, two per CPU, as on one LLC of two cores;
 * the windows hold across ticks (the domain is not "the window's LLC
 * changed"), and the reason names the merged LLCs. */
static void test_one_core_llcs_share_windows(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        const int pkg[] = {0, 0};
        unsigned per_cpu[2] = {};
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        {
                _cleanup_(snapshot_freep) Snapshot *s = one_core_llcs(2, pkg, 0);
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                dump_plan(plan, 0);
                assert_int_equal(plan_count(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW), 4);
                for (size_t i = 0; i < plan->n_actions; i++) {
                        const Action *a = &plan->actions[i];
                        assert_int_equal(hwloc_bitmap_weight(a->cpus), 1);
                        assert_non_null(strstr(a->reason, "llcs 0-1 (package 0)"));
                        per_cpu[hwloc_bitmap_first(a->cpus)]++;
                }
                assert_int_equal(per_cpu[0], 2);
                assert_int_equal(per_cpu[1], 2);
        }
        /* The next tick, each group's threads on its window's CPU: kept. */
        {
                _cleanup_(snapshot_freep) Snapshot *s = one_core_llcs(2, pkg, TICK_US);
                for (size_t i = 0; i < s->n_cgroups; i++) {
                        const CgroupState *c = policy_state_find_cgroup(state, s->cgroups[i].path);
                        assert_non_null(c);
                        assert_non_null(c->window.mask);
                        hwloc_bitmap_copy(s->cgroups[i].cpus, c->window.mask);
                        for (size_t k = 0; k < s->cgroups[i].n_threads; k++) {
                                s->cgroups[i].threads[k].cpu = hwloc_bitmap_first(c->window.mask);
                                hwloc_bitmap_copy(s->cgroups[i].threads[k].allowed, c->window.mask);
                        }
                }
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                dump_plan(plan, 1);
                assert_int_equal(plan_count(plan, ACTION_RESTORE, ACTION_POLICY_WINDOW), 0);
                assert_int_equal(plan_count(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW), 0);
        }
}

/* No merge where the package is unknown (a recording from before the field),
 * or where each one-core LLC is in a package of its own: each LLC is then
 * smaller than MinLLCCPUs and nobody gets a window. */
static void test_one_core_llcs_unmerged(void **unused) {
        const int unknown[] = {-1, -1}, apart[] = {0, 1};
        const int *cases[] = {unknown, apart};
        Settings st;

        settings_latency(&st);
        for (size_t k = 0; k < ELEMENTSOF(cases); k++) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                _cleanup_(snapshot_freep) Snapshot *s = one_core_llcs(2, cases[k], 0);
                assert_int_equal(policy_state_new(&state), 0);
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                assert_int_equal(plan_count(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW), 0);
        }
}

/* Two packages of two one-core LLCs each: two domains; a window never spans
 * packages, and each package's groups stay in it. */
static void test_one_core_llcs_per_package(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        const int pkg[] = {0, 0, 1, 1};
        _cleanup_(snapshot_freep) Snapshot *s = one_core_llcs(4, pkg, 0);
        Settings st;

        /* Two more groups on package 1's CPUs 2-3. */
        for (size_t i = 4; i < 6; i++) {
                char path[8];
                snprintf(path, sizeof(path), "/g%zu", i + 1);
                size_t cg = topo_add_cgroup(s, path, CGROUP_POLICY_LATENCY, NULL);
                topo_add_thread(s, cg, (pid_t) (100 + 2 * i), 1, 2, 512, 0);
                topo_add_thread(s, cg, (pid_t) (101 + 2 * i), 1, 3, 512, 0);
        }
        topo_finish(s);
        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
        dump_plan(plan, 0);
        _cleanup_cpuset_ CpuSet p0 = topo_parse("0-1"), p1 = topo_parse("2-3");
        size_t n0 = 0, n1 = 0;
        for (size_t i = 0; i < plan->n_actions; i++) {
                const Action *a = &plan->actions[i];
                if (a->kind != ACTION_SET_CGROUP_CPUS)
                        continue;
                bool in0 = hwloc_bitmap_isincluded(a->cpus, p0), in1 = hwloc_bitmap_isincluded(a->cpus, p1);
                assert_true(in0 != in1); /* in one package, never across */
                /* /g1-/g4 ran on package 0, /g5-/g6 on package 1 */
                assert_true(in0 == (strcmp(a->cgroup, "/g5") < 0));
                assert_non_null(strstr(a->reason, in0 ? "llcs 0-1 (package 0)" : "llcs 2-3 (package 1)"));
                n0 += in0;
                n1 += in1;
        }
        assert_int_equal(n0, 4);
        assert_int_equal(n1, 2);
}

/* An LLC of two or more cores is a domain of its own, even beside one-core
 * LLCs of its package; the one-core ones merge among themselves. */
static void test_domains_build(void **unused) {
        _cleanup_(snapshot_freep) Snapshot *s = topo_new(4, 1, 1, 0);
        WindowDomains w = {};

        /* LLC 0 gets CPU 1's core too: two cores. LLCs 1 (emptied) ... */
        topo_set_package(s, 0, 4, 0);
        topo_set_cpu(s, 2, 1024, 1024);
        topo_set_cpu(s, 3, 0, 0);
        topo_cpu(s, 1)->llc = 0;
        hwloc_bitmap_clr(s->llcs[1].cpus, 1);
        hwloc_bitmap_set(s->llcs[0].cpus, 1);
        topo_finish(s);
        assert_int_equal(policy_domains_build(s, &w), 0);
        /* LLC 0 (2 cores) alone; LLC 1 has no CPU left: alone, weight 0;
         * LLCs 2 and 3 (one core each) merged. */
        assert_int_equal(w.n, 3);
        assert_int_equal(w.llc_domain[0], 0);
        assert_int_equal(w.llc_domain[1], 1);
        assert_int_equal(w.llc_domain[2], 2);
        assert_int_equal(w.llc_domain[3], 2);
        assert_string_equal(w.d[0].label, "llc 0");
        assert_string_equal(w.d[2].label, "llcs 2-3 (package 0)");
        assert_int_equal(w.d[2].id, 2);
        assert_int_equal(w.d[2].view.weight, 2);
        assert_true(fabs(w.d[2].view.util - 512) < 1e-9);
        assert_int_equal(w.d[2].view.nr_idle_scan, sis_nr_idle_scan(512, 2, SIS_IMBALANCE_PCT));
        assert_int_equal(hwloc_bitmap_weight(w.d[2].online), 2);
        _cleanup_cpuset_ CpuSet m = topo_parse("2-3"), across = topo_parse("1-2");
        assert_int_equal(policy_mask_domain(s, &w, m), 2);
        assert_int_equal(policy_mask_domain(s, &w, across), -1);
        assert_int_equal(policy_domain_by_id(&w, 2), &w.d[2]);
        assert_null(policy_domain_by_id(&w, 3)); /* not a domain's first LLC */
        policy_domains_done(&w);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_epyc_90_window),
                cmocka_unit_test(test_epyc_scan_term_and_min_cores),
                cmocka_unit_test(test_light_cgroup_no_window),
                cmocka_unit_test(test_outgrown_window_backs_off),
                cmocka_unit_test(test_epyc_window_capped),
                cmocka_unit_test(test_epyc_50_no_window),
                cmocka_unit_test(test_epyc_hysteresis),
                cmocka_unit_test(test_window_shrink_holds),
                cmocka_unit_test(test_four_cgroups_two_cpus),
                cmocka_unit_test(test_epyc_disjoint),
                cmocka_unit_test(test_power9_no_window),
                cmocka_unit_test(test_window_policy_narrowing),
                cmocka_unit_test(test_one_core_llcs_share_windows),
                cmocka_unit_test(test_one_core_llcs_unmerged),
                cmocka_unit_test(test_one_core_llcs_per_package),
                cmocka_unit_test(test_domains_build),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
