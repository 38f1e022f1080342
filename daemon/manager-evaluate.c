/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <sys/random.h>
#include <time.h>

#include "bus.h"
#include "cgroup-counters.h"
#include "log.h"
#include "manager-evaluate.h"
#include "manager-internal.h"
#include "manager-search.h"
#include "manager-trial.h"

/* Evaluate=auto (core/trial/evaluate.h) per opted-in cgroup: created when a
 * cgroup is opted in with it (or inherits it), dropped when it no longer
 * is; paused while an operator's trial of the cgroup runs. */

struct ManagerEval {
        char *cgroup;
        Evaluation ev;
        CgroupCounters first;
        bool has_first;
        bool seen; /* in this tick's sync */
};

static void eval_free(ManagerEval *e) {
        if (!e)
                return;
        free(e->cgroup);
        cgroup_counters_done(&e->first);
        free(e);
}

void manager_evaluations_free(Manager *m) {
        for (size_t i = 0; i < m->n_evals; i++)
                eval_free(m->evals[i]);
        free(m->evals);
        m->evals = NULL;
        m->n_evals = 0;
}

static ManagerEval *find_eval(const Manager *m, const char *cgroup) {
        for (size_t i = 0; i < m->n_evals; i++)
                if (streq(m->evals[i]->cgroup, cgroup))
                        return m->evals[i];
        return NULL;
}

bool manager_evaluate_wanted(const Manager *m, const OptIn *o) {
        /* A searched cgroup is not: its search compares steerd's policy
         * with hands-off already, among its candidates. */
        if (manager_search_wanted(m, o))
                return false;
        return o->evaluate == OPTIN_EVALUATE_AUTO ||
               (o->evaluate == OPTIN_EVALUATE_INHERIT && m->config->settings.evaluate);
}

bool manager_evaluation_hands_off(const Manager *m, const char *cgroup) {
        const ManagerEval *e = find_eval(m, cgroup);
        /* An operator's trial of the cgroup decides its arms meanwhile. */
        return e && !manager_trial_running_for(m, cgroup) && evaluate_hands_off(&e->ev);
}

static int add_eval(Manager *m, const char *cgroup, uint64_t now_us) {
        const Settings *st = &m->config->settings;
        ManagerEval **l = reallocarray(m->evals, m->n_evals + 1, sizeof(ManagerEval *));
        if (!l)
                return -ENOMEM;
        m->evals = l;
        ManagerEval *e = calloc(1, sizeof(ManagerEval));
        if (!e)
                return -ENOMEM;
        e->cgroup = strdup(cgroup);
        uint64_t seed = now_us;
        (void) getrandom(&seed, sizeof(seed), GRND_NONBLOCK);
        int r = e->cgroup ? evaluate_init(&e->ev, st->evaluate_duty, st->evaluate_block_ms * USEC_PER_MSEC,
                                          st->harm_percent / 100, st->evaluate_retry_ms * USEC_PER_MSEC,
                                          seed, now_us)
                          : -ENOMEM;
        if (r < 0) {
                eval_free(e);
                return r;
        }
        e->seen = true;
        m->evals[m->n_evals++] = e;
        log_struct(LOG_INFO, STEERD_MESSAGE_TRIAL,
                   "Cgroup %s: evaluated for good (Evaluate=auto): one hands-off block of %.0f s in %u "
                   "(in 2 until %d pairs are in), steering turned off if it hurts by more than %.1f%%",
                   cgroup, st->evaluate_block_ms / 1e3, st->evaluate_duty, EVALUATE_MIN_PAIRS,
                   st->harm_percent);
        return 0;
}

/* The evaluations follow the opted-in set and the mode. */
static void sync_evals(Manager *m, uint64_t now_us) {
        for (size_t i = 0; i < m->n_evals; i++)
                m->evals[i]->seen = false;
        for (size_t i = 0; mode_applies(m->mode) && i < m->optins.n; i++) {
                const OptIn *o = &m->optins.items[i];
                if (!o->loc.dir || !manager_evaluate_wanted(m, o))
                        continue;
                ManagerEval *e = find_eval(m, o->name);
                if (e)
                        e->seen = true;
                else
                        (void) add_eval(m, o->name, now_us);
        }
        for (size_t i = 0; i < m->n_evals;) {
                if (m->evals[i]->seen) {
                        i++;
                        continue;
                }
                eval_free(m->evals[i]);
                m->evals[i] = m->evals[--m->n_evals];
        }
}

static const OptIn *find_optin_loc(const Manager *m, const char *cgroup) {
        const OptIn *o = optin_set_find(&m->optins, cgroup);
        return o && o->loc.dir ? o : NULL;
}

