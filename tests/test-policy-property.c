/* SPDX-License-Identifier: MIT */
/* Property test: 10,000 random snapshots, in streams, on random topologies
 * (sparse CPU ids, offline CPUs, random thread masks, threads and cgroups
 * that come and go, reused tids, mode and policy changes). Every plan holds
 * every invariant, and the same stream twice gives byte-identical plans. */

#include "test-policy-util.h"

#ifndef N_STREAMS
#define N_STREAMS 100
#endif
#define TICKS 100
#define MAX_CGROUPS 4
#define MAX_THREADS 8

typedef struct Rng {
        uint64_t s;
} Rng;

static uint64_t rng_next(Rng *r) {
        /* xorshift64 */
        r->s ^= r->s << 13;
        r->s ^= r->s >> 7;
        r->s ^= r->s << 17;
        return r->s;
}

static unsigned rng_below(Rng *r, unsigned n) {
        return n ? (unsigned) (rng_next(r) % n) : 0;
}

static bool rng_chance(Rng *r, unsigned percent) {
        return rng_below(r, 100) < percent;
}

static double rng_range(Rng *r, double lo, double hi) {
        return lo + (hi - lo) * (double) (rng_next(r) >> 11) / (double) (1ULL << 53);
}

/* A random non-empty subset of a non-empty set. */
static CpuSet rng_subset(Rng *r, hwloc_const_bitmap_t of, unsigned percent) {
        CpuSet s = hwloc_bitmap_alloc();
        unsigned n = (unsigned) hwloc_bitmap_weight(of), k = 0, pick = rng_below(r, n);
        int cpu;

        assert_non_null(s);
        hwloc_bitmap_foreach_begin(cpu, of) {
                if (rng_chance(r, percent) || k == pick)
                        hwloc_bitmap_set(s, (unsigned) cpu);
                k++;
        }
        hwloc_bitmap_foreach_end();
        return s;
}

typedef struct StreamThread {
        pid_t tid;
        uint64_t starttime;
        CpuSet allowed;
} StreamThread;

typedef struct StreamCgroup {
        char path[16];
        CgroupPolicy policy;
        CpuSet allowed;
        StreamThread threads[MAX_THREADS];
        unsigned n_threads;
} StreamCgroup;

typedef struct Stream {
        Rng rng;
        unsigned n_llcs, cores, smt;
        unsigned ids[256];
        bool sparse;
        Settings st;
        StreamCgroup cg[MAX_CGROUPS];
        unsigned n_cgroups;
        double level[8];
        bool offline[256];
} Stream;

