/* SPDX-License-Identifier: MIT */
/* The guard (DESIGN.md 1.4, docs/POLICY.md). */

#include "test-policy-util.h"

/* One overloaded LLC of 4 SMT2 cores (CPUs 0-7); /g's two threads on CPUs 0
 * and 1 at util 500, each waiting `wait`. The window opens at tick 0 on core 0. */
static Snapshot *guard_snapshot_llc(unsigned tick, double llc_util, double wait, double util,
                                    double pressure) {
        Snapshot *s = topo_new(1, 4, 2, tick * TICK_US);

        topo_set_llc(s, 0, llc_util, llc_util);
        size_t cg = topo_add_cgroup(s, "/g", CGROUP_POLICY_LATENCY, NULL);
        s->cgroups[cg].pressure_some_avg10 = pressure;
        topo_add_thread(s, cg, 11, 1, 0, util, wait);
        topo_add_thread(s, cg, 12, 1, 1, util, wait);
        topo_finish(s);
        return s;
}

static Snapshot *guard_snapshot_util(unsigned tick, double wait, double util, double pressure) {
        return guard_snapshot_llc(tick, 1000, wait, util, pressure);
}

static Snapshot *guard_snapshot(unsigned tick, double wait, double pressure) {
        return guard_snapshot_util(tick, wait, 500, pressure);
}

/* The guard's counters after a test's ticks. */
static void check_counters(const PolicyState *state, unsigned applied, unsigned kept, unsigned reverted) {
        PolicyCounters c;
        policy_state_counters(state, &c);
        assert_int_equal(c.applied, applied);
        assert_int_equal(c.kept, kept);
        assert_int_equal(c.reverted, reverted);
}

static Plan *guard_step(PolicyState *state, const Settings *st, unsigned tick, double wait,
                        double pressure) {
        _cleanup_(snapshot_freep) Snapshot *s = guard_snapshot(tick, wait, pressure);
        Plan *plan = decide_checked(s, st, state);
        dump_plan(plan, tick);
        return plan;
}

/* Wait rises after the window: reverted at the end of GuardWindowMs, backed
 * off 2 s, re-applied only after; worse again: backed off 4 s. */
static void test_worse_reverts_and_backs_off(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        unsigned applied_at[4], n_applied = 0, reverted_at[4], n_reverted = 0;
        Settings st;

        settings_latency(&st);
        st.guard_percent = 10; /* the figures here are sized for 10% */
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned tick = 0; tick < 90; tick++) {
                /* After each window the threads wait 300 each: Σ 600 against
                 * before 100 x 110% + 2 x 10 = 130. */
                bool windowed = n_applied > n_reverted;
                _cleanup_plan_ Plan *plan = guard_step(state, &st, tick, windowed ? 300 : 50, 0);
                const Action *set = plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/g", 0);
                const Action *rev = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_GUARD, "/g", 0);

                assert_true(plan->n_actions <= 1);
                if (set) {
                        assert_true(n_applied < 4);
                        applied_at[n_applied++] = tick;
                }
                if (rev) {
                        assert_true(n_reverted < 4);
                        reverted_at[n_reverted++] = tick;
                        assert_cpus(rev, "0-7");
                        assert_non_null(strstr(rev->reason, "wait per CPU received worse: 600 (at util 1000 "
                                                            "-> 1000) > before 100 x 110% + floor 20"));
                }
        }
        assert_int_equal(n_applied, 3);
        assert_int_equal(n_reverted, 2);
        assert_int_equal(applied_at[0], 0);
        assert_int_equal(reverted_at[0], 10); /* GuardWindowMs after */
        assert_int_equal(applied_at[1], 30);  /* 2 x GuardWindowMs of backoff */
        assert_int_equal(reverted_at[1], 40);
        assert_int_equal(applied_at[2], 80); /* then 4 x */

        PolicyCounters c;
        policy_state_counters(state, &c);
        assert_int_equal(c.applied, 3);
        assert_int_equal(c.reverted, 2);
        assert_int_equal(c.kept, 0);
        assert_int_equal(c.restored, 0);
}

/* A window's "before" is the cgroup over the last GuardWindowMs, not the
 * tick it was decided on: a dip at that tick (here wait 2 x 5 after a steady
 * 2 x 50) does not make the same wait afterwards look like harm. */
