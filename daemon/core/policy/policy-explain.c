/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdarg.h>

#include "policy-internal.h"

/* Why the last decision did what it did for one cgroup, in the operator's
 * words: each policy's inputs against its thresholds. The window gate and
 * the guard's verdicts are what the decision itself recorded (CgroupState);
 * the figures are the snapshot it decided on. Pure, like the engine. */

void explanation_done(Explanation *e) {
        for (size_t i = 0; e && i < e->n; i++) {
                free(e->lines[i].topic);
                free(e->lines[i].text);
        }
        if (e) {
                free(e->lines);
                *e = (Explanation){};
        }
}

static int say(Explanation *e, const char *topic, const char *fmt, ...) _printf_(3, 4);
static int say(Explanation *e, const char *topic, const char *fmt, ...) {
        ExplainLine *l = reallocarray(e->lines, e->n + 1, sizeof(ExplainLine));
        va_list ap;
        int r;

        if (!l)
                return -ENOMEM;
        e->lines = l;
        l = &e->lines[e->n];
        *l = (ExplainLine){.topic = strdup(topic)};
        va_start(ap, fmt);
        r = vasprintf(&l->text, fmt, ap);
        va_end(ap);
        if (r < 0)
                l->text = NULL;
        e->n++; /* counted also on failure, so that explanation_done() frees it */
        return l->topic && l->text ? 0 : -ENOMEM;
}

static double pct(double capacity) {
        return capacity * 100.0 / SCHED_CAPACITY_SCALE;
}

/* The mean util per CPU above which the SIS_UTIL scan covers less than half
 * of an LLC: x*x*p*p/(10000*1024) > 512 at imbalance_pct p = 117. */
static double overload_threshold_pct(void) {
        return pct(sqrt(512.0 * 10000 * 1024) / 117);
}

static const char *seconds(uint64_t us, char *buf, size_t size) {
        snprintf(buf, size, "%.1f s", (double) us / USEC_PER_SEC);
        return buf;
}

static int explain_cgroup(Explanation *e, const Settings *st, const CgroupSample *cg) {
        double util = 0, wait = 0;

        for (size_t i = 0; i < cg->n_threads; i++) {
                util += cg->threads[i].util;
                wait += cg->threads[i].wait;
        }
        char cpus[CPUSET_STRLEN];
        return say(e, "cgroup",
                   "%s: policy %s, mode %s; CPUs %s; %zu threads using %.0f (%.2f CPUs), waiting %.0f; "
                   "pressure some %.1f",
                   cg->path, cgroup_policy_to_string(cg->policy), mode_to_string(st->mode),
                   cpuset_to_string(cg->cpus, cpus, sizeof(cpus)), cg->n_threads, util,
                   util / SCHED_CAPACITY_SCALE, wait, cg->pressure_some_avg10);
}

static int explain_guard_layer(Explanation *e, const Settings *st, const CgroupState *c, const Layer *l,
                               ActionPolicy p, uint64_t now_us) {
        const Experiment *x = &l->exp;
        const Verdict *v = &c->verdict[p];
        char a[32], b[32];

        if (l->mask && x->active && x->by_progress)
                return say(e, "guard",
                           "%s being judged for %s more by progress: %.0f wakeups/s before, so far %.0f "
                           "over %u samples; reverted when it falls under before / %.0f%%, kept when it "
                           "rises by %.0f%%, wait per CPU received decides in between",
                           action_policy_to_string(p),
                           seconds(x->end_us > now_us ? x->end_us - now_us : 0, a, 32), x->before_progress,
                           x->n_samples ? x->sum_progress / x->n_samples : 0, x->n_samples,
                           100 + st->guard_percent, st->guard_percent);
        if (l->mask && x->active) {
                double after = x->n_samples ? x->sum_wait / x->n_samples : 0;
                return say(e, "guard",
                           "%s being judged for %s more: wait %.0f at util %.0f before; so far %.0f at util "
                           "%.0f "
                           "over %u samples; reverted when wait per CPU received exceeds before x %.0f%% + "
                           "the noise floor",
                           action_policy_to_string(p),
                           seconds(x->end_us > now_us ? x->end_us - now_us : 0, a, 32), x->before_wait,
                           x->before_util, after, x->n_samples ? x->sum_util / x->n_samples : 0,
                           x->n_samples, 100 + st->guard_percent);
        }
        if (v->outcome == VERDICT_NONE)
                return 0;
        seconds(now_us > v->at_us ? now_us - v->at_us : 0, a, sizeof(a));
        if (v->outcome == VERDICT_KEPT)
                return say(e, "guard", "%s kept %s ago: wait per CPU received %.0f -> %.0f (limit %.0f)",
                           action_policy_to_string(p), a, v->before, v->after, v->limit);
        const Backoff *bo = &c->backoff[p];
        if (bo->until_us > now_us)
                seconds(bo->until_us - now_us, b, sizeof(b));
        return say(e, "guard", "%s reverted %s ago: %s %.2f -> %.2f > limit %.2f; %s%s",
                   action_policy_to_string(p), a, v->by_pressure ? "cpu pressure" : "wait per CPU received",
                   v->before, v->after, v->limit,
                   bo->until_us > now_us ? "backing off, no new one for another " : "the back-off is over",
                   bo->until_us > now_us ? b : "");
}