static void stream_init(Stream *s, uint64_t seed) {
        *s = (Stream){.rng = {seed * 0x9E3779B97F4A7C15ULL | 1}};
        Rng *r = &s->rng;

        s->n_llcs = 1 + rng_below(r, 4);
        s->cores = 1 + rng_below(r, 6);
        s->smt = 1 + rng_below(r, 4);
        unsigned n = s->n_llcs * s->cores * s->smt;
        s->sparse = rng_chance(r, 50);
        if (s->sparse) {
                /* Increasing ids with gaps, dealt out to topology positions in
                 * random order: cores whose CPUs are not contiguous. */
                unsigned id = rng_below(r, 4);
                for (unsigned i = 0; i < n; i++) {
                        s->ids[i] = id;
                        id += 1 + rng_below(r, 3);
                }
                for (unsigned i = n - 1; i > 0; i--) {
                        unsigned j = rng_below(r, i + 1), t = s->ids[i];
                        s->ids[i] = s->ids[j];
                        s->ids[j] = t;
                }
        }
        for (unsigned l = 0; l < s->n_llcs; l++)
                s->level[l] = rng_range(r, 0, 1100);
        for (unsigned i = 0; i < n; i++)
                s->offline[i] = rng_chance(r, 8);

        settings_init_defaults(&s->st);
        s->st.mode = (Mode) rng_below(r, _MODE_MAX);
        s->st.sticky_ticks = 1 + rng_below(r, 3);
        s->st.sticky_scope = (StickyScope) rng_below(r, _STICKY_SCOPE_MAX);
        s->st.max_moves_per_tick = rng_below(r, 5);
        s->st.min_residency_ms = (uint64_t[]){0, 100, 500, 1000}[rng_below(r, 4)];
        s->st.guard_window_ms = (uint64_t[]){0, 200, 1000}[rng_below(r, 3)];
        s->st.min_llc_cpus = (unsigned[]){1, 2, 4, 16}[rng_below(r, 4)];
        s->st.min_window_cores = 1 + rng_below(r, 2);
        s->st.imbalance_percent = 100 + rng_below(r, 50);
        s->st.window_headroom = rng_range(r, 0, 0.5);
        s->st.sticky_idle_percent = rng_range(r, 0, 30);
        s->st.sticky_release_percent = s->st.sticky_idle_percent + rng_range(r, 0, 40);

        /* Cgroup and thread masks are drawn against the full topology; each
         * tick intersects them with what is online. */
        _cleanup_(snapshot_freep) Snapshot *topo =
                topo_new_ids(s->n_llcs, s->cores, s->smt, s->sparse ? s->ids : NULL, 0);
        _cleanup_cpuset_ CpuSet all = topo_online(topo);
        s->n_cgroups = 1 + rng_below(r, MAX_CGROUPS);
        for (unsigned c = 0; c < s->n_cgroups; c++) {
                StreamCgroup *cg = &s->cg[c];
                snprintf(cg->path, sizeof(cg->path), "/cg%u", c);
                cg->policy = (CgroupPolicy) rng_below(r, _CGROUP_POLICY_MAX);
                cg->allowed = rng_chance(r, 50) ? hwloc_bitmap_dup(all) : rng_subset(r, all, 60);
                cg->n_threads = rng_below(r, MAX_THREADS + 1);
                for (unsigned t = 0; t < cg->n_threads; t++)
                        cg->threads[t] = (StreamThread){
                                .tid = (pid_t) (100 * c + t + 1),
                                .starttime = 1,
                                .allowed = rng_chance(r, 60) ? hwloc_bitmap_dup(cg->allowed)
                                                             : rng_subset(r, cg->allowed, 50),
                        };
        }
}

static void stream_done(Stream *s) {
        for (unsigned c = 0; c < s->n_cgroups; c++) {
                hwloc_bitmap_free(s->cg[c].allowed);
                for (unsigned t = 0; t < s->cg[c].n_threads; t++)
                        hwloc_bitmap_free(s->cg[c].threads[t].allowed);
        }
}

static int random_cpu(Rng *r, hwloc_const_bitmap_t of) {
        unsigned n = (unsigned) hwloc_bitmap_weight(of), k = rng_below(r, n);
        int cpu = hwloc_bitmap_first(of);

        while (k-- > 0)
                cpu = hwloc_bitmap_next(of, cpu);
        return cpu;
}

