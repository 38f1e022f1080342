/* SPDX-License-Identifier: MIT */
/* Prev-CPU stickiness (DESIGN.md 1.2, docs/POLICY.md). */

#include "test-policy-util.h"

#define TID 50

typedef struct Tick {
        double others; /* core 2's util without the thread, on CPU 5 */
        double wait;
} Tick;

/* One LLC of 4 SMT2 cores (CPUs 0-7), calm. Thread TID of /app runs on CPU 4
 * (core 2, with CPU 5) at util 500; CPU 5 carries the rest of the core. */
static Snapshot *sticky_snapshot(uint64_t t, Tick k, const char *thread_allowed) {
        Snapshot *s = topo_new(1, 4, 2, t);

        topo_set_llc(s, 0, 100, 100);
        topo_set_cpu(s, 4, 500, 500);
        topo_set_cpu(s, 5, k.others, k.others);
        size_t cg = topo_add_cgroup(s, "/app", CGROUP_POLICY_LATENCY, NULL);
        ThreadSample *ts = topo_add_thread(s, cg, TID, 77, 4, 500, k.wait);
        if (thread_allowed) {
                hwloc_bitmap_free(ts->allowed);
                ts->allowed = topo_parse(thread_allowed);
        }
        topo_finish(s);
        return s;
}

static Plan *step(PolicyState *state, const Settings *st, unsigned i, Tick k, const char *thread_allowed) {
        _cleanup_(snapshot_freep) Snapshot *s = sticky_snapshot(i * TICK_US, k, thread_allowed);
        Plan *plan = decide_checked(s, st, state);
        dump_plan(plan, i);
        return plan;
}

static const Tick quiet = {.others = 41, .wait = 0}; /* 2% of the core's 2048 */

/* Pinned after StickyTicks quiet ticks, not before. */
static void test_pin_after_sticky_ticks(void **unused) {
        for (StickyScope scope = STICKY_SCOPE_CORE; scope <= STICKY_SCOPE_CPU; scope++) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                Settings st;

                settings_latency(&st);
                st.sticky_scope = scope;
                assert_int_equal(policy_state_new(&state), 0);
                for (unsigned i = 0; i < st.sticky_ticks; i++) {
                        _cleanup_plan_ Plan *plan = step(state, &st, i, quiet, NULL);
                        if (i + 1 < st.sticky_ticks) {
                                assert_int_equal(plan->n_actions, 0);
                                continue;
                        }
                        const Action *a =
                                plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/app", TID);
                        assert_non_null(a);
                        assert_int_equal(a->starttime, 77);
                        assert_cpus(a, scope == STICKY_SCOPE_CORE ? "4-5" : "4");
                        assert_non_null(strstr(a->reason, "for 3 ticks"));
                }
        }
}

/* A streak needs consecutive quiet ticks; a waiting thread is never pinned. */
static void test_streak_resets(void **unused) {
        const Tick ticks[] = {
                quiet, quiet, {.others = 300}, quiet, quiet, {.others = 41, .wait = 80}, quiet, quiet, quiet,
        };
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned i = 0; i < ELEMENTSOF(ticks); i++) {
                _cleanup_plan_ Plan *plan = step(state, &st, i, ticks[i], NULL);
                assert_int_equal(plan->n_actions, i == ELEMENTSOF(ticks) - 1);
        }
}

/* The pin stays within the thread's own allowed CPUs. */
static void test_pin_within_thread_mask(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned i = 0; i < 3; i++) {
                _cleanup_plan_ Plan *plan = step(state, &st, i, quiet, "4,6-7");
                if (i == 2)
                        assert_cpus(
                                plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/app", TID),
                                "4");
        }
        /* Released: back to the mask it had before. */
        _cleanup_plan_ Plan *plan = step(state, &st, 3, (Tick){.others = 614}, "4");
        assert_cpus(plan_find(plan, ACTION_RESTORE, ACTION_POLICY_STICKY, "/app", TID), "4,6-7");
}

static void pin(PolicyState *state, const Settings *st) {
        for (unsigned i = 0; i < st->sticky_ticks; i++) {
                _cleanup_plan_ Plan *plan = step(state, st, i, quiet, NULL);
                assert_int_equal(plan->n_actions, i + 1 == st->sticky_ticks);
        }
}

/* At 30% of the core without the thread: released in the same tick. */
static void test_release_on_util(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        pin(state, &st);

        /* 25% of 2048 is 512: 500 stays pinned, 614 (30%) goes. */
        _cleanup_plan_ Plan *p1 = step(state, &st, 3, (Tick){.others = 500}, "4-5");
        assert_int_equal(p1->n_actions, 0);
        _cleanup_plan_ Plan *p2 = step(state, &st, 4, (Tick){.others = 614}, "4-5");
        assert_int_equal(p2->n_actions, 1);
        const Action *a = plan_find(p2, ACTION_RESTORE, ACTION_POLICY_STICKY, "/app", TID);
        assert_cpus(a, "0-7");
        assert_non_null(strstr(a->reason, "614 > 25%"));

        PolicyCounters c;
        policy_state_counters(state, &c);
        assert_int_equal(c.applied, 1);
        assert_int_equal(c.restored, 1);
        assert_int_equal(c.reverted, 0);
}

