/* SPDX-License-Identifier: MIT */
#include <limits.h>
#include <math.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "clock.h"
#include "bus.h"
#include "cgroup-counters.h"
#include "log.h"
#include "manager-internal.h"
#include "manager-trial.h"
#include "trial-store.h"

/* The trials running now, one per cgroup (trial.h says what a trial is).
 * The manager's part: the arm in force (a hands-off cgroup is left out of
 * the tick, as an opted-out one, after its masks were given back), the
 * counters read at each block's measured start and end, the record saved
 * at each block's end, and the end of a trial whatever ends it. */

struct ManagerTrial {
        Trial *trial;
        CgroupCounters first; /* at the measured part's start */
        bool measuring;
        MetricProbe *probe; /* the operator's --metric, NULL: none */
};

static void manager_trial_free(ManagerTrial *mt) {
        if (!mt)
                return;
        trial_free(mt->trial);
        cgroup_counters_done(&mt->first);
        metric_probe_free(mt->probe);
        free(mt);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(ManagerTrial *, manager_trial_free);

static ManagerTrial *find_running(const Manager *m, const char *cgroup) {
        for (size_t i = 0; i < m->n_trials; i++)
                if (streq(m->trials[i]->trial->spec.cgroup, cgroup))
                        return m->trials[i];
        return NULL;
}

void manager_trials_free(Manager *m) {
        for (size_t i = 0; i < m->n_trials; i++)
                manager_trial_free(m->trials[i]);
        free(m->trials);
        m->trials = NULL;
        m->n_trials = 0;
        for (size_t i = 0; i < m->n_trial_latest; i++) {
                free(m->trial_latest[i].cgroup);
                free(m->trial_latest[i].id);
        }
        free(m->trial_latest);
        m->trial_latest = NULL;
        m->n_trial_latest = 0;
}

/* Remembers t as its cgroup's latest ended trial (ids sort by start: an
 * older record read at the start never replaces a newer one). */
static void remember_latest(Manager *m, const Trial *t) {
        TrialVerdict v;
        TrialLatest *l = NULL;

        if (trial_verdict(t, &v) < 0)
                return;
        for (size_t i = 0; i < m->n_trial_latest && !l; i++)
                if (streq(m->trial_latest[i].cgroup, t->spec.cgroup))
                        l = &m->trial_latest[i];
        if (l && strcmp(l->id, t->id) > 0)
                return;
        if (!l) {
                TrialLatest *a = reallocarray(m->trial_latest, m->n_trial_latest + 1, sizeof(TrialLatest));
                if (!a)
                        return;
                m->trial_latest = a;
                l = &a[m->n_trial_latest];
                *l = (TrialLatest){.cgroup = strdup(t->spec.cgroup)};
                if (!l->cgroup)
                        return;
                m->n_trial_latest++;
        }
        char *id = strdup(t->id);
        if (!id)
                return;
        free(l->id);
        l->id = id;
        l->verdict = v.verdict;
        l->has_estimate = v.has_estimate;
        l->ratio = v.e.ratio;
        l->ci_low = v.e.ci_low;
        l->ci_high = v.e.ci_high;
}

void manager_trials_load_latest(Manager *m) {
        Trial **list = NULL;
        size_t n = 0;

        if (trial_store_list(m->trials_dir, &list, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++)
                if (list[i]->state != TRIAL_STATE_RUNNING)
                        remember_latest(m, list[i]);
        trial_list_free(list, n);
}

int manager_trial_metrics(const Manager *m, MetricsTrial **ret, size_t *ret_n) {
        MetricsTrial *a = calloc(m->n_trials + m->n_trial_latest + 1, sizeof(MetricsTrial));
        size_t n = 0;

        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_trials; i++) {
                const Trial *t = m->trials[i]->trial;
                TrialVerdict v;
                if (trial_verdict(t, &v) < 0)
                        continue;
                a[n++] = (MetricsTrial){
                        .cgroup = t->spec.cgroup,
                        .verdict = stats_verdict_to_string(v.verdict),
                        .running = true,
                        .has_estimate = v.has_estimate,
                        .ratio = v.e.ratio,
                        .ci_low = v.e.ci_low,
                        .ci_high = v.e.ci_high,
                };
        }
        /* Only opted-in cgroups: the label set stays as bounded as they are. */
        for (size_t i = 0; i < m->n_trial_latest; i++) {
                const TrialLatest *l = &m->trial_latest[i];
                if (find_running(m, l->cgroup) || !optin_set_find(&m->optins, l->cgroup))
                        continue;
                a[n++] = (MetricsTrial){
                        .cgroup = l->cgroup,
                        .verdict = stats_verdict_to_string(l->verdict),
                        .has_estimate = l->has_estimate,
                        .ratio = l->ratio,
                        .ci_low = l->ci_low,
                        .ci_high = l->ci_high,
                };
        }
        *ret = a;
        *ret_n = n;
        return 0;
}

bool manager_trial_hands_off(const Manager *m, const char *cgroup) {
        const ManagerTrial *mt = find_running(m, cgroup);
        return mt && trial_arm(mt->trial) == TRIAL_ARM_HANDS_OFF;
}

bool manager_trial_running_for(const Manager *m, const char *cgroup) {
        return find_running(m, cgroup);
}

bool manager_trials_running(const Manager *m) {
        return m->n_trials > 0;
}

static void save(Manager *m, const Trial *t) {
        if (mkdir(m->state_dir, 0755) < 0 && errno != EEXIST)
                log_warning_errno(errno, "Cannot create %s", m->state_dir);
        int r = trial_store_save(m->trials_dir, t);
        if (r < 0)
                log_warning_errno(r, "Cannot save trial %s in %s", t->id, m->trials_dir);
}

/* Gives a cgroup's masks back, as an opt-out does: the hands-off arm. */
static void hands_off(Manager *m, const char *cgroup) {
        int r = actuator_release_cgroup(m->actuator, cgroup);
        if (r < 0)
                log_warning_errno(r, "Trial of %s: the hands-off block could not give everything back",
                                  cgroup);
}

/* A hands-off cgroup holds nothing, whatever got in between (a give-back
 * that failed and waits for its retry, a thread adopted at its birth): what
 * the ledger still has of it is given back again. */
void manager_hands_off_hold_nothing(Manager *m, const char *cgroup) {
        _cleanup_(freep) pid_t *tids = NULL;
        size_t n = 0, alloc = 0;

        (void) actuator_owned_tids(m->actuator, cgroup, &tids, &n, &alloc);
        if (n == 0 && !actuator_cgroup_original(m->actuator, cgroup))
                return;
        log_debug("Cgroup %s is hands-off, yet steerd held %zu thread masks%s of it: giving them back",
                  cgroup, n, actuator_cgroup_original(m->actuator, cgroup) ? " and its CPUs" : "");
        hands_off(m, cgroup);
}

static void log_end(const Trial *t) {
        TrialVerdict v;
        if (trial_verdict(t, &v) < 0)
                return;
        log_struct(LOG_NOTICE, STEERD_MESSAGE_TRIAL, "Trial %s of %s %s%s%s: %s (by %s)", t->id,
                   t->spec.cgroup, trial_state_to_string(t->state), t->end_reason ? ": " : "",
                   t->end_reason ?: "", v.text, t->spec.metric ?: trial_signal_to_string(t->spec.primary));
}

/* Takes trial i out of the running set (it ended): saved, logged, told. */
static void retire(Manager *m, size_t i) {
        ManagerTrial *mt = m->trials[i];

        save(m, mt->trial);
        (void) trial_store_prune(m->trials_dir, TRIAL_STORE_KEEP);
        remember_latest(m, mt->trial);
        log_end(mt->trial);
        bus_emit_trial_progress(m, mt->trial);
        m->trials[i] = m->trials[--m->n_trials];
        manager_trial_free(mt);
        manager_sample_soon(m);
}

void manager_trials_end_all(Manager *m, TrialState state, const char *reason) {
        while (m->n_trials > 0) {
                (void) trial_finish(m->trials[0]->trial, state, reason);
                retire(m, 0);
        }
}

static int parse_direction(TrialDirection d, TrialSignal primary, const MetricProbe *probe, bool *ret,
                           char **ret_error) {
        if (d == TRIAL_DIRECTION_HIGHER || d == TRIAL_DIRECTION_LOWER) {
                *ret = d == TRIAL_DIRECTION_HIGHER;
                return 0;
        }
        if (primary != TRIAL_SIGNAL_METRIC) {
                *ret = trial_signal_higher_is_better(primary);
                return 0;
        }
        bool known = false;
        bool hib = metric_probe_higher_is_better(probe, &known);
        if (!known) {
                *ret_error = strdup("a gauge has no direction steerd could know: say --higher-is-better or "
                                    "--lower-is-better");
                return -EINVAL;
        }
        *ret = hib;
        return 0;
}

int manager_trial_start(Manager *m, const char *cgroup, uint64_t duration_us, uint64_t block_us,
                        const char *metric, TrialDirection direction, char **ret_id, char **ret_error) {
        _cleanup_(manager_trial_freep) ManagerTrial *mt = NULL;
        uint64_t now, period = m->config->settings.sample_period_ms * USEC_PER_MSEC;
        TrialSignal primary = TRIAL_SIGNAL_LATENCY;
        int r;

        const OptIn *o = NULL;
        for (size_t i = 0; i < m->optins.n && !o; i++)
                if (streq(m->optins.items[i].name, cgroup) ||
                    (m->optins.items[i].loc.dir && streq(m->optins.items[i].loc.dir, cgroup)))
                        o = &m->optins.items[i];
        if (!o)
                return -ENOENT;
        if (!o->loc.dir) {
                *ret_error = strdup("it is opted in but does not exist now");
                return -ENODEV;
        }
        if (!mode_applies(m->mode)) {
                if (asprintf(ret_error,
                             "mode %s steers nothing: a trial compares steering with none, in mode "
                             "latency or balanced",
                             mode_to_string(m->mode)) < 0)
                        *ret_error = NULL;
                return -EOPNOTSUPP;
        }
        if (find_running(m, o->name))
                return -EBUSY;

        mt = calloc(1, sizeof(ManagerTrial));
        if (!mt)
                return -ENOMEM;
        if (metric && metric[0]) {
                TrialSignal s = trial_signal_from_string(metric);
                if (s >= 0 && s != TRIAL_SIGNAL_METRIC)
                        primary = s;
                else {
                        /* Read once now: a source that cannot be read or parsed is an
                         * error at the start, not a surprise at the verdict. */
                        r = metric_probe_new(metric, now_realtime_usec(), &mt->probe, ret_error);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0) /* not -ENOENT: that is a cgroup not opted in */
                                return -EINVAL;
                        primary = TRIAL_SIGNAL_METRIC;
                }
        }
        bool hib;
        r = parse_direction(direction, primary, mt->probe, &hib, ret_error);
        if (r < 0)
                return r;

        uint64_t seed = 0;
        if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
                seed = now_realtime_usec() ^ ((uint64_t) getpid() << 32);
        TrialSpec spec = {
                .cgroup = o->name,
                .duration_us = duration_us ?: TRIAL_DEFAULT_DURATION_USEC,
                .block_us = block_us ?: TRIAL_DEFAULT_BLOCK_USEC,
                .metric = (char *) (metric && metric[0] ? metric : NULL),
                .primary = primary,
                .higher_is_better = hib,
                .margin = TRIAL_DEFAULT_MARGIN,
                .seed = seed,
        };
        char id[64];
        uint64_t rt = now_realtime_usec();
        /* Unique also across restarts (the sequence starts again at 1). */
        for (unsigned tries = 0;; tries++) {
                r = trial_make_id(rt, ++m->trial_seq, id, sizeof(id));
                if (r < 0)
                        return r;
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/%s.json", m->trials_dir, id);
                if (tries >= 1000 || access(path, F_OK) < 0)
                        break;
        }
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        r = trial_new(id, &spec, MAX(10 * period, USEC_PER_SEC), now, rt, &mt->trial, ret_error);
        if (r < 0)
                return r;
        ManagerTrial **l = reallocarray(m->trials, m->n_trials + 1, sizeof(ManagerTrial *));
        if (!l)
                return -ENOMEM;
        m->trials = l;
        /* The first block is a readiness block: hands-off from now. */
        hands_off(m, o->name);
        save(m, mt->trial);
        log_struct(LOG_NOTICE, STEERD_MESSAGE_TRIAL,
                   "Trial %s of %s started: %zu blocks of %.0f s (2 hands-off to measure the noise, then "
                   "pairs in random order), judged by %s, %s is better",
                   id, o->name, mt->trial->n_blocks,
                   block_us ? block_us / 1e6 : TRIAL_DEFAULT_BLOCK_USEC / 1e6,
                   spec.metric ?: trial_signal_to_string(primary), hib ? "higher" : "lower");
        char *d = strdup(id);
        if (!d)
                return -ENOMEM;
        m->trials[m->n_trials++] = TAKE_PTR(mt);
        bus_emit_trial_progress(m, m->trials[m->n_trials - 1]->trial);
        manager_sample_soon(m);
        *ret_id = d;
        return 0;
}