static Snapshot *stream_tick(Stream *s, unsigned tick) {
        Rng *r = &s->rng;
        Snapshot *snap =
                topo_new_ids(s->n_llcs, s->cores, s->smt, s->sparse ? s->ids : NULL, tick * TICK_US);
        _cleanup_cpuset_ CpuSet all = topo_online(snap), online = NULL, tmp = hwloc_bitmap_alloc();

        if (rng_chance(r, 1))
                s->st.mode = (Mode) rng_below(r, _MODE_MAX);

        /* Hotplug now and then. */
        if (rng_chance(r, 5)) {
                unsigned i = rng_below(r, (unsigned) snap->n_cpus);
                s->offline[i] = !s->offline[i];
        }
        for (size_t i = 0; i < snap->n_cpus; i++) {
                CpuSample *c = &snap->cpus[i];
                double level = s->level[c->llc];
                c->online = !s->offline[i];
                c->util = CLAMP(level + rng_range(r, -150, 150), 0.0, 1024.0);
                c->runnable = c->util + (rng_chance(r, 50) ? rng_range(r, 0, 600) : 0);
        }
        if (rng_chance(r, 2) && snap->n_cpus > 1)
                snap->cpus[0].llc = snap->cpus[0].core = -1; /* a CPU the topology lost */
        snap->cpus[rng_below(r, (unsigned) snap->n_cpus)].online = true;
        for (unsigned l = 0; l < s->n_llcs; l++)
                s->level[l] = CLAMP(s->level[l] + rng_range(r, -200, 200), 0.0, 1100.0);
        topo_finish(snap);
        online = topo_online(snap);

        for (unsigned c = 0; c < s->n_cgroups; c++) {
                StreamCgroup *scg = &s->cg[c];
                if (rng_chance(r, 5))
                        continue; /* opted out this tick */
                if (rng_chance(r, 2))
                        scg->policy = (CgroupPolicy) rng_below(r, _CGROUP_POLICY_MAX);

                hwloc_bitmap_and(tmp, scg->allowed, online);
                if (hwloc_bitmap_iszero(tmp))
                        hwloc_bitmap_copy(tmp, online);
                _cleanup_(freep) char *list = NULL;
                assert_int_equal(cpuset_format(tmp, &list), 0);
                size_t idx = topo_add_cgroup(snap, scg->path, scg->policy, list);
                CgroupSample *cg = &snap->cgroups[idx];
                cg->pressure_some_avg10 = rng_range(r, 0, 30);
                if (rng_chance(r, 20)) {
                        hwloc_bitmap_free(cg->cpus);
                        cg->cpus = rng_subset(r, cg->allowed, 50);
                }

                for (unsigned t = 0; t < scg->n_threads; t++) {
                        StreamThread *st = &scg->threads[t];
                        if (rng_chance(r, 8))
                                continue; /* not seen this tick */
                        if (rng_chance(r, 2))
                                st->starttime++; /* the tid was reused */
                        if (rng_chance(r, 3)) {
                                hwloc_bitmap_free(st->allowed);
                                st->allowed = rng_subset(r, scg->allowed, 50);
                        }
                        ThreadSample *ts = topo_add_thread(snap, idx, st->tid, st->starttime, -1, 0, 0);
                        hwloc_bitmap_and(ts->allowed, st->allowed, snap->cgroups[idx].allowed);
                        if (hwloc_bitmap_iszero(ts->allowed))
                                hwloc_bitmap_copy(ts->allowed, snap->cgroups[idx].allowed);
                        unsigned where = rng_below(r, 100);
                        ts->cpu = where < 85   ? random_cpu(r, ts->allowed)
                                  : where < 95 ? random_cpu(r, all)
                                               : -1;
                        ts->util = rng_range(r, 0, 1024);
                        ts->wait = rng_chance(r, 40) ? rng_range(r, 0, 400) : rng_range(r, 0, 10);
                }
                /* Now and then the sampler reports a thread twice. */
                CgroupSample *cgs = &snap->cgroups[idx];
                if (cgs->n_threads > 0 && rng_chance(r, 2)) {
                        ThreadSample copy = cgs->threads[rng_below(r, (unsigned) cgs->n_threads)];
                        ThreadSample *d = topo_add_thread(snap, idx, copy.tid, copy.starttime, copy.cpu,
                                                          copy.util, copy.wait);
                        hwloc_bitmap_copy(d->allowed, copy.allowed);
                }
        }
        return snap;
}

