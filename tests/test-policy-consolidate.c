/* SPDX-License-Identifier: MIT */
/* The consolidation window below overload (DESIGN.md 1.5a, issue 14):
 * daemon/core/policy/policy-consolidate.c and its use in policy-window.c,
 * docs/POLICY.md "Consolidation". The streams follow the plans: once
 * windowed, the group's threads run on the window's CPUs with the figures
 * the scenario gives for "together". The figures of the ring are the ones
 * measured on the development VM (a token ring of four threads: 840 of util
 * at 128,000 wakeups a second across two CPUs, 1,020 at 333,000 on one). */

#include "policy-internal.h"
#include "test-policy-util.h"

#define CG "/ring"

typedef struct Figures {
        double util, wait, wakeups; /* per thread */
} Figures;

typedef struct World {
        unsigned cores;   /* one LLC of single-CPU cores */
        unsigned n;       /* threads of /ring, tids 100.. */
        Figures apart;    /* spread by the kernel */
        Figures together; /* inside a consolidation window */
        double bg[8];     /* util of other work per CPU */
        CpuSet window;    /* NULL: none */
        CpuSet pin[64];   /* per thread: its own mask from the plan, NULL: none */
        bool rings;       /* who wakes whom is known: two rings of n / 2 */
        PolicyState *state;
        Settings st;
        unsigned tick;
        unsigned sets, restores, reverts;
        char last_reason[640];
} World;

static void world_init(World *w, unsigned cores, unsigned n, Figures apart, Figures together) {
        assert_true(n <= 64 && cores <= 8);
        *w = (World){.cores = cores, .n = n, .apart = apart, .together = together};
        settings_latency(&w->st);
        assert_int_equal(policy_state_new(&w->state), 0);
}

static void world_done(World *w) {
        hwloc_bitmap_free(w->window);
        for (unsigned i = 0; i < 64; i++)
                hwloc_bitmap_free(w->pin[i]);
        policy_state_free(w->state);
}

static Snapshot *world_snapshot(const World *w) {
        Snapshot *s = topo_new(1, w->cores, 1, w->tick * TICK_US);
        const Figures *f = w->window ? &w->together : &w->apart;
        unsigned on_window = w->window ? (unsigned) hwloc_bitmap_weight(w->window) : w->cores;
        double on[8] = {};

        size_t cg = topo_add_cgroup(s, CG, CGROUP_POLICY_LATENCY, NULL);
        if (w->window)
                hwloc_bitmap_copy(s->cgroups[cg].cpus, w->window);
        for (unsigned i = 0; i < w->n; i++) {
                /* Spread over the CPUs it may use, in turn. */
                int cpu = (int) (i % on_window);
                if (w->window) {
                        cpu = hwloc_bitmap_first(w->window);
                        for (unsigned k = 0; k < i % on_window; k++)
                                cpu = hwloc_bitmap_next(w->window, cpu);
                }
                if (w->pin[i])
                        cpu = hwloc_bitmap_first(w->pin[i]);
                ThreadSample *t = topo_add_thread(s, cg, 100 + (pid_t) i, 5, cpu, f->util, f->wait);
                t->wakeups = f->wakeups;
                t->tgid = 100;
                if (w->pin[i])
                        hwloc_bitmap_copy(t->allowed, w->pin[i]);
                if (w->rings) {
                        /* Each thread wakes the next of its ring. */
                        unsigned half = w->n / 2, base = i < half ? 0 : half;
                        unsigned next = base + (i - base + 1) % half,
                                 prev = base + (i - base + half - 1) % half;
                        t->partners[0] = (WakePartner){.tid = 100 + (pid_t) next, .rate = f->wakeups / 2};
                        t->partners[1] = (WakePartner){.tid = 100 + (pid_t) prev, .rate = f->wakeups / 2};
                        t->n_partners = 2;
                }
                on[cpu] += f->util;
        }
        for (unsigned c = 0; c < w->cores; c++)
                topo_set_cpu(s, c, MIN(on[c] + w->bg[c], 1024.0), on[c] + w->bg[c]);
        topo_finish(s);
        return s;
}

