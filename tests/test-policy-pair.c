/* SPDX-License-Identifier: MIT */
/* A pair of talking threads pinned together, or not at all
 * (daemon/core/policy/policy-pair.c, docs/POLICY.md). */

#include "test-policy-util.h"
#include "topology.h"

#define A 100
#define B 101

/* One tick of a ping-pong in /pp on two CPUs (two cores, one LLC): the ends
 * A and B, and a thread M that does not talk (a main thread). */
typedef struct PairTick {
        int cpu_a, cpu_b;
        double wakeups_a, wakeups_b;
        double util;           /* of each end */
        double wait;           /* of each end */
        double background;     /* util on CPU 0 of a cgroup that is not opted in */
        double overhead;       /* util on each end's CPU beyond the threads' */
        const char *allowed;   /* of both ends: NULL for every CPU, else steerd's pin */
        const char *allowed_b; /* of B, when not the same as A's */
} PairTick;

/* As recorded here: each CPU ~25% busier than its end's own util (the
 * wakeups' cost, in no thread's runtime). */
static const PairTick apart = {
        .cpu_a = 0, .cpu_b = 1, .wakeups_a = 12000, .wakeups_b = 12000, .util = 200, .overhead = 250};

static Snapshot *pair_snapshot(uint64_t t, const PairTick *k) {
        Snapshot *s = topo_new(1, 2, 1, t);
        double on[2] = {k->background, 0};

        on[k->cpu_a] += k->util + k->overhead;
        on[k->cpu_b] += k->util + (k->cpu_b != k->cpu_a ? k->overhead : 0);
        topo_set_cpu(s, 0, on[0], on[0]);
        topo_set_cpu(s, 1, on[1], on[1]);
        size_t cg = topo_add_cgroup(s, "/pp", CGROUP_POLICY_LATENCY, NULL);
        topo_add_thread(s, cg, 99, 7, 1, 0, 0);
        topo_add_thread(s, cg, A, 7, k->cpu_a, k->util, k->wait);
        topo_add_thread(s, cg, B, 7, k->cpu_b, k->util, k->wait);
        /* Only now: each add may move the array. */
        ThreadSample *m = &s->cgroups[cg].threads[0], *a = m + 1, *b = m + 2;
        m->wakeups = 0;
        a->wakeups = k->wakeups_a;
        b->wakeups = k->wakeups_b;
        if (k->allowed) {
                hwloc_bitmap_free(a->allowed);
                a->allowed = topo_parse(k->allowed);
        }
        if (k->allowed_b ?: k->allowed) {
                hwloc_bitmap_free(b->allowed);
                b->allowed = topo_parse(k->allowed_b ?: k->allowed);
        }
        topo_finish(s);
        return s;
}

static Plan *pair_step(PolicyState *state, const Settings *st, unsigned i, const PairTick *k) {
        _cleanup_(snapshot_freep) Snapshot *s = pair_snapshot(i * TICK_US, k);
        Plan *plan = decide_checked(s, st, state);
        dump_plan(plan, i);
        return plan;
}

/* Runs ticks [from, to) of k; returns the number of actions. */
static size_t run(PolicyState *state, const Settings *st, unsigned from, unsigned to, const PairTick *k) {
        size_t n = 0;
        for (unsigned i = from; i < to; i++) {
                _cleanup_plan_ Plan *plan = pair_step(state, st, i, k);
                n += plan->n_actions;
        }
        return n;
}

/* The pair apart for StickyTicks ticks: both ends pinned in the same tick to
 * the CPU of the lower tid's end (the quieter unit; a tie), never one alone,
 * never the thread that does not talk. Returns the tick after the pin. */
static unsigned pin_pair(PolicyState *state, const Settings *st) {
        for (unsigned i = 0; i < st->sticky_ticks; i++) {
                _cleanup_plan_ Plan *plan = pair_step(state, st, i, &apart);
                if (i + 1 < st->sticky_ticks) {
                        assert_int_equal(plan->n_actions, 0);
                        continue;
                }
                assert_int_equal(plan->n_actions, 2);
                const Action *a = plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/pp", A);
                const Action *b = plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/pp", B);
                assert_cpus(a, "0");
                assert_cpus(b, "0");
                assert_non_null(strstr(b->reason, "pair with tid 100"));
        }
        return st->sticky_ticks;
}

