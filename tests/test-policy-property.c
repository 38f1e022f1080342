/* SPDX-License-Identifier: MIT */
/* Property test: 10,000 random snapshots, in streams, on random topologies
 * (sparse CPU ids, offline CPUs, random thread masks, threads and cgroups
 * that come and go, reused tids, mode and policy changes). Every plan holds
 * every invariant (checked by the test's own oracle, not the engine's
 * checker), the engine drops nothing, and the same stream twice gives
 * byte-identical plans. */

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
        int package[8]; /* per LLC: one package, alternating, or unknown (window domains) */
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
        unsigned packaging = rng_below(r, 3);
        for (unsigned l = 0; l < s->n_llcs; l++) {
                s->level[l] = rng_range(r, 0, 1100);
                s->package[l] = packaging == 0 ? 0 : packaging == 1 ? (int) (l % 2) : -1;
        }
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
        for (unsigned l = 0; l < s->n_llcs; l++) {
                s->level[l] = CLAMP(s->level[l] + rng_range(r, -200, 200), 0.0, 1100.0);
                topo_set_package(snap, l, 1, s->package[l]);
        }
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

/* The oracle: the safety invariants (docs/POLICY.md "Invariants") checked
 * from the snapshot, the settings and the plans alone, never with the
 * engine's own checker or state, so that a bug shared by the engine and its
 * checker still shows. What it needs of the past it remembers itself, tick
 * after tick, and it forgets a subject when the engine must: a cgroup absent
 * from a snapshot (opted out), a (tid, starttime) absent from its cgroup,
 * everything after a tick in mode off. */

typedef struct OracleThread {
        pid_t tid;
        uint64_t starttime;
        /* Every mask it was sampled with since it appeared. The engine keeps
         * the mask a thread had before its first change while it holds one,
         * and the mask seen before while the thread's lies within the CPUs
         * steerd set for the cgroup (the kernel narrows a thread to its
         * cpuset); the stream re-draws masks under both. Any of them is the
         * thread's, none outside them is. */
        CpuSet ever;
        bool changed; /* a set_thread_cpus since it appeared */
        bool moved;
        uint64_t moved_us;
} OracleThread;

typedef struct OracleCgroup {
        bool changed;        /* a set_cgroup_cpus since it appeared */
        CpuSet last_set;     /* its CPUs when its last action was a set_cgroup_cpus, else NULL */
        CpuSet last_balance; /* the mask of its last balance set_cgroup_cpus */
        OracleThread *threads;
        size_t n_threads;
} OracleCgroup;

typedef struct Oracle {
        OracleCgroup cg[MAX_CGROUPS];
} Oracle;

static void oracle_forget_threads(OracleCgroup *o) {
        for (size_t i = 0; i < o->n_threads; i++)
                hwloc_bitmap_free(o->threads[i].ever);
        free(o->threads);
        o->threads = NULL;
        o->n_threads = 0;
}

static void oracle_forget(OracleCgroup *o) {
        oracle_forget_threads(o);
        hwloc_bitmap_free(o->last_set);
        hwloc_bitmap_free(o->last_balance);
        *o = (OracleCgroup){};
}

static void oracle_done(Oracle *o) {
        for (unsigned c = 0; c < MAX_CGROUPS; c++)
                oracle_forget(&o->cg[c]);
}

static OracleThread *oracle_find_thread(OracleCgroup *o, pid_t tid, uint64_t starttime) {
        for (size_t i = 0; i < o->n_threads; i++)
                if (o->threads[i].tid == tid && o->threads[i].starttime == starttime)
                        return &o->threads[i];
        return NULL;
}

/* This tick's thread identities of the cgroup, carrying over what the oracle
 * knew of each; the others are forgotten. */
static void oracle_sync_threads(OracleCgroup *o, const CgroupSample *cg) {
        OracleThread *threads = calloc(MAX(cg->n_threads, (size_t) 1), sizeof(OracleThread));
        size_t n = 0;

        assert_non_null(threads);
        for (size_t k = 0; k < cg->n_threads; k++) {
                const ThreadSample *ts = &cg->threads[k];
                OracleThread *t = NULL;

                for (size_t i = 0; i < n && !t; i++)
                        if (threads[i].tid == ts->tid && threads[i].starttime == ts->starttime)
                                t = &threads[i];
                if (!t) {
                        OracleThread *old = oracle_find_thread(o, ts->tid, ts->starttime);
                        t = &threads[n++];
                        if (old) {
                                *t = *old;
                                *old = (OracleThread){};
                        } else {
                                *t = (OracleThread){.tid = ts->tid, .starttime = ts->starttime};
                                t->ever = hwloc_bitmap_alloc();
                                assert_non_null(t->ever);
                        }
                }
                hwloc_bitmap_or(t->ever, t->ever, ts->allowed);
        }
        oracle_forget_threads(o);
        o->threads = threads;
        o->n_threads = n;
}