int manager_trial_stop(Manager *m, const char *cgroup, char **ret_id) {
        for (size_t i = 0; i < m->n_trials; i++) {
                Trial *t = m->trials[i]->trial;
                const OptIn *o = optin_set_find(&m->optins, t->spec.cgroup);
                if (!streq(t->spec.cgroup, cgroup) && !(o && o->loc.dir && streq(o->loc.dir, cgroup)))
                        continue;
                char *id = strdup(t->id);
                if (!id)
                        return -ENOMEM;
                (void) trial_finish(t, TRIAL_STATE_STOPPED, "steerctl trial --stop");
                retire(m, i);
                *ret_id = id;
                return 0;
        }
        return -ENOENT;
}

/* ---- each tick ---- */

static bool plan_touches(const Plan *plan, const char *cgroup) {
        for (size_t i = 0; plan && i < plan->n_actions; i++)
                if (streq(plan->actions[i].cgroup, cgroup))
                        return true;
        return false;
}

/* The block's figures: the built-in signals from the counters, the
 * operator's metric from its probe (mid-trial failures fall back to the
 * built-in signals, said once in the record's note). */
static void block_values(Manager *m, ManagerTrial *mt, const CgroupCounters *last, TrialValues *ret) {
        Trial *t = mt->trial;
        TrialValues v = {};

        (void) cgroup_counters_values(&mt->first, last, &v);
        if (mt->probe) {
                double x;
                _cleanup_(freep) char *error = NULL;
                int r = metric_probe_block_end(mt->probe, now_realtime_usec(), &x, &error);
                if (r >= 0) {
                        v.has[TRIAL_SIGNAL_METRIC] = true;
                        v.v[TRIAL_SIGNAL_METRIC] = x;
                } else if (r != -ENODATA && t->spec.primary == TRIAL_SIGNAL_METRIC) {
                        /* The metric failed: the trial goes on, by latency. */
                        free(t->note);
                        if (asprintf(&t->note,
                                     "block %zu: the metric could not be read (%s): judged by latency from "
                                     "there",
                                     t->current + 1, error ?: strerror(-r)) < 0)
                                t->note = NULL;
                        log_warning("Trial %s of %s: %s", t->id, t->spec.cgroup,
                                    t->note ?: "the metric failed");
                        t->spec.primary = TRIAL_SIGNAL_LATENCY;
                        t->spec.higher_is_better = false;
                        mt->probe = metric_probe_free(mt->probe);
                }
        }
        *ret = v;
}