/* Wait above StickyMaxWaitPercent (5% of 1024 = 51.2): released at once. */
static void test_release_on_wait(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        pin(state, &st);

        _cleanup_plan_ Plan *p1 = step(state, &st, 3, (Tick){.others = 41, .wait = 51}, "4-5");
        assert_int_equal(p1->n_actions, 0);
        _cleanup_plan_ Plan *p2 = step(state, &st, 4, (Tick){.others = 41, .wait = 60}, "4-5");
        const Action *a = plan_find(p2, ACTION_RESTORE, ACTION_POLICY_STICKY, "/app", TID);
        assert_cpus(a, "0-7");
        assert_non_null(strstr(a->reason, "wait 60 > 5%"));

        /* Quiet again: no re-pin within STICKY_REPIN_HOLD_US of the release
         * (released at tick 4, 100 ms a tick: 10 s = 100 ticks), then one. */
        unsigned repinned = 0;
        for (unsigned i = 5; i < 130; i++) {
                _cleanup_plan_ Plan *p = step(state, &st, i, quiet, NULL);
                if (plan_find(p, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/app", TID)) {
                        assert_true(i >= 104);
                        repinned++;
                }
        }
        assert_int_equal(repinned, 1);
}

/* A balanced cgroup, or mode balanced, never gets a pin. */
static void test_no_pin_when_not_latency(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        st.mode = MODE_BALANCED;
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned i = 0; i < 6; i++) {
                _cleanup_plan_ Plan *plan = step(state, &st, i, quiet, NULL);
                assert_int_equal(plan->n_actions, 0);
        }
}

/* ---- the tick's budget and the wakeup filter (issue 12) ---- */

#define MANY 200

/* One LLC of 32 SMT2 cores, idle; MANY threads of /many spread over the
 * CPUs, each quiet (util 0, wait 0), scheduled in `wakeups` times a second. */
static Snapshot *many_snapshot(uint64_t t, double wakeups) {
        Snapshot *s = topo_new(1, 32, 2, t);
        size_t cg = topo_add_cgroup(s, "/many", CGROUP_POLICY_LATENCY, NULL);
        for (unsigned i = 0; i < MANY; i++)
                topo_add_thread(s, cg, 1000 + (pid_t) i, 5, (int) (i % 64), 0, 0)->wakeups = wakeups;
        topo_finish(s);
        return s;
}

/* Every quiet thread qualifies in the same tick (a fixture, a host going
 * idle): at most StickyMaxPinsPerTick pins a tick, the longest-waiting
 * first, every thread pinned once in the end, in ceil(MANY / budget) ticks. */
static void test_pins_spread_over_ticks(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        bool pinned[MANY] = {};
        size_t total = 0, worst = 0;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        unsigned ticks = st.sticky_ticks - 1 + (MANY + st.sticky_max_pins - 1) / st.sticky_max_pins;
        for (unsigned i = 0; i < ticks + 2; i++) {
                _cleanup_(snapshot_freep) Snapshot *s = many_snapshot(i * TICK_US, 50);
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                worst = MAX(worst, plan->n_actions);
                for (size_t k = 0; k < plan->n_actions; k++) {
                        const Action *a = &plan->actions[k];
                        assert_int_equal(a->kind, ACTION_SET_THREAD_CPUS);
                        assert_false(pinned[a->tid - 1000]);
                        pinned[a->tid - 1000] = true;
                        /* In the snapshot's order within the tick. */
                        assert_true(k == 0 || a->tid > plan->actions[k - 1].tid);
                }
                total += plan->n_actions;
                if (i + 1 < st.sticky_ticks)
                        assert_int_equal(plan->n_actions, 0);
                else if (i < ticks)
                        assert_true(plan->n_actions > 0);
        }
        assert_int_equal(worst, st.sticky_max_pins);
        assert_int_equal(total, MANY);
}

/* Sleepers (scheduled in once a second) are not worth a pin; a thread
 * waking 50 times a second is, and one of an older recording (unknown) too. */
static void test_pin_only_frequent_wakers(void **unused) {
        const struct {
                double wakeups;
                bool pinned;
        } cases[] = {{1, false}, {9.9, false}, {10, true}, {50, true}, {-1, true}};

        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                size_t total = 0;
                Settings st;

                settings_latency(&st);
                st.sticky_max_pins = MANY;
                assert_int_equal(policy_state_new(&state), 0);
                for (unsigned i = 0; i < st.sticky_ticks + 1; i++) {
                        _cleanup_(snapshot_freep) Snapshot *s = many_snapshot(i * TICK_US, cases[c].wakeups);
                        _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                        total += plan->n_actions;
                }
                assert_int_equal(total, cases[c].pinned ? MANY : 0);
        }
}

