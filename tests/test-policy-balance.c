/* SPDX-License-Identifier: MIT */
/* Contention-aware balancing (DESIGN.md 1.3, docs/POLICY.md). */

#include "test-policy-util.h"

#include "policy-internal.h"

/* Two LLCs of 8 SMT2 cores: LLC 0 (CPUs 0-15) with runnable 1.6x its util,
 * LLC 1 (CPUs 16-31) with spare capacity. */
static Snapshot *two_llcs(uint64_t t, double util0, double runnable0, double util1, double runnable1) {
        Snapshot *s = topo_new(2, 8, 2, t);
        topo_set_llc(s, 0, util0, runnable0);
        topo_set_llc(s, 1, util1, runnable1);
        return s;
}

/* 30 threads that together do not fit in LLC 1's spare capacity: the four
 * (MaxMovesPerTick) that wait most move, each to LLC 1's CPUs. */
static void test_most_waiting_threads_move(void **unused) {
        for (CgroupPolicy p = CGROUP_POLICY_LATENCY; p <= CGROUP_POLICY_BALANCED; p++) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                _cleanup_(snapshot_freep) Snapshot *s = two_llcs(0, 600, 960, 100, 100);
                _cleanup_plan_ Plan *plan = NULL;
                Settings st;

                settings_latency(&st);
                size_t cg = topo_add_cgroup(s, "/big", p, NULL);
                for (int i = 0; i < 30; i++)
                        topo_add_thread(s, cg, 1000 + i, 1, i % 16, 400, 30 + 10 * i);
                topo_finish(s);
                assert_false(s->llcs[0].overloaded);
                assert_int_equal((int) s->llcs[0].boosted, 960);

                assert_int_equal(policy_state_new(&state), 0);
                plan = decide_checked(s, &st, state);
                dump_plan(plan, 0);
                assert_int_equal(plan->n_actions, st.max_moves_per_tick);
                assert_int_equal(plan_count_moves(plan), 4);
                for (int i = 29; i >= 26; i--) {
                        const Action *a = plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_BALANCE,
                                                    "/big", 1000 + i);
                        assert_cpus(a, "16-31");
                        assert_non_null(strstr(a->reason, "llc 0 boosted 960 > llc 1 boosted 100 x 117%"));
                }
        }
}

/* A thread at the idle line (demand under a quarter of a CPU) is not moved,
 * however much it waits: its move would be given back as idle at its next
 * quiet spell. The heavier threads that wait less move instead. */
static void test_light_threads_not_moved(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        _cleanup_(snapshot_freep) Snapshot *s = two_llcs(0, 600, 960, 100, 100);
        _cleanup_plan_ Plan *plan = NULL;
        Settings st;

        settings_latency(&st);
        size_t cg = topo_add_cgroup(s, "/big", CGROUP_POLICY_BALANCED, NULL);
        for (int i = 0; i < 30; i++)
                topo_add_thread(s, cg, 1000 + i, 1, i % 16, 400, 30 + 5 * i);
        for (int i = 0; i < 4; i++) /* demand 10 + 200 = 210 < 256 */
                topo_add_thread(s, cg, 2000 + i, 1, i, 10, 200);
        topo_finish(s);
        assert_int_equal(policy_state_new(&state), 0);
        plan = decide_checked(s, &st, state);
        dump_plan(plan, 0);
        assert_int_equal(plan_count_moves(plan), 4);
        for (int i = 0; i < 4; i++)
                assert_null(
                        plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_BALANCE, "/big", 2000 + i));
        for (int i = 29; i >= 26; i--)
                assert_cpus(plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_BALANCE, "/big", 1000 + i),
                            "16-31");
}

static void test_max_moves_per_tick(void **unused) {
        for (unsigned max = 0; max <= 6; max++) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                _cleanup_(snapshot_freep) Snapshot *s = two_llcs(0, 600, 960, 100, 100);
                _cleanup_plan_ Plan *plan = NULL;
                Settings st;

                settings_latency(&st);
                st.max_moves_per_tick = max;
                size_t cg = topo_add_cgroup(s, "/big", CGROUP_POLICY_BALANCED, NULL);
                for (int i = 0; i < 30; i++)
                        topo_add_thread(s, cg, 1000 + i, 1, i % 16, 400, 30 + 10 * i);
                topo_finish(s);
                assert_int_equal(policy_state_new(&state), 0);
                plan = decide_checked(s, &st, state);
                assert_int_equal(plan_count_moves(plan), max);
        }
}

