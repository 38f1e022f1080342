/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <math.h>

#include "ewma.h"
#include "policy-internal.h"

/* The guard (DESIGN.md 1.4): every set_* opened an experiment with the
 * affected threads' summed wait and the cgroup's CPU pressure at decision
 * time. Each later tick of GuardWindowMs adds its figures; at the end the mean
 * is compared with the before-figures. Worse by more than GuardPercent plus a
 * noise floor: revert with a restore of policy "guard" and back the policy off
 * for that cgroup, GuardWindowMs * 2^n after the n-th revert in a row, capped
 * at GuardBackoffMax * GuardWindowMs. Otherwise kept, and the backoff resets. */

/* The wait noise floor is at most this share of the util before. */
#define GUARD_FLOOR_UTIL_SHARE 0.25

/* Load this many times the before-figure makes a trial inconclusive. */
#define GUARD_RAMP_FACTOR 2.0

static double cgroup_wait(const CgroupSample *cg) {
        double w = 0;

        for (size_t i = 0; i < cg->n_threads; i++)
                w += cg->threads[i].wait;
        return w;
}

/* Progress that rose by this factor (or by GuardPercent, if less) is a
 * gain: well beyond the noise of a second's count of hand-overs (a few
 * percent on a steady pair), and well short of what a pair that talks
 * gains together. */
#define GUARD_PROGRESS_RISE 1.2

/* A pair pin (policy-pair.c), or a window on a request/response cgroup
 * (policy_cgroup_progress()): together the wakee waits for the waker's
 * hand-over, so wait alone would revert every pair. Progress, the wakeups
 * per second (one per hand-over), decides: fallen by GuardPercent
 * reverts; risen by a fifth keeps even though wait grew; in between, wait
 * decides as for any pin (two timer threads woken at once gain no progress
 * together and only wait for each other). The rise used to be GuardPercent
 * too (50%): perf bench sched pipe's pair, pinned, went from 87,533 to
 * 127,119 hand-overs a second (+45%) and was reverted, pinned again, and
 * reverted, every few seconds of a trial. */
