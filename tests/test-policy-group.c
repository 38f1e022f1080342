/* SPDX-License-Identifier: MIT */
/* Groups of threads that talk among themselves, from recorded edges (who
 * wakes whom, ThreadSample.partners): daemon/core/policy/policy-group.c,
 * policy-group-place.c, docs/POLICY.md "Groups". */

#include "test-policy-util.h"

#include "policy-internal.h"

#define MAX_THREADS 192
#define CG "/hb"

typedef struct Member {
        pid_t tid;
        int cpu;
        double util, wait, wakeups;
        CpuSet allowed; /* NULL: every CPU */
        WakePartner partners[SNAPSHOT_MAX_PARTNERS];
        unsigned n_partners;
} Member;

typedef struct World {
        unsigned n_llcs, cores;
        Member m[MAX_THREADS];
        size_t n;
        PolicyState *state;
        Settings st;
        unsigned tick;
        CpuSet cg_cpus;        /* the cgroup's CPUs as the plans set them; NULL: every CPU */
        double background[64]; /* util of other cgroups' threads on each CPU */
} World;

static void world_init(World *w, unsigned n_llcs, unsigned cores) {
        *w = (World){.n_llcs = n_llcs, .cores = cores};
        settings_latency(&w->st);
        assert_int_equal(policy_state_new(&w->state), 0);
}

static void world_done(World *w) {
        for (size_t i = 0; i < w->n; i++)
                hwloc_bitmap_free(w->m[i].allowed);
        hwloc_bitmap_free(w->cg_cpus);
        policy_state_free(w->state);
}

static void link_two(Member *a, Member *b, double rate) {
        assert_true(a->n_partners < SNAPSHOT_MAX_PARTNERS && b->n_partners < SNAPSHOT_MAX_PARTNERS);
        a->partners[a->n_partners++] = (WakePartner){.tid = b->tid, .rate = rate};
        b->partners[b->n_partners++] = (WakePartner){.tid = a->tid, .rate = rate};
}

/* n threads from tid first, spread over the CPUs in turn, each linked to
 * its next two in a ring (a connected mesh, as hackbench's 20 x 20 is). */
static void add_mesh(World *w, pid_t first, size_t n, int cpu0, double util, double wakeups) {
        size_t base = w->n;
        unsigned cpus = w->n_llcs * w->cores;
        for (size_t i = 0; i < n; i++)
                w->m[w->n++] = (Member){.tid = first + (pid_t) i,
                                        .cpu = (int) ((unsigned) cpu0 + i) % (int) cpus,
                                        .util = util,
                                        .wakeups = wakeups};
        for (size_t i = 0; i < n && n > 2; i++) {
                link_two(&w->m[base + i], &w->m[base + (i + 1) % n], wakeups / 10);
                if (n > 4 && i % 2 == 0)
                        link_two(&w->m[base + i], &w->m[base + (i + 2) % n], wakeups / 10);
        }
        if (n == 2)
                link_two(&w->m[base], &w->m[base + 1], wakeups);
}

static Member *member(World *w, pid_t tid) {
        for (size_t i = 0; i < w->n; i++)
                if (w->m[i].tid == tid)
                        return &w->m[i];
        fail_msg("no tid %d", (int) tid);
        return NULL;
}

static Snapshot *world_snapshot(World *w) {
        Snapshot *s = topo_new(w->n_llcs, w->cores, 1, w->tick * TICK_US);
        unsigned cpus = w->n_llcs * w->cores;
        double on[64] = {};

        for (size_t i = 0; i < w->n; i++)
                on[w->m[i].cpu] += w->m[i].util;
        for (unsigned c = 0; c < cpus; c++)
                topo_set_cpu(s, c, MIN(on[c] + w->background[c], 1024.0), on[c] + w->background[c]);
        size_t cg = topo_add_cgroup(s, CG, CGROUP_POLICY_LATENCY, NULL);
        if (w->cg_cpus)
                hwloc_bitmap_copy(s->cgroups[cg].cpus, w->cg_cpus);
        for (size_t i = 0; i < w->n; i++)
                topo_add_thread(s, cg, w->m[i].tid, 7, w->m[i].cpu, w->m[i].util, w->m[i].wait);
        for (size_t i = 0; i < w->n; i++) {
                ThreadSample *t = &s->cgroups[cg].threads[i];
                const Member *m = &w->m[i];
                t->wakeups = m->wakeups;
                t->tgid = w->m[0].tid; /* one process: pairs by process find nothing */
                memcpy(t->partners, m->partners, sizeof(t->partners));
                t->n_partners = m->n_partners;
                if (m->allowed) {
                        hwloc_bitmap_free(t->allowed);
                        t->allowed = hwloc_bitmap_dup(m->allowed);
                }
        }
        topo_finish(s);
        return s;
}