static void test_before_is_a_window(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        unsigned opened = 0;
        Settings st;

        settings_latency(&st);
        st.guard_percent = 10; /* the figures here are sized for 10% */
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned tick = 0; tick < 40; tick++) {
                double wait = tick < 20 ? 50 : tick == 20 ? 5 : 55;
                _cleanup_(snapshot_freep) Snapshot *s =
                        guard_snapshot_llc(tick, tick < 20 ? 500 : 1000, wait, 500, 0);
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                dump_plan(plan, tick);
                if (plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/g", 0))
                        opened = tick;
                assert_null(plan_find(plan, ACTION_RESTORE, ACTION_POLICY_GUARD, "/g", 0));
        }
        assert_int_equal(opened, 20);
        check_counters(state, 1, 1, 0);
}

/* An overloaded LLC and a cgroup whose load is ramping up: the window does
 * not wait for the load to settle (a phase that lasts two seconds would be
 * half over); it is placed on the first tick with work enough, and judged
 * against that tick's figures, not against the means over GuardWindowMs
 * that still hold the idle time before: a ramp whose wait per CPU received
 * stays the same is kept. */
static void test_window_on_ramp_judged_from_tick(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        unsigned opened = 0;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned tick = 0; tick < 40; tick++) {
                /* per thread: 0 (the sampler's first figure for a thread), 200,
                 * ... 500 from tick 3; wait a tenth of it */
                double util = MIN(tick * 200.0, 500.0);
                _cleanup_(snapshot_freep) Snapshot *s = guard_snapshot_util(tick, util / 10, util, 0);
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                dump_plan(plan, tick);
                const Action *a = plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/g", 0);
                if (a && !opened) {
                        opened = tick;
                        assert_non_null(strstr(a->reason, "demand 400"));
                }
                assert_null(plan_find(plan, ACTION_RESTORE, ACTION_POLICY_GUARD, "/g", 0));
        }
        assert_int_equal(opened, 1);
        PolicyCounters c;
        policy_state_counters(state, &c);
        assert_true(c.kept >= 1);
        assert_int_equal(c.reverted, 0);
}

/* The cgroup's load grows five-fold during the trial (its workload starts):
 * its wait grows with it, which says nothing about the window. The trial
 * starts over from the new figures instead of reverting, and is kept. */
static void test_ramp_restarts_the_trial(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        st.guard_percent = 10; /* the figures here are sized for 10% */
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned tick = 0; tick < 30; tick++) {
                _cleanup_plan_ Plan *plan = NULL;
                _cleanup_(snapshot_freep) Snapshot *s =
                        guard_snapshot_util(tick, tick == 0 ? 20 : 300, tick == 0 ? 150 : 500, 0);
                plan = decide_checked(s, &st, state);
                dump_plan(plan, tick);
                assert_int_equal(plan->n_actions, tick == 0);
        }
        PolicyCounters c;
        policy_state_counters(state, &c);
        assert_int_equal(c.applied, 1);
        assert_int_equal(c.reverted, 0);
        assert_int_equal(c.kept, 1);
}

/* At the default GuardPercent (50), a window after which the threads wait
 * twice as long per CPU received is undone; 1.4 times is kept. */
static void test_default_percent(void **unused) {
        for (int worse = 0; worse <= 1; worse++) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                bool reverted = false;
                Settings st;

                settings_latency(&st);
                assert_int_equal(st.guard_percent, 50);
                assert_int_equal(policy_state_new(&state), 0);
                for (unsigned tick = 0; tick <= 10; tick++) {
                        double wait = tick == 0 ? 100 : worse ? 200 : 140;
                        _cleanup_plan_ Plan *plan = guard_step(state, &st, tick, wait, 0);
                        reverted |= plan_find(plan, ACTION_RESTORE, ACTION_POLICY_GUARD, "/g", 0) != NULL;
                }
                assert_int_equal(reverted, worse);
        }
}

/* Ten threads at util 30 each: the wait noise floor is a quarter of the
 * CPU they received (75), not 10 per thread (100). Wait 50 -> 160 is undone
 * (> 50 x 150% + 75), 50 -> 140 is kept. */
static void test_floor_follows_util(void **unused) {
        for (int worse = 0; worse <= 1; worse++) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                bool reverted = false;
                Settings st;

                settings_latency(&st);
                assert_int_equal(policy_state_new(&state), 0);
                for (unsigned tick = 0; tick <= 10; tick++) {
                        double wait = tick == 0 ? 5 : worse ? 16 : 14;
                        _cleanup_(snapshot_freep) Snapshot *s = topo_new(1, 4, 2, tick * TICK_US);
                        topo_set_llc(s, 0, 1000, 1000);
                        size_t cg = topo_add_cgroup(s, "/g", CGROUP_POLICY_LATENCY, NULL);
                        for (unsigned k = 0; k < 10; k++)
                                topo_add_thread(s, cg, (pid_t) (100 + k), 1, (int) (k % 8), 30, wait);
                        topo_finish(s);
                        _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                        dump_plan(plan, tick);
                        const Action *r = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_GUARD, "/g", 0);
                        if (r)
                                assert_non_null(strstr(r->reason, "floor 75"));
                        reverted |= r != NULL;
                }
                assert_int_equal(reverted, worse);
        }
}