/* A cgroup whose demand fits in the target's spare capacity moves whole, as
 * one move, and then stays MinResidencyMs. */
static void test_whole_cgroup_moves(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned k = 0; k < 15; k++) {
                _cleanup_(snapshot_freep) Snapshot *s = two_llcs(k * TICK_US, 600, 960, 100, 100);
                size_t cg = topo_add_cgroup(s, "/small", CGROUP_POLICY_BALANCED, NULL);
                for (int i = 0; i < 4; i++)
                        topo_add_thread(s, cg, 300 + i, 1, i, 400, 200);
                topo_finish(s);

                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                dump_plan(plan, k);
                if (k == 0) {
                        assert_int_equal(plan->n_actions, 1);
                        const Action *a =
                                plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_BALANCE, "/small", 0);
                        assert_cpus(a, "16-31");
                        assert_non_null(strstr(a->reason, "cgroup wait 800"));
                } else if (k < 10)
                        /* The threads still show on LLC 0 and still wait, but
                         * they moved less than MinResidencyMs ago. */
                        assert_int_equal(plan_count_moves(plan), 0);
        }
}

/* Every LLC overloaded, or the least boosted one without spare: no moves. */
static void test_no_spare_no_moves(void **unused) {
        static const double cases[][4] = {
                {900, 1000, 700, 700},  /* all overloaded */
                {1000, 1300, 300, 900}, /* LLC 1 not overloaded, but boosted 900 > 875: no spare */
                {170, 170, 150, 150},   /* spare, but no imbalance beyond 117% */
        };
        Settings st;

        settings_latency(&st);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                _cleanup_(snapshot_freep) Snapshot *s =
                        two_llcs(0, cases[i][0], cases[i][1], cases[i][2], cases[i][3]);
                _cleanup_plan_ Plan *plan = NULL;

                size_t cg = topo_add_cgroup(s, "/b", CGROUP_POLICY_BALANCED, NULL);
                for (int k = 0; k < 8; k++)
                        topo_add_thread(s, cg, 400 + k, 1, k, 300, 300);
                topo_finish(s);
                if (i == 0) {
                        assert_true(s->llcs[0].overloaded);
                        assert_true(s->llcs[1].overloaded);
                }
                assert_int_equal(policy_state_new(&state), 0);
                plan = decide_checked(s, &st, state);
                dump_plan(plan, (unsigned) i);
                assert_int_equal(plan_count_moves(plan), 0);
        }
}

/* A balance move is for the load that was there (docs/POLICY.md): a cgroup
 * moved whole, then idle, gets its CPUs back once it has been idle at every
 * look for BALANCE_IDLE_RELEASE_US, and not before; a busy tick in between
 * starts the count again. */
static void test_idle_cgroup_home_released(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;
        unsigned released_at = 0;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned k = 0; k < 60 && !released_at; k++) {
                bool moved = k > 0;
                /* Idle from tick 1 on, except one busy tick at 10. */
                bool busy = k == 0 || k == 10;
                _cleanup_(snapshot_freep) Snapshot *s =
                        k == 0 ? two_llcs(0, 600, 960, 100, 100) : two_llcs(k * TICK_US, 100, 100, 300, 300);
                size_t cg = topo_add_cgroup(s, "/small", CGROUP_POLICY_BALANCED, NULL);
                if (moved) {
                        hwloc_bitmap_zero(s->cgroups[cg].cpus);
                        hwloc_bitmap_set_range(s->cgroups[cg].cpus, 16, 31);
                }
                for (int i = 0; i < 4; i++) {
                        ThreadSample *t = topo_add_thread(s, cg, 300 + i, 1, moved ? 16 + i : i,
                                                          busy ? 400 : 5, busy ? 200 : 0);
                        if (moved)
                                hwloc_bitmap_copy(t->allowed, s->cgroups[cg].cpus);
                }
                topo_finish(s);

                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                dump_plan(plan, k);
                if (k == 0) {
                        assert_cpus(
                                plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_BALANCE, "/small", 0),
                                "16-31");
                        continue;
                }
                const Action *a = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_BALANCE, "/small", 0);
                if (a) {
                        assert_cpus(a, "0-31");
                        assert_non_null(strstr(a->reason, "idle: demand 20 <"));
                        released_at = k;
                }
        }
        /* Idle again from tick 11: 2 s of 100 ms ticks later. */
        assert_int_equal(released_at, 11 + BALANCE_IDLE_RELEASE_US / TICK_US);
}

