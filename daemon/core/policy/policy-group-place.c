/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "policy-internal.h"

/* Where the groups of policy-group.c go, and when they are let go. */

typedef struct CoreLoad {
        int core;
        double others; /* without the cgroup's groups */
        double load;   /* others and the groups placed so far */
        double capacity;
} CoreLoad;

typedef struct Placement {
        CoreLoad *cores; /* the cgroup's whole usable cores */
        size_t n_cores;
        CpuSet usable;
} Placement;

static void placement_done(Placement *p) {
        free(p->cores);
        hwloc_bitmap_free(p->usable);
}

static bool grouped(const ThreadGroup *g, size_t n, const ThreadState *t) {
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; g[i].n >= 3 && k < g[i].n; k++)
                        if (g[i].members[k] == t)
                                return true;
        return false;
}

/* The cgroup's whole cores and their util without its grouped threads (the
 * groups' own load goes where they go). */
static int placement_init(const PolicyCtx *ctx, const CgroupState *c, const ThreadGroup *g, size_t n,
                          Placement *ret) {
        Placement p = {.usable = hwloc_bitmap_alloc()};
        _cleanup_cpuset_ CpuSet m = hwloc_bitmap_alloc();

        p.cores = calloc(MAX(ctx->n_cores, (size_t) 1), sizeof(CoreLoad));
        if (!p.cores || !p.usable || !m) {
                placement_done(&p);
                return -ENOMEM;
        }
        hwloc_bitmap_and(m, policy_cgroup_effective(c), c->sample->allowed);
        hwloc_bitmap_and(m, m, ctx->online);
        for (size_t i = 0; i < ctx->n_cores; i++) {
                if (hwloc_bitmap_iszero(ctx->core_cpus[i]) || !hwloc_bitmap_isincluded(ctx->core_cpus[i], m))
                        continue;
                p.cores[p.n_cores++] = (CoreLoad){
                        .core = (int) i,
                        .load = ctx->core_util[i],
                        .capacity = SCHED_CAPACITY_SCALE * (double) hwloc_bitmap_weight(ctx->core_cpus[i])};
                hwloc_bitmap_or(p.usable, p.usable, ctx->core_cpus[i]);
        }
        for (size_t k = 0; k < c->sample->n_threads; k++) {
                const ThreadState *t = c->by_sample[k];
                if (!t || !grouped(g, n, t) || t->sample->cpu < 0)
                        continue;
                for (size_t i = 0; i < p.n_cores; i++)
                        if (hwloc_bitmap_isset(ctx->core_cpus[p.cores[i].core], (unsigned) t->sample->cpu))
                                p.cores[i].load = MAX(p.cores[i].load - MAX(t->sample->util, 0.0), 0.0);
        }
        for (size_t i = 0; i < p.n_cores; i++)
                p.cores[i].others = p.cores[i].load;
        *ret = p;
        return 0;
}

static void charge(const PolicyCtx *ctx, Placement *p, hwloc_const_bitmap_t mask, double util) {
        double cap = 0;
        for (size_t i = 0; i < p->n_cores; i++)
                if (hwloc_bitmap_isincluded(ctx->core_cpus[p->cores[i].core], mask))
                        cap += p->cores[i].capacity;
        for (size_t i = 0; i < p->n_cores && cap > 0; i++)
                if (hwloc_bitmap_isincluded(ctx->core_cpus[p->cores[i].core], mask))
                        p->cores[i].load += util * p->cores[i].capacity / cap;
}

static int cmp_load(const void *x, const void *y) {
        const CoreLoad *a = x, *b = y;
        double la = a->load / a->capacity, lb = b->load / b->capacity;
        if (la != lb)
                return la < lb ? -1 : 1;
        return (a->core > b->core) - (a->core < b->core);
}

/* The least loaded cores of one LLC whose room (capacity less what runs
 * there and the groups placed so far) holds util, into mask; false when
 * the LLC has too little room, or is overloaded without the cgroup's
 * groups. Room, not capacity: counting capacity alone put three hackbench
 * groups of half a CPU each on the one core of the LLC where they had run
 * (this machine: one core an LLC) and left the other CPU to the fourth:
 * 1.47x the kernel's time. */