static void tick_one(Manager *m, size_t i, uint64_t now_us, const Plan *plan, bool *ret_retired) {
        ManagerTrial *mt = m->trials[i];
        Trial *t = mt->trial;
        const OptIn *o = optin_set_find(&m->optins, t->spec.cgroup);
        int r;

        *ret_retired = false;
        if (!o || !o->loc.dir) {
                (void) trial_finish(t, TRIAL_STATE_INTERRUPTED,
                                    o ? "the cgroup is gone" : "the cgroup was opted out");
                retire(m, i);
                *ret_retired = true;
                return;
        }
        bool acted = trial_arm(t) == TRIAL_ARM_STEERED && plan_touches(plan, t->spec.cgroup);
        if (trial_arm(t) == TRIAL_ARM_HANDS_OFF)
                manager_hands_off_hold_nothing(m, t->spec.cgroup);
        TrialStep step = trial_tick(t, now_us, acted);
        if (step == TRIAL_STEP_NONE) {
                if (mt->probe && mt->measuring)
                        (void) metric_probe_sample(mt->probe, now_realtime_usec());
                return;
        }
        if (step == TRIAL_STEP_MEASURE) {
                cgroup_counters_done(&mt->first);
                r = cgroup_counters_read(m->root, &o->loc, now_us, &mt->first);
                if (r == -ENOENT) {
                        (void) trial_finish(t, TRIAL_STATE_INTERRUPTED, "the cgroup is gone");
                        retire(m, i);
                        *ret_retired = true;
                        return;
                }
                if (mt->probe)
                        (void) metric_probe_block_start(mt->probe, now_realtime_usec());
                mt->measuring = r >= 0;
                return;
        }

        CgroupCounters last = {};
        TrialValues v = {};
        r = cgroup_counters_read(m->root, &o->loc, now_us, &last);
        if (r >= 0 && mt->measuring)
                block_values(m, mt, &last, &v);
        cgroup_counters_done(&last);
        mt->measuring = false;
        TrialArm was = trial_arm(t);
        int next;
        if (trial_end_block(t, now_us, &v, &next) < 0)
                return;
        /* Nothing ran in either readiness block: there is nothing to compare. */
        if (t->current == TRIAL_READINESS_BLOCKS && !t->blocks[0].values.has[t->spec.primary] &&
            !t->blocks[1].values.has[t->spec.primary]) {
                (void) trial_finish(
                        t, TRIAL_STATE_FAILED,
                        "nothing to measure: the cgroup's threads did not run (or its metric did not "
                        "move) in either hands-off readiness block");
                retire(m, i);
                *ret_retired = true;
                return;
        }
        if (next < 0) {
                retire(m, i);
                *ret_retired = true;
                return;
        }
        if (next == TRIAL_ARM_HANDS_OFF && was == TRIAL_ARM_STEERED)
                hands_off(m, t->spec.cgroup);
        save(m, t);
        bus_emit_trial_progress(m, t);
}

