/* SPDX-License-Identifier: MIT */
/* What the engine holds, and when it lets go: mode off, threads and cgroups
 * that vanish, thread identity, policy changes, hotplug, let-go. */

#include "test-policy-util.h"

/* For test_drop_counted(), which breaks the state on purpose. */
#include "policy-internal.h"

typedef struct World {
        bool with_w, with_s;
        CgroupPolicy w_policy;
        uint64_t s_starttime;
        const char *offline; /* cpulist */
} World;

/* Two LLCs of 4 SMT2 cores. LLC 0 (CPUs 0-7) overloaded, with /w's two
 * threads: a window. LLC 1 (8-15) calm, with /s's thread 77 on CPU 12, its
 * core otherwise idle: a pin after StickyTicks. No one waits: no balance. */
static Snapshot *world(unsigned tick, const World *w) {
        Snapshot *s = topo_new(2, 4, 2, tick * TICK_US);

        topo_set_llc(s, 0, 1000, 1000);
        topo_set_llc(s, 1, 100, 100);
        topo_set_cpu(s, 12, 300, 300);
        topo_set_cpu(s, 13, 10, 10);
        if (w->offline) {
                _cleanup_cpuset_ CpuSet off = topo_parse(w->offline);
                int cpu;
                hwloc_bitmap_foreach_begin(cpu, off) {
                        topo_cpu(s, (unsigned) cpu)->online = false;
                }
                hwloc_bitmap_foreach_end();
        }
        if (w->with_w) {
                size_t cg = topo_add_cgroup(s, "/w", w->w_policy, NULL);
                topo_add_thread(s, cg, 21, 1, 0, 500, 0);
                topo_add_thread(s, cg, 22, 1, 1, 500, 0);
        }
        if (w->with_s) {
                size_t cg = topo_add_cgroup(s, "/s", CGROUP_POLICY_LATENCY, NULL);
                topo_add_thread(s, cg, 77, w->s_starttime, 12, 300, 0);
        }
        topo_finish(s);
        return s;
}

static Plan *tick_world(PolicyState *state, const Settings *st, unsigned tick, const World *w) {
        _cleanup_(snapshot_freep) Snapshot *s = world(tick, w);
        Plan *plan = decide_checked(s, st, state);
        dump_plan(plan, tick);
        return plan;
}

static const World everyone = {.with_w = true, .with_s = true, .s_starttime = 5};

/* Ticks 0-2: the window at 0, the pin at 2. */
static void setup(PolicyState *state, const Settings *st) {
        for (unsigned tick = 0; tick < 3; tick++) {
                _cleanup_plan_ Plan *plan = tick_world(state, st, tick, &everyone);
                if (tick == 0)
                        assert_cpus(plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/w", 0),
                                    "0-1");
                if (tick == 2)
                        assert_cpus(plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/s", 77),
                                    "12-13");
                assert_int_equal(plan->n_actions, tick != 1);
        }
}

static void test_mode_off_restores(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        setup(state, &st);

        st.mode = MODE_OFF;
        _cleanup_plan_ Plan *off = tick_world(state, &st, 3, &everyone);
        assert_int_equal(off->n_actions, 2);
        assert_cpus(plan_find(off, ACTION_RESTORE, ACTION_POLICY_WINDOW, "/w", 0), "0-15");
        const Action *a = plan_find(off, ACTION_RESTORE, ACTION_POLICY_STICKY, "/s", 77);
        assert_cpus(a, "0-15");
        assert_int_equal(a->starttime, 5);
        assert_non_null(strstr(a->reason, "mode off"));

        PolicyCounters c;
        policy_state_counters(state, &c);
        assert_int_equal(c.applied, 2);
        assert_int_equal(c.restored, 2);

        /* Forgotten: nothing more to restore. */
        _cleanup_plan_ Plan *again = tick_world(state, &st, 4, &everyone);
        assert_int_equal(again->n_actions, 0);

        /* Back on: everything starts afresh (the pin needs StickyTicks again). */
        st.mode = MODE_LATENCY;
        for (unsigned tick = 5; tick < 8; tick++) {
                _cleanup_plan_ Plan *plan = tick_world(state, &st, tick, &everyone);
                assert_int_equal(plan->n_actions, tick != 6);
        }
}

