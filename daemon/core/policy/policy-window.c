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
 * of the weight (75%: mean util below ~43%) at every look for
 * WINDOW_CALM_PERSIST_US, the window held WINDOW_CALM_HOLD_US. In between,
 * windows stay and may grow with their demand, but never shrink or move: the
 * gap is the hysteresis. Shrinking or moving waits for MinResidencyMs since
 * the cgroup's threads last moved, and shrinking for a demand that wanted
 * fewer CPUs at every look for WINDOW_SHRINK_HOLD_US. While the LLC stays overloaded, growing (or
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

typedef struct Slot {
        int core;
        hwloc_const_bitmap_t cpus; /* online CPUs of the core */
        unsigned n_cpus;
        double background; /* util of everything but the windowed cgroups' threads */
        double assigned;   /* demand of the windows placed here so far */
        unsigned n_windows;
        bool old;  /* in the window being resized */
        bool keep; /* holds a pin of the cgroup's pairs or groups */
} Slot;

typedef struct Cand {
        CgroupState *c;
        size_t index;
        double demand;
        bool held;
        bool consolidate; /* below overload: a consolidation window (policy-consolidate.c) */
} Cand;

typedef struct Home {
        int llc;        /* its home window domain (index in ctx->domains), -1: no demand anywhere */
        double demand;  /* Σ util of all its threads */
        double in_home; /* of which on its home domain */
} Home;

static int slot_cmp(const void *a, const void *b) {
        const Slot *x = *(Slot *const *) a, *y = *(Slot *const *) b;
        double lx, ly;

        if (x->keep != y->keep)
                return x->keep ? -1 : 1;
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
        size_t n = ctx->domains.n;
        _cleanup_(freep) double *per_llc = calloc(MAX(n, (size_t) 1), sizeof(double));

        if (!per_llc)
                return -ENOMEM;
        for (size_t i = 0; i < snap->n_cgroups; i++) {
                const CgroupState *c = ctx->by_sample[i];
                homes[i] = (Home){.llc = -1};
                if (!c)
                        continue;
                memset(per_llc, 0, n * sizeof(double));
                for (size_t k = 0; k < c->sample->n_threads; k++) {
                        const ThreadSample *ts = &c->sample->threads[k];
                        int d = policy_core_domain(ctx, thread_core(ctx, ts));
                        double u = MAX(ts->util, 0.0);

                        homes[i].demand += u;
                        if (d >= 0)
                                per_llc[d] += u;
                }
                for (size_t l = 0; l < n; l++)
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
        const WindowDomain *dom;
        const LlcSample *llc; /* &dom->view */
        Slot *slots;
        size_t n_slots;
        Slot **order;  /* scratch, n_slots */
        Slot **chosen; /* scratch, n_slots */
        CpuSet mask, scratch;
        CpuSet talkers; /* the candidate's pair and group pins (talker_cpus()) */
} LlcWork;

/* What a window needs: CPUs for the LLC's scan and for the demand with
 * WindowHeadroom, and at least MinWindowCores cores. */
typedef struct WindowSize {
        unsigned scan_cpus, demand_cpus, share_cpus, need_cpus, need_cores;
} WindowSize;

/* A consolidation window: a new one is its demand
 * (policy_consolidate_demand_cpus()); a held one keeps its size, overloaded
 * or not. Its own demand is no guide once placed: threads that hand work
 * on, together, no longer idle between hand-overs, and a token ring fills
 * the CPU it is given (1,020 where it used 840 across two), which would
 * outgrow every window; and an LLC it fills to overload would size it by
 * share and give it back. It grows by a core when its threads wait as long
 * as they run (more of them runnable at once than it has CPUs); the guard
 * judges the rest by their progress. */
static void consolidation_size(const PolicyCtx *ctx, const Cand *cand, hwloc_const_bitmap_t cur,
                               WindowSize *ret) {
        const ConsolidateLook *l = &cand->c->consolidate;

        *ret = (WindowSize){.demand_cpus = policy_consolidate_demand_cpus(cand->demand)};
        if (cand->held)
                ret->demand_cpus = (unsigned) hwloc_bitmap_weight(cur) +
                                   (l->wait_share > CONSOLIDATE_GROW_WAIT_SHARE ? 1u : 0u);
        ret->share_cpus = ret->demand_cpus;
        ret->need_cpus = MAX(ret->demand_cpus, 1u);
        ret->need_cores = MAX(ctx->settings->min_window_cores, 1u);
}

static void window_size(const PolicyCtx *ctx, const LlcSample *llc, const Cand *cand,
                        hwloc_const_bitmap_t cur, WindowSize *ret) {
        const Settings *st = ctx->settings;
        bool overloaded = policy_llc_overloaded(llc);
        double demand = cand->demand;
        double total = MAX(llc->util * llc->weight, demand);

        if (cand->consolidate) {
                consolidation_size(ctx, cand, cur, ret);
                return;
        }

        /* Outside overload the scan term would grow windows as the LLC calms
         * and jitter with it; there only the demand sizes them. */
        ret->scan_cpus = overloaded ? llc->nr_idle_scan : 0;
        ret->demand_cpus =
                (unsigned) ceil(demand * (1.0 + MAX(st->window_headroom, 0.0)) / SCHED_CAPACITY_SCALE);
        /* Overloaded, no group can have its headroom: each gets at most its
         * share of the LLC by demand. Without it a group that fills one CPU
         * needs two, so two such groups on two CPUs got no window at all,
         * where one CPU each is what pinning by hand does; a group alone
         * (the others idle) has the whole LLC as its share. A share a
         * little over a whole number of CPUs is that number: two groups
         * that fill two CPUs measure 977 and 973 of 1950, and the larger
         * needed both CPUs for 0.2% (seen in a recorded phases run). */
        ret->share_cpus = overloaded && total > 0
                                  ? (unsigned) ceil(llc->weight * demand / total - WINDOW_SHARE_SLACK)
                                  : ret->demand_cpus;
        ret->need_cpus = MAX(ret->scan_cpus, MIN(ret->demand_cpus, MAX(ret->share_cpus, 1u)));
        ret->need_cores = MAX(st->min_window_cores, 1u);
}

/* Chooses the window's cores into w->mask and w->chosen, in slot_cmp()
 * order, until the window is big enough. Returns how many cores it chose, 0
 * when none of the LLC's cores is the cgroup's. */
static size_t choose_cores(LlcWork *w, const Cand *cand, hwloc_const_bitmap_t base, const WindowSize *size,
                           unsigned *ret_cpus, unsigned *ret_cores) {
        bool overloaded = policy_llc_overloaded(w->llc);
        size_t n_order = 0, n_chosen = 0;
        unsigned cpus = 0, cores = 0;

        for (size_t s = 0; s < w->n_slots; s++) {
                Slot *slot = &w->slots[s];
                if (!hwloc_bitmap_intersects(slot->cpus, base))
                        continue;
                slot->old = cand->held && hwloc_bitmap_intersects(slot->cpus, cand->c->window.mask);
                slot->keep = hwloc_bitmap_intersects(slot->cpus, w->talkers);
                w->order[n_order++] = slot;
        }
        if (n_order == 0)
                return 0;
        qsort(w->order, n_order, sizeof(Slot *), slot_cmp);

        hwloc_bitmap_zero(w->mask);
        for (size_t s = 0; s < n_order; s++) {
                Slot *slot = w->order[s];
                bool enough = cpus >= size->need_cpus && cores >= size->need_cores;

                /* Outside overload a window may grow but not shrink; it
                 * never leaves out a core its pairs and groups are pinned
                 * on (keep slots come first). */
                if (enough && !slot->keep && !(slot->old && !overloaded))
                        break;
                hwloc_bitmap_and(w->scratch, slot->cpus, base);
                hwloc_bitmap_or(w->mask, w->mask, w->scratch);
                cpus += (unsigned) hwloc_bitmap_weight(w->scratch);
                cores++;
                w->chosen[n_chosen++] = slot;
        }
        for (size_t s = 0; s < w->n_slots; s++)
                w->slots[s].old = w->slots[s].keep = false;

        *ret_cpus = cpus;
        *ret_cores = cores;
        return n_chosen;
}

/* A new consolidation window must hold its demand on top of what else
 * runs on its cores, within CONSOLIDATE_MAX_FILL of them: it never
 * squeezes a group below its demand. Grows the choice a core at a time until it does. Returns how many
 * cores it chose, 0 when no choice of fewer cores than the group runs on
 * has room (nothing to consolidate). */
static size_t consolidation_room(LlcWork *w, const Cand *cand, hwloc_const_bitmap_t base, WindowSize *size,
                                 size_t n_chosen, unsigned *cpus, unsigned *cores) {
        double need = cand->demand;

        for (;;) {
                double taken = 0;
                unsigned before = *cpus;

                if (*cores >= cand->c->consolidate.spread)
                        return 0;
                for (size_t s = 0; s < n_chosen; s++)
                        taken += w->chosen[s]->background + w->chosen[s]->assigned;
                if (taken + need <= CONSOLIDATE_MAX_FILL * *cpus * SCHED_CAPACITY_SCALE)
                        return n_chosen;
                size->need_cpus = *cpus + 1;
                n_chosen = choose_cores(w, cand, base, size, cpus, cores);
                if (*cpus == before)
                        return 0;
        }
}

/* The held window stays as it is: its cores carry its demand. */
static void keep_window(LlcWork *w, const CgroupState *c, double demand) {
        size_t n = 0;

        for (size_t s = 0; s < w->n_slots; s++)
                if (hwloc_bitmap_intersects(w->slots[s].cpus, c->window.mask))
                        w->chosen[n++] = &w->slots[s];
        account(w->chosen, n, demand);
}

/* Overloaded: a held window grows only on a shortfall that lasts
 * MinResidencyMs. Whether this growth must wait; tracks since when the
 * window has been too small. */
static bool growth_waits(PolicyCtx *ctx, const LlcWork *w, const Cand *cand, hwloc_const_bitmap_t cur,
                         bool alone) {
        CgroupState *c = cand->c;
        /* Alone (its share is all it may use: the others went idle), the
         * window widens at once: nothing is left to spike against. */
        bool grows = cand->held && !alone && policy_llc_overloaded(w->llc) &&
                     !hwloc_bitmap_isequal(w->mask, cur) && hwloc_bitmap_isincluded(cur, w->mask);

        if (grows &&
            (c->window_short_since_us == 0 ||
             ctx->now_us - c->window_short_since_us < ctx->settings->min_residency_ms * USEC_PER_MSEC)) {
                if (c->window_short_since_us == 0)
                        c->window_short_since_us = ctx->now_us;
                return true;
        }
        c->window_short_since_us = 0;
        return false;
}

/* A held window that would shrink waits until its demand has wanted fewer
 * CPUs at every look for WINDOW_SHRINK_HOLD_US. Whether this shrink must
 * wait; tracks since when the window has been bigger than needed. */
static bool shrink_waits(PolicyCtx *ctx, const Cand *cand, hwloc_const_bitmap_t cur,
                         hwloc_const_bitmap_t want) {
        CgroupState *c = cand->c;

        if (!cand->held || hwloc_bitmap_weight(want) >= hwloc_bitmap_weight(cur)) {
                c->window_long_since_us = 0;
                return false;
        }
        if (c->window_long_since_us == 0)
                c->window_long_since_us = ctx->now_us;
        if (ctx->now_us - c->window_long_since_us < WINDOW_SHRINK_HOLD_US)
                return true;
        c->window_long_since_us = 0;
        return false;
}

/* The window would cover all the cgroup may use, which narrows nothing. */
static int outgrown(PolicyCtx *ctx, LlcWork *w, const Cand *cand, hwloc_const_bitmap_t base,
                    size_t n_chosen) {
        CgroupState *c = cand->c;
        char buf[CPUSET_STRLEN], reason[640];
        int r;

        account(w->chosen, n_chosen, cand->demand);
        if (!cand->held)
                return 0;
        /* Outgrown: the window was too small for what the cgroup
         * does once confined. Within MinResidencyMs of the window it
         * backs off like a reverted one, or it comes back as soon as
         * the LLC looks overloaded again (seen: perf bench messaging
         * windowed and widened every half second, 4% slower). Later
         * it is the load that moved (the others went idle): widened
         * without a back-off, so that its next window, when the
         * others come back, is not held up. */
        bool flap = !policy_cgroup_threads_resident(ctx, c);
        uint64_t off_us = flap ? policy_backoff_us(ctx->settings, &c->backoff[ACTION_POLICY_WINDOW]) : 0;
        snprintf(reason, sizeof(reason), "%s: demand %.0f needs all of %s; %s %" PRIu64 " ms", w->dom->label,
                 cand->demand, cpuset_to_string(base, buf, sizeof(buf)),
                 flap ? "window backs off" : "the window had been held for at least",
                 (uint64_t) ((flap ? off_us : policy_residency_us(ctx->settings)) / USEC_PER_MSEC));
        r = policy_cgroup_restore(ctx, c, true, ACTION_POLICY_WINDOW, reason);
        if (r > 0 && flap)
                policy_back_off(c, ACTION_POLICY_WINDOW, ctx->now_us, off_us);
        return r;
}

static void window_reason(const PolicyCtx *ctx, const LlcWork *w, const Cand *cand, const WindowSize *size,
                          unsigned cpus, unsigned cores, char *reason, size_t n) {
        const LlcSample *llc = w->llc;
        const ConsolidateLook *l = &cand->c->consolidate;

        if (cand->consolidate)
                snprintf(
                        reason, n,
                        "%s below overload (util %.0f, nr_idle_scan %u of %u); consolidate: %u busy threads "
                        "hand work (%.0f wakeups/s, %.0f us a run, wait %.0f%%) on %u cores; demand %.0f "
                        "-> %u cpus -> %u cores, %u cpus",
                        w->dom->label, llc->util, llc->nr_idle_scan, llc->weight, l->busy, l->wakeups,
                        l->run_us, l->wait_share * 100, l->spread, cand->demand, size->demand_cpus, cores,
                        cpus);
        else
                snprintf(
                        reason, n,
                        "%s nr_idle_scan %u %s weight %u (util %.0f); demand %.0f +%.0f%% -> %u cpus, share "
                        "%u cpus, scan %u cpus, min %u cores -> %u cores, %u cpus",
                        w->dom->label, llc->nr_idle_scan, policy_llc_overloaded(llc) ? "< half of" : "of",
                        llc->weight, llc->util, cand->demand, MAX(ctx->settings->window_headroom, 0.0) * 100,
                        size->demand_cpus, size->share_cpus, size->scan_cpus, size->need_cores, cores, cpus);
        if (!hwloc_bitmap_iszero(w->talkers)) {
                char buf[CPUSET_STRLEN];
                size_t len = strlen(reason);
                snprintf(reason + len, n - len, "; holds its pairs' and groups' pins on %s",
                         cpuset_to_string(w->talkers, buf, sizeof(buf)));
        }
}

static int set_window(PolicyCtx *ctx, LlcWork *w, const Cand *cand, const WindowSize *size, size_t n_chosen,
                      unsigned cpus, unsigned cores) {
        char reason[640];
        int r;

        window_reason(ctx, w, cand, size, cpus, cores, reason, sizeof(reason));
        r = policy_cgroup_set_layer(ctx, cand->c, ACTION_POLICY_WINDOW, w->mask, reason);
        if (r < 0)
                return r;
        if (r > 0) {
                Experiment *e = &cand->c->window.exp;
                /* A consolidation is judged by its progress (its wakeups a
                 * second, one per hand-over): together its threads wait for
                 * each other's hand-over, which wait alone would revert. */
                double progress = cand->consolidate ? policy_cgroup_wakeups(cand->c->sample)
                                                    : policy_cgroup_progress(ctx->settings, cand->c->sample);

                cand->c->window_llc = w->dom->id;
                if (!cand->held)
                        cand->c->window_consolidated = cand->consolidate;
                account(w->chosen, n_chosen, cand->demand);
                /* A new trial of a request/response cgroup is judged by its
                 * progress too (a growing window keeps its first trial's). */
                if (e->active && e->start_us == ctx->now_us && progress >= 0) {
                        e->by_progress = true;
                        e->before_progress = progress;
                }
        }
        return 0;
}

/* The CPUs its pairs' and groups' pins hold: a window placed or resized
 * around them would leave a placed ring outside the cgroup's CPUs, and the
 * fixup would give it back (seen in the guest: a window of 4-5 over rings
 * pinned on 6 and 7, a ring given back, placed again, given back). A
 * single thread's sticky pin is not kept: it only follows where the thread
 * last ran, which the window decides better. */
static void talker_cpus(const CgroupState *c, CpuSet ret) {
        hwloc_bitmap_zero(ret);
        for (size_t k = 0; k < c->sample->n_threads; k++) {
                const ThreadState *t = c->by_sample[k];
                if (t && t->pin.mask && (t->pair_tid || t->group_lead))
                        hwloc_bitmap_or(ret, ret, t->pin.mask);
        }
}

/* Chooses the window of one cgroup and sets it, or keeps the old one. */
static int place(PolicyCtx *ctx, LlcWork *w, const Cand *cand) {
        CgroupState *c = cand->c;
        _cleanup_cpuset_ CpuSet base = hwloc_bitmap_alloc(), cur = hwloc_bitmap_alloc();
        WindowSize size;
        unsigned cpus, cores;
        size_t n_chosen;

        if (!base || !cur)
                return -ENOMEM;
        hwloc_bitmap_and(base, policy_cgroup_below_window(c), c->sample->allowed);
        hwloc_bitmap_and(base, base, ctx->online);
        hwloc_bitmap_and(cur, policy_cgroup_effective(c), ctx->online);
        talker_cpus(c, w->talkers);

        window_size(ctx, w->llc, cand, cur, &size);
        n_chosen = choose_cores(w, cand, base, &size, &cpus, &cores);
        if (n_chosen == 0)
                return 0;
        if (cand->consolidate && !cand->held)
                n_chosen = consolidation_room(w, cand, base, &size, n_chosen, &cpus, &cores);

        /* Before every other test: the look counts even when another holds the window. */
        bool shrink_wait = shrink_waits(ctx, cand, cur, w->mask);
        if (growth_waits(ctx, w, cand, cur, size.share_cpus >= (unsigned) hwloc_bitmap_weight(base))) {
                keep_window(w, c, cand->demand);
                return 0;
        }

        if (hwloc_bitmap_isequal(w->mask, base))
                return outgrown(ctx, w, cand, base, n_chosen);

        bool moves = !hwloc_bitmap_isincluded(cur, w->mask);
        if (hwloc_bitmap_isequal(w->mask, cur) || (cand->held && moves && !policy_llc_overloaded(w->llc)) ||
            (moves && !policy_cgroup_threads_resident(ctx, c)) || shrink_wait) {
                /* Unchanged, or a change that must wait: the old window stays. */
                if (cand->held)
                        keep_window(w, c, cand->demand);
                return 0;
        }

        return set_window(ctx, w, cand, &size, n_chosen, cpus, cores);
}

/* domain: an index in ctx->domains, -1 for none; the cgroup records its id. */
static void note_gate(const PolicyCtx *ctx, CgroupState *c, WindowGate g, int domain, const Home *h) {
        c->window_gate = g;
        c->window_gate_llc = domain >= 0 ? ctx->domains.d[domain].id : -1;
        c->window_gate_demand = h->demand;
        c->window_gate_in_home = h->in_home;
}

/* Below overload: a consolidation window, if the cgroup hands work among
 * its threads and fits in fewer cores (policy-consolidate.c); the look is
 * kept for policy_explain(). The gates of a window that are not about
 * overload hold for it too. Returns the gate, or a negative errno. */
static int consolidation_gate(const PolicyCtx *ctx, CgroupState *c, const WindowDomain *dom, const Home *h) {
        const LlcSample *llc = &dom->view;
        int index = (int) (dom - ctx->domains.d);
        bool calm = llc->nr_idle_scan * 100.0 >= llc->weight * ctx->settings->window_widen_scan_percent;
        WindowGate none = calm ? WINDOW_GATE_CALM : WINDOW_GATE_NOT_OVERLOADED;

        c->consolidate = (ConsolidateLook){};
        if (policy_cgroup_holds_thread_homes(c) || policy_demand_too_light(h->demand) || h->llc != index ||
            !(h->in_home * 2 > h->demand))
                return none;
        int r = policy_consolidate_look(ctx, c, index, h->demand, false, &c->consolidate);
        if (r < 0)
                return r;
        return c->consolidate.gate == CONSOLIDATE_CANDIDATE ? WINDOW_GATE_CONSOLIDATE : none;
}

/* Every busy thread of the cgroup is pinned with its pair or group (and
 * one at least is): they are placed finer than a window, which would add
 * nothing but cpuset writes. Seen: perf bench sched pipe's pair on two
 * CPUs, its pin reverted, a window of one CPU set and given back as
 * outgrown 0.3 s later, again and again (its demand's share of the LLC
 * moved with the window itself). */
static bool busy_talkers_pinned(const CgroupState *c) {
        bool any = false;

        for (size_t k = 0; k < c->sample->n_threads; k++) {
                const ThreadState *t = c->by_sample[k];
                bool talker = t && t->pin.mask && (t->pair_tid || t->group_lead);
                if (talker)
                        any = true;
                else if (c->sample->threads[k].util >= CONSOLIDATE_BUSY_UTIL)
                        return false;
        }
        return any;
}

/* The gates of a new window, in one place: collect_cands() keeps the
 * candidates and held ones, policy_explain() says which gate stopped the
 * others. Returns the gate, or a negative errno. */
static int window_gate(const PolicyCtx *ctx, CgroupState *c, const WindowDomain *dom, const Home *h) {
        const Settings *st = ctx->settings;
        const LlcSample *llc = &dom->view;
        int index = (int) (dom - ctx->domains.d);

        if (c->acted)
                return WINDOW_GATE_ACTED;
        if (!policy_enabled(st, c->sample->policy, ACTION_POLICY_WINDOW))
                return WINDOW_GATE_DISABLED;
        if (policy_backed_off(c, ACTION_POLICY_WINDOW, ctx->now_us))
                return WINDOW_GATE_BACKED_OFF;
        if (c->window.mask)
                return c->window_llc == dom->id ? WINDOW_GATE_HELD : WINDOW_GATE_UNSEEN;
        if (policy_kernel_keeps_together(ctx, c))
                return WINDOW_GATE_KERNEL_CACHE;
        if (!policy_llc_overloaded(llc))
                return consolidation_gate(ctx, c, dom, h);
        /* Below overload consolidation_gate() says the same (CONSOLIDATE_PINNED). */
        if (busy_talkers_pinned(c))
                return WINDOW_GATE_TALKERS_PINNED;
        if (policy_cgroup_holds_thread_homes(c))
                return WINDOW_GATE_BALANCE_HOMES;
        if (policy_demand_too_light(h->demand))
                return WINDOW_GATE_TOO_LIGHT;
        if (h->llc != index)
                return WINDOW_GATE_UNSEEN; /* judged in its home LLC */
        if (!(h->in_home * 2 > h->demand))
                return WINDOW_GATE_SPREAD;
        return WINDOW_GATE_CANDIDATE;
}

/* A calm LLC: a window whose cgroup hands work and fits in fewer cores stays
 * as a consolidation window (one placed on overload becomes one when it
 * qualifies as a new one would), instead of being given back and placed
 * again; release_consolidated() judges those held. */
static int keeps_consolidating(const PolicyCtx *ctx, CgroupState *c, int index, const Home *h) {
        ConsolidateLook l;
        int r;

        if (c->window_consolidated)
                return 1;
        if (policy_demand_too_light(h->demand) || h->llc != index)
                return 0;
        r = policy_consolidate_look(ctx, c, index, h->demand, false, &l);
        if (r < 0 || l.gate != CONSOLIDATE_CANDIDATE)
                return r;
        c->window_consolidated = true;
        c->consolidate = l;
        return 1;
}

/* A calm LLC, or one too small for windows (MinLLCCPUs): every window in it
 * goes back, but for the consolidation windows (keeps_consolidating()). */
static int widen_all(PolicyCtx *ctx, const WindowDomain *dom, bool small, const Home *homes) {
        const Settings *st = ctx->settings;
        const LlcSample *llc = &dom->view;
        int index = (int) (dom - ctx->domains.d);
        int r;

        for (size_t i = 0; i < ctx->snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                char reason[256];

                if (c && !c->acted && homes[i].llc == index)
                        note_gate(ctx, c,
                                  !policy_enabled(st, c->sample->policy, ACTION_POLICY_WINDOW)
                                          ? WINDOW_GATE_DISABLED
                                  : small ? WINDOW_GATE_SMALL_LLC
                                          : WINDOW_GATE_CALM,
                                  homes[i].llc, &homes[i]);

                if (!c || c->acted || !c->window.mask || c->window_llc != dom->id)
                        continue;
                if (!small) {
                        r = keeps_consolidating(ctx, c, index, &homes[i]);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                continue;
                        if (c->window_calm_since_us == 0)
                                c->window_calm_since_us = ctx->now_us;
                        if (ctx->now_us < c->window_since_us + WINDOW_CALM_HOLD_US ||
                            ctx->now_us - c->window_calm_since_us < WINDOW_CALM_PERSIST_US)
                                continue;
                }
                if (small)
                        snprintf(reason, sizeof(reason), "%s weight %u < MinLLCCPUs %u", dom->label,
                                 llc->weight, st->min_llc_cpus);
                else
                        snprintf(reason, sizeof(reason),
                                 "%s calm: nr_idle_scan %u >= %.0f%% of weight %u (util %.0f)", dom->label,
                                 llc->nr_idle_scan, st->window_widen_scan_percent, llc->weight, llc->util);
                r = policy_cgroup_restore(ctx, c, true, ACTION_POLICY_WINDOW, reason);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The cgroups that keep their window in the LLC or may get one, held ones
 * first, then by demand (cand_cmp()), and how many. */
static int collect_cands(PolicyCtx *ctx, const WindowDomain *dom, const Home *homes, Cand *cands,
                         size_t *ret_n) {
        int index = (int) (dom - ctx->domains.d);
        size_t n = 0;

        for (size_t i = 0; i < ctx->snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                if (!c)
                        continue;
                /* A cgroup neither at home here nor windowed here can be no
                 * candidate and no gate of it is noted here: its gates are
                 * not evaluated (on a 64-LLC host they were 13% of the tick,
                 * every cgroup judged in every LLC), nor is its consolidation
                 * look reset by a domain it does not live in. */
                if (homes[i].llc != index && !(c->window.mask && c->window_llc == dom->id))
                        continue;
                int r = window_gate(ctx, c, dom, &homes[i]);
                if (r < 0)
                        return r;
                WindowGate g = (WindowGate) r;
                /* Judged where it lives (its home LLC, or where its window is). */
                if (g != WINDOW_GATE_UNSEEN && (homes[i].llc == index || g == WINDOW_GATE_HELD))
                        note_gate(ctx, c, g, index, &homes[i]);
                if (g != WINDOW_GATE_HELD && g != WINDOW_GATE_CANDIDATE && g != WINDOW_GATE_CONSOLIDATE)
                        continue;
                if (!hwloc_bitmap_intersects(policy_cgroup_below_window(c), dom->online)) {
                        note_gate(ctx, c, WINDOW_GATE_NOT_HERE, index, &homes[i]);
                        continue;
                }
                bool held = g == WINDOW_GATE_HELD;
                cands[n++] = (Cand){
                        .c = c,
                        .index = i,
                        .demand = homes[i].demand,
                        .held = held,
                        .consolidate = g == WINDOW_GATE_CONSOLIDATE || (held && c->window_consolidated),
                };
        }
        if (n > 0)
                qsort(cands, n, sizeof(Cand), cand_cmp);
        *ret_n = n;
        return 0;
}

static void llc_work_done(LlcWork *w) {
        free(w->slots);
        free(w->order);
        free(w->chosen);
        hwloc_bitmap_free(w->mask);
        hwloc_bitmap_free(w->scratch);
        hwloc_bitmap_free(w->talkers);
        *w = (LlcWork){};
}

/* One slot per core of the LLC. */
static int llc_work_init(const PolicyCtx *ctx, const WindowDomain *dom, LlcWork *ret) {
        _cleanup_(llc_work_done) LlcWork w = {.dom = dom, .llc = &dom->view};
        int index = (int) (dom - ctx->domains.d);

        for (size_t k = 0; k < ctx->n_cores; k++)
                if (policy_core_domain(ctx, (int) k) == index)
                        w.n_slots++;
        w.slots = calloc(MAX(w.n_slots, (size_t) 1), sizeof(Slot));
        w.order = calloc(MAX(w.n_slots, (size_t) 1), sizeof(Slot *));
        w.chosen = calloc(MAX(w.n_slots, (size_t) 1), sizeof(Slot *));
        w.mask = hwloc_bitmap_alloc();
        w.scratch = hwloc_bitmap_alloc();
        w.talkers = hwloc_bitmap_alloc();
        if (!w.slots || !w.order || !w.chosen || !w.mask || !w.scratch || !w.talkers)
                return -ENOMEM;
        w.n_slots = 0;
        for (size_t k = 0; k < ctx->n_cores; k++)
                if (policy_core_domain(ctx, (int) k) == index)
                        w.slots[w.n_slots++] = (Slot){
                                .core = (int) k,
                                .cpus = ctx->core_cpus[k],
                                .n_cpus = MAX((unsigned) hwloc_bitmap_weight(ctx->core_cpus[k]), 1u),
                                .background = ctx->core_util[k],
                        };
        *ret = w;
        w = (LlcWork){};
        return 0;
}

/* The windowed cgroups' own threads are what the window places; the rest of
 * each core's util is the background they would share it with. */
static void set_background(const PolicyCtx *ctx, LlcWork *w, const Cand *cands, size_t n_cands) {
        for (size_t j = 0; j < n_cands; j++) {
                const CgroupSample *cg = cands[j].c->sample;
                for (size_t k = 0; k < cg->n_threads; k++) {
                        int core = thread_core(ctx, &cg->threads[k]);
                        for (size_t s = 0; core >= 0 && s < w->n_slots; s++)
                                if (w->slots[s].core == core)
                                        w->slots[s].background -= MAX(cg->threads[k].util, 0.0);
                }
        }
        for (size_t s = 0; s < w->n_slots; s++)
                w->slots[s].background = MAX(w->slots[s].background, 0.0);
}

/* A group that went idle (its work done, its threads gone or asleep) lets
 * its CPUs go at once, so that the groups that are busy now get them: a
 * held window keeps its cores (placement takes them first), so an idle
 * group's window would keep them and the next phase's windows would be
 * placed around it. No back-off: nothing was wrong with the window. */
static int release_idle(PolicyCtx *ctx, const WindowDomain *dom, const Home *homes) {
        int r;

        for (size_t i = 0; i < ctx->snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                char reason[256];

                if (!c || c->acted || !c->window.mask || c->window_llc != dom->id ||
                    homes[i].demand * 100 >= WINDOW_IDLE_DEMAND_PERCENT * SCHED_CAPACITY_SCALE)
                        continue;
                snprintf(reason, sizeof(reason), "%s: idle, demand %.0f < %.0f (%.1f%% of a CPU)",
                         dom->label, homes[i].demand,
                         WINDOW_IDLE_DEMAND_PERCENT * SCHED_CAPACITY_SCALE / 100,
                         WINDOW_IDLE_DEMAND_PERCENT);
                r = policy_cgroup_restore(ctx, c, true, ACTION_POLICY_WINDOW, reason);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A consolidation window holds while its threads still hand work (at half
 * the wakeups and twice the run that opened it), overloaded or not, and
 * goes back without a back-off when they stop: nothing was wrong with it. */
static int release_consolidated(PolicyCtx *ctx, const WindowDomain *dom, const Home *homes) {
        int index = (int) (dom - ctx->domains.d);
        int r;

        for (size_t i = 0; i < ctx->snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                char reason[320];

                if (!c || c->acted || !c->window.mask || c->window_llc != dom->id || !c->window_consolidated)
                        continue;
                r = policy_consolidate_look(ctx, c, index, homes[i].demand, true, &c->consolidate);
                if (r < 0)
                        return r;
                if (c->consolidate.gate == CONSOLIDATE_HELD)
                        continue;
                snprintf(reason, sizeof(reason),
                         "%s: consolidation ends: %s (%.0f wakeups/s, %.0f us a run)", dom->label,
                         c->consolidate.gate == CONSOLIDATE_OFF ? "Consolidate=no"
                                                                : "its threads no longer hand work",
                         c->consolidate.wakeups, c->consolidate.run_us);
                r = policy_cgroup_restore(ctx, c, true, ACTION_POLICY_WINDOW, reason);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int window_domain(PolicyCtx *ctx, const WindowDomain *dom, const Home *homes, Cand *cands) {
        const Settings *st = ctx->settings;
        const LlcSample *llc = &dom->view;
        bool calm = llc->nr_idle_scan * 100.0 >= llc->weight * st->window_widen_scan_percent;
        bool small = llc->weight < st->min_llc_cpus;
        _cleanup_(llc_work_done) LlcWork w = {};
        size_t n_cands;
        int r;

        if (small)
                return widen_all(ctx, dom, small, homes);
        if (!calm)
                for (size_t i = 0; i < ctx->snap->n_cgroups; i++)
                        if (ctx->by_sample[i] && ctx->by_sample[i]->window_llc == dom->id)
                                ctx->by_sample[i]->window_calm_since_us = 0;
        r = calm ? widen_all(ctx, dom, small, homes) : 0;
        if (r >= 0)
                r = release_consolidated(ctx, dom, homes);
        if (r >= 0)
                r = release_idle(ctx, dom, homes);
        if (r < 0)
                return r;

        r = collect_cands(ctx, dom, homes, cands, &n_cands);
        if (r < 0 || n_cands == 0)
                return r;
        r = llc_work_init(ctx, dom, &w);
        if (r < 0)
                return r;
        set_background(ctx, &w, cands, n_cands);

        for (size_t j = 0; j < n_cands; j++) {
                r = place(ctx, &w, &cands[j]);
                if (r < 0)
                        return r;
        }
        return 0;
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
        for (size_t i = 0; i < snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                if (!c)
                        continue;
                c->consolidate = (ConsolidateLook){};
                note_gate(ctx, c, homes[i].llc < 0 ? WINDOW_GATE_NO_DEMAND : WINDOW_GATE_UNSEEN,
                          homes[i].llc, &homes[i]);
        }

        for (size_t d = 0; d < ctx->domains.n; d++) {
                if (ctx->domains.d[d].view.weight == 0)
                        continue;
                r = window_domain(ctx, &ctx->domains.d[d], homes, cands);
                if (r < 0)
                        return r;
        }
        return 0;
}
