/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <math.h>

#include "policy-internal.h"

/* The scan window (DESIGN.md 1.1). SIS_UTIL shortens the kernel's wakeup scan
 * of a busy LLC; steerd narrows an opted-in cgroup to whole cores of the LLC,
 * so that the scan walks only the window and the cgroup's threads, which
 * mostly wake each other, share caches.
 *
 * Open: the LLC is overloaded (policy_llc_overloaded(): nr_idle_scan * 2 < weight,
 * mean util above ~60%). Widen back: nr_idle_scan >= WindowWidenScanPercent
 * of the weight (75%: mean util below ~43%). In between, windows stay and
 * may grow with their demand, but never shrink or move: the gap is the
 * hysteresis. Shrinking or moving waits for MinResidencyMs since the
 * cgroup's threads last moved. While the LLC stays overloaded, growing (or
 * giving the whole LLC back) waits until the window has been too small for
 * MinResidencyMs: in an overloaded LLC every group uses what it can get, so
 * the moment others are confined one group's demand spikes, and growing on
 * the spike made windows flap (seen with four hackbench groups on 2 CPUs).
 * A window that is too small for good shows as more wait per CPU received,
 * which the guard reverts.
 *
 * Size: whole cores, at least MinWindowCores, enough CPUs for nr_idle_scan
 * and for the demand with WindowHeadroom; at most what the cgroup may use in
 * the LLC. The demand is the cgroup's whole Σ util: the window confines all
 * its threads, so it must hold all of them. A cgroup that runs in several
 * LLCs gets a window only in the LLC that holds most (over half) of its
 * demand; elsewhere a window would pull a spread-out group into one LLC.
 *
 * Placement: existing windows first (they keep their cores: moving a window
 * costs caches), then new ones, largest demand first, one core at a time onto
 * the core with the fewest windows, then the least load per CPU, where load
 * is the core's util without these cgroups' own threads (so fully idle cores
 * come first) plus the demand already placed there. Windows are disjoint
 * whenever their sizes fit in the LLC, and overlap, on the least loaded
 * cores, only when they do not (always when there are more cgroups than
 * cores). */

/* See too_light(): a quarter of one CPU. */
#define WINDOW_MIN_DEMAND_PERCENT 25

typedef struct Slot {
        int core;
        hwloc_const_bitmap_t cpus; /* online CPUs of the core */
        unsigned n_cpus;
        double background; /* util of everything but the windowed cgroups' threads */
        double assigned;   /* demand of the windows placed here so far */
        unsigned n_windows;
        bool old; /* in the window being resized */
} Slot;

typedef struct Cand {
        CgroupState *c;
        size_t index;
        double demand;
        bool held;
} Cand;

typedef struct Home {
        int llc;        /* -1: no demand anywhere */
        double demand;  /* Σ util of all its threads */
        double in_home; /* of which on its home LLC */
} Home;

static int slot_cmp(const void *a, const void *b) {
        const Slot *x = *(Slot *const *) a, *y = *(Slot *const *) b;
        double lx, ly;

        if (x->old != y->old)
                return x->old ? -1 : 1;
        if (x->n_windows != y->n_windows)
                return x->n_windows < y->n_windows ? -1 : 1;
        lx = (x->background + x->assigned) / x->n_cpus;
        ly = (y->background + y->assigned) / y->n_cpus;
        if (lx != ly)
                return lx < ly ? -1 : 1;
        return x->core < y->core ? -1 : x->core > y->core;
}

static int cand_cmp(const void *a, const void *b) {
        const Cand *x = a, *y = b;

        if (x->held != y->held)
                return x->held ? -1 : 1;
        if (x->demand != y->demand)
                return x->demand > y->demand ? -1 : 1;
        return x->index < y->index ? -1 : x->index > y->index;
}

static int thread_core(const PolicyCtx *ctx, const ThreadSample *ts) {
        const CpuSample *cpu;

        if (ts->cpu < 0)
                return -1;
        cpu = snapshot_cpu(ctx->snap, (unsigned) ts->cpu);
        return cpu && cpu->online && cpu->core >= 0 && (size_t) cpu->core < ctx->n_cores ? cpu->core : -1;
}