/* Observe decides exactly as latency. */
static void test_observe_is_latency(void **unused) {
        _cleanup_policy_state_ PolicyState *a = NULL, *b = NULL;
        Settings lat, obs;

        settings_latency(&lat);
        settings_latency(&obs);
        obs.mode = MODE_OBSERVE;
        assert_int_equal(policy_state_new(&a), 0);
        assert_int_equal(policy_state_new(&b), 0);
        for (unsigned tick = 0; tick < 5; tick++) {
                _cleanup_plan_ Plan *pa = tick_world(a, &lat, tick, &everyone);
                _cleanup_plan_ Plan *pb = tick_world(b, &obs, tick, &everyone);
                _cleanup_(freep) char *ja = NULL, *jb = NULL;
                assert_int_equal(plan_to_json(pa, tick, &ja), 0);
                assert_int_equal(plan_to_json(pb, tick, &jb), 0);
                assert_string_equal(ja, jb);
        }
}

/* A thread whose starttime changed is another thread: the old one is
 * forgotten without an action, the new one is never restored to the old one's
 * mask, and it starts its own streak. */
static void test_starttime_changed(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        World reused = everyone;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        setup(state, &st);

        reused.s_starttime = 6;
        for (unsigned tick = 3; tick < 6; tick++) {
                _cleanup_plan_ Plan *plan = tick_world(state, &st, tick, &reused);
                const Action *a = plan_find_any(plan, "/s", 77);
                if (tick < 5)
                        assert_null(a);
                else {
                        assert_non_null(a);
                        assert_int_equal(a->kind, ACTION_SET_THREAD_CPUS);
                        assert_int_equal(a->starttime, 6);
                }
        }

        /* Mode off restores the new identity's pin, never the old one's. */
        st.mode = MODE_OFF;
        _cleanup_plan_ Plan *off = tick_world(state, &st, 6, &reused);
        const Action *a = plan_find(off, ACTION_RESTORE, ACTION_POLICY_STICKY, "/s", 77);
        assert_non_null(a);
        assert_int_equal(a->starttime, 6);
}

/* A thread that is gone, or a cgroup that is gone (opted out, removed), is
 * forgotten silently; when it comes back it is new. */
static void test_vanished(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        World gone = {.with_w = false, .with_s = false};
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        setup(state, &st);

        _cleanup_plan_ Plan *p1 = tick_world(state, &st, 3, &gone);
        assert_int_equal(p1->n_actions, 0);

        st.mode = MODE_OFF;
        _cleanup_plan_ Plan *p2 = tick_world(state, &st, 4, &everyone);
        assert_int_equal(p2->n_actions, 0);
}

/* A cgroup switched from latency to balanced loses its window at once. */
static void test_policy_change(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        World balanced = everyone;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        setup(state, &st);

        balanced.w_policy = CGROUP_POLICY_BALANCED;
        _cleanup_plan_ Plan *plan = tick_world(state, &st, 3, &balanced);
        assert_int_equal(plan->n_actions, 1);
        const Action *a = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_WINDOW, "/w", 0);
        assert_cpus(a, "0-15");
        assert_non_null(strstr(a->reason, "window is off for balanced cgroups"));

        /* Mode balanced: the pin goes too. */
        st.mode = MODE_BALANCED;
        _cleanup_plan_ Plan *p2 = tick_world(state, &st, 4, &balanced);
        assert_int_equal(p2->n_actions, 1);
        assert_cpus(plan_find(p2, ACTION_RESTORE, ACTION_POLICY_STICKY, "/s", 77), "0-15");
}