/* Together on CPU 0, as steerd pinned them. */
static PairTick together(double wakeups, double wait) {
        return (PairTick){.cpu_a = 0,
                          .cpu_b = 0,
                          .wakeups_a = wakeups,
                          .wakeups_b = wakeups,
                          .util = 450,
                          .wait = wait,
                          .allowed = "0"};
}

static unsigned guard_ticks(const Settings *st) {
        return (unsigned) (st->guard_window_ms * USEC_PER_MSEC / TICK_US);
}

static bool explains(const Explanation *e, const char *what) {
        for (size_t i = 0; i < e->n; i++)
                if (streq(e->lines[i].topic, "sticky") && strstr(e->lines[i].text, what))
                        return true;
        for (size_t i = 0; i < e->n; i++)
                print_message("    %-8s %s\n", e->lines[i].topic, e->lines[i].text);
        return false;
}

/* Pinned together, and `steerctl explain` says why. */
static void test_pair_pinned_together(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        _cleanup_(explanation_done) Explanation e = {};
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        unsigned i = pin_pair(state, &st);
        PairTick fast = together(300000, 400);
        _cleanup_(snapshot_freep) Snapshot *s = pair_snapshot(i * TICK_US, &fast);
        _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
        assert_int_equal(plan->n_actions, 0);
        assert_int_equal(policy_explain(s, &st, state, plan, "/pp", s->time_us, &e), 0);
        assert_true(explains(&e, "2 threads talk"));
        assert_true(explains(&e, "2 pinned as a pair"));
}

/* A ping-pong 25x faster together (perf bench sched pipe here: 81.7 -> 3.2
 * us/op) waits for its partner's hand-over by design: its wait rises, its
 * progress rises more, and the guard keeps it. */
static void test_guard_keeps_progress(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        PolicyCounters c;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        unsigned i = pin_pair(state, &st);
        PairTick fast = together(300000, 400);
        assert_int_equal(run(state, &st, i, i + 3 * guard_ticks(&st), &fast), 0);
        policy_state_counters(state, &c);
        /* One trial for the pair, on its lower tid. */
        assert_int_equal(c.kept, 1);
        assert_int_equal(c.reverted, 0);
}

/* Wait per CPU received worse, progress up by 45% (the pipe pair of a
 * trial: 87,533 -> 127,119 hand-overs a second): a gain, kept. It was
 * reverted while a rise had to reach GuardPercent (50%). */
static void test_guard_keeps_moderate_progress(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        PolicyCounters c;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        unsigned i = pin_pair(state, &st);
        PairTick faster = together(12000 * 1.45, 300);
        assert_int_equal(run(state, &st, i, i + 3 * guard_ticks(&st), &faster), 0);
        policy_state_counters(state, &c);
        assert_int_equal(c.kept, 1);
        assert_int_equal(c.reverted, 0);
}

/* Progress that falls by GuardPercent reverts the pair (the trial's end;
 * the other end follows in the same tick), and the cgroup's pins back off:
 * not pinned again while the backoff (2 GuardWindowMs) lasts. */
static void test_guard_reverts_lost_progress(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        PolicyCounters c;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        unsigned i = pin_pair(state, &st);
        PairTick slow = together(6000, 0);
        unsigned end = i - 1 + guard_ticks(&st); /* the trial started with the pin */
        assert_int_equal(run(state, &st, i, end, &slow), 0);
        _cleanup_plan_ Plan *plan = pair_step(state, &st, end, &slow);
        assert_int_equal(plan->n_actions, 2);
        const Action *a = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_GUARD, "/pp", A);
        assert_non_null(a);
        assert_non_null(strstr(a->reason, "progress worse"));
        assert_cpus(a, "0-1");
        const Action *b = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_STICKY, "/pp", B);
        assert_non_null(b);
        assert_non_null(strstr(b->reason, "partner tid 100"));
        policy_state_counters(state, &c);
        assert_int_equal(c.reverted, 1);
        assert_int_equal(run(state, &st, end + 1, end + 2 * guard_ticks(&st), &apart), 0);
        assert_int_equal(run(state, &st, end + 2 * guard_ticks(&st), end + 2 * guard_ticks(&st) + 1, &apart),
                         2);
}

