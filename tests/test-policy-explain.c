/* SPDX-License-Identifier: MIT */
/* policy_explain(): each decision said in words, with the inputs against
 * the thresholds (issue 16: "no window: LLC 0 util 41% < 60% overloaded
 * threshold"; "window 0-3 kept: wait per CPU 12 -> 9"). */

#include "policy-internal.h"
#include "test-policy-util.h"

/* One LLC of 4 SMT2 cores; /g's two threads on CPUs 0 and 1. */
static Snapshot *snap(unsigned tick, double llc_util, double util, double wait) {
        Snapshot *s = topo_new(1, 4, 2, tick * TICK_US);

        topo_set_llc(s, 0, llc_util, llc_util);
        size_t cg = topo_add_cgroup(s, "/g", CGROUP_POLICY_LATENCY, NULL);
        topo_add_thread(s, cg, 11, 1, 0, util, wait);
        topo_add_thread(s, cg, 12, 1, 1, util, wait);
        size_t b = topo_add_cgroup(s, "/b", CGROUP_POLICY_BALANCED, NULL);
        topo_add_thread(s, b, 21, 1, 2, util, wait);
        topo_finish(s);
        return s;
}

/* The text of the first line with topic (and containing what, when given). */
static const char *line(const Explanation *e, const char *topic, const char *what) {
        for (size_t i = 0; i < e->n; i++)
                if (streq(e->lines[i].topic, topic) && (!what || strstr(e->lines[i].text, what)))
                        return e->lines[i].text;
        return NULL;
}

static void dump(const Explanation *e) {
        for (size_t i = 0; i < e->n; i++)
                print_message("    %-8s %s\n", e->lines[i].topic, e->lines[i].text);
}

/* Decide one tick, then explain /g (and check /b says it gets no window). */
static void step(PolicyState *state, const Settings *st, unsigned tick, double llc_util, double util,
                 double wait, Explanation *ret) {
        _cleanup_(snapshot_freep) Snapshot *s = snap(tick, llc_util, util, wait);
        _cleanup_plan_ Plan *plan = decide_checked(s, st, state);
        _cleanup_(explanation_done) Explanation b = {};

        assert_int_equal(policy_explain(s, st, state, plan, "/g", s->time_us, ret), 0);
        assert_int_equal(policy_explain(s, st, state, plan, "/b", s->time_us, &b), 0);
        assert_non_null(line(&b, "window", "no window: the cgroup's policy is balanced"));
        assert_non_null(line(&b, "sticky", "no pins: the cgroup's policy is balanced"));
        Explanation none = {};
        assert_int_equal(policy_explain(s, st, state, plan, "/nope", s->time_us, &none), -ENOENT);
        assert_int_equal(none.n, 0);
}

static void test_not_overloaded_and_light(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned tick = 0; tick < 3; tick++) {
                _cleanup_(explanation_done) Explanation e = {};
                /* 41% of each CPU: calm, windows widen back. */
                step(state, &st, tick, 420, 500, 20, &e);
                dump(&e);
                assert_non_null(line(&e, "cgroup",
                                     "/g: policy latency, mode latency; CPUs 0-7; 2 threads using 1000"));
                assert_non_null(
                        line(&e, "window", "no window: LLC 0 calm: util 41%, nr_idle_scan 6 of 8 >= 75%"));
                assert_non_null(line(&e, "balance", "nothing to balance: one LLC"));
                assert_non_null(line(&e, "sticky", "0 of 2 threads pinned to their previous core"));
                assert_non_null(line(&e, "plan", "no action in the last tick"));
        }
        {
                /* 51%: between calm and overloaded. */
                _cleanup_(explanation_done) Explanation e = {};
                step(state, &st, 3, 520, 500, 20, &e);
                dump(&e);
                assert_non_null(line(&e, "window", "no window: LLC 0 util 51% < 60% overloaded threshold"));
        }
        /* Overloaded, but /g's threads use 100 in all: under a quarter CPU
         * (its load fell: not settled, which is no reason to wait). */
        for (unsigned tick = 4; tick < 40; tick++) {
                _cleanup_(explanation_done) Explanation e = {};
                step(state, &st, tick, 1000, 50, 20, &e);
                if (tick == 4) {
                        dump(&e);
                        assert_non_null(line(&e, "window", "no window: demand 100 < 256 (25% of a CPU)"));
                }
                if (tick == 39) {
                        dump(&e);
                        assert_non_null(line(&e, "window", "no window: demand 100 < 256 (25% of a CPU)"));
                }
        }
}