/* One tick; the window follows the plan. Returns the plan. */
static Plan *world_step(World *w) {
        _cleanup_(snapshot_freep) Snapshot *s = world_snapshot(w);
        Plan *plan = decide_checked(s, &w->st, w->state);

        dump_plan(plan, w->tick);
        for (size_t i = 0; i < plan->n_actions; i++) {
                const Action *a = &plan->actions[i];
                if (a->tid != 0 && streq(a->cgroup, CG)) {
                        unsigned k = (unsigned) (a->tid - 100);
                        assert_true(k < w->n);
                        hwloc_bitmap_free(w->pin[k]);
                        w->pin[k] = a->kind == ACTION_SET_THREAD_CPUS ? hwloc_bitmap_dup(a->cpus) : NULL;
                        continue;
                }
                if (!streq(a->cgroup, CG))
                        continue;
                hwloc_bitmap_free(w->window);
                w->window = NULL;
                snprintf(w->last_reason, sizeof(w->last_reason), "%s", a->reason ?: "");
                if (a->kind == ACTION_SET_CGROUP_CPUS) {
                        w->sets++;
                        w->window = hwloc_bitmap_dup(a->cpus);
                } else if (a->policy == ACTION_POLICY_GUARD)
                        w->reverts++;
                else
                        w->restores++;
        }
        w->tick++;
        return plan;
}

static void run(World *w, unsigned ticks) {
        for (unsigned i = 0; i < ticks; i++) {
                _cleanup_plan_ Plan *plan = world_step(w);
        }
}

static unsigned window_cpus(const World *w) {
        return w->window ? (unsigned) hwloc_bitmap_weight(w->window) : 0;
}

static const Figures RING_APART = {.util = 210, .wait = 85, .wakeups = 32000};
static const Figures RING_TOGETHER = {.util = 255, .wait = 200, .wakeups = 83000};

/* A ring of four threads across two idle CPUs: one window of one CPU at
 * the first tick, kept by the guard (its hand-overs rose), held. */
static void test_ring_consolidated_and_kept(void **unused) {
        (void) unused;
        PolicyCounters c;
        World w;

        world_init(&w, 2, 4, RING_APART, RING_TOGETHER);
        run(&w, 1);
        assert_int_equal(w.sets, 1);
        assert_int_equal(window_cpus(&w), 1);
        assert_non_null(strstr(w.last_reason, "consolidate: 4 busy threads hand work"));
        run(&w, 40);
        assert_int_equal(w.sets, 1);
        assert_int_equal(w.restores + w.reverts, 0);
        assert_int_equal(window_cpus(&w), 1);
        policy_state_counters(w.state, &c);
        assert_int_equal(c.kept, 1);
        assert_int_equal(c.reverted, 0);
        world_done(&w);
}

/* Together its hand-overs halve: the guard reverts by progress, and the
 * window backs off (GuardWindowMs x 2 = 20 ticks) before it is tried again. */
static void test_consolidation_reverted_by_progress(void **unused) {
        (void) unused;
        Figures worse = {.util = 255, .wait = 100, .wakeups = 12000};
        World w;

        world_init(&w, 2, 4, RING_APART, worse);
        run(&w, 1);
        assert_int_equal(w.sets, 1);
        run(&w, 10);
        assert_int_equal(w.reverts, 1);
        assert_null(w.window);
        assert_non_null(strstr(w.last_reason, "made progress worse"));
        run(&w, 19);
        assert_int_equal(w.sets, 1); /* backing off */
        run(&w, 3);
        assert_int_equal(w.sets, 2);
        world_done(&w);
}

/* perf bench messaging below overload: 40 threads that wait 30 times as
 * long as they run need the CPUs they have; never one window. */