static bool fit_llc(const PolicyCtx *ctx, Placement *p, int llc, double util, CpuSet mask) {
        double room = 0, load = 0, all_cap = 0;

        qsort(p->cores, p->n_cores, sizeof(CoreLoad), cmp_load);
        hwloc_bitmap_zero(mask);
        for (size_t i = 0; i < p->n_cores; i++) {
                if (ctx->core_llc[p->cores[i].core] != llc)
                        continue;
                all_cap += p->cores[i].capacity;
                load += p->cores[i].others;
                double free = p->cores[i].capacity - p->cores[i].load;
                if (room < MAX(util, 1.0) && free > 0) {
                        room += free;
                        hwloc_bitmap_or(mask, mask, ctx->core_cpus[p->cores[i].core]);
                }
        }
        if (room < util || all_cap <= 0)
                return false;
        LlcSample l = ctx->snap->llcs[llc];
        l.util = MIN(load, all_cap) / all_cap * SCHED_CAPACITY_SCALE;
        l.weight = (unsigned) (all_cap / SCHED_CAPACITY_SCALE);
        l.nr_idle_scan = sis_nr_idle_scan(l.util, l.weight, SIS_IMBALANCE_PCT);
        return !policy_llc_overloaded(&l);
}

/* The LLC where most of the group's util ran, then the others. */
static bool place_group(const PolicyCtx *ctx, Placement *p, const ThreadGroup *g, CpuSet mask) {
        int best = -1;
        double best_util = -1;

        for (size_t l = 0; l < ctx->snap->n_llcs; l++) {
                double u = 0;
                for (size_t k = 0; k < g->n; k++) {
                        const CpuSample *cpu =
                                g->members[k]->sample->cpu >= 0
                                        ? snapshot_cpu(ctx->snap, (unsigned) g->members[k]->sample->cpu)
                                        : NULL;
                        u += cpu && cpu->llc == (int) l ? MAX(g->members[k]->sample->util, 0.0) : 0;
                }
                if (u > best_util) {
                        best_util = u;
                        best = (int) l;
                }
        }
        if (best >= 0 && fit_llc(ctx, p, best, g->util, mask))
                return true;
        for (size_t l = 0; l < ctx->snap->n_llcs; l++)
                if ((int) l != best && fit_llc(ctx, p, (int) l, g->util, mask))
                        return true;
        return false;
}

/* A placed group has outgrown its cores (release_reason()). */
#define GROUP_OUTGROW_NOISE 1.05
#define GROUP_OUTGREW "its group outgrew its cores"
#define GROUP_FULL 0.95

static bool in_group(const ThreadState *t, const ThreadState *lead) {
        return t->pin.mask && t->group_lead == lead->tid && t->group_lead_starttime == lead->starttime;
}

/* Its lead is pinned for it: the group's placement began (a group larger
 * than StickyMaxPinsPerTick is pinned over several ticks, lead first). */
static bool group_started(const ThreadGroup *g) {
        return in_group(g->members[0], g->members[0]);
}

static bool group_placed(const ThreadGroup *g) {
        for (size_t k = 0; k < g->n; k++)
                if (!in_group(g->members[k], g->members[0]))
                        return false;
        return true;
}

static int cmp_group_util(const void *x, const void *y) {
        const ThreadGroup *a = *(ThreadGroup *const *) x, *b = *(ThreadGroup *const *) y;
        if (a->util != b->util)
                return a->util > b->util ? -1 : 1;
        return (a->members[0]->tid > b->members[0]->tid) - (a->members[0]->tid < b->members[0]->tid);
}

/* Whether the group may be placed now. No streak of ticks: the group is
 * what a whole observation (a second of wakeups) saw. */
static bool group_ready(PolicyCtx *ctx, CgroupState *c, const ThreadGroup *g) {
        if (policy_backed_off(c, ACTION_POLICY_STICKY, ctx->now_us))
                return false;
        for (size_t k = 0; k < g->n; k++) {
                const ThreadState *t = g->members[k];
                if (t->pin.mask || t->acted || !policy_thread_resident(ctx, t))
                        return false;
        }
        return true;
}

/* Pins the members without a pin on unit, lead first, within the tick's
 * budget. The guard judges the group on its lead, by the wait per CPU
 * received of its pinned members (policy_group_load()), which a placement
 * over several ticks does not bend. */