/* One tick: the plan's masks become the threads' (each runs on the first
 * CPU of its mask when its last one is outside). Returns the plan. */
static Plan *world_step(World *w) {
        _cleanup_(snapshot_freep) Snapshot *s = world_snapshot(w);
        Plan *plan = decide_checked(s, &w->st, w->state);
        dump_plan(plan, w->tick);
        for (size_t i = 0; i < plan->n_actions; i++) {
                const Action *a = &plan->actions[i];
                if (a->tid == 0) {
                        /* The cgroup's CPUs: a thread whose mask lies
                         * outside them runs on them (the kernel resets it). */
                        if (!w->cg_cpus)
                                w->cg_cpus = hwloc_bitmap_alloc();
                        assert_non_null(w->cg_cpus);
                        hwloc_bitmap_copy(w->cg_cpus, a->cpus);
                        for (size_t k = 0; k < w->n; k++) {
                                Member *m = &w->m[k];
                                if (m->allowed && !hwloc_bitmap_intersects(m->allowed, a->cpus))
                                        hwloc_bitmap_copy(m->allowed, a->cpus);
                                if (!hwloc_bitmap_isset(a->cpus, (unsigned) m->cpu))
                                        m->cpu = hwloc_bitmap_first(a->cpus);
                        }
                        continue;
                }
                if (a->kind == ACTION_SET_CGROUP_CPUS)
                        continue;
                Member *m = member(w, a->tid);
                hwloc_bitmap_free(m->allowed);
                m->allowed = hwloc_bitmap_dup(a->cpus);
                if (!hwloc_bitmap_isset(m->allowed, (unsigned) m->cpu))
                        m->cpu = hwloc_bitmap_first(m->allowed);
        }
        w->tick++;
        return plan;
}

static size_t run(World *w, unsigned ticks, ActionKind kind) {
        size_t n = 0;
        for (unsigned i = 0; i < ticks; i++) {
                _cleanup_plan_ Plan *plan = world_step(w);
                for (size_t k = 0; k < plan->n_actions; k++)
                        n += plan->actions[k].kind == kind;
        }
        return n;
}

static char *mask_of(const World *w, size_t i) {
        char *s = NULL;
        if (!w->m[i].allowed)
                return strdup("all");
        assert_int_equal(cpuset_format(w->m[i].allowed, &s), 0);
        return s;
}

/* Whether threads [from, from + n) share one narrowed mask; into *ret. */
/* A group pin goes for one tick's figures only once they have held for
 * GROUP_RELEASE_PERSIST_US: nothing of tid before, then the plan that lets
 * it go. */
#define PERSIST_TICKS ((unsigned) (GROUP_RELEASE_PERSIST_US / TICK_US))
static Plan *step_to_release(World *w, pid_t tid) {
        for (unsigned k = 0; k < PERSIST_TICKS; k++) {
                _cleanup_plan_ Plan *p = world_step(w);
                assert_null(plan_find_any(p, CG, tid));
        }
        return world_step(w);
}

static bool together(const World *w, size_t from, size_t n, char **ret) {
        _cleanup_(freep) char *first = mask_of(w, from);
        for (size_t i = from + 1; i < from + n; i++) {
                _cleanup_(freep) char *x = mask_of(w, i);
                if (!streq(x, first))
                        return false;
        }
        if (streq(first, "all"))
                return false;
        *ret = TAKE_PTR(first);
        return true;
}