/* Two threads woken by timers at the same rate look like a pair; together
 * they gain no progress and only wait for each other: reverted on wait. */
static void test_guard_reverts_wait_without_progress(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        unsigned i = pin_pair(state, &st);
        PairTick waiting = together(12000, 300);
        waiting.util = 200;
        unsigned end = i - 1 + guard_ticks(&st); /* the trial started with the pin */
        assert_int_equal(run(state, &st, i, end, &waiting), 0);
        _cleanup_plan_ Plan *plan = pair_step(state, &st, end, &waiting);
        const Action *a = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_GUARD, "/pp", A);
        assert_non_null(a);
        assert_non_null(strstr(a->reason, "did not rise"));
}

/* A pair that stops talking is released, both ends in the same tick. */
static void test_released_when_quiet(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        unsigned i = pin_pair(state, &st);
        PairTick fast = together(300000, 400);
        assert_int_equal(run(state, &st, i, i + 2, &fast), 0);
        PairTick quiet = together(50, 0);
        _cleanup_plan_ Plan *plan = pair_step(state, &st, i + 2, &quiet);
        assert_int_equal(plan->n_actions, 2);
        const Action *a = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_STICKY, "/pp", A);
        assert_non_null(a);
        assert_non_null(strstr(a->reason, "stopped talking"));
        assert_cpus(a, "0-1");
        assert_non_null(plan_find(plan, ACTION_RESTORE, ACTION_POLICY_STICKY, "/pp", B));
}

/* Other work on the pair's CPU releases both ends at once; less of it than
 * the pair's release limit (its gate with the single pins' hysteresis)
 * holds. */
static void test_released_when_unit_busy(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        unsigned i = pin_pair(state, &st);
        PairTick some = together(300000, 400);
        some.util = 200;
        some.background = 450; /* 44%: held */
        assert_int_equal(run(state, &st, i, i + 1, &some), 0);
        i++;
        PairTick busy = together(300000, 400);
        busy.util = 200;
        busy.background = 600; /* 59% > StickyPairIdlePercent 30 + (25 - 5) */
        _cleanup_plan_ Plan *plan = pair_step(state, &st, i, &busy);
        assert_int_equal(plan->n_actions, 2);
        const Action *a = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_STICKY, "/pp", A);
        assert_non_null(a);
        assert_non_null(strstr(a->reason, "util without them"));
        assert_non_null(plan_find(plan, ACTION_RESTORE, ACTION_POLICY_STICKY, "/pp", B));
}

/* One end that stops talking releases both. */
static void test_one_end_stops_talking(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        unsigned i = pin_pair(state, &st);
        PairTick fast = together(300000, 400);
        fast.wakeups_b = 100000; /* rates that drift apart hold the pin while both talk */
        assert_int_equal(run(state, &st, i, i + 2, &fast), 0);
        fast.wakeups_b = 5;
        _cleanup_plan_ Plan *plan = pair_step(state, &st, i + 2, &fast);
        assert_int_equal(plan->n_actions, 2);
        assert_non_null(plan_find(plan, ACTION_RESTORE, ACTION_POLICY_STICKY, "/pp", A));
        assert_non_null(plan_find(plan, ACTION_RESTORE, ACTION_POLICY_STICKY, "/pp", B));
}

/* Rates that do not match are no pair: nothing pinned. A talker whose
 * partner is not in the cgroup is not pinned at all, while the thread next
 * to it that does not talk is, alone. StickyPairWakeups=0 pins each alone
 * (the rule before pairs). */
