/* SPDX-License-Identifier: MIT */
/* What every policy shares: which masks a subject has, and setting and
 * dropping layers, each action through the invariant check. */

#include <assert.h>
#include <stdarg.h>

#include "policy-internal.h"

hwloc_const_bitmap_t policy_cgroup_base(const CgroupState *c) {
        return c->orig ?: c->sample->cpus;
}

hwloc_const_bitmap_t policy_cgroup_below_window(const CgroupState *c) {
        return c->home.mask ?: policy_cgroup_base(c);
}

hwloc_const_bitmap_t policy_cgroup_effective(const CgroupState *c) {
        return c->window.mask ?: policy_cgroup_below_window(c);
}

hwloc_const_bitmap_t policy_thread_base(const ThreadState *t) {
        return t->orig ?: t->own ?: t->sample->allowed;
}

hwloc_const_bitmap_t policy_thread_below_pin(const ThreadState *t) {
        return t->home.mask ?: policy_thread_base(t);
}

hwloc_const_bitmap_t policy_thread_effective(const ThreadState *t) {
        return t->pin.mask ?: policy_thread_below_pin(t);
}

bool policy_cgroup_holds_thread_homes(const CgroupState *c) {
        for (size_t i = 0; i < c->n_threads; i++)
                if (c->threads[i].home.mask)
                        return true;
        return false;
}

double policy_mask_util(const PolicyCtx *ctx, hwloc_const_bitmap_t mask) {
        double sum = 0;
        int cpu;

        hwloc_bitmap_foreach_begin(cpu, mask) {
                const CpuSample *s = snapshot_cpu(ctx->snap, (unsigned) cpu);
                if (s && s->online)
                        sum += s->util;
        }
        hwloc_bitmap_foreach_end();
        return sum;
}

int policy_restore_mask(const Snapshot *snap, hwloc_const_bitmap_t online, const CgroupSample *cg,
                        hwloc_const_bitmap_t target, CpuSet *ret) {
        _cleanup_cpuset_ CpuSet m = hwloc_bitmap_alloc();

        if (!m)
                return -ENOMEM;
        hwloc_bitmap_and(m, target, cg->allowed);
        hwloc_bitmap_and(m, m, online);
        if (hwloc_bitmap_iszero(m)) {
                hwloc_bitmap_and(m, cg->allowed, online);
                if (hwloc_bitmap_iszero(m))
                        return -ENOENT;
        }
        *ret = TAKE_PTR(m);
        return 0;
}

int policy_emit(PolicyCtx *ctx, ActionKind kind, ActionPolicy policy, CgroupState *c, ThreadState *t,
                hwloc_const_bitmap_t cpus, const char *fmt, ...) {
        _cleanup_(freep) char *reason = NULL, *why = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&reason, fmt, ap);
        va_end(ap);
        if (r < 0) {
                reason = NULL;
                return -ENOMEM;
        }

        Action a = {
                .kind = kind,
                .policy = policy,
                .cgroup = c->path,
                .tid = t ? t->tid : 0,
                .starttime = t ? t->starttime : 0,
                .cpus = (CpuSet) cpus,
                .reason = reason,
        };
        r = policy_check_action(ctx->snap, ctx->settings, ctx->state, ctx->plan, &a, ctx->online,
                                ctx->now_us, &why);
        if (r < 0)
                return r;
        if (r > 0) {
                /* Counted, so that a drop shows in status and metrics and a
                 * test notices it: a log line alone goes unseen. */
                ctx->state->counters.dropped++;
                c->counters.dropped++;
                log_warning("policy: dropping %s %s for %s%s%.0d: %s (it was: %s)",
                            action_policy_to_string(policy), action_kind_to_string(kind), c->path,
                            t ? "/" : "", t ? (int) t->tid : 0, why, reason);
                return 0;
        }

        r = plan_add(ctx->plan, kind, policy, a.cgroup, a.tid, a.starttime, cpus, reason);
        if (r < 0)
                return r;

        if (kind != ACTION_RESTORE) {
                ctx->state->counters.applied++;
                c->counters.applied++;
        } else if (policy != ACTION_POLICY_GUARD) {
                ctx->state->counters.restored++;
                c->counters.restored++;
        }
        if (t)
                t->acted = true;
        else
                c->acted = true;
        return 1;
}

