/* SPDX-License-Identifier: MIT */
#pragma once

/* Snapshots built directly in C for the policy engine's tests: a topology
 * shape (n LLCs x cores x SMT, optional sparse CPU ids, optional offline
 * CPUs), per-CPU util and runnable, opted-in cgroups and their threads. */

#include <inttypes.h>

#include "test-helpers.h"

#include "plan.h"
#include "policy.h"
#include "settings.h"
#include "snapshot.h"

#define TICK_US (100 * USEC_PER_MSEC)

static inline int topo_cpu_cmp(const void *a, const void *b) {
        const CpuSample *x = a, *y = b;
        return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

/* ids: NULL for dense ids, else ids[i] is the OS index of the i-th CPU in
 * topology order (LLC, then core, then SMT sibling); unique, any order. */
static inline Snapshot *topo_new_ids(unsigned n_llcs, unsigned cores, unsigned smt, const unsigned *ids,
                                     uint64_t time_us) {
        Snapshot *s = calloc(1, sizeof(Snapshot));
        size_t n = (size_t) n_llcs * cores * smt;

        assert_non_null(s);
        s->time_us = time_us;
        s->period_us = TICK_US;
        s->source = RUNNABLE_SOURCE_SCHEDSTAT;
        s->cpus = calloc(n, sizeof(CpuSample));
        s->llcs = calloc(n_llcs, sizeof(LlcSample));
        assert_non_null(s->cpus);
        assert_non_null(s->llcs);
        s->n_cpus = n;
        s->n_llcs = n_llcs;
        for (size_t i = 0; i < n; i++)
                s->cpus[i] = (CpuSample){
                        .cpu = ids ? ids[i] : (unsigned) i,
                        .llc = (int) (i / ((size_t) cores * smt)),
                        .core = (int) (i / smt),
                        .online = true,
                };
        qsort(s->cpus, n, sizeof(CpuSample), topo_cpu_cmp);
        for (unsigned l = 0; l < n_llcs; l++) {
                s->llcs[l].id = l;
                s->llcs[l].package = -1; /* unknown: topo_set_package() says */
                s->llcs[l].cpus = hwloc_bitmap_alloc();
                assert_non_null(s->llcs[l].cpus);
        }
        for (size_t i = 0; i < n; i++)
                hwloc_bitmap_set(s->llcs[s->cpus[i].llc].cpus, s->cpus[i].cpu);
        return s;
}

static inline Snapshot *topo_new(unsigned n_llcs, unsigned cores, unsigned smt, uint64_t time_us) {
        return topo_new_ids(n_llcs, cores, smt, NULL, time_us);
}

/* LLCs first..first+n-1 are in package pkg. */
static inline void topo_set_package(Snapshot *s, unsigned first, unsigned n, int pkg) {
        for (unsigned l = first; l < first + n && l < s->n_llcs; l++)
                s->llcs[l].package = pkg;
}

static inline CpuSample *topo_cpu(Snapshot *s, unsigned cpu) {
        CpuSample *c = (CpuSample *) snapshot_cpu(s, cpu);
        assert_non_null(c);
        return c;
}

static inline void topo_set_cpu(Snapshot *s, unsigned cpu, double util, double runnable) {
        CpuSample *c = topo_cpu(s, cpu);
        c->util = util;
        c->runnable = runnable;
}

/* Every CPU of an LLC. */
static inline void topo_set_llc(Snapshot *s, unsigned llc, double util, double runnable) {
        for (size_t i = 0; i < s->n_cpus; i++)
                if (s->cpus[i].llc == (int) llc) {
                        s->cpus[i].util = util;
                        s->cpus[i].runnable = runnable;
                }
}

/* The LLC figures the sampler derives: weight, means, SIS_UTIL, overloaded. */
static inline void topo_finish(Snapshot *s) {
        for (size_t l = 0; l < s->n_llcs; l++) {
                LlcSample *llc = &s->llcs[l];
                double util = 0, boosted = 0;
                unsigned w = 0;

                for (size_t i = 0; i < s->n_cpus; i++) {
                        CpuSample *c = &s->cpus[i];
                        c->boosted = MIN(MAX(c->util, c->runnable), (double) SCHED_CAPACITY_SCALE);
                        if (c->llc != (int) l || !c->online)
                                continue;
                        w++;
                        util += c->util;
                        boosted += c->boosted;
                }
                llc->weight = w;
                llc->util = w ? util / w : 0;
                llc->boosted = w ? boosted / w : 0;
                llc->nr_idle_scan = sis_nr_idle_scan(llc->util, w, SIS_IMBALANCE_PCT);
                llc->overloaded = llc->nr_idle_scan * 2 < w;
        }
}

static inline CpuSet topo_parse(const char *list) {
        CpuSet set = NULL;
        assert_int_equal(cpuset_parse(list, &set), 0);
        return set;
}

static inline CpuSet topo_online(const Snapshot *s) {
        CpuSet set = NULL;
        assert_int_equal(snapshot_online_cpus(s, &set), 0);
        return set;
}

/* allowed: a cpulist, or NULL for every online CPU. Returns the index. */
static inline size_t topo_add_cgroup(Snapshot *s, const char *path, CgroupPolicy policy,
                                     const char *allowed) {
        CgroupSample *n = reallocarray(s->cgroups, s->n_cgroups + 1, sizeof(CgroupSample));

        assert_non_null(n);
        s->cgroups = n;
        n = &s->cgroups[s->n_cgroups];
        *n = (CgroupSample){
                .path = strdup(path),
                .policy = policy,
                .allowed = allowed ? topo_parse(allowed) : topo_online(s),
                .usage = -1,
        };
        assert_non_null(n->path);
        n->cpus = hwloc_bitmap_dup(n->allowed);
        return s->n_cgroups++;
}

/* The thread's allowed mask is its cgroup's; change it afterwards if needed. */
static inline ThreadSample *topo_add_thread(Snapshot *s, size_t cg, pid_t tid, uint64_t starttime, int cpu,
                                            double util, double wait) {
        CgroupSample *c = &s->cgroups[cg];
        ThreadSample *n = reallocarray(c->threads, c->n_threads + 1, sizeof(ThreadSample));

        assert_non_null(n);
        c->threads = n;
        n = &c->threads[c->n_threads++];
        *n = (ThreadSample){
                .tid = tid,
                .starttime = starttime,
                .cpu = cpu,
                .allowed = hwloc_bitmap_dup(c->allowed),
                .util = util,
                .wait = wait,
                .wakeups = -1, /* unknown, as in older recordings: no wakeup filter */
        };
        return n;
}

/* Decide, and assert that the engine dropped no action: a drop means a
 * policy decided something that breaks an invariant, and the plan would
 * still look fine. */
static inline Plan *decide_undropped(const Snapshot *s, const Settings *st, PolicyState *state) {
        PolicyCounters c;
        Plan *plan = NULL;

        assert_int_equal(policy_decide(s, st, state, s->time_us, &plan), 0);
        policy_state_counters(state, &c);
        if (c.dropped != 0) {
                print_error("the engine dropped %" PRIu64 " action(s); see its log\n", c.dropped);
                plan_format_text(plan, 0, stderr);
        }
        assert_int_equal(c.dropped, 0);
        return plan;
}

/* Decide, and hold the plan to every invariant against the state it was
 * decided from. */
static inline Plan *decide_checked(const Snapshot *s, const Settings *st, PolicyState *state) {
        PolicyState *before = NULL;
        Plan *plan = NULL;
        char *why = NULL;
        int r;

        assert_int_equal(policy_state_dup(state, &before), 0);
        plan = decide_undropped(s, st, state);
        r = policy_check_plan(s, st, before, plan, s->time_us, &why);
        if (r != 0) {
                print_error("invariant broken: %s\n", why ?: "?");
                plan_format_text(plan, 0, stderr);
        }
        assert_int_equal(r, 0);
        free(why);
        policy_state_free(before);
        return plan;
}

static inline size_t plan_count(const Plan *p, ActionKind kind, ActionPolicy policy) {
        size_t n = 0;
        for (size_t i = 0; i < p->n_actions; i++)
                if (p->actions[i].kind == kind && p->actions[i].policy == policy)
                        n++;
        return n;
}

static inline const Action *plan_find(const Plan *p, ActionKind kind, ActionPolicy policy,
                                      const char *cgroup, pid_t tid) {
        for (size_t i = 0; i < p->n_actions; i++) {
                const Action *a = &p->actions[i];
                if (a->kind == kind && a->policy == policy && streq(a->cgroup, cgroup) && a->tid == tid)
                        return a;
        }
        return NULL;
}

static inline const Action *plan_find_any(const Plan *p, const char *cgroup, pid_t tid) {
        for (size_t i = 0; i < p->n_actions; i++)
                if (streq(p->actions[i].cgroup, cgroup) && p->actions[i].tid == tid)
                        return &p->actions[i];
        return NULL;
}

static inline void assert_cpus(const Action *a, const char *expected) {
        char *s = NULL;

        assert_non_null(a);
        assert_int_equal(cpuset_format(a->cpus, &s), 0);
        if (!streq(s, expected))
                print_error("cpus %s, expected %s (reason: %s)\n", s, expected, a->reason);
        assert_string_equal(s, expected);
        free(s);
}

static inline void dump_plan(const Plan *p, unsigned tick) {
        if (getenv("TEST_POLICY_VERBOSE"))
                plan_format_text(p, tick, stderr);
}

static inline void settings_latency(Settings *st) {
        settings_init_defaults(st);
        st->mode = MODE_LATENCY;
}