/* A window held, or one the cgroup may get; where: "LLC 3", or the
 * merged domain's label. */
static int explain_window_placed(Explanation *e, const CgroupState *c, const LlcSample *l,
                                 const char *where) {
        unsigned nr = l ? l->nr_idle_scan : 0, w = l ? l->weight : 0;
        double util = l ? pct(l->util) : 0;
        char m[CPUSET_STRLEN];

        if (c->window_gate == WINDOW_GATE_HELD)
                return say(e, "window", "%s %s held in %s (util %.0f%%, nr_idle_scan %u of %u); demand %.0f",
                           c->window_consolidated ? "consolidation window" : "window",
                           c->window.mask ? cpuset_to_string(c->window.mask, m, sizeof(m)) : "-", where,
                           util, nr, w, c->window_gate_demand);
        if (c->window_gate == WINDOW_GATE_CONSOLIDATE)
                return say(e, "window",
                           c->window.mask ? "consolidation window %s placed in %s below overload (util "
                                            "%.0f%%, nr_idle_scan %u of %u); demand %.0f"
                                          : "may get a consolidation window%s in %s below overload (util "
                                            "%.0f%%, nr_idle_scan %u of %u; demand %.0f); none placed (no "
                                            "room on fewer cores, or residency)",
                           c->window.mask ? cpuset_to_string(c->window.mask, m, sizeof(m)) : "", where, util,
                           nr, w, c->window_gate_demand);
        if (c->window.mask)
                return say(e, "window",
                           "window %s placed in %s: overloaded (util %.0f%% >= %.0f%%, nr_idle_scan %u "
                           "of %u); "
                           "demand %.0f",
                           cpuset_to_string(c->window.mask, m, sizeof(m)), where, util,
                           overload_threshold_pct(), nr, w, c->window_gate_demand);
        return say(e, "window",
                   "may get a window in %s (overloaded: util %.0f%%, nr_idle_scan %u of %u; demand "
                   "%.0f); none "
                   "placed (no core that helps, or residency)",
                   where, util, nr, w, c->window_gate_demand);
}