void policy_experiment_open(PolicyCtx *ctx, Experiment *e, const CgroupState *c, const ThreadState *t) {
        uint64_t window_us = ctx->settings->guard_window_ms * USEC_PER_MSEC;

        /* A change on top of a change still being judged (a window that grows)
         * extends the experiment and keeps the figures from before the first
         * one: the guard judges the policy's whole effect. */
        if (e->active) {
                e->end_us = ctx->now_us + window_us;
                return;
        }
        /* GuardWindowMs=0 turns the guard off. */
        if (window_us == 0) {
                *e = (Experiment){};
                return;
        }

        double wait = 0, util = 0;
        bool from_tick = false;
        if (t) {
                wait = t->sample->wait;
                util = t->sample->util;
        } else if (c->recent_primed && (e != &c->window.exp || policy_cgroup_settled(ctx, c))) {
                wait = c->recent_wait;
                util = c->recent_util;
        } else {
                /* A window on load that is changing (a phase starting): the
                 * means would mix in the load before it; this tick, still
                 * without the window, is the cgroup as it is now. (A balance
                 * move waits for settled load: it is judged on the means.) */
                for (size_t i = 0; i < c->sample->n_threads; i++) {
                        wait += c->sample->threads[i].wait;
                        util += c->sample->threads[i].util;
                }
                from_tick = c->recent_primed;
        }

        *e = (Experiment){
                .active = true,
                .start_us = ctx->now_us,
                .end_us = ctx->now_us + window_us,
                .before_wait = wait,
                .before_util = util,
                .before_pressure = c->sample->pressure_some_avg10,
                .from_tick = from_tick,
                .n_threads = t ? 1 : (unsigned) MAX(c->sample->n_threads, (size_t) 1),
        };
}

static void mark_threads_moved(PolicyCtx *ctx, CgroupState *c) {
        for (size_t i = 0; i < c->sample->n_threads; i++) {
                ThreadState *t = c->by_sample[i];
                if (!t)
                        continue;
                t->moved = true;
                t->moved_us = ctx->now_us;
        }
}

static bool superset_of_online(const PolicyCtx *ctx, hwloc_const_bitmap_t old, hwloc_const_bitmap_t new) {
        _cleanup_cpuset_ CpuSet o = hwloc_bitmap_alloc();

        if (!o)
                return false; /* the conservative answer: treat it as a move */
        hwloc_bitmap_and(o, old, ctx->online);
        return hwloc_bitmap_isincluded(o, new);
}

int policy_cgroup_set_layer(PolicyCtx *ctx, CgroupState *c, ActionPolicy policy, hwloc_const_bitmap_t cpus,
                            const char *reason) {
        _cleanup_cpuset_ CpuSet mask = NULL, orig = NULL;
        bool superset;
        int r;

        assert(policy == ACTION_POLICY_WINDOW || policy == ACTION_POLICY_BALANCE);

        /* Allocate first, so that an emitted action is always recorded. */
        r = policy_dup_mask(cpus, &mask);
        if (r < 0)
                return r;
        if (!c->orig) {
                r = policy_dup_mask(c->sample->cpus, &orig);
                if (r < 0)
                        return r;
        }
        superset = superset_of_online(ctx, policy_cgroup_effective(c), cpus);

        r = policy_emit(ctx, ACTION_SET_CGROUP_CPUS, policy, c, NULL, cpus, "%s", reason);
        if (r <= 0)
                return r;

        if (!c->orig)
                c->orig = TAKE_PTR(orig);
        Layer *l = policy == ACTION_POLICY_WINDOW ? &c->window : &c->home;
        if (policy == ACTION_POLICY_WINDOW && !l->mask) {
                c->window_since_us = ctx->now_us;
                c->window_long_since_us = 0;
                c->window_calm_since_us = 0;
        }
        if (policy == ACTION_POLICY_BALANCE) {
                /* A whole-cgroup move replaces the window: it belonged to the LLC left. */
                policy_layer_done(&c->window);
                c->window_llc = -1;
                c->window_consolidated = false;
        }
        hwloc_bitmap_free(l->mask);
        l->mask = TAKE_PTR(mask);
        policy_experiment_open(ctx, &l->exp, c, NULL);
        if (!superset)
                mark_threads_moved(ctx, c);
        return 1;
}

