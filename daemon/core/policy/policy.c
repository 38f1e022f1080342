/* SPDX-License-Identifier: MIT */
/* One tick: the order of the policies, mode off, and the restores that keep
 * the held layers valid. */

#include "policy-internal.h"

static int build_cores(PolicyCtx *ctx) {
        const Snapshot *snap = ctx->snap;
        size_t n = 0;

        for (size_t i = 0; i < snap->n_cpus; i++)
                if (snap->cpus[i].core >= 0)
                        n = MAX(n, (size_t) snap->cpus[i].core + 1);

        ctx->n_cores = n;
        ctx->core_cpus = calloc(MAX(n, (size_t) 1), sizeof(CpuSet));
        ctx->core_util = calloc(MAX(n, (size_t) 1), sizeof(double));
        ctx->core_llc = calloc(MAX(n, (size_t) 1), sizeof(int));
        if (!ctx->core_cpus || !ctx->core_util || !ctx->core_llc)
                return -ENOMEM;
        for (size_t k = 0; k < n; k++) {
                ctx->core_cpus[k] = hwloc_bitmap_alloc();
                if (!ctx->core_cpus[k])
                        return -ENOMEM;
                ctx->core_llc[k] = -1;
        }
        ctx->llc_cpus = calloc(MAX(snap->n_llcs, (size_t) 1), sizeof(CpuSet));
        if (!ctx->llc_cpus)
                return -ENOMEM;
        for (size_t l = 0; l < snap->n_llcs; l++) {
                ctx->llc_cpus[l] = hwloc_bitmap_alloc();
                if (!ctx->llc_cpus[l])
                        return -ENOMEM;
        }
        for (size_t i = 0; i < snap->n_cpus; i++) {
                const CpuSample *cpu = &snap->cpus[i];
                if (cpu->online && cpu->llc >= 0 && (size_t) cpu->llc < snap->n_llcs)
                        hwloc_bitmap_set(ctx->llc_cpus[cpu->llc], cpu->cpu);
                if (cpu->core < 0 || !cpu->online)
                        continue;
                hwloc_bitmap_set(ctx->core_cpus[cpu->core], cpu->cpu);
                ctx->core_util[cpu->core] += cpu->util;
                if (ctx->core_llc[cpu->core] < 0 && cpu->llc >= 0 && (size_t) cpu->llc < snap->n_llcs)
                        ctx->core_llc[cpu->core] = cpu->llc;
        }
        return policy_domains_build(snap, &ctx->domains);
}

static void ctx_done(PolicyCtx *ctx) {
        for (size_t i = 0; i < ctx->state->n_cgroups; i++) {
                CgroupState *c = &ctx->state->cgroups[i];
                free(c->by_sample);
                c->by_sample = NULL;
                c->sample = NULL;
                c->acted = false;
                for (size_t k = 0; k < c->n_threads; k++) {
                        c->threads[k].sample = NULL;
                        c->threads[k].acted = false;
                }
        }
        for (size_t k = 0; ctx->core_cpus && k < ctx->n_cores; k++)
                hwloc_bitmap_free(ctx->core_cpus[k]);
        free(ctx->core_cpus);
        for (size_t l = 0; ctx->llc_cpus && l < ctx->snap->n_llcs; l++)
                hwloc_bitmap_free(ctx->llc_cpus[l]);
        free(ctx->llc_cpus);
        free(ctx->core_util);
        free(ctx->core_llc);
        policy_domains_done(&ctx->domains);
        free(ctx->by_sample);
        hwloc_bitmap_free(ctx->online);
}

static ActionPolicy cgroup_top_policy(const CgroupState *c) {
        return c->window.mask ? ACTION_POLICY_WINDOW : ACTION_POLICY_BALANCE;
}

static ActionPolicy thread_top_policy(const ThreadState *t) {
        return t->pin.mask ? ACTION_POLICY_STICKY : ACTION_POLICY_BALANCE;
}