/* A window is placed, judged and kept: the explanation follows it, with the
 * guard's figures; a window that hurts is reverted and said so. */
static void test_window_kept_and_reverted(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;
        bool placed = false, judged = false, kept = false;

        settings_latency(&st);
        st.guard_percent = 10;
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned tick = 0; tick < 30; tick++) {
                _cleanup_(explanation_done) Explanation e = {};
                step(state, &st, tick, 1000, 500, tick < 5 ? 50 : 10, &e);
                if (line(&e, "plan", "window set_cgroup_cpus")) {
                        placed = true;
                        assert_non_null(line(&e, "window", "placed in LLC 0: overloaded (util 98% >= 60%"));
                }
                if (line(&e, "guard", "window being judged for"))
                        judged = true;
                if (line(&e, "guard", "window kept")) {
                        dump(&e);
                        kept = true;
                        assert_non_null(
                                line(&e, "guard",
                                     "window kept 0.0 s ago: wait per CPU received 100 -> 52 (limit 130)"));
                        assert_non_null(line(&e, "window", "held in LLC 0"));
                        break;
                }
        }
        assert_true(placed && judged && kept);

        /* A fresh start, where the window makes waiting six times worse. */
        policy_state_free(state);
        assert_int_equal(policy_state_new(&state), 0);
        bool reverted = false;
        unsigned tick = 0;
        for (; tick < 30 && !reverted; tick++) {
                _cleanup_(explanation_done) Explanation e = {};
                const CgroupState *c = policy_state_find_cgroup(state, "/g");
                bool windowed = c && c->window.mask;
                step(state, &st, tick, 1000, 500, windowed ? 300 : 50, &e);
                if (line(&e, "guard", "window reverted")) {
                        dump(&e);
                        reverted = true;
                        assert_non_null(
                                line(&e, "guard", "wait per CPU received 100.00 -> 600.00 > limit 130.00"));
                        assert_non_null(line(&e, "guard", "backing off, no new one for another 2.0 s"));
                        assert_non_null(line(&e, "plan", "guard restore"));
                }
        }
        assert_true(reverted);
        _cleanup_(explanation_done) Explanation e = {};
        step(state, &st, tick, 1000, 500, 50, &e);
        dump(&e);
        assert_non_null(line(&e, "window", "no new window for another"));
}

/* A window in one-core LLCs of one package: the explanation names the
 * merged LLCs and their figures, not the first LLC's alone. */
static void test_merged_domain_named(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        _cleanup_(snapshot_freep) Snapshot *s = topo_new(2, 1, 1, 0);
        _cleanup_(explanation_done) Explanation e = {};
        Settings st;

        settings_latency(&st);
        topo_set_package(s, 0, 2, 0);
        topo_set_cpu(s, 0, 1024, 1024);
        topo_set_cpu(s, 1, 512, 512);
        size_t cg = topo_add_cgroup(s, "/g", CGROUP_POLICY_LATENCY, NULL);
        topo_add_thread(s, cg, 101, 1, 0, 300, 0);
        topo_add_thread(s, cg, 102, 1, 1, 300, 0);
        topo_finish(s);
        assert_int_equal(policy_state_new(&state), 0);
        _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
        assert_int_equal(policy_explain(s, &st, state, plan, "/g", s->time_us, &e), 0);
        dump(&e);
        /* Mean util 75% of the two CPUs, nr_idle_scan 0 of 2. */
        assert_non_null(line(&e, "window", "placed in llcs 0-1 (package 0): overloaded (util 75%"));
        assert_non_null(line(&e, "window", "nr_idle_scan 0 of 2"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_not_overloaded_and_light),
                cmocka_unit_test(test_window_kept_and_reverted),
                cmocka_unit_test(test_merged_domain_named),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