static int pin_group(PolicyCtx *ctx, CgroupState *c, const ThreadGroup *g, hwloc_const_bitmap_t unit,
                     CpuSet mask, unsigned budget, unsigned *pins) {
        char buf[CPUSET_STRLEN], reason[512];
        ThreadState *lead = g->members[0];
        bool first = !group_started(g);
        int r;

        for (size_t k = 0; k < g->n; k++) {
                hwloc_bitmap_and(mask, unit, policy_thread_below_pin(g->members[k]));
                if (hwloc_bitmap_iszero(mask))
                        return 0; /* a member's own mask leaves it outside: the group stays */
        }
        snprintf(reason, sizeof(reason),
                 "group of %zu talking threads (lead tid %d; %.0f wakeups/s, util %.0f): on %s, the "
                 "fewest whole cores whose room holds its util, the cgroup's groups balanced by util",
                 g->n, (int) lead->tid, g->wakeups, g->util, cpuset_to_string(unit, buf, sizeof(buf)));
        for (size_t k = 0; k < g->n && *pins < budget; k++) {
                ThreadState *t = g->members[k];
                if (t->pin.mask || t->acted || !policy_thread_resident(ctx, t))
                        continue; /* its turn comes when it has stayed put */
                hwloc_bitmap_and(mask, unit, policy_thread_below_pin(t));
                r = policy_thread_set_layer(ctx, c, t, ACTION_POLICY_STICKY, mask, reason);
                if (r < 0)
                        return r;
                *pins += r > 0;
                t->group_lead = lead->tid;
                t->group_lead_starttime = lead->starttime;
                t->group_seen_us = ctx->now_us;
                t->pin_unit = -1;
                t->pair_tid = 0;
                t->streak = 0;
                if (t != lead)
                        t->pin.exp = (Experiment){};
        }
        if (first && group_started(g) && lead->pin.exp.active) {
                double wait = 0;
                for (size_t k = 0; k < g->n; k++)
                        wait += MAX(g->members[k]->sample->wait, 0.0);
                lead->pin.exp.before_wait = wait;
                lead->pin.exp.before_util = g->util;
                lead->pin.exp.n_threads = (unsigned) g->n;
        }
        return 0;
}

static int place_cgroup(PolicyCtx *ctx, CgroupState *c, ThreadGroup *g, size_t n, unsigned budget,
                        unsigned *pins) {
        _cleanup_(freep) ThreadGroup **order = NULL;
        _cleanup_cpuset_ CpuSet unit = hwloc_bitmap_alloc(), mask = hwloc_bitmap_alloc();
        Placement p;
        size_t n_big = 0;
        int r;

        order = malloc(MAX(n, (size_t) 1) * sizeof(ThreadGroup *));
        if (!order || !unit || !mask)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (g[i].n >= 3)
                        order[n_big++] = &g[i];
        if (n < 2 || n_big == 0)
                return 0;
        r = placement_init(ctx, c, g, n, &p);
        if (r < 0)
                return r;
        /* Groups placed keep their cores (one placed in part gets the rest
         * of its members there); the others go, largest first, where the
         * least is left. */
        for (size_t i = 0; i < n_big && r >= 0; i++) {
                ThreadGroup *x = order[i];
                if (!group_started(x))
                        continue;
                charge(ctx, &p, x->members[0]->pin.mask, x->util);
                if (!group_placed(x))
                        r = pin_group(ctx, c, x, x->members[0]->pin.mask, mask, budget, pins);
        }
        /* A group that outgrew its cores lately needs more than them,
         * whatever its util reads now that it is free again. */
        for (size_t i = 0; i < n_big; i++) {
                const ThreadState *lead = order[i]->members[0];
                if (!group_started(order[i]) && lead->group_outgrown_us > 0 &&
                    ctx->now_us < lead->group_outgrown_us + GROUP_OUTGROWN_US)
                        order[i]->util = MAX(order[i]->util, lead->group_outgrown_cap * GROUP_OUTGROW_NOISE);
        }
        qsort(order, n_big, sizeof(ThreadGroup *), cmp_group_util);
        for (size_t i = 0; i < n_big && r >= 0; i++) {
                ThreadGroup *x = order[i];
                if (group_started(x) || !place_group(ctx, &p, x, unit))
                        continue;
                charge(ctx, &p, unit, x->util);
                if (!hwloc_bitmap_isequal(unit, p.usable) && group_ready(ctx, c, x) && *pins < budget)
                        r = pin_group(ctx, c, x, unit, mask, budget, pins);
        }
        placement_done(&p);
        return r;
}

int policy_group_pin(PolicyCtx *ctx, unsigned budget, unsigned *ret_pins) {
        unsigned pins = 0;
        int r;

        for (size_t i = 0; i < ctx->snap->n_cgroups && ctx->settings->sticky_pair_wakeups > 0; i++) {
                CgroupState *c = ctx->by_sample[i];
                ThreadGroup *g = NULL;
                size_t n = 0;

                if (!c || !policy_enabled(ctx->settings, c->sample->policy, ACTION_POLICY_STICKY) ||
                    policy_kernel_keeps_together(ctx, c))
                        continue;
                r = policy_groups_find(ctx, c, &g, &n);
                if (r >= 0)
                        r = place_cgroup(ctx, c, g, n, budget, &pins);
                policy_groups_free(g, n);
                if (r < 0)
                        return r;
        }
        *ret_pins = pins;
        return 0;
}

/* The group t is in now, NULL if none. */
static const ThreadGroup *group_of(const ThreadGroup *g, size_t n, const ThreadState *t) {
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < g[i].n; k++)
                        if (g[i].members[k] == t)
                                return &g[i];
        return NULL;
}