/* Two ping-pongs in one process (four talkers: pairs by process find none):
 * the edges make them two pairs, each pinned together, on two CPUs. */
static void test_two_pingpongs_two_pairs(void **unused) {
        (void) unused;
        World w;
        _cleanup_(freep) char *a = NULL, *b = NULL;

        world_init(&w, 1, 2);
        add_mesh(&w, 100, 2, 0, 200, 12000);
        add_mesh(&w, 102, 2, 0, 200, 12000);
        assert_true(run(&w, w.st.sticky_ticks + 2, ACTION_SET_THREAD_CPUS) == 4);
        assert_true(together(&w, 0, 2, &a));
        assert_true(together(&w, 2, 2, &b));
        assert_string_not_equal(a, b);
        world_done(&w);
}

/* hackbench -g 4 in one process: four groups of 40, each half a CPU, on
 * two CPUs, each thread woken 100 times a second (as recorded here: on
 * saturated CPUs hackbench's threads run long batches, they do not "talk"
 * by StickyPairWakeups). Pinned StickyMaxPinsPerTick a tick, a group over
 * several ticks; each group ends on one CPU, two groups a CPU. */
/* Two rings of a cgroup placed on a core each, and a busy worker of it
 * that talks to no one; then the LLC overloads around them, with the
 * rings' cores busier with other work than the rest: the window the cgroup
 * gets (for its worker) holds the rings' cores, so that no ring is left
 * outside it and given back (seen in the guest: a window of 4-5 over rings
 * on 6 and 7, a ring given back, placed again, given back again). */
static void test_window_keeps_placed_rings(void **unused) {
        (void) unused;
        World w;
        _cleanup_(freep) char *a = NULL, *b = NULL;

        world_init(&w, 1, 8);
        add_mesh(&w, 100, 3, 0, 100, 12000);
        add_mesh(&w, 110, 3, 3, 100, 12000);
        w.m[w.n++] = (Member){.tid = 300, .cpu = 6, .util = 300, .wait = 400};
        (void) run(&w, w.st.sticky_ticks + 6, ACTION_SET_THREAD_CPUS);
        assert_true(together(&w, 0, 3, &a));
        assert_true(together(&w, 3, 3, &b));
        assert_string_not_equal(a, b);
        CpuSet rings = topo_parse(a);
        CpuSet ring_b = topo_parse(b);
        hwloc_bitmap_or(rings, rings, ring_b);
        hwloc_bitmap_free(ring_b);

        /* Others' load: heavier on the rings' cores than elsewhere. */
        for (unsigned c = 0; c < 8; c++)
                w.background[c] = hwloc_bitmap_isset(rings, c) ? 800 : 650;
        size_t windows = 0, given_back = 0;
        for (unsigned t = 0; t < 40; t++) {
                _cleanup_plan_ Plan *p = world_step(&w);
                windows += plan_count(p, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW);
                for (size_t k = 0; k < p->n_actions; k++)
                        given_back += p->actions[k].tid != 0 && p->actions[k].kind == ACTION_RESTORE;
                if (w.cg_cpus)
                        assert_true(hwloc_bitmap_isincluded(rings, w.cg_cpus));
        }
        print_message("%zu windows, %zu threads given back\n", windows, given_back);
        assert_true(windows >= 1);
        assert_int_equal(given_back, 0);
        _cleanup_(freep) char *a2 = NULL, *b2 = NULL;
        assert_true(together(&w, 0, 3, &a2));
        assert_true(together(&w, 3, 3, &b2));
        assert_string_equal(a, a2);
        assert_string_equal(b, b2);
        hwloc_bitmap_free(rings);
        world_done(&w);
}

/* Rings placed on a core each and nothing else busy in the cgroup: the
 * LLC overloads around them, and the cgroup gets no window (its threads
 * are placed finer), and explain says why. */