/* A thread whose groups who wakes whom has not yet observed (wake_unknown)
 * is not pinned alone, however long it is quiet; once an observation has
 * covered it (and found no group), it is pinned at the next tick. */
static void test_no_pin_before_groups_known(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;
        unsigned i, unknown_ticks = 20;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        for (i = 0; i < unknown_ticks + 1; i++) {
                _cleanup_(snapshot_freep) Snapshot *s = sticky_snapshot(i * TICK_US, quiet, NULL);
                s->cgroups[0].threads[0].wake_unknown = i < unknown_ticks;
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                if (i < unknown_ticks)
                        assert_int_equal(plan->n_actions, 0);
                else
                        assert_non_null(plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/app", TID));
        }
}

/* The checker holds every plan to the budget: a 17th pin is a violation. */
static void test_checker_counts_pins(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        _cleanup_(snapshot_freep) Snapshot *s = many_snapshot(0, 50);
        _cleanup_plan_ Plan *plan = NULL;
        char *why = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        assert_int_equal(plan_new(&plan), 0);
        for (unsigned i = 0; i <= st.sticky_max_pins; i++) {
                const ThreadSample *ts = &s->cgroups[0].threads[i];
                _cleanup_cpuset_ CpuSet core = hwloc_bitmap_alloc();
                hwloc_bitmap_set(core, (unsigned) ts->cpu & ~1u);
                hwloc_bitmap_set(core, ((unsigned) ts->cpu & ~1u) + 1);
                if (i == st.sticky_max_pins) /* 16 are fine */
                        assert_int_equal(policy_check_plan(s, &st, state, plan, 0, NULL), 0);
                assert_int_equal(plan_add(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/many",
                                          ts->tid, ts->starttime, core, "test"),
                                 0);
        }
        assert_int_equal(policy_check_plan(s, &st, state, plan, 0, &why), 1);
        assert_non_null(strstr(why, "StickyMaxPinsPerTick"));
        free(why);
}

/* A quiet cgroup's snapshot lists only the threads steerd holds
 * (threads_partial): the others keep their state (a pin stays, and is
 * released later when its core gets busy), nothing is forgotten. */
static void test_partial_listing_keeps_state(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned i = 0; i < st.sticky_ticks; i++) {
                _cleanup_(snapshot_freep) Snapshot *s = many_snapshot(i * TICK_US, 50);
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                (void) plan;
        }
        /* 16 pinned (tids 1000..1015, in order). Quiet now: only 1003 listed. */
        for (unsigned i = st.sticky_ticks; i < st.sticky_ticks + 3; i++) {
                _cleanup_(snapshot_freep) Snapshot *s = many_snapshot(i * TICK_US, 50);
                CgroupSample *c = &s->cgroups[0];
                for (size_t k = 0; k < c->n_threads; k++)
                        hwloc_bitmap_free(c->threads[k].allowed);
                c->threads[0] = c->threads[3];
                c->threads[0].allowed = topo_parse("2-3"); /* its pin: CPU 3's core */
                c->n_threads = 1;
                c->threads_partial = true;
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                assert_int_equal(plan->n_actions, 0); /* no new pin, nothing restored */
        }
        /* All listed again, and thread 1009's core (CPUs 8-9) busy: its pin,
         * kept through the quiet ticks, is released. */
        _cleanup_(snapshot_freep) Snapshot *s = many_snapshot(10 * TICK_US, 50);
        topo_set_cpu(s, 8, 900, 900);
        topo_finish(s);
        for (size_t k = 0; k < 16; k++) {
                CgroupSample *c = &s->cgroups[0];
                hwloc_bitmap_free(c->threads[k].allowed);
                char buf[16];
                snprintf(buf, sizeof(buf), "%zu-%zu", (k % 64) & ~(size_t) 1, ((k % 64) & ~(size_t) 1) + 1);
                c->threads[k].allowed = topo_parse(buf);
        }
        _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
        const Action *a = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_STICKY, "/many", 1009);
        assert_non_null(a);
        assert_null(plan_find(plan, ACTION_RESTORE, ACTION_POLICY_STICKY, "/many", 1003));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pin_after_sticky_ticks),
                cmocka_unit_test(test_streak_resets),
                cmocka_unit_test(test_pin_within_thread_mask),
                cmocka_unit_test(test_release_on_util),
                cmocka_unit_test(test_release_on_wait),
                cmocka_unit_test(test_no_pin_when_not_latency),
                cmocka_unit_test(test_pins_spread_over_ticks),
                cmocka_unit_test(test_pin_only_frequent_wakers),
                cmocka_unit_test(test_partial_listing_keeps_state),
                cmocka_unit_test(test_checker_counts_pins),
                cmocka_unit_test(test_no_pin_before_groups_known),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