/* A CPU of the window goes offline: the window goes back, without that CPU. */
static void test_hotplug(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        World hot = everyone;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        setup(state, &st);

        hot.offline = "1,13";
        _cleanup_plan_ Plan *plan = tick_world(state, &st, 3, &hot);
        dump_plan(plan, 3);
        assert_cpus(plan_find(plan, ACTION_RESTORE, ACTION_POLICY_WINDOW, "/w", 0), "0,2-12,14-15");
        assert_cpus(plan_find(plan, ACTION_RESTORE, ACTION_POLICY_STICKY, "/s", 77), "0,2-12,14-15");
}

/* Someone else changed a mask steerd set: it is theirs, no restore. */
static void test_let_go(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        setup(state, &st);

        assert_int_equal(policy_state_let_go(state, "/w", 0, 0), 0);
        assert_int_equal(policy_state_let_go(state, "/w", 0, 0), -ENOENT);
        assert_int_equal(policy_state_let_go(state, "/s", 77, 4), -ENOENT);
        assert_int_equal(policy_state_let_go(state, "/nope", 0, 0), -ENOENT);

        st.mode = MODE_OFF;
        _cleanup_plan_ Plan *off = tick_world(state, &st, 3, &everyone);
        assert_int_equal(off->n_actions, 1);
        assert_non_null(plan_find(off, ACTION_RESTORE, ACTION_POLICY_STICKY, "/s", 77));
}