static int judge_progress(PolicyCtx *ctx, const Experiment *e, const char *what, double wait,
                          double wait_limit, char **ret, Verdict *ret_verdict) {
        const Settings *st = ctx->settings;
        double k = 1.0 + st->guard_percent / 100.0;
        double rise = MIN(k, GUARD_PROGRESS_RISE);
        double after = e->sum_progress / e->n_samples, before = e->before_progress;
        bool fell = after * k < before, rose = after >= before * rise;

        *ret_verdict = (Verdict){.outcome = VERDICT_KEPT,
                                 .at_us = ctx->now_us,
                                 .before = before,
                                 .after = after,
                                 .limit = before};
        if (fell) {
                ret_verdict->outcome = VERDICT_REVERTED;
                if (asprintf(ret,
                             "guard: %s made progress worse: %.0f wakeups/s < before %.0f / %.0f%%, "
                             "over %" PRIu64 " ms",
                             what, after, before, k * 100, st->guard_window_ms) < 0)
                        return -ENOMEM;
        } else if (!rose && wait > wait_limit) {
                ret_verdict->outcome = VERDICT_REVERTED;
                if (asprintf(ret,
                             "guard: %s made wait per CPU received worse: %.0f > %.0f, and progress "
                             "%.0f wakeups/s did not rise by %.0f%% from %.0f, over %" PRIu64 " ms",
                             what, wait, wait_limit, after, (rise - 1) * 100, before,
                             st->guard_window_ms) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The verdict's words, or NULL when the change is kept; the figures in
 * ret_verdict. */
static int judge(PolicyCtx *ctx, const Experiment *e, bool cgroup_wide, ActionPolicy p, char **ret,
                 Verdict *ret_verdict) {
        const Settings *st = ctx->settings;
        double k = 1.0 + st->guard_percent / 100.0;
        double floor = st->guard_wait_floor * e->n_threads;
        double pressure = e->sum_pressure / e->n_samples;
        /* Wait is judged per unit of CPU received: threads that get more CPU
         * are runnable longer and queue longer with it, and that is no harm.
         * (Measured here: four hackbench groups pinned two per CPU, the
         * placement that ran 15% faster, waited 60% more in sum while getting
         * 60% more CPU; wait per CPU received stayed the same.) The after-wait
         * is scaled to the before-util; util below the noise floor counts as
         * the floor, so that an idle phase cannot blow the ratio up. */
        double util_after = e->sum_util / e->n_samples;
        double wait = e->sum_wait / e->n_samples * MAX(e->before_util, floor) / MAX(util_after, floor);
        /* The noise the wait may grow by: GuardWaitFloor per thread, but no
         * more than a quarter of the CPU the threads received. A light
         * cgroup (two cyclictest threads, util ~40 in all) has a per-thread
         * floor larger than its whole wait: measured, a window on it raised
         * its wait from 10 to 42, under 10 x 150% + 30 (in the runs where
         * such a window stayed, p99 latency was 1.8-4.1x the kernel's). */
        double wait_floor = MAX(MIN(floor, GUARD_FLOOR_UTIL_SHARE * e->before_util), st->guard_wait_floor);
        double wait_limit = e->before_wait * k + wait_floor;
        double pressure_limit = e->before_pressure * k + st->guard_pressure_floor;

        *ret = NULL;
        if (e->by_progress)
                return judge_progress(ctx, e, cgroup_wide ? action_policy_to_string(p) : "sticky pair", wait,
                                      wait_limit, ret, ret_verdict);
        *ret_verdict = (Verdict){.outcome = VERDICT_KEPT,
                                 .at_us = ctx->now_us,
                                 .before = e->before_wait,
                                 .after = wait,
                                 .limit = wait_limit};
        if (wait > wait_limit) {
                ret_verdict->outcome = VERDICT_REVERTED;
                if (asprintf(ret,
                             "guard: %s made wait per CPU received worse: %.0f (at util %.0f -> %.0f) > "
                             "%s "
                             "%.0f x %.0f%% + floor %.0f, over %" PRIu64 " ms",
                             action_policy_to_string(p), wait, e->before_util, util_after,
                             e->from_tick ? "its last tick before" : "before", e->before_wait, k * 100,
                             wait_floor, st->guard_window_ms) < 0)
                        return -ENOMEM;
        } else if (cgroup_wide && !e->from_tick && pressure > pressure_limit) {
                /* Not for a load that was still changing: pressure (avg10,
                 * ten seconds) of a load that just started rises with it. */
                *ret_verdict = (Verdict){.outcome = VERDICT_REVERTED,
                                         .by_pressure = true,
                                         .at_us = ctx->now_us,
                                         .before = e->before_pressure,
                                         .after = pressure,
                                         .limit = pressure_limit};
                /* Pressure is the cgroup's: it judges only cgroup-wide changes,
                 * a single thread's pin cannot be told apart in it. */
                if (asprintf(ret,
                             "guard: %s made cpu pressure worse: some avg10 %.2f > before %.2f x %.0f%% + "
                             "floor %.2f, "
                             "over %" PRIu64 " ms",
                             action_policy_to_string(p), pressure, e->before_pressure, k * 100,
                             st->guard_pressure_floor, st->guard_window_ms) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The subject's load grew several-fold under the trial (a workload
 * starting): its wait grew with it, whatever the change did, and
 * before/after says nothing. The trial starts over from what it is now; a
 * window too small for the new load grows on its own (DESIGN.md 1.1), that
 * is not the guard's to catch. A pair together runs faster and gets more
 * CPU by design: its progress says whether that was the load or the pin.
 * A trial whose before is one tick of a changing load (from_tick) says
 * something only at about that load: grown by more than
 * POLICY_SETTLE_PERCENT, its phase was still starting at that tick (the
 * other groups not all running yet), and its wait per CPU received rose
 * with theirs (measured in phases: 10 of 101 windows reverted at a phase
 * start, judged at util 336 -> 553, 323 -> 515, 473 -> 659). */
static bool restarted_on_ramp(const PolicyCtx *ctx, Experiment *e) {
        double floor = ctx->settings->guard_wait_floor * e->n_threads;
        double util_after = e->sum_util / e->n_samples;
        double factor = e->from_tick ? 1.0 + POLICY_SETTLE_PERCENT / 100.0 : GUARD_RAMP_FACTOR;

        if (e->by_progress || util_after <= factor * MAX(e->before_util, floor))
                return false;
        *e = (Experiment){
                .active = true,
                .start_us = ctx->now_us,
                .end_us = ctx->now_us + ctx->settings->guard_window_ms * USEC_PER_MSEC,
                .before_wait = e->sum_wait / e->n_samples,
                .before_util = util_after,
                .before_pressure = e->sum_pressure / e->n_samples,
                .n_threads = e->n_threads,
        };
        return true;
}

static int verdict(PolicyCtx *ctx, CgroupState *c, ThreadState *t, Layer *l, ActionPolicy p) {
        _cleanup_(freep) char *why = NULL, *reason = NULL;
        Experiment *e = &l->exp;
        uint64_t off_us;
        int r;

        if (!e->active || !l->mask)
                return 0;
        if (ctx->now_us > e->start_us) {
                double wait = t ? t->sample->wait : cgroup_wait(c->sample);
                double util = t ? t->sample->util : policy_cgroup_util(c->sample);
                if (t && t->group_lead == t->tid)
                        policy_group_load(c, t, &wait, &util);
                e->sum_wait += wait;
                e->sum_util += util;
                e->sum_pressure += c->sample->pressure_some_avg10;
                if (e->by_progress)
                        e->sum_progress += t ? policy_pair_progress(c, t) : policy_cgroup_wakeups(c->sample);
                e->n_samples++;
        }
        if (ctx->now_us < e->end_us || e->n_samples == 0)
                return 0;

        if (restarted_on_ramp(ctx, e))
                return 0;

        Verdict v;
        r = judge(ctx, e, !t, p, &why, &v);
        if (r < 0)
                return r;
        if (!why) {
                if (!t)
                        c->verdict[p] = v;
                *e = (Experiment){};
                c->backoff[p].level = 0;
                ctx->state->counters.kept++;
                c->counters.kept++;
                return 0;
        }

        /* The revert is due even if the subject was acted on this tick: then
         * it waits for the next tick, the experiment stays due. */
        if (t ? t->acted : c->acted)
                return 0;

        off_us = policy_backoff_us(ctx->settings, &c->backoff[p]);
        if (asprintf(&reason, "%s; %s backs off %" PRIu64 " ms", why, action_policy_to_string(p),
                     (uint64_t) (off_us / USEC_PER_MSEC)) < 0)
                return -ENOMEM;

        /* Reverting the balance layer restores the mask from before steerd;
         * reverting a window or a pin restores the layer below it. */
        bool keep_home = p != ACTION_POLICY_BALANCE;
        if (t)
                r = policy_thread_restore(ctx, c, t, keep_home, ACTION_POLICY_GUARD, reason);
        else
                r = policy_cgroup_restore(ctx, c, keep_home, ACTION_POLICY_GUARD, reason);
        if (r < 0)
                return r;
        if (r > 0) {
                if (!t)
                        c->verdict[p] = v;
                policy_back_off(c, p, ctx->now_us, off_us);
                ctx->state->counters.reverted++;
                c->counters.reverted++;
        }
        return 0;
}

/* The running means a cgroup-wide experiment starts from: a half-life of
 * half the guard's window weighs about that window's ticks. They hold still
 * while a cgroup-wide experiment runs, so that the next one starts from the
 * cgroup as it is without steerd's trial. */
static void observe(PolicyCtx *ctx, CgroupState *c) {
        double wait = cgroup_wait(c->sample), util = policy_cgroup_util(c->sample);
        double alpha = ewma_alpha(ctx->snap->period_us, ctx->settings->guard_window_ms * USEC_PER_MSEC / 2);

        if (c->recent_primed && (c->window.exp.active || c->home.exp.active))
                return;

        if (!c->recent_primed || ctx->snap->period_us == 0) {
                c->recent_wait = wait;
                c->recent_util = util;
                c->recent_primed = true;
                return;
        }
        c->recent_wait = ewma_update(c->recent_wait, wait, alpha);
        c->recent_util = ewma_update(c->recent_util, util, alpha);
}

int policy_guard(PolicyCtx *ctx) {
        int r;

        for (size_t i = 0; i < ctx->snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                if (!c)
                        continue;
                observe(ctx, c);

                r = verdict(ctx, c, NULL, &c->home, ACTION_POLICY_BALANCE);
                if (r >= 0)
                        r = verdict(ctx, c, NULL, &c->window, ACTION_POLICY_WINDOW);
                if (r < 0)
                        return r;

                for (size_t k = 0; k < c->sample->n_threads; k++) {
                        ThreadState *t = c->by_sample[k];
                        if (!t)
                                continue;
                        r = verdict(ctx, c, t, &t->home, ACTION_POLICY_BALANCE);
                        if (r >= 0)
                                r = verdict(ctx, c, t, &t->pin, ACTION_POLICY_STICKY);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}