static void test_no_window_over_pinned_talkers(void **unused) {
        (void) unused;
        World w;
        _cleanup_(freep) char *a = NULL, *b = NULL;

        world_init(&w, 1, 8);
        add_mesh(&w, 100, 3, 0, 100, 12000);
        add_mesh(&w, 110, 3, 3, 100, 12000);
        (void) run(&w, w.st.sticky_ticks + 6, ACTION_SET_THREAD_CPUS);
        assert_true(together(&w, 0, 3, &a));
        assert_true(together(&w, 3, 3, &b));
        for (unsigned c = 0; c < 8; c++)
                w.background[c] = 700;
        for (unsigned t = 0; t < 40; t++) {
                _cleanup_plan_ Plan *p = world_step(&w);
                assert_int_equal(plan_count(p, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW), 0);
                for (size_t k = 0; k < p->n_actions; k++)
                        assert_int_not_equal(p->actions[k].kind, ACTION_RESTORE);
        }
        _cleanup_(snapshot_freep) Snapshot *s = world_snapshot(&w);
        assert_true(s->llcs[0].overloaded);
        _cleanup_plan_ Plan *plan = decide_checked(s, &w.st, w.state);
        _cleanup_(explanation_done) Explanation e = {};
        assert_int_equal(policy_explain(s, &w.st, w.state, plan, CG, s->time_us, &e), 0);
        bool said = false;
        for (size_t i = 0; i < e.n; i++)
                said |= streq(e.lines[i].topic, "window") &&
                        strstr(e.lines[i].text, "pinned with its pair or group") != NULL;
        assert_true(said);
        world_done(&w);
}

static void test_four_groups_two_per_cpu(void **unused) {
        (void) unused;
        World w;
        char *masks[4] = {};
        const size_t size = 40;

        world_init(&w, 1, 2);
        for (unsigned g = 0; g < 4; g++)
                add_mesh(&w, 200 + (pid_t) (size * g), size, (int) g, 12.5, 100);
        size_t pins =
                run(&w, w.st.sticky_ticks + 4 * size / w.st.sticky_max_pins + 2, ACTION_SET_THREAD_CPUS);
        assert_int_equal(pins, 4 * size);
        unsigned on[2] = {};
        for (unsigned g = 0; g < 4; g++) {
                assert_true(together(&w, size * g, size, &masks[g]));
                assert_true(streq(masks[g], "0") || streq(masks[g], "1"));
                on[masks[g][0] - '0']++;
        }
        assert_int_equal(on[0], 2);
        assert_int_equal(on[1], 2);
        /* Held: nothing moves while nothing changes. */
        _cleanup_plan_ Plan *plan = world_step(&w);
        assert_int_equal(plan->n_actions, 0);

        /* One quiet tick is no stop: the readings swing from tick to tick. */
        double talk = w.m[size].wakeups;
        for (size_t i = size; i < 2 * size; i++)
                w.m[i].wakeups = 1;
        assert_int_equal(run(&w, 1, ACTION_RESTORE), 0);
        for (size_t i = size; i < 2 * size; i++)
                w.m[i].wakeups = talk;
        assert_int_equal(run(&w, 3 * PERSIST_TICKS, ACTION_RESTORE), 0);

        /* The second group stops talking: only its pins go. */
        for (size_t i = size; i < 2 * size; i++)
                w.m[i].wakeups = 1;
        assert_int_equal(run(&w, PERSIST_TICKS, ACTION_RESTORE), 0);
        assert_int_equal(run(&w, 1, ACTION_RESTORE), size);
        for (size_t i = size; i < 2 * size; i++)
                assert_int_equal(hwloc_bitmap_weight(w.m[i].allowed), 2);
        for (unsigned g = 0; g < 4; g++) {
                _cleanup_(freep) char *m = NULL;
                if (g != 1)
                        assert_true(together(&w, size * g, size, &m) && streq(m, masks[g]));
        }
        for (unsigned g = 0; g < 4; g++)
                free(masks[g]);
        world_done(&w);
}

/* This machine's shape, two LLCs of one core each, and hb1p's four groups
 * of half a CPU whose threads ran on both: the LLC where most of a group
 * ran is the first choice, but no core is given more groups than its room
 * holds (three went on CPU 0 when capacity alone was counted: 1.47x the
 * kernel's time). Two groups a CPU, none left out. */