/* A thread moved alone, then idle, goes back the same way. */
static void test_idle_thread_home_released(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;
        unsigned released = 0, first = 0;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned k = 0; k < 40; k++) {
                _cleanup_(snapshot_freep) Snapshot *s =
                        k == 0 ? two_llcs(0, 600, 960, 100, 100) : two_llcs(k * TICK_US, 100, 100, 300, 300);
                size_t cg = topo_add_cgroup(s, "/big", CGROUP_POLICY_BALANCED, NULL);
                for (int i = 0; i < 30; i++) {
                        /* 1026..1029 moved at tick 0 (the most waiting). */
                        bool moved = k > 0 && i >= 26 && !released;
                        ThreadSample *t = topo_add_thread(s, cg, 1000 + i, 1, moved ? 16 + i - 26 : i % 16,
                                                          k == 0 ? 400 : 5, k == 0 ? 30 + 10 * i : 0);
                        if (moved) {
                                hwloc_bitmap_zero(t->allowed);
                                hwloc_bitmap_set_range(t->allowed, 16, 31);
                        }
                }
                topo_finish(s);

                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                dump_plan(plan, k);
                if (k == 0) {
                        assert_int_equal(plan_count_moves(plan), 4);
                        continue;
                }
                size_t n = plan_count(plan, ACTION_RESTORE, ACTION_POLICY_BALANCE);
                if (n > 0) {
                        assert_int_equal(n, 4);
                        for (int i = 26; i < 30; i++)
                                assert_cpus(plan_find(plan, ACTION_RESTORE, ACTION_POLICY_BALANCE, "/big",
                                                      1000 + i),
                                            "0-31");
                        assert_int_equal(released, 0);
                        released = 1;
                        first = k;
                }
        }
        assert_int_equal(first, 1 + BALANCE_IDLE_RELEASE_US / TICK_US);
}

/* ---- load oscillating between two LLCs for 1,000 ticks ------------------- */

#define OSC_THREADS 40
#define OSC_LLC_CPUS 8

typedef struct Model {
        int n;
        CpuSet cgroup_cpus;
        CpuSet allowed[OSC_THREADS];
        int cpu[OSC_THREADS];
} Model;

static void model_place(Model *m) {
        _cleanup_cpuset_ CpuSet eff = hwloc_bitmap_alloc();

        for (int i = 0; i < m->n; i++) {
                hwloc_bitmap_and(eff, m->allowed[i], m->cgroup_cpus);
                if (hwloc_bitmap_iszero(eff))
                        hwloc_bitmap_copy(eff, m->cgroup_cpus);
                if (hwloc_bitmap_isset(eff, (unsigned) m->cpu[i]))
                        continue;
                /* The kernel moves it somewhere in its mask. */
                int n = hwloc_bitmap_weight(eff), k = i % n, cpu = hwloc_bitmap_first(eff);
                while (k-- > 0)
                        cpu = hwloc_bitmap_next(eff, cpu);
                m->cpu[i] = cpu;
        }
}

static Snapshot *model_snapshot(const Model *m, unsigned tick) {
        Snapshot *s = topo_new(2, 4, 2, tick * TICK_US);
        unsigned heavy = (tick / 7) % 2; /* the busy LLC flips every 700 ms */
        _cleanup_cpuset_ CpuSet eff = hwloc_bitmap_alloc();

        topo_set_llc(s, heavy, 700, 1100);
        topo_set_llc(s, !heavy, 100, 100);
        size_t cg = topo_add_cgroup(s, "/osc", CGROUP_POLICY_BALANCED, "0-15");
        hwloc_bitmap_copy(s->cgroups[cg].cpus, m->cgroup_cpus);
        for (int i = 0; i < m->n; i++) {
                bool busy = m->cpu[i] / OSC_LLC_CPUS == (int) heavy;
                CpuSample *c = topo_cpu(s, (unsigned) m->cpu[i]);
                ThreadSample *ts = topo_add_thread(s, cg, 200 + i, 1, m->cpu[i], 150, busy ? 150 : 5);

                c->util += 150;
                c->runnable += 150 + ts->wait;
                hwloc_bitmap_and(eff, m->allowed[i], m->cgroup_cpus);
                hwloc_bitmap_copy(ts->allowed, hwloc_bitmap_iszero(eff) ? m->cgroup_cpus : eff);
        }
        topo_finish(s);
        return s;
}

