/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdarg.h>

#include "policy-internal.h"

/* The invariants, checked per action against the state the plan was decided
 * from (docs/POLICY.md "Invariants"). The engine runs the same check on every
 * action before it emits it, so a bug in a policy drops an action instead of
 * touching a thread it must not touch. */

static int fail(char **ret_reason, const char *fmt, ...) _printf_(2, 3);
static int fail(char **ret_reason, const char *fmt, ...) {
        va_list ap;

        if (ret_reason) {
                char *s;
                va_start(ap, fmt);
                int r = vasprintf(&s, fmt, ap);
                va_end(ap);
                if (r < 0)
                        return -ENOMEM;
                *ret_reason = s;
        }
        return 1;
}

static const CgroupSample *find_cgroup(const Snapshot *snap, const char *path) {
        for (size_t i = 0; i < snap->n_cgroups; i++)
                if (snap->cgroups[i].path && streq(snap->cgroups[i].path, path))
                        return &snap->cgroups[i];
        return NULL;
}

static const ThreadSample *find_thread(const CgroupSample *cg, pid_t tid, uint64_t starttime) {
        for (size_t i = 0; i < cg->n_threads; i++)
                if (cg->threads[i].tid == tid && cg->threads[i].starttime == starttime)
                        return &cg->threads[i];
        return NULL;
}

/* The cgroup's CPUs before the plan, as the engine saw them. */
static hwloc_const_bitmap_t cgroup_before(const CgroupState *cs, const CgroupSample *cg) {
        if (cs && cs->window.mask)
                return cs->window.mask;
        if (cs && cs->home.mask)
                return cs->home.mask;
        if (cs && cs->orig)
                return cs->orig;
        return cg->cpus;
}

/* Whether a cgroup-wide set_* can move threads: anything but a pure widening. */
static int cgroup_set_moves(const CgroupState *cs, const CgroupSample *cg, hwloc_const_bitmap_t online,
                            hwloc_const_bitmap_t cpus, bool *ret) {
        _cleanup_cpuset_ CpuSet old = hwloc_bitmap_alloc();

        if (!old)
                return -ENOMEM;
        hwloc_bitmap_and(old, cgroup_before(cs, cg), online);
        *ret = !hwloc_bitmap_isincluded(old, cpus);
        return 0;
}

static int check_thread_residency(const Settings *settings, const CgroupState *cs, const Plan *prefix,
                                  const Snapshot *snap, hwloc_const_bitmap_t online, const CgroupSample *cg,
                                  const ThreadSample *ts, const Action *a, uint64_t now_us,
                                  char **ret_reason) {
        uint64_t residency = policy_residency_us(settings);
        const ThreadState *t = cs ? policy_cgroup_state_find_thread(cs, ts->tid, ts->starttime) : NULL;
        int r;

        if (t && t->moved && now_us - t->moved_us < residency)
                return fail(ret_reason, "thread %d moved %" PRIu64 " ms ago, MinResidencyMs %" PRIu64,
                            (int) ts->tid, (uint64_t) ((now_us - t->moved_us) / USEC_PER_MSEC),
                            settings->min_residency_ms);

        if (action_is_move(a)) {
                int llc = policy_mask_llc(snap, a->cpus);
                if (t && t->left.llc >= 0 && t->left.llc == llc && now_us - t->left.at_us < residency)
                        return fail(
                                ret_reason, "thread %d would go back to llc %d it left %" PRIu64 " ms ago",
                                (int) ts->tid, llc, (uint64_t) ((now_us - t->left.at_us) / USEC_PER_MSEC));
        }

        /* Earlier in the same plan. */
        for (size_t i = 0; i < prefix->n_actions; i++) {
                const Action *p = &prefix->actions[i];
                bool moves;

                /* The tid first: a tick of sticky pins has thousands of
                 * thread actions, and a string compare for each pair made
                 * this check the bulk of such a tick. */
                if (p->kind == ACTION_RESTORE || (p->tid != 0 && p->tid != ts->tid) ||
                    !streq(p->cgroup, a->cgroup))
                        continue;
                if (p->tid == 0) {
                        r = cgroup_set_moves(cs, cg, online, p->cpus, &moves);
                        if (r < 0)
                                return r;
                } else
                        moves = p->tid == ts->tid && p->starttime == ts->starttime;
                if (moves)
                        return fail(ret_reason, "thread %d already moved by action %zu of this plan",
                                    (int) ts->tid, i);
        }
        return 0;
}