static void test_waiting_mesh_not_consolidated(void **unused) {
        (void) unused;
        Figures msg = {.util = 20, .wait = 600, .wakeups = 1000};
        World w;

        world_init(&w, 2, 40, msg, msg);
        run(&w, 30);
        assert_int_equal(w.sets, 0);
        const CgroupState *c = policy_state_find_cgroup(w.state, CG);
        assert_non_null(c);
        assert_int_equal(c->consolidate.gate, CONSOLIDATE_WAITS);
        world_done(&w);
}

/* Two busy threads are a pair: pinned together, never a window. */
static void test_pair_pinned_not_windowed(void **unused) {
        (void) unused;
        Figures pipe = {.util = 376, .wait = 46, .wakeups = 50000};
        size_t pins = 0;
        World w;

        world_init(&w, 2, 2, pipe, pipe);
        for (unsigned i = 0; i < 10; i++) {
                _cleanup_plan_ Plan *plan = world_step(&w);
                pins += plan_count(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY);
        }
        assert_int_equal(w.sets, 0);
        assert_int_equal(pins, 2);
        world_done(&w);
}

/* The ring stops (its work done): the window goes at once, without a
 * back-off, and comes back at the first tick it hands work again. */
static void test_stops_handing_work_released(void **unused) {
        (void) unused;
        World w;

        world_init(&w, 2, 4, RING_APART, RING_TOGETHER);
        run(&w, 15);
        assert_int_equal(w.sets, 1);
        w.together = (Figures){.util = 40, .wait = 0, .wakeups = 50};
        run(&w, 1);
        assert_int_equal(w.restores, 1);
        assert_null(w.window);
        assert_non_null(strstr(w.last_reason, "consolidation ends: its threads no longer hand work"));
        w.together = RING_TOGETHER;
        run(&w, 2); /* residency of the last move is over (1 s since the window) */
        assert_int_equal(w.sets, 2);
        assert_int_equal(w.reverts, 0);
        world_done(&w);
}

/* Consolidate=no: nothing below overload. */
static void test_off(void **unused) {
        (void) unused;
        World w;

        world_init(&w, 2, 4, RING_APART, RING_TOGETHER);
        w.st.consolidate = false;
        run(&w, 20);
        assert_int_equal(w.sets, 0);
        world_done(&w);
}

/* Three threads whose demand (1,050) needs both CPUs they run on: nothing
 * to consolidate; and a light ring (180) gets no window at all. */
static void test_fits_not_and_light(void **unused) {
        (void) unused;
        Figures big = {.util = 350, .wait = 30, .wakeups = 20000};
        Figures light = {.util = 60, .wait = 5, .wakeups = 5000};
        World w;

        world_init(&w, 2, 3, big, big);
        run(&w, 20);
        assert_int_equal(w.sets, 0);
        assert_int_equal(policy_state_find_cgroup(w.state, CG)->consolidate.gate, CONSOLIDATE_FITS_NOT);
        world_done(&w);

        world_init(&w, 2, 3, light, light);
        run(&w, 20);
        assert_int_equal(w.sets, 0);
        world_done(&w);
}

/* Other work fills the LLC to overload beside the consolidated ring: the
 * window is neither sized by share nor given back as outgrown, it stays. */
static void test_held_through_overload(void **unused) {
        (void) unused;
        World w;

        world_init(&w, 2, 4, RING_APART, RING_TOGETHER);
        run(&w, 15);
        assert_int_equal(w.sets, 1);
        int other = 1 - hwloc_bitmap_first(w.window);
        w.bg[other] = 700; /* (1,020 + 700) / 2: overloaded */
        run(&w, 30);
        assert_int_equal(w.sets, 1);
        assert_int_equal(w.restores + w.reverts, 0);
        world_done(&w);
}

/* Four cores each a third busy with other work: one core has no room for
 * the ring's 840, two have; the window is two cores, never squeezed to one. */
static void test_never_squeezed(void **unused) {
        (void) unused;
        World w;

        world_init(&w, 4, 4, RING_APART, RING_TOGETHER);
        for (unsigned c = 0; c < 4; c++)
                w.bg[c] = 300;
        run(&w, 1);
        assert_int_equal(w.sets, 1);
        assert_int_equal(window_cpus(&w), 2);
        world_done(&w);
}