void manager_trials_tick(Manager *m, uint64_t now_us, const Plan *plan) {
        for (size_t i = 0; i < m->n_trials;) {
                bool retired;
                tick_one(m, i, now_us, plan, &retired);
                if (!retired)
                        i++;
        }
}

/* ---- what the bus shows ---- */

int manager_trial_summaries(const Manager *m, TrialSummary **ret, size_t *ret_n) {
        TrialSummary *s = calloc(MAX(m->n_trials, (size_t) 1), sizeof(TrialSummary));
        uint64_t now = 0;

        if (!s)
                return -ENOMEM;
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        for (size_t i = 0; i < m->n_trials; i++)
                trial_summary(m->trials[i]->trial, now, &s[i]);
        *ret = s;
        *ret_n = m->n_trials;
        return 0;
}

void trial_summary(const Trial *t, uint64_t now_us, TrialSummary *ret) {
        TrialVerdict v = {};
        (void) trial_verdict(t, &v);
        *ret = (TrialSummary){
                .id = t->id,
                .cgroup = t->spec.cgroup,
                .state = trial_state_to_string(t->state),
                .arm = t->state == TRIAL_STATE_RUNNING ? trial_arm_to_string(trial_arm(t)) : "",
                .progress = t->state == TRIAL_STATE_RUNNING ? trial_progress(t, now_us)
                            : t->state == TRIAL_STATE_DONE  ? 1
                                                            : (double) t->current / (double) t->n_blocks,
                .ratio = v.has_estimate ? v.e.ratio : NAN,
                .ci_low = v.has_estimate ? v.e.ci_low : NAN,
                .ci_high = v.has_estimate ? v.e.ci_high : NAN,
                .verdict = stats_verdict_to_string(v.verdict),
        };
        snprintf(ret->text, sizeof(ret->text), "%s", v.text);
}