/* Wait falls: kept, the window stays. */
static void test_better_is_kept(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        st.guard_percent = 10; /* the figures here are sized for 10% */
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned tick = 0; tick < 30; tick++) {
                _cleanup_plan_ Plan *plan = guard_step(state, &st, tick, tick == 0 ? 50 : 10, 0);
                assert_int_equal(plan->n_actions, tick == 0);
        }
        check_counters(state, 1, 1, 0);
}

/* Within GuardPercent plus the noise floor: kept. */
static void test_noise_is_kept(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        st.guard_percent = 10; /* the figures here are sized for 10% */
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned tick = 0; tick < 12; tick++) {
                /* Σ 2 x 64 = 128 <= 130 */
                _cleanup_plan_ Plan *plan = guard_step(state, &st, tick, tick == 0 ? 50 : 64, 1.0);
                assert_int_equal(plan->n_actions, tick == 0);
        }
        PolicyCounters c;
        policy_state_counters(state, &c);
        assert_int_equal(c.kept, 1);
}

/* The cgroup's CPU pressure judges cgroup-wide changes too. */
static void test_pressure_reverts(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        st.guard_percent = 10; /* the figures here are sized for 10% */
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned tick = 0; tick <= 10; tick++) {
                _cleanup_plan_ Plan *plan = guard_step(state, &st, tick, 50, tick == 0 ? 2.0 : 20.0);
                if (tick == 10) {
                        const Action *rev = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_GUARD, "/g", 0);
                        assert_non_null(rev);
                        assert_non_null(strstr(rev->reason, "pressure"));
                } else
                        assert_int_equal(plan->n_actions, tick == 0);
        }
}

/* Wait is judged per unit of CPU received: a window under which the group
 * gets three times the CPU and waits three times as long is kept (pinned
 * hackbench groups do just that, and run faster); the same wait with the
 * same CPU is reverted; the same wait with a third of the CPU is reverted. */
static void test_wait_per_cpu_received(void **unused) {
        static const struct {
                double wait_after, util_after;
                bool reverted;
        } cases[] = {
                {150, 750, false},
                {150, 250, true},
                {50, 250 / 3.0, true},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                Settings st;
                bool reverted = false;

                settings_latency(&st);
                st.guard_percent = 10; /* the figures here are sized for 10% */
                assert_int_equal(policy_state_new(&state), 0);
                for (unsigned tick = 0; tick <= 10; tick++) {
                        _cleanup_(snapshot_freep) Snapshot *s =
                                guard_snapshot_util(tick, tick == 0 ? 50 : cases[i].wait_after,
                                                    tick == 0 ? 250 : cases[i].util_after, 0);
                        _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                        reverted = reverted || plan_find(plan, ACTION_RESTORE, ACTION_POLICY_GUARD, "/g", 0);
                }
                if (reverted != cases[i].reverted)
                        fail_msg("case %zu: reverted %d, expected %d", i, reverted, cases[i].reverted);
        }
}

/* GuardWindowMs=0: no experiments, nothing judged. */
static void test_guard_off(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        st.guard_percent = 10; /* the figures here are sized for 10% */
        st.guard_window_ms = 0;
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned tick = 0; tick < 30; tick++) {
                _cleanup_plan_ Plan *plan = guard_step(state, &st, tick, tick == 0 ? 50 : 500, 0);
                assert_int_equal(plan->n_actions, tick == 0);
        }
        PolicyCounters c;
        policy_state_counters(state, &c);
        assert_int_equal(c.kept + c.reverted, 0);
}

/* A pin whose thread waits more, though below StickyMaxWaitPercent: the guard
 * reverts it and sticky backs off for the cgroup. */
static Snapshot *pin_snapshot(unsigned tick, double wait) {
        Snapshot *s = topo_new(1, 4, 2, tick * TICK_US);

        topo_set_llc(s, 0, 100, 100);
        topo_set_cpu(s, 4, 500, 500);
        topo_set_cpu(s, 5, 20, 20);
        size_t cg = topo_add_cgroup(s, "/app", CGROUP_POLICY_LATENCY, NULL);
        topo_add_thread(s, cg, 50, 1, 4, 500, wait);
        topo_finish(s);
        return s;
}