/* Why a group pin goes, or NULL while it holds. */
static const char *release_reason(const PolicyCtx *ctx, const CgroupState *c, const ThreadState *t,
                                  const ThreadGroup *g, size_t n, char *buf, size_t size, bool *ret_soft) {
        const ThreadState *lead = policy_cgroup_state_find_thread(c, t->group_lead, t->group_lead_starttime);
        const ThreadGroup *now = group_of(g, n, t);

        if (!lead || !lead->sample || !lead->pin.mask || lead->group_lead != lead->tid) {
                snprintf(buf, size, "its group's lead tid %d is not pinned with it any more",
                         (int) t->group_lead);
                return buf;
        }
        /* From here on one tick's figures: a reason must hold at every look
         * for GROUP_RELEASE_PERSIST_US (policy_group_release()). */
        *ret_soft = true;
        if (t->sample->wakeups < GROUP_STOP_WAKEUPS) {
                snprintf(buf, size, "it stopped talking in its group: %.0f wakeups/s (< %.0f)",
                         t->sample->wakeups, GROUP_STOP_WAKEUPS);
                return buf;
        }
        /* The group's figures move from tick to tick: one tick that does
         * not see it is not a regrouping (the guest's rings were pinned and
         * let go by turns), GROUP_MEMORY_US without it is. */
        if (policy_cgroup_has_partners(c) && (!now || now->n < 3 || now->members[0]->tid != t->group_lead) &&
            ctx->now_us >= t->group_seen_us + GROUP_MEMORY_US) {
                snprintf(buf, size, "who wakes whom regrouped it (group of lead tid %d gone for %.0f s)",
                         (int) t->group_lead, (double) GROUP_MEMORY_US / USEC_PER_SEC);
                return buf;
        }
        if (t == lead && now) {
                double cap = SCHED_CAPACITY_SCALE * (double) hwloc_bitmap_weight(t->pin.mask);
                double wait = 0;
                for (size_t k = 0; k < now->n; k++)
                        wait += MAX(now->members[k]->sample->wait, 0.0);
                /* Confined to its cores, a group's util reaches their
                 * capacity at most: a ring that fills its core read 1024.3
                 * of 1024 and was let go and placed again by turns. It has
                 * outgrown them when it fills them and its threads wait
                 * as long as they run (or a reading beyond the noise). */
                if (now->util > cap * GROUP_OUTGROW_NOISE) {
                        snprintf(buf, size, GROUP_OUTGREW ": util %.0f > %.0f%% of %.0f", now->util,
                                 GROUP_OUTGROW_NOISE * 100, cap);
                        return buf;
                }
                if (now->util >= cap * GROUP_FULL && wait >= now->util) {
                        snprintf(buf, size,
                                 GROUP_OUTGREW ": util %.0f >= %.0f%% of %.0f and its threads "
                                               "wait as long as they run (wait %.0f)",
                                 now->util, GROUP_FULL * 100, cap, wait);
                        return buf;
                }
        }
        return NULL;
}

int policy_group_release(PolicyCtx *ctx) {
        char buf[512];
        int r;

        for (size_t i = 0; i < ctx->snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                ThreadGroup *g = NULL;
                size_t n = 0;
                if (!c)
                        continue;
                r = policy_groups_find(ctx, c, &g, &n);
                for (size_t k = 0; r >= 0 && k < c->sample->n_threads; k++) {
                        ThreadState *t = c->by_sample[k];
                        if (!t || !t->group_lead)
                                continue;
                        if (!t->pin.mask) {
                                t->group_lead = 0; /* its pin went another way (guard, window, restore) */
                                continue;
                        }
                        const ThreadGroup *seen = group_of(g, n, t);
                        if (seen && seen->n >= 3 && seen->members[0]->tid == t->group_lead)
                                t->group_seen_us = ctx->now_us;
                        bool soft = false;
                        const char *why =
                                t->acted ? NULL : release_reason(ctx, c, t, g, n, buf, sizeof(buf), &soft);
                        if (!why || !soft)
                                t->group_release_since_us = 0;
                        if (!why)
                                continue;
                        if (soft && t->group_release_since_us == 0)
                                t->group_release_since_us = ctx->now_us;
                        if (soft && ctx->now_us - t->group_release_since_us < GROUP_RELEASE_PERSIST_US)
                                continue;
                        t->group_release_since_us = 0;
                        if (t->group_lead == t->tid &&
                            strncmp(why, GROUP_OUTGREW, strlen(GROUP_OUTGREW)) == 0) {
                                t->group_outgrown_cap =
                                        SCHED_CAPACITY_SCALE * (double) hwloc_bitmap_weight(t->pin.mask);
                                t->group_outgrown_us = ctx->now_us;
                        }
                        r = policy_thread_restore(ctx, c, t, true, ACTION_POLICY_STICKY, why);
                        if (r >= 0)
                                t->group_lead = 0;
                }
                policy_groups_free(g, n);
                if (r < 0)
                        return r;
        }
        return 0;
}