int manager_trial_json(const Manager *m, const char *id_or_cgroup, char **ret) {
        for (size_t i = 0; i < m->n_trials; i++) {
                const Trial *t = m->trials[i]->trial;
                if (streq(t->id, id_or_cgroup) || streq(t->spec.cgroup, id_or_cgroup))
                        return trial_to_json(t, ret);
        }
        if (!trial_id_valid(id_or_cgroup))
                return -ENOENT;
        _cleanup_(trial_freep) Trial *t = NULL;
        int r = trial_store_load(m->trials_dir, id_or_cgroup, &t);
        if (r < 0)
                return r == -EBADMSG ? -EBADMSG : -ENOENT;
        return trial_to_json(t, ret);
}

int manager_trial_list(const Manager *m, TrialSummary **ret, size_t *ret_n, Trial ***ret_owned,
                       size_t *ret_n_owned) {
        Trial **list = NULL;
        size_t n = 0;
        int r;

        r = trial_store_list(m->trials_dir, &list, &n);
        if (r < 0)
                return r;
        TrialSummary *s = calloc(MAX(n, (size_t) 1), sizeof(TrialSummary));
        if (!s) {
                trial_list_free(list, n);
                return -ENOMEM;
        }
        uint64_t now = 0;
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        for (size_t i = 0; i < n; i++) {
                /* A running trial's record on disk is a block behind: show the live one. */
                const Trial *t = list[i];
                for (size_t k = 0; k < m->n_trials; k++)
                        if (streq(m->trials[k]->trial->id, t->id))
                                t = m->trials[k]->trial;
                trial_summary(t, t == list[i] ? 0 : now, &s[i]);
        }
        *ret = s;
        *ret_n = n;
        *ret_owned = list;
        *ret_n_owned = n;
        return 0;
}