/* Below overload: what the consolidation rule (policy-consolidate.c) found. */
static int explain_consolidate(Explanation *e, const CgroupState *c) {
        const ConsolidateLook *l = &c->consolidate;
        const char *why;

        switch (l->gate) {
        case CONSOLIDATE_UNSEEN:
                return 0;
        case CONSOLIDATE_OFF:
                return say(e, "consolidate", "off (Consolidate=no)");
        case CONSOLIDATE_PINNED:
                return say(e, "consolidate",
                           "no: its threads are pinned as pairs or groups, which is finer");
        case CONSOLIDATE_PAIR:
                return say(e, "consolidate",
                           "no: it holds a pair of talking threads, which is pinned instead");
        case CONSOLIDATE_GROUPS:
                return say(e, "consolidate",
                           "no: its threads talk in groups that are placed apart (who wakes whom)");
        case CONSOLIDATE_NO_HANDOFF:
                why = "no: its threads do not hand work to each other";
                break;
        case CONSOLIDATE_WAITS:
                why = "no: its threads already wait for CPU";
                break;
        case CONSOLIDATE_FITS_NOT:
                why = "no: its demand needs every core it runs on";
                break;
        case CONSOLIDATE_HELD:
                return say(
                        e, "consolidate",
                        "held: its threads still hand work (%.0f wakeups/s >= %.0f, %.0f us a run <= %.0f; "
                        "wait %.0f%%, a core more above %.0f%%)",
                        l->wakeups, CONSOLIDATE_MIN_WAKEUPS / 2, l->run_us, PAIR_MAX_RUN_US * 2,
                        l->wait_share * 100, CONSOLIDATE_GROW_WAIT_SHARE * 100);
        case CONSOLIDATE_CANDIDATE:
                why = "yes: its threads hand work to each other and fit in fewer cores";
                break;
        case _CONSOLIDATE_MAX:
        default:
                return 0;
        }
        return say(
                e, "consolidate",
                "%s (%u busy threads, %.0f wakeups/s >= %.0f, %.0f us a run <= %.0f, wait %.0f%% <= %.0f%%, "
                "on %u cores, demand needs %u)",
                why, l->busy, l->wakeups, CONSOLIDATE_MIN_WAKEUPS, l->run_us, PAIR_MAX_RUN_US,
                l->wait_share * 100, CONSOLIDATE_MAX_WAIT_SHARE * 100, l->spread, l->need);
}

static int explain_window_gate(Explanation *e, const Snapshot *snap, const Settings *st,
                               const CgroupSample *cg, const CgroupState *c, uint64_t now_us) {
        _cleanup_(policy_domains_done) WindowDomains doms = {};
        int r = policy_domains_build(snap, &doms);
        if (r < 0)
                return r;
        const WindowDomain *d = policy_domain_by_id(&doms, c->window_gate_llc);
        const LlcSample *l = d ? &d->view : NULL;
        unsigned id = l ? l->id : 0, nr = l ? l->nr_idle_scan : 0, w = l ? l->weight : 0;
        double util = l ? pct(l->util) : 0;
        char s[32], where[64];

        if (d && d->n_llcs > 1)
                snprintf(where, sizeof(where), "%s", d->label);
        else
                snprintf(where, sizeof(where), "LLC %u", id);

        switch (c->window_gate) {
        case WINDOW_GATE_UNSEEN:
                return say(e, "window", "not decided in the last tick (mode off, or no sample of it yet)");
        case WINDOW_GATE_ACTED:
                return say(e, "window", "not decided: another policy changed the cgroup in the last tick");
        case WINDOW_GATE_DISABLED:
                return say(e, "window", "no window: %s",
                           cg->policy == CGROUP_POLICY_BALANCED ? "the cgroup's policy is balanced"
                                                                : "the mode has no windows");
        case WINDOW_GATE_BACKED_OFF:
                return say(e, "window", "no new window for another %s: the guard reverted the last one",
                           seconds(c->backoff[ACTION_POLICY_WINDOW].until_us -
                                           MIN(now_us, c->backoff[ACTION_POLICY_WINDOW].until_us),
                                   s, sizeof(s)));
        case WINDOW_GATE_NO_DEMAND:
                return say(e, "window", "no window: its threads used no CPU");
        case WINDOW_GATE_SMALL_LLC:
                return say(e, "window", "no window: %s has %u CPUs < MinLLCCPUs %u", where, w,
                           st->min_llc_cpus);
        case WINDOW_GATE_CALM:
                return say(e, "window",
                           "no window: %s calm: util %.0f%%, nr_idle_scan %u of %u >= %.0f%% "
                           "(WindowWidenScanPercent)",
                           where, util, nr, w, st->window_widen_scan_percent);
        case WINDOW_GATE_NOT_OVERLOADED:
                return say(e, "window",
                           "no window: %s util %.0f%% < %.0f%% overloaded threshold (nr_idle_scan %u of "
                           "%u, "
                           "not below half)",
                           where, util, overload_threshold_pct(), nr, w);
        case WINDOW_GATE_BALANCE_HOMES:
                return say(e, "window", "no window: balancing moved some of its threads to another LLC");
        case WINDOW_GATE_TOO_LIGHT:
                return say(e, "window",
                           "no window: demand %.0f < %d (%d%% of a CPU): too light to share a window",
                           c->window_gate_demand, SCHED_CAPACITY_SCALE * WINDOW_MIN_DEMAND_PERCENT / 100,
                           WINDOW_MIN_DEMAND_PERCENT);
        case WINDOW_GATE_SPREAD:
                return say(e, "window", "no window: only %.0f of its demand %.0f runs in %s (not over half)",
                           c->window_gate_in_home, c->window_gate_demand, where);
        case WINDOW_GATE_NOT_HERE:
                return say(e, "window", "no window: none of the CPUs it may use are in %s", where);
        case WINDOW_GATE_KERNEL_CACHE:
                return say(e, "window",
                           "no window: one process, and the kernel's cache-aware scheduling keeps its "
                           "threads in one LLC itself");
        case WINDOW_GATE_TALKERS_PINNED:
                return say(e, "window",
                           "no window: every busy thread of it is pinned with its pair or group (placed "
                           "finer than a window)");
        case WINDOW_GATE_HELD:
        case WINDOW_GATE_CANDIDATE:
        case WINDOW_GATE_CONSOLIDATE:
                return explain_window_placed(e, c, l, where);
        case _WINDOW_GATE_MAX:
        default:
                break;
        }
        return 0;
}