static void test_four_groups_two_llcs_room(void **unused) {
        (void) unused;
        World w;
        const size_t size = 40;

        world_init(&w, 2, 1);
        for (unsigned g = 0; g < 4; g++)
                add_mesh(&w, 200 + (pid_t) (size * g), size, 0, 12.5, 100);
        run(&w, w.st.sticky_ticks + 4 * size / w.st.sticky_max_pins + 2, ACTION_SET_THREAD_CPUS);
        unsigned on[2] = {}, placed = 0;
        for (unsigned g = 0; g < 4; g++) {
                _cleanup_(freep) char *m = NULL;
                if (!together(&w, size * g, size, &m) || strlen(m) != 1)
                        continue;
                placed++;
                on[m[0] - '0']++;
        }
        assert_int_equal(placed, 4);
        assert_int_equal(on[0], 2);
        assert_int_equal(on[1], 2);
        /* Every CPU's groups fit it, tick after tick. */
        for (unsigned t = 0; t < 5; t++) {
                _cleanup_plan_ Plan *plan = world_step(&w);
                assert_int_equal(plan->n_actions, 0);
        }
        world_done(&w);
}

/* Groups bigger than the room left: the ones that fit are placed, the
 * rest stay where the kernel puts them (never piled on a full core). */
static void test_groups_beyond_room_left_free(void **unused) {
        (void) unused;
        World w;
        const size_t size = 20;

        world_init(&w, 2, 1);
        for (unsigned g = 0; g < 4; g++)
                add_mesh(&w, 600 + (pid_t) (size * g), size, 0, 30, 100); /* 600 each */
        run(&w, w.st.sticky_ticks + 4 * size / w.st.sticky_max_pins + 2, ACTION_SET_THREAD_CPUS);
        double util_on[2] = {};
        unsigned placed = 0;
        for (unsigned g = 0; g < 4; g++) {
                _cleanup_(freep) char *m = NULL;
                if (!together(&w, size * g, size, &m) || strlen(m) != 1)
                        continue;
                placed++;
                util_on[m[0] - '0'] += 600;
        }
        assert_int_equal(placed, 2);
        assert_true(util_on[0] <= 1024 && util_on[1] <= 1024);
        world_done(&w);
}

/* One 40-thread all-to-all (perf bench messaging): one group, never
 * squeezed onto fewer CPUs, nothing pinned. */
static void test_one_mesh_not_squeezed(void **unused) {
        (void) unused;
        World w;

        world_init(&w, 1, 2);
        add_mesh(&w, 300, 40, 0, 50, 5000);
        assert_int_equal(run(&w, w.st.sticky_ticks + 20, ACTION_SET_THREAD_CPUS), 0);
        world_done(&w);
}

/* A group whose util needs more than a CPU gets the cores that hold it,
 * never fewer: two groups of 1.5 CPUs on four CPUs get two each. */
static void test_group_not_below_demand(void **unused) {
        (void) unused;
        World w;
        _cleanup_(freep) char *a = NULL, *b = NULL;

        world_init(&w, 1, 4);
        add_mesh(&w, 400, 10, 0, 150, 5000);
        add_mesh(&w, 410, 10, 1, 150, 5000);
        assert_int_equal(run(&w, w.st.sticky_ticks + 4, ACTION_SET_THREAD_CPUS), 20);
        assert_true(together(&w, 0, 10, &a));
        assert_true(together(&w, 10, 10, &b));
        assert_int_equal(hwloc_bitmap_weight(w.m[0].allowed), 2);
        assert_int_equal(hwloc_bitmap_weight(w.m[10].allowed), 2);
        assert_false(hwloc_bitmap_intersects(w.m[0].allowed, w.m[10].allowed));
        world_done(&w);
}

/* Two LLCs of two cores: two groups whose threads ran across both LLCs
 * are each kept in one LLC, one group an LLC. */