static void estimate_text(const Evaluation *ev, char *buf, size_t size) {
        RatioEstimate s;

        if (!ev->has_estimate) {
                snprintf(buf, size, "%zu pair%s of blocks so far", ev->n_logs, ev->n_logs == 1 ? "" : "s");
                return;
        }
        int n = snprintf(buf, size, "latency steered/hands-off %.3f [%.3f, %.3f] over the last %zu pairs",
                         ev->estimate.ratio, ev->estimate.ci_low, ev->estimate.ci_high, ev->n_logs);
        if (n > 0 && (size_t) n < size && ev->n_slice_logs >= 2 &&
            stats_log_ratios(ev->slice_logs, ev->n_slice_logs, &s) >= 0)
                snprintf(buf + n, size - (size_t) n, ", slices a second %.3f [%.3f, %.3f]", s.ratio,
                         s.ci_low, s.ci_high);
}

static void tick_one(Manager *m, ManagerEval *e, uint64_t now_us) {
        const OptIn *o = find_optin_loc(m, e->cgroup);
        bool was_off = evaluate_hands_off(&e->ev);
        char est[256];

        if (!o)
                return;
        if (was_off)
                manager_hands_off_hold_nothing(m, e->cgroup);
        switch (evaluate_tick(&e->ev, now_us)) {
        case EVALUATE_STEP_NONE:
                return;
        case EVALUATE_STEP_RETRY:
                log_struct(LOG_NOTICE, STEERD_MESSAGE_TRIAL,
                           "Cgroup %s: steering on again after the back-off (EvaluateRetryMs=); evaluated "
                           "afresh",
                           e->cgroup);
                bus_emit_steering_evaluated(m, e->cgroup, true, "the back-off is over: steering again");
                manager_sample_soon(m);
                return;
        case EVALUATE_STEP_MEASURE:
                cgroup_counters_done(&e->first);
                e->has_first = cgroup_counters_read(m->root, &o->loc, now_us, &e->first) >= 0;
                return;
        case EVALUATE_STEP_END:
                break;
        }
        bool has = false, turned_off = false;
        TrialValues v = {};
        if (e->has_first && evaluate_measured(&e->ev)) {
                CgroupCounters last = {};
                has = cgroup_counters_read(m->root, &o->loc, now_us, &last) >= 0 &&
                      cgroup_counters_values(&e->first, &last, &v) >= 0;
                cgroup_counters_done(&last);
        }
        e->has_first = false;
        if (evaluate_end_block(&e->ev, now_us, has ? &v : NULL, &turned_off) < 0)
                return;
        if (turned_off) {
                estimate_text(&e->ev, est, sizeof(est));
                log_struct(LOG_WARNING, STEERD_MESSAGE_TRIAL,
                           "Cgroup %s: steering turned off: it hurts by more than HarmPercent=%.1f%% (%s); "
                           "tried "
                           "again in %.1f h",
                           e->cgroup, e->ev.harm * 100, est, e->ev.retry_us / 3.6e9);
                char why[300];
                snprintf(why, sizeof(why), "it hurts: %s", est);
                bus_emit_steering_evaluated(m, e->cgroup, false, why);
        }
        bool off = evaluate_hands_off(&e->ev);
        if (off && !was_off) {
                int r = actuator_release_cgroup(m->actuator, e->cgroup);
                if (r < 0)
                        log_warning_errno(r, "Cgroup %s: the hands-off block could not give everything back",
                                          e->cgroup);
        }
        if (!off && was_off)
                manager_sample_soon(m);
}

void manager_evaluations_tick(Manager *m, uint64_t now_us) {
        sync_evals(m, now_us);
        for (size_t i = 0; i < m->n_evals; i++)
                if (!manager_trial_running_for(m, m->evals[i]->cgroup))
                        tick_one(m, m->evals[i], now_us);
}

int manager_evaluation_explain(const Manager *m, const char *cgroup, uint64_t now_us, char **ret) {
        const ManagerEval *e = find_eval(m, cgroup);
        char est[256];
        char *t = NULL;

        if (!e)
                return -ENOENT;
        const Evaluation *ev = &e->ev;
        estimate_text(ev, est, sizeof(est));
        int r;
        if (ev->off)
                r = asprintf(&t,
                             "Evaluate=auto: steering is OFF: it hurt by more than HarmPercent=%.1f%% (%s) "
                             "%.0f s "
                             "ago; tried again in %.0f s",
                             ev->harm * 100, est, (now_us - ev->off_since_us) / 1e6,
                             ev->retry_at_us > now_us ? (ev->retry_at_us - now_us) / 1e6 : 0.0);
        else
                r = asprintf(
                        &t,
                        "Evaluate=auto: steering on, one hands-off block of %.0f s in %u%s (%s now); %s; "
                        "turned off %u time%s so far",
                        ev->block_us / 1e6, ev->cycle,
                        ev->cycle < ev->duty ? " (the fast start, until 4 pairs are in)" : "",
                        evaluate_hands_off(ev) ? "hands-off" : "steered", est, ev->times_off,
                        ev->times_off == 1 ? "" : "s");
        if (r < 0)
                return -ENOMEM;
        *ret = t;
        return 0;
}

bool manager_evaluation_steering_off(const Manager *m, const char *cgroup) {
        const ManagerEval *e = find_eval(m, cgroup);
        return e && e->ev.off;
}