static void test_sticky_guard(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        unsigned pins = 0, reverts = 0, first_revert = 0;
        Settings st;

        settings_latency(&st);
        st.guard_percent = 10; /* the figures here are sized for 10% */
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned tick = 0; tick < 40; tick++) {
                /* 5 before the pin, 40 after: > 5 x 110% + 10, < 51 (no release). */
                bool pinned = pins > reverts;
                _cleanup_(snapshot_freep) Snapshot *s = pin_snapshot(tick, pinned ? 40 : 5);
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);

                dump_plan(plan, tick);
                assert_null(plan_find(plan, ACTION_RESTORE, ACTION_POLICY_STICKY, "/app", 50));
                if (plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/app", 50))
                        pins++;
                const Action *rev = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_GUARD, "/app", 50);
                if (rev) {
                        if (reverts++ == 0)
                                first_revert = tick;
                        assert_cpus(rev, "0-7");
                }
        }
        /* Pinned at tick 2, reverted at 12, backed off until 32: pinned again. */
        assert_int_equal(first_revert, 12);
        assert_int_equal(pins, 2);
        assert_int_equal(reverts, 1);
}

/* A cgroup of n threads at util `util` each, woken `wakeups` times a second
 * each, waiting `wait` each, in an overloaded LLC of 4 SMT2 cores. */
static Snapshot *talk_snapshot(unsigned tick, unsigned n, double util, double wakeups, double wait) {
        Snapshot *s = topo_new(1, 4, 2, tick * TICK_US);

        topo_set_llc(s, 0, 1000, 1000);
        size_t cg = topo_add_cgroup(s, "/g", CGROUP_POLICY_LATENCY, NULL);
        for (unsigned k = 0; k < n; k++) {
                ThreadSample *ts = topo_add_thread(s, cg, (pid_t) (20 + k), 1, (int) (k % 8), util, wait);
                ts->wakeups = wakeups;
        }
        topo_finish(s);
        return s;
}

/* Runs a window trial: `before` wakeups a second per thread, `after` under
 * the window, wait unchanged. Returns the guard's restore, NULL if kept. */
static char *talk_trial(unsigned n, double util, double before, double after) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        char *reverted = NULL;
        bool windowed = false, placed = false;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned tick = 0; tick < 25; tick++) {
                _cleanup_(snapshot_freep) Snapshot *s =
                        talk_snapshot(tick, n, util, windowed ? after : before, util / 10);
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                dump_plan(plan, tick);
                if (plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/g", 0))
                        windowed = placed = true;
                const Action *a = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_GUARD, "/g", 0);
                if (a && !reverted) {
                        reverted = strdup(a->reason);
                        windowed = false;
                }
        }
        assert_true(placed);
        PolicyCounters c;
        policy_state_counters(state, &c);
        assert_int_equal(c.kept + c.reverted, 1);
        return reverted;
}

/* A request/response cgroup (a client and its server: two threads that
 * talk, 4,000 hand-overs a second each) is judged by its progress: a window
 * under which its wakeups halve is reverted though its wait did not grow,
 * one under which they hold is kept. A mesh (eight talkers, hackbench) is
 * judged by wait per CPU received: its wakeups halve under a window that
 * makes it faster, and it is kept. */
static void test_request_response_progress(void **unused) {
        _cleanup_(freep) char *halved = talk_trial(2, 400, 4000, 2000);
        assert_non_null(halved);
        assert_non_null(strstr(halved, "guard: window made progress worse: 4000 wakeups/s < before 8000"));

        _cleanup_(freep) char *held = talk_trial(2, 400, 4000, 3900);
        assert_null(held);

        _cleanup_(freep) char *mesh = talk_trial(8, 250, 4000, 2000);
        assert_null(mesh);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_worse_reverts_and_backs_off),
                cmocka_unit_test(test_better_is_kept),
                cmocka_unit_test(test_noise_is_kept),
                cmocka_unit_test(test_pressure_reverts),
                cmocka_unit_test(test_guard_off),
                cmocka_unit_test(test_wait_per_cpu_received),
                cmocka_unit_test(test_before_is_a_window),
                cmocka_unit_test(test_window_on_ramp_judged_from_tick),
                cmocka_unit_test(test_ramp_restarts_the_trial),
                cmocka_unit_test(test_default_percent),
                cmocka_unit_test(test_floor_follows_util),
                cmocka_unit_test(test_sticky_guard),
                cmocka_unit_test(test_request_response_progress),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