static const CgroupSample *find_cgroup_sample(const Snapshot *snap, const char *path) {
        for (size_t k = 0; k < snap->n_cgroups; k++)
                if (streq(snap->cgroups[k].path, path))
                        return &snap->cgroups[k];
        return NULL;
}

static const ThreadSample *find_thread_sample(const CgroupSample *cg, pid_t tid, uint64_t starttime) {
        for (size_t k = 0; k < cg->n_threads; k++)
                if (cg->threads[k].tid == tid && cg->threads[k].starttime == starttime)
                        return &cg->threads[k];
        return NULL;
}

/* The rule of DESIGN.md 4, restated: a cgroup's policy narrows the mode,
 * observe decides as latency, the guard only restores. */
static bool oracle_may_set(Mode mode, CgroupPolicy cgp, ActionPolicy p) {
        if (mode == MODE_OFF || p == ACTION_POLICY_GUARD)
                return false;
        if (p == ACTION_POLICY_BALANCE)
                return true;
        return mode != MODE_BALANCED && cgp == CGROUP_POLICY_LATENCY;
}

static void oracle_fail(const Action *a, unsigned tick, const char *what) {
        char buf[CPUSET_STRLEN];

        print_error("oracle, tick %u: %s %s %s/%d (starttime %" PRIu64 ") cpus %s: %s\n", tick,
                    action_policy_to_string(a->policy), action_kind_to_string(a->kind), a->cgroup,
                    (int) a->tid, a->starttime, a->cpus ? cpuset_to_string(a->cpus, buf, sizeof(buf)) : "-",
                    what);
        fail();
}

/* A thread moves now: it must not have moved within MinResidencyMs, nor
 * earlier in this plan (even with MinResidencyMs=0). */
static void oracle_move(OracleThread *t, uint64_t now_us, uint64_t residency_us, const Action *a,
                        unsigned tick) {
        if (t->moved && (t->moved_us == now_us || now_us - t->moved_us < residency_us))
                oracle_fail(a, tick, "moves a thread that moved within MinResidencyMs");
        t->moved = true;
        t->moved_us = now_us;
}

/* Whether a set_cgroup_cpus to cpus surely moves threads: it takes away an
 * online CPU the cgroup had. What it had is known exactly after a set_*
 * (that set's mask) and before any change (the snapshot's CPUs); after a
 * restore it is the last balance mask or the snapshot's CPUs, and only a
 * change that narrows both surely moves. */
static bool oracle_cgroup_set_moves(const OracleCgroup *o, const CgroupSample *cg,
                                    hwloc_const_bitmap_t online, hwloc_const_bitmap_t cpus) {
        hwloc_const_bitmap_t before[2] = {o->last_set ?: cg->cpus, o->last_set ? NULL : o->last_balance};
        _cleanup_cpuset_ CpuSet had = hwloc_bitmap_alloc();

        assert_non_null(had);
        for (size_t i = 0; i < ELEMENTSOF(before); i++) {
                if (!before[i])
                        continue;
                hwloc_bitmap_and(had, before[i], online);
                if (hwloc_bitmap_isincluded(had, cpus))
                        return false;
        }
        return true;
}

static void oracle_thread_action(OracleCgroup *o, const CgroupSample *cg, hwloc_const_bitmap_t allowed,
                                 const Action *a, uint64_t now_us, uint64_t residency_us, unsigned tick) {
        _cleanup_cpuset_ CpuSet own = hwloc_bitmap_alloc();
        OracleThread *t = oracle_find_thread(o, a->tid, a->starttime);

        assert_non_null(own);
        if (!find_thread_sample(cg, a->tid, a->starttime) || !t)
                oracle_fail(a, tick, "names a thread that is not in its cgroup");
        hwloc_bitmap_and(own, t->ever, allowed);
        if (a->kind == ACTION_RESTORE) {
                /* A restore whose CPUs are all gone falls back to the
                 * cgroup's allowed online CPUs, as the kernel would. */
                if (!hwloc_bitmap_isincluded(a->cpus, own) && !hwloc_bitmap_isequal(a->cpus, allowed))
                        oracle_fail(a, tick, "restores CPUs the thread never had");
                if (!t->changed)
                        oracle_fail(a, tick, "restores a thread that was never changed");
                return;
        }
        if (!hwloc_bitmap_isincluded(a->cpus, own))
                oracle_fail(a, tick, "gives the thread CPUs it does not allow");
        t->changed = true;
        oracle_move(t, now_us, residency_us, a, tick);
}

