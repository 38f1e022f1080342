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

/* What one action is checked against: the tick's inputs and the state before. */
typedef struct Check {
        const Snapshot *snap;
        const Settings *settings;
        const Plan *prefix; /* the plan before the action */
        hwloc_const_bitmap_t online;
        uint64_t now_us;
        const CgroupSample *cg;
        const CgroupState *cs; /* NULL: the state holds nothing of the cgroup */
} Check;

/* Whether a cgroup-wide set_* can move threads: anything but a pure widening. */
static int cgroup_set_moves(const Check *k, hwloc_const_bitmap_t cpus, bool *ret) {
        _cleanup_cpuset_ CpuSet old = hwloc_bitmap_alloc();

        if (!old)
                return -ENOMEM;
        hwloc_bitmap_and(old, cgroup_before(k->cs, k->cg), k->online);
        *ret = !hwloc_bitmap_isincluded(old, cpus);
        return 0;
}

static int check_thread_residency(const Check *k, const ThreadSample *ts, const Action *a,
                                  char **ret_reason) {
        uint64_t residency = policy_residency_us(k->settings), now_us = k->now_us;
        const ThreadState *t = k->cs ? policy_cgroup_state_find_thread(k->cs, ts->tid, ts->starttime) : NULL;
        int r;

        if (t && t->moved && now_us - t->moved_us < residency)
                return fail(ret_reason, "thread %d moved %" PRIu64 " ms ago, MinResidencyMs %" PRIu64,
                            (int) ts->tid, (uint64_t) ((now_us - t->moved_us) / USEC_PER_MSEC),
                            k->settings->min_residency_ms);

        if (action_is_move(a)) {
                int llc = policy_mask_llc(k->snap, a->cpus);
                if (t && t->left.llc >= 0 && t->left.llc == llc && now_us - t->left.at_us < residency)
                        return fail(
                                ret_reason, "thread %d would go back to llc %d it left %" PRIu64 " ms ago",
                                (int) ts->tid, llc, (uint64_t) ((now_us - t->left.at_us) / USEC_PER_MSEC));
        }

        /* Earlier in the same plan. */
        for (size_t i = 0; i < k->prefix->n_actions; i++) {
                const Action *p = &k->prefix->actions[i];
                bool moves;

                /* The tid first: a tick of sticky pins has thousands of
                 * thread actions, and a string compare for each pair made
                 * this check the bulk of such a tick. */
                if (p->kind == ACTION_RESTORE || (p->tid != 0 && p->tid != ts->tid) ||
                    !streq(p->cgroup, a->cgroup))
                        continue;
                if (p->tid == 0) {
                        r = cgroup_set_moves(k, p->cpus, &moves);
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

/* The action is well formed, names an opted-in cgroup (and a thread of it)
 * and is the plan's only action for that subject. */
static int check_subject(const Snapshot *snap, const Plan *prefix, const Action *a,
                         const CgroupSample **ret_cg, const ThreadSample **ret_ts, char **ret_reason) {
        const CgroupSample *cg;
        const ThreadSample *ts = NULL;

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

        *ret_cg = cg;
        *ret_ts = ts;
        return 0;
}

/* A set_* of a policy the mode and the cgroup's policy permit, not backed off. */
static int check_permitted(const Check *k, const Action *a, char **ret_reason) {
        if (a->policy == ACTION_POLICY_GUARD || !policy_enabled(k->settings, k->cg->policy, a->policy))
                return fail(ret_reason, "policy %s is off for %s cgroups in mode %s",
                            action_policy_to_string(a->policy), cgroup_policy_to_string(k->cg->policy),
                            mode_to_string(k->settings->mode));
        if (policy_backed_off(k->cs, a->policy, k->now_us))
                return fail(ret_reason, "policy %s backed off for %s until %" PRIu64 " us",
                            action_policy_to_string(a->policy), a->cgroup,
                            k->cs->backoff[a->policy].until_us);
        return 0;
}

/* Masks: never empty, within what the cgroup (and the thread) allow and
 * online. A restore whose original CPUs are all gone falls back to the
 * cgroup's allowed CPUs, as the kernel itself would. */
static int check_mask(const Check *k, const ThreadSample *ts, const Action *a, char **ret_reason) {
        _cleanup_cpuset_ CpuSet allowed = hwloc_bitmap_alloc(), strict = hwloc_bitmap_alloc();
        char buf[CPUSET_STRLEN], buf2[CPUSET_STRLEN];

        if (!allowed || !strict)
                return -ENOMEM;
        hwloc_bitmap_and(allowed, k->cg->allowed, k->online);
        if (!ts) {
                if (!hwloc_bitmap_isincluded(a->cpus, allowed))
                        return fail(ret_reason, "cpus %s not within %s's allowed online cpus %s",
                                    cpuset_to_string(a->cpus, buf, sizeof(buf)), a->cgroup,
                                    cpuset_to_string(allowed, buf2, sizeof(buf2)));
                return 0;
        }

        const ThreadState *t = k->cs ? policy_cgroup_state_find_thread(k->cs, ts->tid, ts->starttime) : NULL;
        hwloc_bitmap_and(strict, t && t->orig ? t->orig : policy_thread_own_mask(k->cs, t, ts), allowed);
        bool fallback = a->kind == ACTION_RESTORE && hwloc_bitmap_iszero(strict);
        if (!hwloc_bitmap_isincluded(a->cpus, fallback ? allowed : strict))
                return fail(ret_reason, "cpus %s not within thread %d's allowed online cpus %s",
                            cpuset_to_string(a->cpus, buf, sizeof(buf)), (int) ts->tid,
                            cpuset_to_string(fallback ? allowed : strict, buf2, sizeof(buf2)));
        return 0;
}

/* A sticky pin: within StickyMaxPinsPerTick (no tick pins in a burst). */
static int check_pins(const Check *k, const Action *a, char **ret_reason) {
        size_t pins = 1;

        for (size_t i = 0; k->prefix && i < k->prefix->n_actions; i++) {
                const Action *p = &k->prefix->actions[i];
                pins += p->kind == a->kind && p->policy == ACTION_POLICY_STICKY;
        }
        if (pins > MAX(k->settings->sticky_max_pins, 1u))
                return fail(ret_reason, "pin %zu of this tick, StickyMaxPinsPerTick %u", pins,
                            k->settings->sticky_max_pins);
        return 0;
}

/* A balance move: within MaxMovesPerTick, to one LLC, and a whole cgroup not
 * back to the LLC it just left. */
static int check_move(const Check *k, const ThreadSample *ts, const Action *a, char **ret_reason) {
        char buf[CPUSET_STRLEN];
        size_t moves = plan_count_moves(k->prefix) + 1;

        if (moves > k->settings->max_moves_per_tick)
                return fail(ret_reason, "move %zu of this tick, MaxMovesPerTick %u", moves,
                            k->settings->max_moves_per_tick);
        int llc = policy_mask_llc(k->snap, a->cpus);
        if (llc < 0)
                return fail(ret_reason, "a balance move must target one LLC, not %s",
                            cpuset_to_string(a->cpus, buf, sizeof(buf)));
        const CgroupState *cs = k->cs;
        if (!ts && cs && cs->left.llc >= 0 && cs->left.llc == llc &&
            k->now_us - cs->left.at_us < policy_residency_us(k->settings))
                return fail(ret_reason, "%s would go back to llc %d it left %" PRIu64 " ms ago", a->cgroup,
                            llc, (uint64_t) ((k->now_us - cs->left.at_us) / USEC_PER_MSEC));
        return 0;
}

/* Residency: no thread moves twice within MinResidencyMs. Widening a cgroup
 * moves nothing and is exempt. */
static int check_residency(const Check *k, const ThreadSample *ts, const Action *a, char **ret_reason) {
        bool moves;
        int r;

        if (ts)
                return check_thread_residency(k, ts, a, ret_reason);

        r = cgroup_set_moves(k, a->cpus, &moves);
        if (r < 0 || !moves)
                return r;
        for (size_t i = 0; i < k->cg->n_threads; i++) {
                r = check_thread_residency(k, &k->cg->threads[i], a, ret_reason);
                if (r != 0)
                        return r;
        }
        return 0;
}

int policy_check_action(const Snapshot *snap, const Settings *settings, const PolicyState *state,
                        const Plan *prefix, const Action *a, hwloc_const_bitmap_t online_cpus,
                        uint64_t now_us, char **ret_reason) {
        _cleanup_cpuset_ CpuSet own_online = NULL;
        const ThreadSample *ts = NULL;
        bool set = a->kind != ACTION_RESTORE;
        Check k = {
                .snap = snap,
                .settings = settings,
                .prefix = prefix,
                .online = online_cpus,
                .now_us = now_us,
        };
        int r;

        r = check_subject(snap, prefix, a, &k.cg, &ts, ret_reason);
        if (r != 0)
                return r;
        k.cs = policy_state_find_cgroup(state, a->cgroup);

        if (set) {
                r = check_permitted(&k, a, ret_reason);
                if (r != 0)
                        return r;
        }

        if (!k.online) {
                r = snapshot_online_cpus(snap, &own_online);
                if (r < 0)
                        return r;
                k.online = own_online;
        }
        r = check_mask(&k, ts, a, ret_reason);
        if (r != 0 || !set)
                return r;

        if (action_is_move(a)) {
                r = check_move(&k, ts, a, ret_reason);
                if (r != 0)
                        return r;
        }
        if (a->policy == ACTION_POLICY_STICKY) {
                r = check_pins(&k, a, ret_reason);
                if (r != 0)
                        return r;
        }
        return check_residency(&k, ts, a, ret_reason);
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