static void test_groups_one_llc_each(void **unused) {
        (void) unused;
        World w;

        world_init(&w, 2, 2);
        add_mesh(&w, 500, 8, 0, 100, 5000);
        add_mesh(&w, 508, 8, 1, 100, 5000);
        assert_int_equal(run(&w, w.st.sticky_ticks + 4, ACTION_SET_THREAD_CPUS), 16);
        for (size_t g = 0; g < 2; g++) {
                _cleanup_(freep) char *m = NULL;
                assert_true(together(&w, 8 * g, 8, &m));
                assert_true(streq(m, "0-1") || streq(m, "2-3") || strlen(m) == 1);
        }
        assert_false(hwloc_bitmap_intersects(w.m[0].allowed, w.m[8].allowed));
        world_done(&w);
}

/* The guard judges a group by its wait per CPU received (not by its
 * progress: a mesh together wakes less and does more): the first group's
 * wait tripled under its placement, the whole group goes back and the
 * cgroup's pins back off. */
static void test_group_reverted_by_wait(void **unused) {
        (void) unused;
        World w;

        world_init(&w, 1, 2);
        for (unsigned g = 0; g < 4; g++)
                add_mesh(&w, 600 + 10 * (pid_t) g, 10, (int) g, 50, 5000);
        for (size_t i = 0; i < w.n; i++)
                w.m[i].wait = 20;
        /* the first group, and the next one's first six (StickyMaxPinsPerTick):
         * a group is what a whole observation saw, no streak of ticks */
        assert_int_equal(run(&w, 1, ACTION_SET_THREAD_CPUS), 16);
        for (size_t i = 0; i < 10; i++)
                w.m[i].wait = 60;
        size_t restored =
                run(&w, (unsigned) (w.st.guard_window_ms * USEC_PER_MSEC / TICK_US) + 2, ACTION_RESTORE);
        assert_int_equal(restored, 10);
        for (size_t i = 0; i < 10; i++)
                assert_int_equal(hwloc_bitmap_weight(w.m[i].allowed), 2);
        /* the other groups stay, judged well */
        for (size_t i = 10; i < w.n; i++)
                assert_int_equal(hwloc_bitmap_weight(w.m[i].allowed), 1);
        /* and it is not placed again while the cgroup's pins back off */
        for (unsigned k = 0; k < 5; k++) {
                _cleanup_plan_ Plan *plan = world_step(&w);
                for (size_t i = 0; i < 10; i++)
                        assert_null(plan_find_any(plan, CG, w.m[i].tid));
        }
        world_done(&w);
}

/* Two rings of three threads (the guest check's): each thread woken a few
 * hundred times a second, under StickyPairWakeups, on CPUs that are idle
 * without it. Before who wakes whom has seen them, stickiness pins them
 * one by one where they last ran; once the partners come, those pins go
 * (a thread of a group is pinned with its group or not at all) and each
 * ring is placed on a core of its own. */
static void test_rings_sticky_then_grouped(void **unused) {
        (void) unused;
        World w;
        WakePartner saved[6][SNAPSHOT_MAX_PARTNERS];
        unsigned n_saved[6];
        _cleanup_(freep) char *a = NULL, *b = NULL;

        world_init(&w, 1, 8);
        add_mesh(&w, 700, 3, 0, 300, 300);
        add_mesh(&w, 703, 3, 3, 300, 300);
        for (size_t i = 0; i < 6; i++) {
                memcpy(saved[i], w.m[i].partners, sizeof(saved[i]));
                n_saved[i] = w.m[i].n_partners;
                w.m[i].n_partners = 0;
        }
        assert_int_equal(run(&w, w.st.sticky_ticks + 2, ACTION_SET_THREAD_CPUS), 6);
        for (size_t i = 0; i < 6; i++)
                assert_int_equal(hwloc_bitmap_weight(w.m[i].allowed), 1);

        for (size_t i = 0; i < 6; i++) {
                memcpy(w.m[i].partners, saved[i], sizeof(saved[i]));
                w.m[i].n_partners = n_saved[i];
        }
        {
                _cleanup_plan_ Plan *plan = world_step(&w);
                size_t restores = 0;
                for (size_t k = 0; k < plan->n_actions; k++)
                        if (plan->actions[k].kind == ACTION_RESTORE) {
                                restores++;
                                assert_non_null(strstr(plan->actions[k].reason, "talks in a group"));
                        }
                assert_int_equal(restores, 6);
        }
        /* Placed once the released threads may move again (MinResidencyMs). */
        size_t pins = run(&w, (unsigned) (w.st.min_residency_ms * USEC_PER_MSEC / TICK_US) + 4,
                          ACTION_SET_THREAD_CPUS);
        assert_int_equal(pins, 6);
        assert_true(together(&w, 0, 3, &a));
        assert_true(together(&w, 3, 3, &b));
        assert_false(hwloc_bitmap_intersects(w.m[0].allowed, w.m[3].allowed));
        /* and held: no stickiness pin takes a member back */
        _cleanup_plan_ Plan *plan = world_step(&w);
        assert_int_equal(plan->n_actions, 0);
        world_done(&w);
}