/* Mode off: every change steerd holds goes back, then the state is forgotten
 * (the counters stay: they are the daemon's history). */
static int policy_off(PolicyCtx *ctx) {
        int r;

        for (size_t i = 0; i < ctx->snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                if (!c)
                        continue;
                if (policy_cgroup_holds(c)) {
                        r = policy_cgroup_restore(ctx, c, false, cgroup_top_policy(c),
                                                  "mode off: back to the cgroup's CPUs before steerd");
                        if (r < 0)
                                return r;
                }
                for (size_t k = 0; k < c->sample->n_threads; k++) {
                        ThreadState *t = c->by_sample[k];
                        if (!t || !policy_thread_holds(t))
                                continue;
                        r = policy_thread_restore(ctx, c, t, false, thread_top_policy(t),
                                                  "mode off: back to the thread's mask before steerd");
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static bool within(const PolicyCtx *ctx, hwloc_const_bitmap_t mask, hwloc_const_bitmap_t allowed) {
        _cleanup_cpuset_ CpuSet a = hwloc_bitmap_alloc();

        if (!a)
                return false;
        hwloc_bitmap_and(a, allowed, ctx->online);
        return hwloc_bitmap_isincluded(mask, a);
}

/* Whether a layer must go back at once, and why (in reason): the mode or the
 * cgroup's policy no longer permits it, or its mask lost CPUs to hotplug or
 * to the cgroup's parent. */
static bool layer_invalid(const PolicyCtx *ctx, const CgroupSample *cg, ActionPolicy p,
                          hwloc_const_bitmap_t mask, char *reason, size_t size) {
        char buf[CPUSET_STRLEN];

        if (!policy_enabled(ctx->settings, cg->policy, p))
                snprintf(reason, size, "mode %s: %s is off for %s cgroups",
                         mode_to_string(ctx->settings->mode), action_policy_to_string(p),
                         cgroup_policy_to_string(cg->policy));
        else if (!within(ctx, mask, cg->allowed))
                snprintf(reason, size, "cpus %s no longer online and allowed",
                         cpuset_to_string(mask, buf, sizeof(buf)));
        else
                return false;
        return true;
}

static int validate_cgroup(PolicyCtx *ctx, CgroupState *c) {
        const CgroupSample *cg = c->sample;
        char reason[512];
        int r;

        if (c->home.mask && !c->acted &&
            layer_invalid(ctx, cg, ACTION_POLICY_BALANCE, c->home.mask, reason, sizeof(reason))) {
                r = policy_cgroup_restore(ctx, c, false, ACTION_POLICY_BALANCE, reason);
                if (r < 0)
                        return r;
        }
        if (c->window.mask && !c->acted) {
                const WindowDomain *d = policy_domain_by_id(&ctx->domains, c->window_llc);
                bool invalid =
                        layer_invalid(ctx, cg, ACTION_POLICY_WINDOW, c->window.mask, reason, sizeof(reason));
                if (!invalid &&
                    (!d || policy_mask_domain(ctx->snap, &ctx->domains, c->window.mask) != c->window_llc)) {
                        snprintf(reason, sizeof(reason), "the window's LLC changed");
                        invalid = true;
                }
                if (invalid) {
                        r = policy_cgroup_restore(ctx, c, true, ACTION_POLICY_WINDOW, reason);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int validate_thread(PolicyCtx *ctx, CgroupState *c, ThreadState *t) {
        const CgroupSample *cg = c->sample;
        char reason[512];

        /* A balance layer that goes back takes the pin on it along. */
        if (t->home.mask &&
            layer_invalid(ctx, cg, ACTION_POLICY_BALANCE, t->home.mask, reason, sizeof(reason)))
                return policy_thread_restore(ctx, c, t, false, ACTION_POLICY_BALANCE, reason);
        if (t->pin.mask && layer_invalid(ctx, cg, ACTION_POLICY_STICKY, t->pin.mask, reason, sizeof(reason)))
                return policy_thread_restore(ctx, c, t, true, ACTION_POLICY_STICKY, reason);
        return 0;
}

/* A layer that the mode or the cgroup's policy no longer permits, or whose
 * mask lost CPUs to hotplug or to the cgroup's parent, goes back at once. */
static int policy_validate(PolicyCtx *ctx) {
        int r;

        for (size_t i = 0; i < ctx->snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                if (!c)
                        continue;
                r = validate_cgroup(ctx, c);
                if (r < 0)
                        return r;
                for (size_t k = 0; k < c->sample->n_threads; k++) {
                        ThreadState *t = c->by_sample[k];
                        if (!t || t->acted)
                                continue;
                        r = validate_thread(ctx, c, t);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* After the cgroup-level decisions: a thread's own layer must lie within its
 * cgroup's CPUs, or the kernel would silently ignore or reject it. */
static int policy_fixup(PolicyCtx *ctx) {
        int r;

        for (size_t i = 0; i < ctx->snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                if (!c)
                        continue;
                hwloc_const_bitmap_t eff = policy_cgroup_effective(c);
                char buf[CPUSET_STRLEN], buf2[CPUSET_STRLEN], reason[600];

                for (size_t k = 0; k < c->sample->n_threads; k++) {
                        ThreadState *t = c->by_sample[k];
                        if (!t || t->acted || !policy_thread_holds(t) ||
                            hwloc_bitmap_isincluded(policy_thread_effective(t), eff))
                                continue;

                        bool keep_home =
                                t->pin.mask && t->home.mask && hwloc_bitmap_isincluded(t->home.mask, eff);
                        snprintf(reason, sizeof(reason), "cgroup cpus now %s; thread mask %s lies outside",
                                 cpuset_to_string(eff, buf, sizeof(buf)),
                                 cpuset_to_string(policy_thread_effective(t), buf2, sizeof(buf2)));
                        r = policy_thread_restore(ctx, c, t, keep_home, thread_top_policy(t), reason);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int policy_decide(const Snapshot *snap, const Settings *settings, PolicyState *state, uint64_t now_us,
                  Plan **ret_plan) {
        _cleanup_plan_ Plan *plan = NULL;
        PolicyCtx ctx;
        int r;

        if (!snap || !settings || !state || !ret_plan)
                return -EINVAL;

        r = plan_new(&plan);
        if (r < 0)
                return r;

        ctx = (PolicyCtx){
                .snap = snap,
                .settings = settings,
                .state = state,
                .now_us = now_us,
                .plan = plan,
        };
        r = snapshot_online_cpus(snap, &ctx.online);
        if (r < 0)
                return r;
        r = build_cores(&ctx);
        if (r >= 0)
                r = policy_state_sync(&ctx);
        if (r < 0)
                goto finish;

        if (settings->mode == MODE_OFF) {
                r = policy_off(&ctx);
                ctx_done(&ctx);
                if (r < 0)
                        return r;
                policy_state_clear(state);
                *ret_plan = TAKE_PTR(plan);
                return 0;
        }

        /* The order matters: the guard's verdicts and the safety restores come
         * first, then the moves between LLCs, then the windows within an LLC,
         * then the threads' layers that must fit in the cgroups' new CPUs,
         * then the pins, which narrow within all of that. */
        r = policy_guard(&ctx);
        if (r >= 0)
                r = policy_validate(&ctx);
        if (r >= 0)
                r = policy_sticky_release(&ctx);
        if (r >= 0)
                r = policy_pair_release(&ctx);
        if (r >= 0)
                r = policy_group_release(&ctx);
        if (r >= 0)
                r = policy_balance_release(&ctx);
        if (r >= 0)
                r = policy_balance(&ctx);
        if (r >= 0)
                r = policy_window(&ctx);
        if (r >= 0)
                r = policy_fixup(&ctx);
        if (r >= 0)
                r = policy_sticky_pin(&ctx);

finish:
        ctx_done(&ctx);
        if (r < 0)
                return r;
        *ret_plan = TAKE_PTR(plan);
        return 0;
}