int policy_thread_set_layer(PolicyCtx *ctx, CgroupState *c, ThreadState *t, ActionPolicy policy,
                            hwloc_const_bitmap_t cpus, const char *reason) {
        _cleanup_cpuset_ CpuSet mask = NULL, orig = NULL;
        int r;

        assert(policy == ACTION_POLICY_STICKY || policy == ACTION_POLICY_BALANCE);

        r = policy_dup_mask(cpus, &mask);
        if (r < 0)
                return r;
        if (!t->orig) {
                r = policy_dup_mask(policy_thread_base(t), &orig);
                if (r < 0)
                        return r;
        }

        r = policy_emit(ctx, ACTION_SET_THREAD_CPUS, policy, c, t, cpus, "%s", reason);
        if (r <= 0)
                return r;

        if (!t->orig)
                t->orig = TAKE_PTR(orig);
        Layer *l = policy == ACTION_POLICY_STICKY ? &t->pin : &t->home;
        if (policy == ACTION_POLICY_BALANCE)
                policy_layer_done(&t->pin); /* the pin was to a core of the LLC left */
        hwloc_bitmap_free(l->mask);
        l->mask = TAKE_PTR(mask);
        policy_experiment_open(ctx, &l->exp, c, t);
        t->moved = true;
        t->moved_us = ctx->now_us;
        return 1;
}

int policy_cgroup_restore(PolicyCtx *ctx, CgroupState *c, bool keep_home, ActionPolicy policy,
                          const char *reason) {
        _cleanup_cpuset_ CpuSet mask = NULL;
        int r;

        keep_home = keep_home && c->home.mask;
        r = policy_restore_mask(ctx->snap, ctx->online, c->sample,
                                keep_home ? c->home.mask : policy_cgroup_base(c), &mask);
        if (r == -ENOENT) {
                /* Nothing of the cgroup is online: no mask to restore, and the
                 * kernel has already moved its threads. Forget. */
                log_debug("policy: %s has no online CPU left, forgetting its layers", c->path);
                r = 0;
        } else if (r < 0)
                return r;
        else {
                r = policy_emit(ctx, ACTION_RESTORE, policy, c, NULL, mask, "%s", reason);
                if (r <= 0)
                        return r;
        }

        policy_layer_done(&c->window);
        c->window_llc = -1;
        c->window_consolidated = false;
        if (!keep_home)
                policy_layer_done(&c->home);
        if (!policy_cgroup_holds(c)) {
                hwloc_bitmap_free(c->orig);
                c->orig = NULL;
        }
        return r;
}

int policy_thread_restore(PolicyCtx *ctx, CgroupState *c, ThreadState *t, bool keep_home,
                          ActionPolicy policy, const char *reason) {
        _cleanup_cpuset_ CpuSet mask = NULL;
        int r;

        keep_home = keep_home && t->home.mask;
        r = policy_restore_mask(ctx->snap, ctx->online, c->sample,
                                keep_home ? t->home.mask : policy_thread_base(t), &mask);
        if (r == -ENOENT) {
                log_debug("policy: %s/%d has no online CPU left, forgetting its layers", c->path,
                          (int) t->tid);
                r = 0;
        } else if (r < 0)
                return r;
        else {
                r = policy_emit(ctx, ACTION_RESTORE, policy, c, t, mask, "%s", reason);
                if (r <= 0)
                        return r;
        }

        policy_layer_done(&t->pin);
        if (!keep_home)
                policy_layer_done(&t->home);
        if (!policy_thread_holds(t)) {
                hwloc_bitmap_free(t->orig);
                t->orig = NULL;
        }
        return r;
}