static int explain_window(Explanation *e, const Snapshot *snap, const Settings *st, const CgroupSample *cg,
                          const CgroupState *c, uint64_t now_us) {
        int r = explain_window_gate(e, snap, st, cg, c, now_us);
        if (r < 0)
                return r;
        return explain_consolidate(e, c);
}

static int explain_sticky(Explanation *e, const Settings *st, const CgroupSample *cg, const CgroupState *c) {
        size_t pinned = 0, streaks = 0;

        if (!policy_enabled(st, cg->policy, ACTION_POLICY_STICKY))
                return say(e, "sticky", "no pins: %s",
                           cg->policy == CGROUP_POLICY_BALANCED ? "the cgroup's policy is balanced"
                                                                : "the mode has no pins");
        size_t talk = 0, paired = 0;
        for (size_t i = 0; i < c->n_threads; i++) {
                pinned += c->threads[i].pin.mask != NULL;
                paired += c->threads[i].pin.mask && c->threads[i].pair_tid;
                streaks += !c->threads[i].pin.mask && c->threads[i].streak > 0;
        }
        for (size_t i = 0; i < cg->n_threads; i++)
                talk += policy_thread_talks(st, &cg->threads[i]);
        if (talk > 0) {
                int r = say(e, "sticky",
                            "%zu thread%s talk (scheduled in >= StickyPairWakeups %.0f times a second, for "
                            "short "
                            "runs): pinned only as a pair with a partner, %s; %zu pinned as a pair",
                            talk, talk == 1 ? "" : "s", st->sticky_pair_wakeups,
                            talk == 2   ? "and these two are one if their rates match"
                            : talk == 1 ? "and its partner is not in this cgroup: not pinned"
                                        : "and of more than two only the two of a process with two "
                                          "are a pair, the rest a mesh: not pinned",
                            paired);
                if (r < 0)
                        return r;
        }
        return say(e, "sticky",
                   "%zu of %zu threads pinned to their previous %s, %zu on the way (quiet for fewer than "
                   "StickyTicks %u); a pin needs the %s's util without the thread <= %.0f%% and is released "
                   "above %.0f%% or at run-queue wait > %.0f%%",
                   pinned, c->n_threads, st->sticky_scope == STICKY_SCOPE_CPU ? "CPU" : "core", streaks,
                   st->sticky_ticks, st->sticky_scope == STICKY_SCOPE_CPU ? "CPU" : "core",
                   st->sticky_idle_percent, st->sticky_release_percent, st->sticky_max_wait_percent);
}