static int compute_homes(const PolicyCtx *ctx, Home *homes) {
        const Snapshot *snap = ctx->snap;
        _cleanup_(freep) double *per_llc = calloc(MAX(snap->n_llcs, (size_t) 1), sizeof(double));

        if (!per_llc)
                return -ENOMEM;
        for (size_t i = 0; i < snap->n_cgroups; i++) {
                const CgroupState *c = ctx->by_sample[i];
                homes[i] = (Home){.llc = -1};
                if (!c)
                        continue;
                memset(per_llc, 0, snap->n_llcs * sizeof(double));
                for (size_t k = 0; k < c->sample->n_threads; k++) {
                        const ThreadSample *ts = &c->sample->threads[k];
                        int core = thread_core(ctx, ts);
                        double u = MAX(ts->util, 0.0);

                        homes[i].demand += u;
                        if (core >= 0 && ctx->core_llc[core] >= 0)
                                per_llc[ctx->core_llc[core]] += u;
                }
                for (size_t l = 0; l < snap->n_llcs; l++)
                        if (per_llc[l] > 0 && (homes[i].llc < 0 || per_llc[l] > homes[i].in_home)) {
                                homes[i].llc = (int) l;
                                homes[i].in_home = per_llc[l];
                        }
        }
        return 0;
}

static void account(Slot **chosen, size_t n, double demand) {
        for (size_t i = 0; i < n; i++) {
                chosen[i]->n_windows++;
                chosen[i]->assigned += demand / n;
        }
}

typedef struct LlcWork {
        const LlcSample *llc;
        Slot *slots;
        size_t n_slots;
        Slot **order;  /* scratch, n_slots */
        Slot **chosen; /* scratch, n_slots */
        CpuSet mask, scratch;
} LlcWork;

/* Chooses the window of one cgroup and sets it, or keeps the old one. */
static int place(PolicyCtx *ctx, LlcWork *w, const Cand *cand) {
        const Settings *st = ctx->settings;
        const LlcSample *llc = w->llc;
        CgroupState *c = cand->c;
        _cleanup_cpuset_ CpuSet base = hwloc_bitmap_alloc(), cur = hwloc_bitmap_alloc();
        size_t n_order = 0, n_chosen = 0;
        unsigned cpus = 0, cores = 0;
        char buf[CPUSET_STRLEN], reason[640];
        int r;

        if (!base || !cur)
                return -ENOMEM;
        hwloc_bitmap_and(base, policy_cgroup_below_window(c), c->sample->allowed);
        hwloc_bitmap_and(base, base, ctx->online);
        hwloc_bitmap_and(cur, policy_cgroup_effective(c), ctx->online);

        /* Outside overload the scan term would grow windows as the LLC calms
         * and jitter with it; there only the demand sizes them. */
        unsigned scan_cpus = policy_llc_overloaded(llc) ? llc->nr_idle_scan : 0;
        unsigned demand_cpus =
                (unsigned) ceil(cand->demand * (1.0 + MAX(st->window_headroom, 0.0)) / SCHED_CAPACITY_SCALE);
        unsigned need_cpus = MAX(scan_cpus, demand_cpus);
        unsigned need_cores = MAX(st->min_window_cores, 1u);

        for (size_t s = 0; s < w->n_slots; s++) {
                Slot *slot = &w->slots[s];
                if (!hwloc_bitmap_intersects(slot->cpus, base))
                        continue;
                slot->old = cand->held && hwloc_bitmap_intersects(slot->cpus, c->window.mask);
                w->order[n_order++] = slot;
        }
        if (n_order == 0)
                return 0;
        qsort(w->order, n_order, sizeof(Slot *), slot_cmp);

        hwloc_bitmap_zero(w->mask);
        for (size_t s = 0; s < n_order; s++) {
                Slot *slot = w->order[s];
                bool enough = cpus >= need_cpus && cores >= need_cores;

                /* Outside overload a window may grow but not shrink. */
                if (enough && !(slot->old && !policy_llc_overloaded(llc)))
                        break;
                hwloc_bitmap_and(w->scratch, slot->cpus, base);
                hwloc_bitmap_or(w->mask, w->mask, w->scratch);
                cpus += (unsigned) hwloc_bitmap_weight(w->scratch);
                cores++;
                w->chosen[n_chosen++] = slot;
        }
        for (size_t s = 0; s < w->n_slots; s++)
                w->slots[s].old = false;

        /* Overloaded: a held window grows only on a shortfall that lasts. */
        bool grows = cand->held && policy_llc_overloaded(llc) && !hwloc_bitmap_isequal(w->mask, cur) &&
                     hwloc_bitmap_isincluded(cur, w->mask);
        if (!grows)
                c->window_short_since_us = 0;
        else if (c->window_short_since_us == 0 ||
                 ctx->now_us - c->window_short_since_us < st->min_residency_ms * USEC_PER_MSEC) {
                if (c->window_short_since_us == 0)
                        c->window_short_since_us = ctx->now_us;
                size_t n = 0;
                for (size_t s = 0; s < w->n_slots; s++)
                        if (hwloc_bitmap_intersects(w->slots[s].cpus, c->window.mask))
                                w->chosen[n++] = &w->slots[s];
                account(w->chosen, n, cand->demand);
                return 0;
        } else
                c->window_short_since_us = 0;

        /* A window covering all the cgroup may use narrows nothing. */
        if (hwloc_bitmap_isequal(w->mask, base)) {
                account(w->chosen, n_chosen, cand->demand);
                if (!cand->held)
                        return 0;
                /* Outgrown: the window was too small for what the cgroup
                 * does once confined. It backs off like a reverted one, or
                 * it comes back as soon as the LLC looks overloaded again
                 * (seen: perf bench messaging windowed and widened every
                 * half second, 4% slower). */
                uint64_t off_us = policy_backoff_us(ctx->settings, &c->backoff[ACTION_POLICY_WINDOW]);
                snprintf(reason, sizeof(reason),
                         "llc %u: demand %.0f needs all of %s; window backs off %" PRIu64 " ms", llc->id,
                         cand->demand, cpuset_to_string(base, buf, sizeof(buf)),
                         (uint64_t) (off_us / USEC_PER_MSEC));
                r = policy_cgroup_restore(ctx, c, true, ACTION_POLICY_WINDOW, reason);
                if (r > 0)
                        policy_back_off(c, ACTION_POLICY_WINDOW, ctx->now_us, off_us);
                return r;
        }

        bool moves = !hwloc_bitmap_isincluded(cur, w->mask);
        if (hwloc_bitmap_isequal(w->mask, cur) || (cand->held && moves && !policy_llc_overloaded(llc)) ||
            (moves && !policy_cgroup_threads_resident(ctx, c))) {
                /* Unchanged, or a change that must wait: the old window stays. */
                if (cand->held) {
                        size_t n = 0;
                        for (size_t s = 0; s < w->n_slots; s++)
                                if (hwloc_bitmap_intersects(w->slots[s].cpus, c->window.mask))
                                        w->chosen[n++] = &w->slots[s];
                        account(w->chosen, n, cand->demand);
                }
                return 0;
        }

        snprintf(reason, sizeof(reason),
                 "llc %u nr_idle_scan %u %s weight %u (util %.0f); demand %.0f +%.0f%% -> %u cpus, scan %u "
                 "cpus, "
                 "min %u cores -> %u cores, %u cpus",
                 llc->id, llc->nr_idle_scan, policy_llc_overloaded(llc) ? "< half of" : "of", llc->weight,
                 llc->util, cand->demand, MAX(st->window_headroom, 0.0) * 100, demand_cpus, scan_cpus,
                 need_cores, cores, cpus);
        r = policy_cgroup_set_layer(ctx, c, ACTION_POLICY_WINDOW, w->mask, reason);
        if (r < 0)
                return r;
        if (r > 0) {
                c->window_llc = policy_llc_index(ctx, llc);
                account(w->chosen, n_chosen, cand->demand);
        }
        return 0;
}