/* A ring that fills its core reads a little more than the core (1024.3 of
 * 1024 was seen): it holds, tick after tick, and is let go only once its
 * threads wait as long as they run on the core it fills. */
static void test_group_full_core_held(void **unused) {
        (void) unused;
        World w;
        _cleanup_(freep) char *a = NULL, *b = NULL;

        world_init(&w, 1, 4);
        add_mesh(&w, 800, 3, 0, 340, 5000);
        add_mesh(&w, 803, 3, 1, 340, 5000);
        assert_int_equal(run(&w, 2, ACTION_SET_THREAD_CPUS), 6);
        assert_true(together(&w, 0, 3, &a));
        assert_true(together(&w, 3, 3, &b));
        assert_int_equal(hwloc_bitmap_weight(w.m[0].allowed), 1);
        for (size_t i = 0; i < 6; i++)
                w.m[i].util = 341.5; /* 1024.5 a ring */
        for (unsigned k = 0; k < 100; k++) {
                _cleanup_plan_ Plan *plan = world_step(&w);
                assert_int_equal(plan->n_actions, 0);
        }
        for (size_t i = 0; i < 3; i++)
                w.m[i].wait = 400;
        {
                _cleanup_plan_ Plan *plan = step_to_release(&w, 800);
                const Action *x = plan_find_any(plan, CG, 800);
                assert_non_null(x);
                assert_int_equal(x->kind, ACTION_RESTORE);
                assert_non_null(strstr(x->reason, "wait as long as they run"));
                for (size_t i = 3; i < 6; i++)
                        assert_null(plan_find_any(plan, CG, w.m[i].tid));
        }
        world_done(&w);
}

/* A group let go for outgrowing its one core reads under a core again once
 * free (its threads ran less while confined): its next placement holds
 * more than the core it outgrew, not that core again (the guest check's
 * ring: one core, let go, one core again, let go, then two: five changes
 * in four seconds). */
static void test_group_outgrown_placed_wider(void **unused) {
        (void) unused;
        World w;
        _cleanup_(freep) char *a = NULL;

        world_init(&w, 1, 4);
        /* The guard off: its verdict on the pin (1 s after it, as long as
         * the outgrown reading must hold) is another test's; this one is
         * about what the group's release remembers. */
        w.st.guard_window_ms = 0;
        add_mesh(&w, 800, 3, 0, 330, 5000);
        add_mesh(&w, 803, 3, 1, 330, 5000);
        assert_int_equal(run(&w, 2, ACTION_SET_THREAD_CPUS), 6);
        assert_int_equal(hwloc_bitmap_weight(w.m[0].allowed), 1);
        for (size_t i = 0; i < 3; i++) {
                w.m[i].util = 345;
                w.m[i].wait = 400;
        }
        {
                _cleanup_plan_ Plan *plan = step_to_release(&w, 800);
                const Action *x = plan_find_any(plan, CG, 800);
                assert_non_null(x);
                assert_int_equal(x->kind, ACTION_RESTORE);
                assert_non_null(strstr(x->reason, "outgrew its cores"));
        }
        /* Free again, it reads what fits one core. */
        for (size_t i = 0; i < 3; i++) {
                w.m[i].util = 330;
                w.m[i].wait = 0;
        }
        size_t pins = run(&w, (unsigned) (w.st.min_residency_ms * USEC_PER_MSEC / TICK_US) + 4,
                          ACTION_SET_THREAD_CPUS);
        assert_int_equal(pins, 3);
        assert_true(together(&w, 0, 3, &a));
        if (hwloc_bitmap_weight(w.m[0].allowed) < 2)
                fail_msg("placed again on %s: the one core it outgrew", a);
        world_done(&w);
}