static void test_no_pair_no_pin(void **unused) {
        Settings st;

        settings_latency(&st);
        {
                _cleanup_policy_state_ PolicyState *state = NULL;
                PairTick mismatch = apart;
                mismatch.wakeups_b = 3000;
                assert_int_equal(policy_state_new(&state), 0);
                assert_int_equal(run(state, &st, 0, 10, &mismatch), 0);
        }
        for (int off = 0; off <= 1; off++) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                PairTick single = apart;
                single.wakeups_b = 50; /* B does not talk: A's partner is elsewhere */
                single.util = 20;      /* each CPU quiet enough for a pin */
                single.overhead = 0;
                st.sticky_pair_wakeups = off ? 0 : 1000;
                assert_int_equal(policy_state_new(&state), 0);
                assert_int_equal(run(state, &st, 0, st.sticky_ticks - 1, &single), 0);
                _cleanup_plan_ Plan *plan = pair_step(state, &st, st.sticky_ticks - 1, &single);
                assert_cpus(plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/pp", B), "1");
                if (off)
                        assert_cpus(plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/pp", A),
                                    "0");
                else
                        assert_null(plan_find_any(plan, "/pp", A));
        }
}

/* Forty threads of one process that all talk (perf bench messaging, a
 * hackbench group) are a mesh: none is pinned, alone or in pairs. */
#define MESH 40
static void test_mesh_not_pinned(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned i = 0; i < 20; i++) {
                Snapshot *s = topo_new(1, 8, 1, i * TICK_US);
                /* Each CPU quiet enough to pin any of them alone. */
                topo_set_llc(s, 0, 10, 10);
                size_t cg = topo_add_cgroup(s, "/msg", CGROUP_POLICY_LATENCY, NULL);
                for (unsigned k = 0; k < MESH; k++) {
                        ThreadSample *t = topo_add_thread(s, cg, 1000 + (pid_t) k, 3, (int) (k % 8), 2, 0);
                        t->wakeups = 5000;
                        t->tgid = 1000; /* one process: still a mesh, not twenty pairs */
                }
                topo_finish(s);
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                assert_int_equal(plan->n_actions, 0);
                snapshot_free(s);
        }
}

/* A thread pinned alone before it talked is let go once it talks. */
static void test_solo_pin_let_go_when_talking(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        PairTick calm = apart;
        calm.wakeups_a = calm.wakeups_b = 50;
        calm.util = 20;
        calm.overhead = 0;
        assert_int_equal(run(state, &st, 0, st.sticky_ticks, &calm), 2);
        PairTick talking = calm;
        talking.allowed = "0";
        talking.allowed_b = "1";
        talking.wakeups_a = 5000;
        talking.wakeups_b = 50;
        _cleanup_plan_ Plan *plan = pair_step(state, &st, st.sticky_ticks, &talking);
        const Action *a = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_STICKY, "/pp", A);
        assert_non_null(a);
        assert_non_null(strstr(a->reason, "it talks now"));
        assert_null(plan_find_any(plan, "/pp", B));
}

/* Around the threshold, 1,000 ticks alternating: a thread woken 950 and
 * 1,050 times a second by turns is pinned alone once and kept; a pair whose
 * rates swing between 800 and 1,100 is pinned once and kept. */