/* Two rings of three threads in one process: without who wakes whom one
 * consolidation window of two cores (on four); once the rings are known,
 * each ring is pinned to a core of its own inside the window, which stays
 * (given back, the cpuset would widen under the pins). */
static void test_groups_found_inside_window(void **unused) {
        (void) unused;
        Figures apart = {.util = 200, .wait = 60, .wakeups = 30000};
        Figures together = {.util = 300, .wait = 150, .wakeups = 60000};
        World w;

        world_init(&w, 4, 6, apart, together);
        run(&w, 1);
        assert_int_equal(w.sets, 1);
        assert_int_equal(window_cpus(&w), 2);
        w.rings = true;
        run(&w, 20);
        assert_int_equal(w.sets, 1);
        assert_int_equal(w.restores + w.reverts, 0);
        for (unsigned i = 0; i < 6; i++) {
                assert_non_null(w.pin[i]);
                assert_true(hwloc_bitmap_isincluded(w.pin[i], w.window));
                assert_true(hwloc_bitmap_isequal(w.pin[i], w.pin[i < 3 ? 0 : 3]));
        }
        assert_false(hwloc_bitmap_isequal(w.pin[0], w.pin[3]));
        world_done(&w);
}

/* Two rings known from the start: placed apart by the groups, no window. */
static void test_groups_first_no_window(void **unused) {
        (void) unused;
        Figures apart = {.util = 200, .wait = 60, .wakeups = 30000};
        World w;

        world_init(&w, 4, 6, apart, apart);
        w.rings = true;
        run(&w, 1);
        assert_int_equal(policy_state_find_cgroup(w.state, CG)->consolidate.gate, CONSOLIDATE_GROUPS);
        run(&w, 19); /* then their pins hold them */
        assert_int_equal(w.sets, 0);
        assert_int_equal(policy_state_find_cgroup(w.state, CG)->consolidate.gate, CONSOLIDATE_PINNED);
        world_done(&w);
}

/* steerctl explain says what the rule found. */
static void test_explain(void **unused) {
        (void) unused;
        _cleanup_(explanation_done) Explanation e = {};
        bool window = false, yes = false;
        World w;

        world_init(&w, 2, 4, RING_APART, RING_TOGETHER);
        run(&w, 5);
        _cleanup_(snapshot_freep) Snapshot *s = world_snapshot(&w);
        _cleanup_plan_ Plan *plan = decide_checked(s, &w.st, w.state);
        assert_int_equal(policy_explain(s, &w.st, w.state, plan, CG, s->time_us, &e), 0);
        for (size_t i = 0; i < e.n; i++) {
                if (getenv("TEST_POLICY_VERBOSE"))
                        fprintf(stderr, "%s: %s\n", e.lines[i].topic, e.lines[i].text);
                window |= streq(e.lines[i].topic, "window") &&
                          strstr(e.lines[i].text, "consolidation window 0 held") != NULL;
                yes |= streq(e.lines[i].topic, "consolidate") &&
                       strstr(e.lines[i].text, "held: its threads still hand work") != NULL;
        }
        assert_true(window);
        assert_true(yes);
        world_done(&w);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ring_consolidated_and_kept),
                cmocka_unit_test(test_consolidation_reverted_by_progress),
                cmocka_unit_test(test_waiting_mesh_not_consolidated),
                cmocka_unit_test(test_pair_pinned_not_windowed),
                cmocka_unit_test(test_stops_handing_work_released),
                cmocka_unit_test(test_off),
                cmocka_unit_test(test_fits_not_and_light),
                cmocka_unit_test(test_held_through_overload),
                cmocka_unit_test(test_never_squeezed),
                cmocka_unit_test(test_groups_found_inside_window),
                cmocka_unit_test(test_groups_first_no_window),
                cmocka_unit_test(test_explain),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