/* The invariants again, without the engine's own checker. */
static void check_independently(const Snapshot *snap, const Settings *st, const Plan *plan) {
        _cleanup_cpuset_ CpuSet online = topo_online(snap), allowed = hwloc_bitmap_alloc();

        assert_true(plan_count_moves(plan) <= st->max_moves_per_tick);
        for (size_t i = 0; i < plan->n_actions; i++) {
                const Action *a = &plan->actions[i];
                const CgroupSample *cg = NULL;

                assert_false(hwloc_bitmap_iszero(a->cpus));
                for (size_t k = 0; k < snap->n_cgroups && !cg; k++)
                        if (streq(snap->cgroups[k].path, a->cgroup))
                                cg = &snap->cgroups[k];
                assert_non_null(cg);
                hwloc_bitmap_and(allowed, cg->allowed, online);
                assert_true(hwloc_bitmap_isincluded(a->cpus, allowed));
                if (st->mode == MODE_OFF)
                        assert_int_equal(a->kind, ACTION_RESTORE);

                if (a->tid > 0) {
                        const ThreadSample *ts = NULL;
                        for (size_t k = 0; k < cg->n_threads && !ts; k++)
                                if (cg->threads[k].tid == a->tid && cg->threads[k].starttime == a->starttime)
                                        ts = &cg->threads[k];
                        assert_non_null(ts);
                } else
                        assert_int_not_equal(a->kind, ACTION_SET_THREAD_CPUS);

                for (size_t k = 0; k < i; k++)
                        assert_false(streq(plan->actions[k].cgroup, a->cgroup) &&
                                     plan->actions[k].tid == a->tid);
        }
}

static uint64_t fnv1a(uint64_t h, const char *s) {
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * 0x100000001b3ULL;
        return h ^ '\n';
}

/* Runs one stream; returns a hash of its plans' JSON lines. */
static uint64_t run_stream(uint64_t seed, bool check, unsigned *ret_actions, unsigned *per_policy) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        uint64_t h = 0xcbf29ce484222325ULL;
        Stream s;

        stream_init(&s, seed);
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned tick = 0; tick < TICKS; tick++) {
                _cleanup_(snapshot_freep) Snapshot *snap = stream_tick(&s, tick);
                _cleanup_plan_ Plan *plan = NULL;
                _cleanup_(freep) char *json = NULL;

                if (check) {
                        plan = decide_checked(snap, &s.st, state);
                        check_independently(snap, &s.st, plan);
                } else
                        assert_int_equal(policy_decide(snap, &s.st, state, snap->time_us, &plan), 0);
                assert_int_equal(plan_to_json(plan, tick, &json), 0);
                h = fnv1a(h, json);
                *ret_actions += (unsigned) plan->n_actions;
                for (size_t i = 0; per_policy && i < plan->n_actions; i++)
                        per_policy[plan->actions[i].policy * _ACTION_KIND_MAX + plan->actions[i].kind]++;
        }
        stream_done(&s);
        return h;
}

static void test_random_streams(void **unused) {
        unsigned actions = 0, again = 0, per_policy[_ACTION_POLICY_MAX * _ACTION_KIND_MAX] = {};

        for (uint64_t seed = 1; seed <= N_STREAMS; seed++) {
                uint64_t a = run_stream(seed, true, &actions, per_policy);
                uint64_t b = run_stream(seed, false, &again, NULL);
                assert_true(a == b);
        }
        assert_int_equal(actions, again);
        print_message("%d snapshots, %u actions\n", N_STREAMS * TICKS, actions);
        for (ActionPolicy p = 0; p < _ACTION_POLICY_MAX; p++)
                for (ActionKind k = 0; k < _ACTION_KIND_MAX; k++)
                        print_message("  %-7s %-15s %u\n", action_policy_to_string(p),
                                      action_kind_to_string(k), per_policy[p * _ACTION_KIND_MAX + k]);
        /* Not vacuous: every policy acts, and the guard reverts. */
        assert_true(per_policy[ACTION_POLICY_WINDOW * _ACTION_KIND_MAX + ACTION_SET_CGROUP_CPUS] > 0);
        assert_true(per_policy[ACTION_POLICY_STICKY * _ACTION_KIND_MAX + ACTION_SET_THREAD_CPUS] > 0);
        assert_true(per_policy[ACTION_POLICY_BALANCE * _ACTION_KIND_MAX + ACTION_SET_THREAD_CPUS] > 0);
        assert_true(per_policy[ACTION_POLICY_BALANCE * _ACTION_KIND_MAX + ACTION_SET_CGROUP_CPUS] > 0);
        assert_true(per_policy[ACTION_POLICY_GUARD * _ACTION_KIND_MAX + ACTION_RESTORE] > 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_random_streams),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
