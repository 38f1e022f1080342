/* SPDX-License-Identifier: MIT */
#include "policy-internal.h"

/* Contention-aware balancing (DESIGN.md 1.3). util hides contention, boosted =
 * min(max(util, runnable), capacity) does not. When the most boosted LLC
 * exceeds the least boosted one that is not overloaded by more than
 * ImbalancePercent, and that one has spare capacity, the most waiting
 * opted-in threads of the busiest LLC move to it; a whole cgroup moves
 * instead when all of it fits. Spare capacity is what keeps the target below
 * 1024 * 100 / ImbalancePercent mean boosted per CPU (875 at 117, where the
 * kernel's SIS_UTIL scan reaches zero): moves never push the target into the
 * state they flee. Each move's demand (util + wait of the threads, at most
 * 1024 each: what they will run once they stop waiting) is taken from the
 * spare. */

typedef struct Candidate {
        CgroupState *c;
        ThreadState *t; /* NULL: the whole cgroup */
        size_t ci, ti;  /* snapshot order, for ties */
        double wait, demand;
        CpuSet mask;
} Candidate;

static int candidate_cmp(const void *a, const void *b) {
        const Candidate *x = a, *y = b;

        if (x->wait != y->wait)
                return x->wait > y->wait ? -1 : 1;
        if (x->ci != y->ci)
                return x->ci < y->ci ? -1 : 1;
        /* A cgroup (t NULL) sorts before its own threads. */
        if (!x->t != !y->t)
                return !x->t ? -1 : 1;
        return x->ti < y->ti ? -1 : x->ti > y->ti;
}

static int thread_llc(const Snapshot *snap, const ThreadSample *ts) {
        const CpuSample *cpu;

        if (ts->cpu < 0)
                return -1;
        cpu = snapshot_cpu(snap, (unsigned) ts->cpu);
        return cpu && cpu->online ? cpu->llc : -1;
}

static double thread_demand(const ThreadSample *ts) {
        return MIN(MAX(ts->util, 0.0) + MAX(ts->wait, 0.0), (double) SCHED_CAPACITY_SCALE);
}

/* Below this, the move would be given back as idle (policy_balance_release()). */
static bool too_light_to_move(double demand) {
        return demand * 100 < BALANCE_MIN_MOVE_DEMAND_PERCENT * SCHED_CAPACITY_SCALE;
}

static bool left_recently(const PolicyCtx *ctx, const Departure *d, int target) {
        return policy_departure_blocks(d, ctx->settings, ctx->now_us, target);
}

typedef struct Candidates {
        Candidate *v;
        size_t n, size;
} Candidates;

static void candidates_done(Candidates *cs) {
        for (size_t i = 0; i < cs->n; i++)
                hwloc_bitmap_free(cs->v[i].mask);
        free(cs->v);
}

static int candidates_add(Candidates *cs, const Candidate *c) {
        if (cs->n == cs->size) {
                size_t size = MAX(cs->size * 2, (size_t) 16);
                Candidate *v = reallocarray(cs->v, size, sizeof(Candidate));
                if (!v)
                        return -ENOMEM;
                cs->v = v;
                cs->size = size;
        }
        cs->v[cs->n++] = *c;
        return 0;
}

/* The whole cgroup, if it may and can move: every thread resident and able to
 * run in the target, and not back to the LLC it just left. */
static int whole_cgroup(PolicyCtx *ctx, CgroupState *c, const LlcSample *target, CpuSet *ret_mask,
                        double *ret_demand) {
        const CgroupSample *cg = c->sample;
        _cleanup_cpuset_ CpuSet mask = hwloc_bitmap_alloc();
        double demand = 0;

        if (!mask)
                return -ENOMEM;
        if (left_recently(ctx, &c->left, policy_llc_index(ctx, target)) ||
            !policy_cgroup_threads_resident(ctx, c))
                return 0;

        hwloc_bitmap_and(mask, policy_cgroup_base(c), cg->allowed);
        hwloc_bitmap_and(mask, mask, ctx->llc_cpus[policy_llc_index(ctx, target)]);
        if (hwloc_bitmap_iszero(mask) || hwloc_bitmap_isequal(mask, policy_cgroup_effective(c)))
                return 0;

        for (size_t k = 0; k < cg->n_threads; k++) {
                ThreadState *t = c->by_sample[k];
                if (!t)
                        continue;
                if (t->acted || !hwloc_bitmap_intersects(policy_thread_base(t), mask) ||
                    left_recently(ctx, &t->left, policy_llc_index(ctx, target)))
                        return 0;
                if (thread_llc(ctx->snap, t->sample) != policy_llc_index(ctx, target))
                        demand += thread_demand(t->sample);
        }

        *ret_mask = TAKE_PTR(mask);
        *ret_demand = demand;
        return 1;
}