static void test_no_flapping_near_threshold(void **unused) {
        Settings st;

        settings_latency(&st);
        for (int pair = 0; pair <= 1; pair++) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                const Action *pa = NULL, *pb = NULL;
                char *ca = NULL, *cb = NULL;
                size_t actions = 0;
                assert_int_equal(policy_state_new(&state), 0);
                for (unsigned i = 0; i < 1000; i++) {
                        PairTick k = apart;
                        k.util = 20;
                        k.overhead = 0;
                        k.wakeups_a = pair ? (i % 2 ? 800 : 1100) : (i % 2 ? 950 : 1050);
                        k.wakeups_b = pair ? k.wakeups_a : 50;
                        /* The masks as steerd set them. */
                        k.allowed = ca;
                        k.allowed_b = cb;
                        if (cb && pair)
                                k.cpu_b = 0;
                        _cleanup_plan_ Plan *plan = pair_step(state, &st, i, &k);
                        actions += plan->n_actions;
                        pa = plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/pp", A);
                        pb = plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/pp", B);
                        if (pa)
                                assert_int_equal(cpuset_format(pa->cpus, &ca), 0);
                        if (pb)
                                assert_int_equal(cpuset_format(pb->cpus, &cb), 0);
                }
                free(ca);
                free(cb);
                assert_int_equal(actions, 2); /* A and B pinned once: together, or each alone */
        }
}

/* Two pairs that qualify in the same tick: each unit takes one of them
 * (the snapshot does not show the first pair's load where it went yet). */