/* n_threads 12: the whole cgroup fits and moves as one; 40: it does not, its
 * threads move one by one. */
static void oscillation(int n_threads) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        uint64_t last_move[OSC_THREADS], left_at[OSC_THREADS];
        int left[OSC_THREADS];
        unsigned moves = 0, per_thread_max = 0, per_thread[OSC_THREADS] = {}, returns[OSC_THREADS] = {};
        Model m = {};
        Settings st;

        settings_latency(&st);
        uint64_t residency = st.min_residency_ms * USEC_PER_MSEC;
        assert_int_equal(policy_state_new(&state), 0);
        m.n = n_threads;
        m.cgroup_cpus = topo_parse("0-15");
        for (int i = 0; i < m.n; i++) {
                m.allowed[i] = topo_parse("0-15");
                m.cpu[i] = i % 16;
                left[i] = -1;
                last_move[i] = left_at[i] = 0;
        }

        for (unsigned tick = 0; tick < 1000; tick++) {
                _cleanup_(snapshot_freep) Snapshot *s = model_snapshot(&m, tick);
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                uint64_t now = s->time_us;

                dump_plan(plan, tick);
                assert_true(plan_count_moves(plan) <= st.max_moves_per_tick);
                for (size_t k = 0; k < plan->n_actions; k++) {
                        const Action *a = &plan->actions[k];
                        int target = hwloc_bitmap_first(a->cpus) / OSC_LLC_CPUS;

                        for (int i = 0; i < m.n; i++) {
                                if (a->tid != 0 && a->tid != 200 + i)
                                        continue;
                                int from = m.cpu[i] / OSC_LLC_CPUS;
                                if (action_is_move(a) && from != target) {
                                        if (per_thread[i] > 0)
                                                assert_true(now - last_move[i] >= residency);
                                        assert_false(left[i] == target && now - left_at[i] < residency);
                                        /* Damped: the n-th return in a row comes at
                                         * least MinResidencyMs * 2^(n-1) after leaving. */
                                        returns[i] = left[i] == target ? returns[i] + 1 : 0;
                                        if (returns[i] > 0)
                                                assert_true(now - left_at[i] >=
                                                            residency *
                                                                    MIN(1u << MIN(returns[i] - 1, 6u), 64u));
                                        last_move[i] = now;
                                        left[i] = from;
                                        left_at[i] = now;
                                        per_thread[i]++;
                                        moves++;
                                }
                                if (a->tid != 0)
                                        hwloc_bitmap_copy(m.allowed[i], a->cpus);
                        }
                        if (a->tid == 0)
                                hwloc_bitmap_copy(m.cgroup_cpus, a->cpus);
                }
                model_place(&m);
        }

        for (int i = 0; i < m.n; i++)
                per_thread_max = MAX(per_thread_max, per_thread[i]);
        PolicyCounters c;
        policy_state_counters(state, &c);
        print_message("oscillation, %d threads: %u moves, at most %u per thread; applied %" PRIu64
                      " kept %" PRIu64 " reverted %" PRIu64 " restored %" PRIu64 "\n",
                      n_threads, moves, per_thread_max, c.applied, c.kept, c.reverted, c.restored);
        assert_true(moves > 0);
        /* Residency alone would allow a move per second, 100 over the run;
         * following load that flips every 700 ms is not worth that. */
        assert_true(per_thread_max <= 10);

        hwloc_bitmap_free(m.cgroup_cpus);
        for (int i = 0; i < m.n; i++)
                hwloc_bitmap_free(m.allowed[i]);
}

static void test_oscillation_no_ping_pong(void **unused) {
        oscillation(12);
        oscillation(40);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_most_waiting_threads_move),
                cmocka_unit_test(test_max_moves_per_tick),
                cmocka_unit_test(test_light_threads_not_moved),
                cmocka_unit_test(test_whole_cgroup_moves),
                cmocka_unit_test(test_no_spare_no_moves),
                cmocka_unit_test(test_oscillation_no_ping_pong),
                cmocka_unit_test(test_idle_cgroup_home_released),
                cmocka_unit_test(test_idle_thread_home_released),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