static int collect(PolicyCtx *ctx, const LlcSample *busiest, const LlcSample *target, Candidates *out) {
        const Settings *st = ctx->settings;
        int r;

        for (size_t i = 0; i < ctx->snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                if (!c || c->acted || !policy_enabled(st, c->sample->policy, ACTION_POLICY_BALANCE) ||
                    policy_backed_off(c, ACTION_POLICY_BALANCE, ctx->now_us))
                        continue;

                const CgroupSample *cg = c->sample;
                double wait = 0;
                for (size_t k = 0; k < cg->n_threads; k++)
                        if (c->by_sample[k] &&
                            thread_llc(ctx->snap, &cg->threads[k]) == policy_llc_index(ctx, busiest))
                                wait += MAX(cg->threads[k].wait, 0.0);
                if (wait < MAX(st->balance_min_wait, 0.0) || wait <= 0)
                        continue;

                CpuSet mask = NULL;
                double demand = 0;
                r = whole_cgroup(ctx, c, target, &mask, &demand);
                if (r < 0)
                        return r;
                if (r > 0 && too_light_to_move(demand)) {
                        hwloc_bitmap_free(mask);
                        mask = NULL;
                } else if (r > 0) {
                        r = candidates_add(
                                out,
                                &(Candidate){.c = c, .ci = i, .wait = wait, .demand = demand, .mask = mask});
                        if (r < 0) {
                                hwloc_bitmap_free(mask);
                                return r;
                        }
                }

                /* Its threads too: when the whole cgroup does not fit in the
                 * spare capacity, the most waiting of them may. */
                for (size_t k = 0; k < cg->n_threads; k++) {
                        ThreadState *t = c->by_sample[k];
                        const ThreadSample *ts = &cg->threads[k];

                        if (!t || t->acted || thread_llc(ctx->snap, ts) != policy_llc_index(ctx, busiest) ||
                            ts->wait < MAX(st->balance_min_wait, 0.0) || ts->wait <= 0 ||
                            too_light_to_move(thread_demand(ts)) || !policy_thread_resident(ctx, t) ||
                            left_recently(ctx, &t->left, policy_llc_index(ctx, target)))
                                continue;

                        mask = hwloc_bitmap_alloc();
                        if (!mask)
                                return -ENOMEM;
                        hwloc_bitmap_and(mask, ctx->llc_cpus[policy_llc_index(ctx, target)],
                                         policy_thread_base(t));
                        hwloc_bitmap_and(mask, mask, policy_cgroup_effective(c));
                        hwloc_bitmap_and(mask, mask, cg->allowed);
                        hwloc_bitmap_and(mask, mask, ctx->online);
                        if (hwloc_bitmap_iszero(mask) ||
                            hwloc_bitmap_isequal(mask, policy_thread_effective(t))) {
                                hwloc_bitmap_free(mask);
                                continue;
                        }
                        r = candidates_add(out, &(Candidate){.c = c,
                                                             .t = t,
                                                             .ci = i,
                                                             .ti = k,
                                                             .wait = ts->wait,
                                                             .demand = thread_demand(ts),
                                                             .mask = mask});
                        if (r < 0) {
                                hwloc_bitmap_free(mask);
                                return r;
                        }
                }
        }
        return 0;
}

/* The busiest LLC and the least boosted one that is not overloaded, when the
 * first exceeds the second by more than ImbalancePercent: 1 and both set, 0
 * when there is nothing to balance. */
static int pick_llcs(const PolicyCtx *ctx, const LlcSample **ret_busiest, const LlcSample **ret_target) {
        const Snapshot *snap = ctx->snap;
        const LlcSample *busiest = NULL, *target = NULL;
        bool all_overloaded = true;

        for (size_t i = 0; i < snap->n_llcs; i++) {
                const LlcSample *l = &snap->llcs[i];
                if (l->weight == 0)
                        continue;
                if (!busiest || l->boosted > busiest->boosted)
                        busiest = l;
                if (!policy_llc_overloaded(l)) {
                        all_overloaded = false;
                        if (!target || l->boosted < target->boosted)
                                target = l;
                }
        }
        /* Nothing to gain when every LLC is overloaded (the kernel patch's own
         * finding): there is no spare capacity to move to. */
        if (all_overloaded || !busiest || !target || busiest == target)
                return 0;
        if (!(busiest->boosted * 100 > target->boosted * ctx->settings->imbalance_percent))
                return 0;

        *ret_busiest = busiest;
        *ret_target = target;
        return 1;
}

/* A whole cgroup that moved takes its threads along: each of them left the
 * LLC it ran in. */
static void record_cgroup_departures(PolicyCtx *ctx, CgroupState *c, int from, int to) {
        policy_departure_record(&c->left, ctx->settings, ctx->now_us, from, to);
        for (size_t k = 0; k < c->sample->n_threads; k++) {
                ThreadState *t = c->by_sample[k];
                int was = t ? thread_llc(ctx->snap, t->sample) : -1;
                if (was >= 0 && was != to)
                        policy_departure_record(&t->left, ctx->settings, ctx->now_us, was, to);
        }
}