static void test_two_pairs_one_tick(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned i = 0; i < st.sticky_ticks; i++) {
                _cleanup_(snapshot_freep) Snapshot *s = topo_new(1, 2, 1, i * TICK_US);
                topo_set_cpu(s, 0, 100, 100);
                topo_set_cpu(s, 1, 100, 100);
                const char *names[] = {"/p1", "/p2"};
                for (size_t g = 0; g < 2; g++) {
                        size_t cg = topo_add_cgroup(s, names[g], CGROUP_POLICY_LATENCY, NULL);
                        topo_add_thread(s, cg, (pid_t) (200 + 10 * g), 7, 0, 50, 0);
                        topo_add_thread(s, cg, (pid_t) (201 + 10 * g), 7, 1, 50, 0);
                        s->cgroups[cg].threads[0].wakeups = s->cgroups[cg].threads[1].wakeups = 8000;
                }
                topo_finish(s);
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                if (i + 1 < st.sticky_ticks) {
                        assert_int_equal(plan->n_actions, 0);
                        continue;
                }
                assert_int_equal(plan->n_actions, 4);
                assert_cpus(plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/p1", 201), "0");
                assert_cpus(plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/p2", 210), "1");
                assert_cpus(plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/p2", 211), "1");
        }
}

/* Talkers of one cgroup in processes on four quiet CPUs: each thread
 * {tid, tgid, cpu, wakeups, allowed (NULL: the cgroup's)}. */
typedef struct Talker {
        pid_t tid, tgid;
        int cpu;
        double wakeups;
        const char *allowed;
} Talker;

static Plan *talkers_step(PolicyState *state, const Settings *st, unsigned i, const Talker *t, size_t n) {
        _cleanup_(snapshot_freep) Snapshot *s = topo_new(1, 4, 1, i * TICK_US);
        double on[4] = {};

        size_t cg = topo_add_cgroup(s, "/pp", CGROUP_POLICY_LATENCY, NULL);
        for (size_t k = 0; k < n; k++) {
                ThreadSample *x = topo_add_thread(s, cg, t[k].tid, 7, t[k].cpu, 50, 0);
                x->tgid = t[k].tgid;
                x->wakeups = t[k].wakeups;
                if (t[k].allowed) {
                        hwloc_bitmap_free(x->allowed);
                        x->allowed = topo_parse(t[k].allowed);
                }
                on[t[k].cpu] += 50;
        }
        for (unsigned c = 0; c < 4; c++)
                topo_set_cpu(s, c, on[c], on[c]);
        topo_finish(s);
        Plan *plan = decide_checked(s, st, state);
        dump_plan(plan, i);
        return plan;
}

/* Two ping-pongs, each the two talking threads of its own process, in one
 * cgroup: two pairs, each pinned together on its own CPU. When one pair
 * stops talking it alone is released; the other holds. */
static void test_two_processes_two_pairs(void **unused) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        Settings st;

        settings_latency(&st);
        assert_int_equal(policy_state_new(&state), 0);
        Talker apart4[] = {{200, 200, 0, 8000, NULL},
                           {201, 200, 1, 8000, NULL},
                           {300, 300, 2, 9000, NULL},
                           {301, 300, 3, 9000, NULL}};
        for (unsigned i = 0; i < st.sticky_ticks; i++) {
                _cleanup_plan_ Plan *plan = talkers_step(state, &st, i, apart4, ELEMENTSOF(apart4));
                if (i + 1 < st.sticky_ticks) {
                        assert_int_equal(plan->n_actions, 0);
                        continue;
                }
                assert_int_equal(plan->n_actions, 4);
                assert_cpus(plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/pp", 200), "0");
                assert_cpus(plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/pp", 201), "0");
                assert_cpus(plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/pp", 300), "2");
                const Action *a = plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/pp", 301);
                assert_cpus(a, "2");
                assert_non_null(strstr(a->reason, "pair with tid 300"));
        }
        unsigned i = st.sticky_ticks;
        Talker together4[] = {{200, 200, 0, 8000, "0"},
                              {201, 200, 0, 8000, "0"},
                              {300, 300, 2, 9000, "2"},
                              {301, 300, 2, 9000, "2"}};
        for (unsigned end = i + 2; i < end; i++) {
                _cleanup_plan_ Plan *plan = talkers_step(state, &st, i, together4, ELEMENTSOF(together4));
                assert_int_equal(plan->n_actions, 0);
        }
        together4[2].wakeups = together4[3].wakeups = 50;
        _cleanup_plan_ Plan *plan = talkers_step(state, &st, i, together4, ELEMENTSOF(together4));
        assert_int_equal(plan->n_actions, 2);
        const Action *r = plan_find(plan, ACTION_RESTORE, ACTION_POLICY_STICKY, "/pp", 300);
        assert_non_null(r);
        assert_non_null(strstr(r->reason, "stopped talking"));
        assert_non_null(plan_find(plan, ACTION_RESTORE, ACTION_POLICY_STICKY, "/pp", 301));
}

/* Among more than two talkers only the two of one process pair: three of
 * one process are a mesh, and talkers whose process is unknown (older
 * recordings, a status that could not be read) pair with none. */
static void test_pairs_only_within_a_process(void **unused) {
        Settings st;

        settings_latency(&st);
        for (int unknown = 0; unknown <= 1; unknown++) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                pid_t q = unknown ? 0 : 300;
                Talker t[] = {{200, 200, 0, 8000, NULL},
                              {201, 200, 1, 8000, NULL},
                              {202, 200, 1, 8000, NULL},
                              {300, q, 2, 9000, NULL},
                              {301, q, 3, 9000, NULL}};
                size_t actions = 0;
                assert_int_equal(policy_state_new(&state), 0);
                for (unsigned i = 0; i < st.sticky_ticks; i++) {
                        _cleanup_plan_ Plan *plan = talkers_step(state, &st, i, t, ELEMENTSOF(t));
                        actions += plan->n_actions;
                        for (pid_t tid = 200; tid <= 202; tid++)
                                assert_null(plan_find_any(plan, "/pp", tid));
                        if (i + 1 == st.sticky_ticks && !unknown) {
                                assert_cpus(plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY,
                                                      "/pp", 300),
                                            "2");
                                assert_cpus(plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY,
                                                      "/pp", 301),
                                            "2");
                        }
                }
                assert_int_equal(actions, unknown ? 0 : 2);
        }
}

/* Real machines' topologies, two sockets with several LLCs each. */
static const char *const real_topologies[] = {
        /* tests/fixtures/topologies/synthetic-strings.tsv, epyc9654-2s-nps1-smt2 */
        "pack:2 [numa] l3:12(size=32MiB) l2:8(size=1MiB) l1d:1(size=32KiB) core:1 pu:2(indexes=core)",
        TEST_SHARED_DIR "/topologies/hwloc-Intel-SapphireRapids-2xXeonMax9460.xml",
};

/* An idle snapshot of the machine t. */
static Snapshot *snapshot_of(const Topology *t, uint64_t time_us) {
        Snapshot *s = calloc(1, sizeof(Snapshot));

        assert_non_null(s);
        s->time_us = time_us;
        s->period_us = TICK_US;
        s->source = RUNNABLE_SOURCE_SCHEDSTAT;
        s->cpus = calloc(t->n_cpus, sizeof(CpuSample));
        s->llcs = calloc(t->n_llcs, sizeof(LlcSample));
        assert_non_null(s->cpus);
        assert_non_null(s->llcs);
        s->n_cpus = t->n_cpus;
        s->n_llcs = t->n_llcs;
        for (size_t i = 0; i < t->n_cpus; i++)
                s->cpus[i] = (CpuSample){.cpu = t->cpus[i].cpu,
                                         .llc = t->cpus[i].llc,
                                         .core = t->cpus[i].core,
                                         .online = t->cpus[i].online};
        for (size_t l = 0; l < t->n_llcs; l++) {
                s->llcs[l].id = (unsigned) l;
                s->llcs[l].package =
                        topology_cpu(t, (unsigned) hwloc_bitmap_first(t->llcs[l].cpus))->package;
                s->llcs[l].cpus = hwloc_bitmap_dup(t->llcs[l].cpus);
                assert_non_null(s->llcs[l].cpus);
        }
        return s;
}

static int llc_of(const Topology *t, unsigned cpu) {
        for (size_t i = 0; i < t->n_cpus; i++)
                if (t->cpus[i].cpu == cpu)
                        return t->cpus[i].llc;
        fail_msg("no CPU %u", cpu);
        return -1;
}

static int core_of(const Topology *t, unsigned cpu) {
        for (size_t i = 0; i < t->n_cpus; i++)
                if (t->cpus[i].cpu == cpu)
                        return t->cpus[i].core;
        fail_msg("no CPU %u", cpu);
        return -1;
}

/* One tick on t: the pairs' ends (tids 500/501 of process 500, 600/601 of
 * 600) on cpus[0..n_ends), each at util 100 with 50 of wakeup overhead on
 * its CPU; busy_llc >= 0: every CPU of that LLC outside the first end's
 * core at util 900. */
static Plan *real_step(PolicyState *state, const Settings *st, const Topology *t, unsigned i,
                       const unsigned *cpus, size_t n_ends, int busy_llc) {
        _cleanup_(snapshot_freep) Snapshot *s = snapshot_of(t, i * TICK_US);
        const pid_t tids[] = {500, 501, 600, 601};

        for (size_t k = 0; k < s->n_cpus; k++)
                if (busy_llc >= 0 && s->cpus[k].llc == busy_llc && s->cpus[k].online &&
                    s->cpus[k].core != core_of(t, cpus[0]))
                        s->cpus[k].util = s->cpus[k].runnable = 900;
        size_t cg = topo_add_cgroup(s, "/pp", CGROUP_POLICY_LATENCY, NULL);
        for (size_t k = 0; k < n_ends; k++) {
                ThreadSample *x = topo_add_thread(s, cg, tids[k], 7, (int) cpus[k], 100, 0);
                x->tgid = tids[k] / 100 * 100;
                x->wakeups = 20000;
                CpuSample *c = topo_cpu(s, cpus[k]);
                c->util = c->runnable = 150;
        }
        topo_finish(s);
        Plan *plan = decide_checked(s, st, state);
        dump_plan(plan, i);
        return plan;
}

/* Pins of the StickyTicks-th tick; fails unless both ends of each pair got
 * one mask, within one LLC, and no two pairs the same CPUs. */
static void assert_pairs_in_one_llc(const Topology *t, const Plan *plan, size_t n_pairs, CpuSet *ret) {
        const pid_t tids[] = {500, 501, 600, 601};
        assert_int_equal(plan->n_actions, 2 * n_pairs);
        for (size_t p = 0; p < n_pairs; p++) {
                const Action *a =
                        plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/pp", tids[2 * p]);
                const Action *b = plan_find(plan, ACTION_SET_THREAD_CPUS, ACTION_POLICY_STICKY, "/pp",
                                            tids[2 * p + 1]);
                assert_non_null(a);
                assert_non_null(b);
                assert_true(hwloc_bitmap_isequal(a->cpus, b->cpus));
                int llc = llc_of(t, (unsigned) hwloc_bitmap_first(a->cpus));
                assert_true(hwloc_bitmap_isincluded(a->cpus, t->llcs[llc].cpus));
                ret[p] = a->cpus;
        }
        for (size_t p = 1; p < n_pairs; p++)
                assert_false(hwloc_bitmap_intersects(ret[0], ret[p]));
}

/* On two-socket machines with many LLCs (EPYC 9654: 24 L3 of 8 cores;
 * Sapphire Rapids: 2 L3 of 40 cores), two ping-pongs whose ends run in
 * different LLCs, one even across sockets: each pair is pinned to one core
 * of one LLC, the pairs to different cores. With the first end's LLC
 * overloaded by other work (its own core quiet), the pair goes to its
 * other end's LLC instead: never pulled into an overloaded LLC. */
static void test_pairs_on_real_topologies(void **unused) {
        Settings st;

        settings_latency(&st);
        for (size_t k = 0; k < ELEMENTSOF(real_topologies); k++) {
                _cleanup_(topology_freep) Topology *t = NULL;
                assert_int_equal(topology_load(NULL, real_topologies[k], &t), 0);
                assert_true(t->n_llcs >= 2 && t->n_packages == 2);
                size_t last = t->n_llcs - 1;
                unsigned a1 = (unsigned) hwloc_bitmap_first(t->llcs[0].cpus);
                unsigned b1 = (unsigned) hwloc_bitmap_first(t->llcs[last].cpus);
                unsigned a2 = (unsigned) hwloc_bitmap_first(t->llcs[1].cpus);
                int b2 = (int) a1;
                while (core_of(t, (unsigned) b2) == core_of(t, a1))
                        b2 = hwloc_bitmap_next(t->llcs[0].cpus, b2);
                assert_true(b2 >= 0);
                const unsigned ends[] = {a1, b1, a2, (unsigned) b2};

                for (int busy = 0; busy <= 1; busy++) {
                        _cleanup_policy_state_ PolicyState *state = NULL;
                        size_t n_ends = busy ? 2 : 4;
                        CpuSet masks[2] = {};
                        assert_int_equal(policy_state_new(&state), 0);
                        for (unsigned i = 0; i < st.sticky_ticks; i++) {
                                _cleanup_plan_ Plan *plan =
                                        real_step(state, &st, t, i, ends, n_ends, busy ? 0 : -1);
                                if (i + 1 < st.sticky_ticks) {
                                        assert_int_equal(plan->n_actions, 0);
                                        continue;
                                }
                                assert_pairs_in_one_llc(t, plan, n_ends / 2, masks);
                                int llc = llc_of(t, (unsigned) hwloc_bitmap_first(masks[0]));
                                assert_int_equal(llc, busy ? (int) last : 0);
                        }
                }
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pair_pinned_together),
                cmocka_unit_test(test_guard_keeps_progress),
                cmocka_unit_test(test_guard_keeps_moderate_progress),
                cmocka_unit_test(test_guard_reverts_lost_progress),
                cmocka_unit_test(test_guard_reverts_wait_without_progress),
                cmocka_unit_test(test_released_when_quiet),
                cmocka_unit_test(test_released_when_unit_busy),
                cmocka_unit_test(test_one_end_stops_talking),
                cmocka_unit_test(test_no_pair_no_pin),
                cmocka_unit_test(test_mesh_not_pinned),
                cmocka_unit_test(test_solo_pin_let_go_when_talking),
                cmocka_unit_test(test_no_flapping_near_threshold),
                cmocka_unit_test(test_two_pairs_one_tick),
                cmocka_unit_test(test_two_processes_two_pairs),
                cmocka_unit_test(test_pairs_only_within_a_process),
                cmocka_unit_test(test_pairs_on_real_topologies),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