/* Who wakes whom's figures come and go from tick to tick: a ring's
 * partners seen on every other tick only. Its threads belong to their
 * group all along: no pin of one thread alone, nothing pinned and given
 * back by turns (issue 30: three threads pinned and given back on
 * alternate ticks for 40 s in the guest check). */
static void test_group_seen_by_turns_no_flap(void **unused) {
        (void) unused;
        World w;
        unsigned n_saved[3], changes[3] = {};

        world_init(&w, 1, 8);
        add_mesh(&w, 700, 3, 0, 300, 300); /* one ring: a single group stays where it runs */
        for (size_t i = 0; i < 3; i++) {
                n_saved[i] = w.m[i].n_partners;
        }
        for (unsigned k = 0; k < 60; k++) {
                for (size_t i = 0; i < 3; i++)
                        w.m[i].n_partners = k % 2 ? 0 : n_saved[i];
                _cleanup_plan_ Plan *plan = world_step(&w);
                for (size_t x = 0; x < plan->n_actions; x++) {
                        const Action *act = &plan->actions[x];
                        if (act->tid == 0)
                                continue;
                        size_t i = (size_t) (act->tid - 700);
                        assert_true(i < 3);
                        changes[i]++;
                }
        }
        for (size_t i = 0; i < 3; i++)
                if (changes[i] > 0)
                        fail_msg("tid %d changed %u times in 60 ticks", 700 + (int) i, changes[i]);
        world_done(&w);
}

/* Two rings placed, the second one's partners missing on every other tick
 * (its figures under the edge threshold, a sample lost): the cgroup still
 * has partners, so the second ring reads as "regrouped" on those ticks.
 * It stays placed: a group is let go only GROUP_MEMORY_US after it was
 * last seen. */
static void test_placed_group_seen_by_turns_held(void **unused) {
        (void) unused;
        World w;
        unsigned n_saved[6], changes[6] = {};

        world_init(&w, 1, 8);
        add_mesh(&w, 700, 3, 0, 300, 300);
        add_mesh(&w, 703, 3, 3, 300, 300);
        for (size_t i = 0; i < 6; i++)
                n_saved[i] = w.m[i].n_partners;
        for (unsigned k = 0; k < 100; k++) {
                for (size_t i = 3; i < 6; i++)
                        w.m[i].n_partners = k % 2 ? 0 : n_saved[i];
                _cleanup_plan_ Plan *plan = world_step(&w);
                for (size_t x = 0; x < plan->n_actions; x++)
                        if (plan->actions[x].tid >= 700 && plan->actions[x].tid < 706)
                                changes[plan->actions[x].tid - 700]++;
        }
        for (size_t i = 0; i < 6; i++)
                if (changes[i] != 1)
                        fail_msg("tid %d changed %u times in 100 ticks (placed once and held: 1)",
                                 700 + (int) i, changes[i]);
        world_done(&w);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_two_pingpongs_two_pairs),
                cmocka_unit_test(test_four_groups_two_per_cpu),
                cmocka_unit_test(test_four_groups_two_llcs_room),
                cmocka_unit_test(test_groups_beyond_room_left_free),
                cmocka_unit_test(test_one_mesh_not_squeezed),
                cmocka_unit_test(test_group_not_below_demand),
                cmocka_unit_test(test_groups_one_llc_each),
                cmocka_unit_test(test_group_reverted_by_wait),
                cmocka_unit_test(test_rings_sticky_then_grouped),
                cmocka_unit_test(test_group_full_core_held),
                cmocka_unit_test(test_group_outgrown_placed_wider),
                cmocka_unit_test(test_group_seen_by_turns_no_flap),
                cmocka_unit_test(test_placed_group_seen_by_turns_held),
                cmocka_unit_test(test_window_keeps_placed_rings),
                cmocka_unit_test(test_no_window_over_pinned_talkers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