/* Moves one candidate; 1 if moved, 0 if the move was dropped. */
static int move_one(PolicyCtx *ctx, const Candidate *m, const LlcSample *busiest, const LlcSample *target,
                    double spare, double limit) {
        const Settings *st = ctx->settings;
        int from = policy_llc_index(ctx, busiest), to = policy_llc_index(ctx, target);
        char reason[512];
        int r;

        snprintf(reason, sizeof(reason),
                 "llc %u boosted %.0f > llc %u boosted %.0f x %u%%; llc %u spare %.0f (up to %.0f "
                 "per cpu); "
                 "%s wait %.0f, demand %.0f",
                 busiest->id, busiest->boosted, target->id, target->boosted, st->imbalance_percent,
                 target->id, spare, limit, m->t ? "thread" : "cgroup", m->wait, m->demand);

        if (m->t) {
                r = policy_thread_set_layer(ctx, m->c, m->t, ACTION_POLICY_BALANCE, m->mask, reason);
                if (r > 0)
                        policy_departure_record(&m->t->left, st, ctx->now_us, from, to);
                return r;
        }
        /* The cgroup's threads that had moved on their own are superseded;
         * policy_fixup() restores those left outside. */
        r = policy_cgroup_set_layer(ctx, m->c, ACTION_POLICY_BALANCE, m->mask, reason);
        if (r > 0)
                record_cgroup_departures(ctx, m->c, from, to);
        return r;
}

/* Whether a home held on a subject of this demand has been idle long
 * enough to go; keeps *since up to date. */
static bool idle_long_enough(const PolicyCtx *ctx, double demand, uint64_t *since) {
        if (demand * 100 >= WINDOW_IDLE_DEMAND_PERCENT * SCHED_CAPACITY_SCALE) {
                *since = 0;
                return false;
        }
        if (*since == 0 || *since > ctx->now_us)
                *since = ctx->now_us;
        return ctx->now_us - *since >= BALANCE_IDLE_RELEASE_US;
}

static void idle_reason(double demand, char *buf, size_t size) {
        snprintf(buf, size, "idle: demand %.0f < %.0f (%.1f%% of a CPU) for %.1f s", demand,
                 WINDOW_IDLE_DEMAND_PERCENT * SCHED_CAPACITY_SCALE / 100, WINDOW_IDLE_DEMAND_PERCENT,
                 BALANCE_IDLE_RELEASE_US / 1e6);
}

int policy_balance_release(PolicyCtx *ctx) {
        char reason[160];
        int r;

        for (size_t i = 0; i < ctx->snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                if (!c)
                        continue;
                const CgroupSample *cg = c->sample;
                double sum = 0;
                for (size_t k = 0; k < cg->n_threads; k++)
                        sum += thread_demand(&cg->threads[k]);

                /* A cgroup read only in part (quiet) has no Σ to judge: its
                 * home is never held there anyway (a held cgroup is read
                 * whole). */
                if (!c->home.mask || c->acted || cg->threads_partial)
                        c->home_idle_since_us = 0;
                else if (idle_long_enough(ctx, sum, &c->home_idle_since_us)) {
                        idle_reason(sum, reason, sizeof(reason));
                        c->home_idle_since_us = 0;
                        r = policy_cgroup_restore(ctx, c, false, ACTION_POLICY_BALANCE, reason);
                        if (r < 0)
                                return r;
                }
                for (size_t k = 0; k < cg->n_threads; k++) {
                        ThreadState *t = c->by_sample[k];
                        if (!t)
                                continue;
                        if (!t->home.mask || t->acted) {
                                t->home_idle_since_us = 0;
                                continue;
                        }
                        double d = thread_demand(&cg->threads[k]);
                        if (!idle_long_enough(ctx, d, &t->home_idle_since_us))
                                continue;
                        idle_reason(d, reason, sizeof(reason));
                        t->home_idle_since_us = 0;
                        /* The pin on it goes along (as validate_thread()). */
                        r = policy_thread_restore(ctx, c, t, false, ACTION_POLICY_BALANCE, reason);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int policy_balance(PolicyCtx *ctx) {
        const Settings *st = ctx->settings;
        const LlcSample *busiest, *target;
        _cleanup_(candidates_done) Candidates cands = {};
        unsigned moves = 0;
        int r;

        if (st->max_moves_per_tick == 0 || st->imbalance_percent == 0)
                return 0;
        if (pick_llcs(ctx, &busiest, &target) == 0)
                return 0;

        double limit = (double) SCHED_CAPACITY_SCALE * 100 / st->imbalance_percent;
        double spare = (double) target->weight * (limit - target->boosted);
        if (spare <= 0)
                return 0;

        r = collect(ctx, busiest, target, &cands);
        if (r < 0)
                return r;
        if (cands.n > 1)
                qsort(cands.v, cands.n, sizeof(Candidate), candidate_cmp);

        for (size_t i = 0; i < cands.n && moves < st->max_moves_per_tick; i++) {
                const Candidate *m = &cands.v[i];

                if (m->demand > spare || m->c->acted || (m->t && m->t->acted))
                        continue;
                /* A whole cgroup that moved takes its threads along. */
                if (m->t && m->c->acted)
                        continue;

                r = move_one(ctx, m, busiest, target, spare, limit);
                if (r < 0)
                        return r;
                if (r > 0) {
                        moves++;
                        spare -= m->demand;
                }
        }
        return 0;
}