static void oracle_cgroup_action(OracleCgroup *o, const CgroupSample *cg, hwloc_const_bitmap_t online,
                                 const Action *a, uint64_t now_us, uint64_t residency_us, unsigned tick) {
        if (a->kind == ACTION_RESTORE) {
                if (!o->changed)
                        oracle_fail(a, tick, "restores a cgroup that was never changed");
                hwloc_bitmap_free(o->last_set);
                o->last_set = NULL;
                return;
        }
        if (oracle_cgroup_set_moves(o, cg, online, a->cpus))
                for (size_t i = 0; i < o->n_threads; i++)
                        oracle_move(&o->threads[i], now_us, residency_us, a, tick);
        o->changed = true;
        hwloc_bitmap_free(o->last_set);
        o->last_set = hwloc_bitmap_dup(a->cpus);
        assert_non_null(o->last_set);
        if (a->policy == ACTION_POLICY_BALANCE) {
                hwloc_bitmap_free(o->last_balance);
                o->last_balance = hwloc_bitmap_dup(a->cpus);
                assert_non_null(o->last_balance);
        }
}

static void oracle_check(Oracle *o, const Stream *s, const Snapshot *snap, const Settings *st,
                         const Plan *plan, unsigned tick) {
        _cleanup_cpuset_ CpuSet online = topo_online(snap), allowed = hwloc_bitmap_alloc();
        uint64_t now_us = snap->time_us, residency_us = st->min_residency_ms * USEC_PER_MSEC;
        size_t moves = 0;

        assert_non_null(allowed);
        for (unsigned c = 0; c < s->n_cgroups; c++) {
                const CgroupSample *cg = find_cgroup_sample(snap, s->cg[c].path);
                if (cg)
                        oracle_sync_threads(&o->cg[c], cg);
                else
                        oracle_forget(&o->cg[c]);
        }

        for (size_t i = 0; i < plan->n_actions; i++) {
                const Action *a = &plan->actions[i];
                const CgroupSample *cg = find_cgroup_sample(snap, a->cgroup);
                OracleCgroup *ocg = NULL;

                for (unsigned c = 0; c < s->n_cgroups && !ocg; c++)
                        if (streq(s->cg[c].path, a->cgroup))
                                ocg = &o->cg[c];
                if (!cg || !ocg)
                        oracle_fail(a, tick, "names a cgroup that is not opted in");
                if (!a->cpus || hwloc_bitmap_iszero(a->cpus))
                        oracle_fail(a, tick, "has an empty mask");
                hwloc_bitmap_and(allowed, cg->allowed, online);
                if (!hwloc_bitmap_isincluded(a->cpus, allowed))
                        oracle_fail(a, tick, "gives the cgroup CPUs it does not allow, or offline ones");
                if (a->kind != ACTION_RESTORE && !oracle_may_set(st->mode, cg->policy, a->policy))
                        oracle_fail(a, tick, "a change this mode and cgroup policy do not permit");
                if (a->tid < 0 || (a->kind == ACTION_SET_THREAD_CPUS && a->tid == 0) ||
                    (a->kind == ACTION_SET_CGROUP_CPUS && a->tid != 0))
                        oracle_fail(a, tick, "names the wrong kind of subject for its kind");
                for (size_t k = 0; k < i; k++)
                        if (streq(plan->actions[k].cgroup, a->cgroup) && plan->actions[k].tid == a->tid)
                                oracle_fail(a, tick, "a second action for one subject in one plan");
                if (a->policy == ACTION_POLICY_BALANCE && a->kind != ACTION_RESTORE &&
                    ++moves > st->max_moves_per_tick)
                        oracle_fail(a, tick, "more moves than MaxMovesPerTick");

                if (a->tid > 0)
                        oracle_thread_action(ocg, cg, allowed, a, now_us, residency_us, tick);
                else
                        oracle_cgroup_action(ocg, cg, online, a, now_us, residency_us, tick);
        }

        /* Mode off: the engine restores everything and forgets. */
        if (st->mode == MODE_OFF)
                oracle_done(o);
}

static uint64_t fnv1a(uint64_t h, const char *s) {
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * 0x100000001b3ULL;
        return h ^ '\n';
}

/* Runs one stream; returns a hash of its plans' JSON lines. */
static uint64_t run_stream(uint64_t seed, bool check, unsigned *ret_actions, unsigned *per_policy) {
        _cleanup_policy_state_ PolicyState *state = NULL;
        _cleanup_(oracle_done) Oracle oracle = {};
        uint64_t h = 0xcbf29ce484222325ULL;
        Stream s;

        stream_init(&s, seed);
        assert_int_equal(policy_state_new(&state), 0);
        for (unsigned tick = 0; tick < TICKS; tick++) {
                _cleanup_(snapshot_freep) Snapshot *snap = stream_tick(&s, tick);
                _cleanup_plan_ Plan *plan = decide_undropped(snap, &s.st, state);
                _cleanup_(freep) char *json = NULL;

                if (check)
                        oracle_check(&oracle, &s, snap, &s.st, plan, tick);
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