int policy_check_action(const Snapshot *snap, const Settings *settings, const PolicyState *state,
                        const Plan *prefix, const Action *a, hwloc_const_bitmap_t online_cpus,
                        uint64_t now_us, char **ret_reason) {
        _cleanup_cpuset_ CpuSet own_online = NULL, allowed = NULL, strict = NULL;
        hwloc_const_bitmap_t online = online_cpus;
        const CgroupSample *cg;
        const ThreadSample *ts = NULL;
        const CgroupState *cs;
        const ThreadState *t = NULL;
        char buf[CPUSET_STRLEN], buf2[CPUSET_STRLEN];
        bool set;
        int r;

        if (!a->cgroup || a->kind < 0 || a->kind >= _ACTION_KIND_MAX || a->policy < 0 ||
            a->policy >= _ACTION_POLICY_MAX)
                return fail(ret_reason, "malformed action");

        cg = find_cgroup(snap, a->cgroup);
        if (!cg)
                return fail(ret_reason, "cgroup %s is not opted in", a->cgroup);
        if (!a->cpus || hwloc_bitmap_iszero(a->cpus))
                return fail(ret_reason, "empty mask for %s", a->cgroup);
        if (a->kind == ACTION_SET_THREAD_CPUS && a->tid <= 0)
                return fail(ret_reason, "set_thread_cpus without a thread");
        if (a->kind == ACTION_SET_CGROUP_CPUS && a->tid != 0)
                return fail(ret_reason, "set_cgroup_cpus with a thread");
        if (a->tid > 0) {
                ts = find_thread(cg, a->tid, a->starttime);
                if (!ts)
                        return fail(ret_reason, "thread %d (starttime %" PRIu64 ") is not in %s",
                                    (int) a->tid, a->starttime, a->cgroup);
        }

        for (size_t i = 0; i < prefix->n_actions; i++)
                if (prefix->actions[i].tid == a->tid && streq(prefix->actions[i].cgroup, a->cgroup))
                        return fail(ret_reason, "second action for %s%s%.0d in one plan", a->cgroup,
                                    a->tid ? "/" : "", (int) a->tid);

        cs = policy_state_find_cgroup(state, a->cgroup);
        if (ts && cs)
                t = policy_cgroup_state_find_thread(cs, ts->tid, ts->starttime);

        set = a->kind != ACTION_RESTORE;
        if (set) {
                if (a->policy == ACTION_POLICY_GUARD || !policy_enabled(settings, cg->policy, a->policy))
                        return fail(ret_reason, "policy %s is off for %s cgroups in mode %s",
                                    action_policy_to_string(a->policy), cgroup_policy_to_string(cg->policy),
                                    mode_to_string(settings->mode));
                if (policy_backed_off(cs, a->policy, now_us))
                        return fail(ret_reason, "policy %s backed off for %s until %" PRIu64 " us",
                                    action_policy_to_string(a->policy), a->cgroup,
                                    cs->backoff[a->policy].until_us);
        }

        /* Masks: never empty, within what the cgroup (and the thread) allow
         * and online. A restore whose original CPUs are all gone falls back
         * to the cgroup's allowed CPUs, as the kernel itself would. */
        if (!online) {
                r = snapshot_online_cpus(snap, &own_online);
                if (r < 0)
                        return r;
                online = own_online;
        }
        allowed = hwloc_bitmap_alloc();
        strict = hwloc_bitmap_alloc();
        if (!allowed || !strict)
                return -ENOMEM;
        hwloc_bitmap_and(allowed, cg->allowed, online);
        if (!ts) {
                if (!hwloc_bitmap_isincluded(a->cpus, allowed))
                        return fail(ret_reason, "cpus %s not within %s's allowed online cpus %s",
                                    cpuset_to_string(a->cpus, buf, sizeof(buf)), a->cgroup,
                                    cpuset_to_string(allowed, buf2, sizeof(buf2)));
        } else {
                hwloc_bitmap_and(strict, t && t->orig ? t->orig : policy_thread_own_mask(cs, t, ts),
                                 allowed);
                bool fallback = !set && hwloc_bitmap_iszero(strict);
                if (!hwloc_bitmap_isincluded(a->cpus, fallback ? allowed : strict))
                        return fail(ret_reason, "cpus %s not within thread %d's allowed online cpus %s",
                                    cpuset_to_string(a->cpus, buf, sizeof(buf)), (int) ts->tid,
                                    cpuset_to_string(fallback ? allowed : strict, buf2, sizeof(buf2)));
        }

        if (!set)
                return 0;

        if (action_is_move(a)) {
                size_t moves = plan_count_moves(prefix) + 1;
                if (moves > settings->max_moves_per_tick)
                        return fail(ret_reason, "move %zu of this tick, MaxMovesPerTick %u", moves,
                                    settings->max_moves_per_tick);
                int llc = policy_mask_llc(snap, a->cpus);
                if (llc < 0)
                        return fail(ret_reason, "a balance move must target one LLC, not %s",
                                    cpuset_to_string(a->cpus, buf, sizeof(buf)));
                if (!ts && cs && cs->left.llc >= 0 && cs->left.llc == llc &&
                    now_us - cs->left.at_us < policy_residency_us(settings))
                        return fail(ret_reason, "%s would go back to llc %d it left %" PRIu64 " ms ago",
                                    a->cgroup, llc, (uint64_t) ((now_us - cs->left.at_us) / USEC_PER_MSEC));
        }

        /* Residency: no thread moves twice within MinResidencyMs. Widening a
         * cgroup moves nothing and is exempt. */
        if (ts)
                return check_thread_residency(settings, cs, prefix, snap, online, cg, ts, a, now_us,
                                              ret_reason);

        bool moves;
        r = cgroup_set_moves(cs, cg, online, a->cpus, &moves);
        if (r < 0)
                return r;
        if (!moves)
                return 0;
        for (size_t i = 0; i < cg->n_threads; i++) {
                r = check_thread_residency(settings, cs, prefix, snap, online, cg, &cg->threads[i], a,
                                           now_us, ret_reason);
                if (r != 0)
                        return r;
        }
        return 0;
}

int policy_check_plan(const Snapshot *snap, const Settings *settings, const PolicyState *state_before,
                      const Plan *plan, uint64_t now_us, char **ret_reason) {
        _cleanup_cpuset_ CpuSet online = NULL;
        int r;

        if (!snap || !settings || !plan)
                return -EINVAL;
        r = snapshot_online_cpus(snap, &online);
        if (r < 0)
                return r;

        for (size_t i = 0; i < plan->n_actions; i++) {
                const Plan prefix = {.actions = plan->actions, .n_actions = i};
                _cleanup_(freep) char *why = NULL;

                r = policy_check_action(snap, settings, state_before, &prefix, &plan->actions[i], online,
                                        now_us, ret_reason ? &why : NULL);
                if (r < 0)
                        return r;
                if (r > 0) {
                        if (ret_reason &&
                            asprintf(ret_reason, "action %zu (%s %s %s%s%.0d): %s", i,
                                     action_policy_to_string(plan->actions[i].policy),
                                     action_kind_to_string(plan->actions[i].kind), plan->actions[i].cgroup,
                                     plan->actions[i].tid ? "/" : "", (int) plan->actions[i].tid, why) < 0)
                                return -ENOMEM;
                        return 1;
                }
        }
        return 0;
}