/* The checker refuses what the engine must never emit. */
static void test_checker_refuses(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        _cleanup_(snapshot_freep) Snapshot *s = world(0, &everyone);
        Settings st;
        static const struct {
                ActionKind kind;
                ActionPolicy policy;
                const char *cgroup;
                pid_t tid;
                uint64_t starttime;
                const char *cpus;
        } bad[] = {
                {ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/nope", 0, 0, "0"}, /* not opted in */
                {ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/w", 0, 0, "16"},   /* not allowed */
                {ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/s", 77, 4, "12"},  /* wrong identity */
                {ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/s", 78, 5, "12"},  /* no such thread */
                {ACTION_SET_CGROUP_CPUS, ACTION_POLICY_GUARD, "/w", 0, 0, "0"},     /* guard only restores */
                {ACTION_SET_CGROUP_CPUS, ACTION_POLICY_BALANCE, "/w", 0, 0, "0-8"}, /* spans LLCs */
                {ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/s", 0, 0, "12"},   /* no thread */
        };

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_plan_ Plan *plan = NULL;
                _cleanup_cpuset_ CpuSet cpus = topo_parse(bad[i].cpus);
                _cleanup_(freep) char *why = NULL;

                assert_int_equal(plan_new(&plan), 0);
                assert_int_equal(plan_add(plan, bad[i].kind, bad[i].policy, bad[i].cgroup, bad[i].tid,
                                          bad[i].starttime, cpus, "test"),
                                 0);
                assert_int_equal(policy_check_plan(s, &st, state, plan, 0, &why), 1);
                assert_non_null(why);
        }

        /* Empty masks, two actions for one subject, too many moves. */
        _cleanup_plan_ Plan *plan = NULL;
        _cleanup_cpuset_ CpuSet empty = hwloc_bitmap_alloc(), some = topo_parse("8-15");
        _cleanup_(freep) char *why = NULL;
        assert_int_equal(plan_new(&plan), 0);
        assert_int_equal(plan_add(plan, ACTION_RESTORE, ACTION_POLICY_WINDOW, "/w", 0, 0, empty, ""), 0);
        assert_int_equal(policy_check_plan(s, &st, state, plan, 0, NULL), 1);
        plan = plan_free(plan);

        assert_int_equal(plan_new(&plan), 0);
        assert_int_equal(plan_add(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_BALANCE, "/w", 0, 0, some, ""),
                         0);
        assert_int_equal(policy_check_plan(s, &st, state, plan, 0, NULL), 0);
        st.max_moves_per_tick = 0;
        assert_int_equal(policy_check_plan(s, &st, state, plan, 0, &why), 1);
        assert_non_null(strstr(why, "MaxMovesPerTick"));
        st.max_moves_per_tick = 4;
        assert_int_equal(plan_add(plan, ACTION_RESTORE, ACTION_POLICY_WINDOW, "/w", 0, 0, some, ""), 0);
        assert_int_equal(policy_check_plan(s, &st, state, plan, 0, NULL), 1);
}

/* No thread moves twice within MinResidencyMs, however the plans come. */
static void test_checker_residency(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        setup(state, &st); /* /w's threads moved by the window at tick 0 */

        _cleanup_(snapshot_freep) Snapshot *s = world(5, &everyone);
        _cleanup_plan_ Plan *plan = NULL;
        _cleanup_cpuset_ CpuSet other = topo_parse("8-15"), wider = topo_parse("0-3");
        _cleanup_(freep) char *why = NULL;

        assert_int_equal(plan_new(&plan), 0);
        assert_int_equal(
                plan_add(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_BALANCE, "/w", 0, 0, other, ""), 0);
        assert_int_equal(policy_check_plan(s, &st, state, plan, s->time_us, &why), 1);
        assert_non_null(strstr(why, "MinResidencyMs"));
        /* Widening moves nothing: allowed. */
        plan = plan_free(plan);
        assert_int_equal(plan_new(&plan), 0);
        assert_int_equal(plan_add(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/w", 0, 0, wider, ""),
                         0);
        assert_int_equal(policy_check_plan(s, &st, state, plan, s->time_us, NULL), 0);
        /* After MinResidencyMs: allowed. */
        plan = plan_free(plan);
        assert_int_equal(plan_new(&plan), 0);
        assert_int_equal(
                plan_add(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_BALANCE, "/w", 0, 0, other, ""), 0);
        assert_int_equal(policy_check_plan(s, &st, state, plan, 1000 * USEC_PER_MSEC, NULL), 0);
}

/* A state that asks for a mask outside what the thread allows: its balance
 * layer reaches beyond the CPUs it had before steerd, which no policy would
 * set up. The pin then decided within that layer breaks the invariant: the
 * engine drops it, counts the drop, and the plan does not hold it. */
static void test_drop_counted(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        const World only_s = {.with_s = true, .s_starttime = 5};
        PolicyCounters c;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        /* Ticks 0-1: thread 77's streak; StickyTicks=3 would pin it at tick 2. */
        for (unsigned tick = 0; tick < 2; tick++) {
                _cleanup_plan_ Plan *plan = tick_world(state, &st, tick, &only_s);
                assert_int_equal(plan->n_actions, 0);
        }

        CgroupState *cs = (CgroupState *) policy_state_find_cgroup(state, "/s");
        assert_non_null(cs);
        ThreadState *t = (ThreadState *) policy_cgroup_state_find_thread(cs, 77, 5);
        assert_non_null(t);
        assert_null(t->orig);
        assert_null(t->home.mask);
        t->orig = topo_parse("8-11");
        t->home.mask = topo_parse("8-15");

        _cleanup_(snapshot_freep) Snapshot *s = world(2, &only_s);
        _cleanup_plan_ Plan *plan = NULL;
        assert_int_equal(policy_decide(s, &st, state, s->time_us, &plan), 0);
        dump_plan(plan, 2);
        assert_null(plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/s", 77));
        assert_int_equal(plan->n_actions, 0);
        policy_state_counters(state, &c);
        assert_int_equal(c.dropped, 1);
        assert_int_equal(c.applied, 0);

        /* Nothing was recorded for the dropped pin. */
        cs = (CgroupState *) policy_state_find_cgroup(state, "/s");
        t = (ThreadState *) policy_cgroup_state_find_thread(cs, 77, 5);
        assert_non_null(t);
        assert_null(t->pin.mask);
        assert_false(t->moved);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mode_off_restores),
                cmocka_unit_test(test_observe_is_latency),
                cmocka_unit_test(test_starttime_changed),
                cmocka_unit_test(test_vanished),
                cmocka_unit_test(test_policy_change),
                cmocka_unit_test(test_hotplug),
                cmocka_unit_test(test_let_go),
                cmocka_unit_test(test_checker_refuses),
                cmocka_unit_test(test_checker_residency),
                cmocka_unit_test(test_drop_counted),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