/* A window is for a cgroup with work enough to keep a CPU of it busy: its
 * threads wake each other and share the window's caches. A light one (a few
 * timer threads) would only queue behind the LLC's other load on the
 * window's cores, where outside a window each wakeup finds the CPU whose
 * task's slice ends first. Measured: cyclictest (two threads, util 50 in
 * all) next to two CPU hogs on 2 CPUs, windowed to one CPU, had a 1.5-4x
 * worse p99 wakeup latency, while its mean wait per CPU received stayed
 * within what the guard lets pass. */
static bool too_light(double demand) {
        return demand * 100 < WINDOW_MIN_DEMAND_PERCENT * SCHED_CAPACITY_SCALE;
}

static int window_llc(PolicyCtx *ctx, const LlcSample *llc, const Home *homes, Cand *cands) {
        const Settings *st = ctx->settings;
        const Snapshot *snap = ctx->snap;
        bool calm = llc->nr_idle_scan * 100.0 >= llc->weight * st->window_widen_scan_percent;
        bool small = llc->weight < st->min_llc_cpus;
        size_t n_cands = 0;
        int r;

        for (size_t i = 0; i < snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                char reason[256];

                if (!c || c->acted || !c->window.mask || c->window_llc != policy_llc_index(ctx, llc) ||
                    !(calm || small))
                        continue;
                if (small)
                        snprintf(reason, sizeof(reason), "llc %u weight %u < MinLLCCPUs %u", llc->id,
                                 llc->weight, st->min_llc_cpus);
                else
                        snprintf(reason, sizeof(reason),
                                 "llc %u calm: nr_idle_scan %u >= %.0f%% of weight %u (util %.0f)", llc->id,
                                 llc->nr_idle_scan, st->window_widen_scan_percent, llc->weight, llc->util);
                r = policy_cgroup_restore(ctx, c, true, ACTION_POLICY_WINDOW, reason);
                if (r < 0)
                        return r;
        }
        if (calm || small)
                return 0;

        for (size_t i = 0; i < snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                if (!c || c->acted || !policy_enabled(st, c->sample->policy, ACTION_POLICY_WINDOW) ||
                    policy_backed_off(c, ACTION_POLICY_WINDOW, ctx->now_us))
                        continue;

                bool held = c->window.mask && c->window_llc == policy_llc_index(ctx, llc);
                if (c->window.mask && !held)
                        continue;
                if (!held && (!policy_llc_overloaded(llc) || policy_cgroup_holds_thread_homes(c) ||
                              !policy_cgroup_settled(ctx, c) || too_light(homes[i].demand) ||
                              homes[i].llc != policy_llc_index(ctx, llc) ||
                              !(homes[i].in_home * 2 > homes[i].demand)))
                        continue;
                if (!hwloc_bitmap_intersects(policy_cgroup_below_window(c),
                                             ctx->llc_cpus[policy_llc_index(ctx, llc)]))
                        continue;
                cands[n_cands++] = (Cand){.c = c, .index = i, .demand = homes[i].demand, .held = held};
        }
        if (n_cands == 0)
                return 0;
        qsort(cands, n_cands, sizeof(Cand), cand_cmp);

        LlcWork w = {.llc = llc};
        for (size_t k = 0; k < ctx->n_cores; k++)
                if (ctx->core_llc[k] == policy_llc_index(ctx, llc))
                        w.n_slots++;
        w.slots = calloc(MAX(w.n_slots, (size_t) 1), sizeof(Slot));
        w.order = calloc(MAX(w.n_slots, (size_t) 1), sizeof(Slot *));
        w.chosen = calloc(MAX(w.n_slots, (size_t) 1), sizeof(Slot *));
        w.mask = hwloc_bitmap_alloc();
        w.scratch = hwloc_bitmap_alloc();
        if (!w.slots || !w.order || !w.chosen || !w.mask || !w.scratch) {
                r = -ENOMEM;
                goto finish;
        }
        w.n_slots = 0;
        for (size_t k = 0; k < ctx->n_cores; k++)
                if (ctx->core_llc[k] == policy_llc_index(ctx, llc))
                        w.slots[w.n_slots++] = (Slot){
                                .core = (int) k,
                                .cpus = ctx->core_cpus[k],
                                .n_cpus = MAX((unsigned) hwloc_bitmap_weight(ctx->core_cpus[k]), 1u),
                                .background = ctx->core_util[k],
                        };

        /* The windowed cgroups' own threads are what the window places; the
         * rest of each core's util is the background they would share it with. */
        for (size_t j = 0; j < n_cands; j++) {
                const CgroupSample *cg = cands[j].c->sample;
                for (size_t k = 0; k < cg->n_threads; k++) {
                        int core = thread_core(ctx, &cg->threads[k]);
                        for (size_t s = 0; core >= 0 && s < w.n_slots; s++)
                                if (w.slots[s].core == core)
                                        w.slots[s].background -= MAX(cg->threads[k].util, 0.0);
                }
        }
        for (size_t s = 0; s < w.n_slots; s++)
                w.slots[s].background = MAX(w.slots[s].background, 0.0);

        r = 0;
        for (size_t j = 0; j < n_cands && r >= 0; j++)
                r = place(ctx, &w, &cands[j]);

finish:
        free(w.slots);
        free(w.order);
        free(w.chosen);
        hwloc_bitmap_free(w.mask);
        hwloc_bitmap_free(w.scratch);
        return r;
}

int policy_window(PolicyCtx *ctx) {
        const Snapshot *snap = ctx->snap;
        _cleanup_(freep) Home *homes = calloc(MAX(snap->n_cgroups, (size_t) 1), sizeof(Home));
        _cleanup_(freep) Cand *cands = calloc(MAX(snap->n_cgroups, (size_t) 1), sizeof(Cand));
        int r;

        if (!homes || !cands)
                return -ENOMEM;
        r = compute_homes(ctx, homes);
        if (r < 0)
                return r;

        for (size_t l = 0; l < snap->n_llcs; l++) {
                if (snap->llcs[l].weight == 0)
                        continue;
                r = window_llc(ctx, &snap->llcs[l], homes, cands);
                if (r < 0)
                        return r;
        }
        return 0;
}