static int explain_balance(Explanation *e, const Snapshot *snap, const Settings *st, const CgroupState *c) {
        const LlcSample *busiest = NULL, *least = NULL;
        char m[CPUSET_STRLEN];

        if (c->home.mask)
                return say(e, "balance", "moved: the cgroup holds CPUs %s of another LLC",
                           cpuset_to_string(c->home.mask, m, sizeof(m)));
        if (snap->n_llcs < 2)
                return say(e, "balance", "nothing to balance: one LLC");
        for (size_t i = 0; i < snap->n_llcs; i++) {
                const LlcSample *l = &snap->llcs[i];
                if (l->weight == 0)
                        continue;
                if (!busiest || l->boosted > busiest->boosted)
                        busiest = l;
                if (!policy_llc_overloaded(l) && (!least || l->boosted < least->boosted))
                        least = l;
        }
        if (!busiest || !least || busiest == least)
                return say(e, "balance",
                           "no move: every LLC is overloaded, or one is the busiest and the least busy");
        double limit = least->boosted * st->imbalance_percent / 100.0;
        if (busiest->boosted <= limit)
                return say(e, "balance",
                           "no move: busiest LLC %u boosted %.0f%% <= least busy LLC %u %.0f%% x "
                           "ImbalancePercent "
                           "%u%%",
                           busiest->id, pct(busiest->boosted), least->id, pct(least->boosted),
                           st->imbalance_percent);
        return say(
                e, "balance",
                "LLC %u boosted %.0f%% > LLC %u %.0f%% x %u%%: its most waiting threads may move (at most "
                "MaxMovesPerTick %u, after MinResidencyMs, each with demand of at least %.0f%% of a CPU)",
                busiest->id, pct(busiest->boosted), least->id, pct(least->boosted), st->imbalance_percent,
                st->max_moves_per_tick, BALANCE_MIN_MOVE_DEMAND_PERCENT);
}

static int explain_plan(Explanation *e, const Plan *plan, const char *cgroup) {
        unsigned n = 0, pins = 0;
        char m[CPUSET_STRLEN];
        int r;

        for (size_t i = 0; plan && i < plan->n_actions; i++) {
                const Action *a = &plan->actions[i];
                if (!streq(a->cgroup, cgroup))
                        continue;
                n++;
                /* Stickiness acts on hundreds of threads: summed. */
                if (a->tid != 0 && a->policy == ACTION_POLICY_STICKY) {
                        pins++;
                        continue;
                }
                if (a->tid != 0)
                        r = say(e, "plan", "%s %s tid %d -> %s: %s", action_policy_to_string(a->policy),
                                action_kind_to_string(a->kind), (int) a->tid,
                                cpuset_to_string(a->cpus, m, sizeof(m)), a->reason ?: "");
                else
                        r = say(e, "plan", "%s %s -> %s: %s", action_policy_to_string(a->policy),
                                action_kind_to_string(a->kind), cpuset_to_string(a->cpus, m, sizeof(m)),
                                a->reason ?: "");
                if (r < 0)
                        return r;
        }
        if (pins > 0)
                return say(e, "plan", "sticky: %u thread actions (pins and releases)", pins);
        return n == 0 ? say(e, "plan", "no action in the last tick") : 0;
}

int policy_explain(const Snapshot *snap, const Settings *settings, const PolicyState *state,
                   const Plan *plan, const char *cgroup, uint64_t now_us, Explanation *ret) {
        _cleanup_(explanation_done) Explanation e = {};
        const CgroupSample *cg = NULL;
        const CgroupState *c;
        int r;

        if (!snap || !settings || !state || !cgroup || !ret)
                return -EINVAL;
        for (size_t i = 0; i < snap->n_cgroups && !cg; i++)
                if (streq(snap->cgroups[i].path, cgroup))
                        cg = &snap->cgroups[i];
        c = policy_state_find_cgroup(state, cgroup);
        if (!cg)
                return -ENOENT;
        if ((r = explain_cgroup(&e, settings, cg)) < 0)
                return r;
        if (!c) {
                r = say(&e, "policy", "not decided on yet (no tick since it was opted in)");
        } else if ((r = explain_window(&e, snap, settings, cg, c, now_us)) >= 0 &&
                   (r = explain_guard_layer(&e, settings, c, &c->window, ACTION_POLICY_WINDOW, now_us)) >=
                           0 &&
                   (r = explain_balance(&e, snap, settings, c)) >= 0 &&
                   (r = explain_guard_layer(&e, settings, c, &c->home, ACTION_POLICY_BALANCE, now_us)) >= 0)
                r = explain_sticky(&e, settings, cg, c);
        if (r >= 0)
                r = explain_plan(&e, plan, cgroup);
        if (r < 0)
                return r;
        *ret = e;
        e = (Explanation){};
        return 0;
}
