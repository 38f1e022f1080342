/* SPDX-License-Identifier: MIT */
#include <sys/stat.h>
#include <time.h>

#include "clock.h"
#include "bus.h"
#include "cgroup-confine.h"
#include "log.h"
#include "manager-internal.h"
#include "manager-evaluate.h"
#include "manager-search.h"
#include "manager-trial.h"
#include "snapshot-json.h"

/* ---- mode, reload ---- */

static const char *const mode_source_table[_MODE_SOURCE_MAX] = {
        [MODE_SOURCE_CONFIG] = "config",
        [MODE_SOURCE_RUNTIME] = "runtime",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(mode_source, ModeSource, _MODE_SOURCE_MAX);

const char *manager_mode_origin(const Manager *m, char *buf, size_t size) {
        const char *config = m->config_path ?: STEERD_DEFAULT_CONFIG;

        if (m->mode_source == MODE_SOURCE_CONFIG) {
                snprintf(buf, size, "config %s", config);
                return buf;
        }
        char when[64] = "an unknown time";
        time_t t = (time_t) (m->mode_set_usec / USEC_PER_SEC);
        struct tm tm;
        if (m->mode_set_usec > 0 && gmtime_r(&t, &tm))
                strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
        snprintf(buf, size, "steerctl at %s (%s; the config %s says %s)", when,
                 m->config->settings.persist_runtime ? m->runtime_file : "not saved: PersistRuntime=no",
                 config, mode_to_string(m->config->settings.mode));
        return buf;
}

int manager_set_mode(Manager *m, Mode mode) {
        if (mode < 0 || mode >= _MODE_MAX)
                return -EINVAL;
        if (mode == m->mode)
                return 0;
        Mode old = m->mode;
        m->mode = mode;
        if (mode_applies(old) && !mode_applies(mode)) {
                char why[64];
                snprintf(why, sizeof(why), "the mode changed to %s", mode_to_string(mode));
                manager_trials_end_all(m, TRIAL_STATE_INTERRUPTED, why);
                /* Nothing applied may outlive the mode that applied it. */
                (void) actuator_release_all(m->actuator);
                sampler_reread_threads(m->sampler);
        }
        if (mode_applies(old) != mode_applies(mode) || mode == MODE_OFF) {
                /* The engine's idea of what is applied is void now: start afresh. */
                PolicyState *fresh = NULL;
                if (policy_state_new(&fresh) >= 0) {
                        policy_state_free(m->policy);
                        m->policy = fresh;
                }
        }
        char origin[512];
        log_struct(LOG_NOTICE, STEERD_MESSAGE_CONFIG, "Mode %s -> %s, set by %s", mode_to_string(old),
                   mode_to_string(mode), manager_mode_origin(m, origin, sizeof(origin)));
        bus_emit_mode_changed(m);
        manager_sample_soon(m);
        return 1;
}

static void save_runtime(Manager *m) {
        if (!m->config->settings.persist_runtime)
                return;
        if (mkdir(m->state_dir, 0755) < 0 && errno != EEXIST) {
                log_warning_errno(errno, "Cannot create %s; runtime changes will not survive a restart",
                                  m->state_dir);
                return;
        }
        (void) runtime_state_save(&m->runtime, m->runtime_file);
}

int manager_set_mode_runtime(Manager *m, Mode mode) {
        if (mode < 0 || mode >= _MODE_MAX)
                return -EINVAL;
        m->mode_source = MODE_SOURCE_RUNTIME;
        m->mode_set_usec = now_realtime_usec();
        int r = manager_set_mode(m, mode);
        if (r < 0)
                return r;
        m->runtime.has_mode = true;
        m->runtime.mode = mode;
        m->runtime.mode_set_usec = m->mode_set_usec;
        save_runtime(m);
        if (r == 0)
                bus_emit_mode_properties(m); /* the same mode, from a new source */
        return 0;
}

int manager_reset_mode(Manager *m) {
        if (m->mode_source == MODE_SOURCE_CONFIG && !m->runtime.has_mode)
                return 0;
        m->runtime.has_mode = false;
        m->runtime.mode_set_usec = 0;
        save_runtime(m);
        m->mode_source = MODE_SOURCE_CONFIG;
        m->mode_set_usec = 0;
        log_struct(LOG_NOTICE, STEERD_MESSAGE_CONFIG,
                   "Saved mode dropped (steerctl mode --reset): the config's Mode=%s applies",
                   mode_to_string(m->config->settings.mode));
        if (manager_set_mode(m, m->config->settings.mode) == 0)
                bus_emit_mode_properties(m);
        return 1;
}

int manager_opt_in(Manager *m, const char *cgroup, CgroupPolicy policy) {
        return manager_opt_in_full(m, cgroup, policy, OPTIN_EVALUATE_INHERIT, OPTIN_SEARCH_INHERIT);
}

int manager_opt_in_full(Manager *m, const char *cgroup, CgroupPolicy policy, OptInEvaluate evaluate,
                        OptInSearch search) {
        OptInRuleKind kind = optin_rule_kind(cgroup);
        char why[CGROUP_WHY_MAX];
        uint64_t now;
        int r;

        if (kind < 0)
                return -EINVAL;
        /* Confined to the cgroup mounts, as every rule from outside. */
        r = optin_rule_check(m->root, &m->mounts, cgroup, /* check_dir= */ true, why, sizeof(why));
        if (r < 0)
                return r;
        /* A path must name a cgroup that exists; a glob or a unit stands for
         * cgroups that may come later. */
        if (kind == OPTIN_RULE_PATH) {
                CgroupLocation loc = {};
                r = cgroup_resolve(m->root, &m->mounts, cgroup, &loc);
                if (r < 0)
                        return r;
                cgroup_location_done(&loc);
        }
        r = runtime_state_opt_in_full(&m->runtime, cgroup, policy, evaluate, search);
        if (r < 0)
                return r;
        save_runtime(m);
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        return manager_refresh_optins(m, now, kind != OPTIN_RULE_PATH);
}

static bool has_rule(const OptInEntry *e, size_t n, const char *rule) {
        for (size_t i = 0; i < n; i++)
                if (streq(e[i].cgroup, rule))
                        return true;
        return false;
}

int manager_opt_out(Manager *m, const char *cgroup) {
        uint64_t now;
        int r;

        /* An opted-in cgroup, or a rule of steerctl's or the config's (which
         * then matches nothing until it is opted in again). */
        if (!optin_set_find(&m->optins, cgroup) &&
            !has_rule(m->runtime.opt_ins, m->runtime.n_opt_ins, cgroup) &&
            !has_rule(m->config->opt_ins, m->config->n_opt_ins, cgroup))
                return -ENOENT;
        r = runtime_state_opt_out(&m->runtime, cgroup);
        if (r < 0)
                return r;
        save_runtime(m);
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        return manager_refresh_optins(m, now, false);
}

void manager_counters(const Manager *m, ManagerCounters *ret) {
        PolicyCounters c;
        policy_state_counters(m->policy, &c);
        *ret = (ManagerCounters){
                .ticks = m->ticks,
                .applied = c.applied,
                .kept = c.kept,
                .reverted = c.reverted,
                .restored = c.restored,
                .failed = m->actions_failed,
                .adopted = m->threads_adopted,
                .dropped = c.dropped,
        };
}

static const OptIn *find_optin(const Manager *m, const char *cgroup) {
        const OptIn *o = optin_set_find(&m->optins, cgroup);
        for (size_t i = 0; !o && i < m->optins.n; i++)
                if (m->optins.items[i].loc.dir && streq(m->optins.items[i].loc.dir, cgroup))
                        o = &m->optins.items[i];
        return o;
}

static int explain_unsampled(const Manager *m, const OptIn *o, Explanation *ret) {
        Explanation e = {.lines = calloc(1, sizeof(ExplainLine)), .n = 1};
        if (!e.lines)
                return -ENOMEM;
        e.lines[0].topic = strdup("cgroup");
        if (asprintf(&e.lines[0].text, "%s: opted in (%s, rule %s) with policy %s, %s", o->name,
                     optin_source_to_string(o->source), o->rule, cgroup_policy_to_string(o->policy),
                     o->refused    ? "but its directory is refused (not confined to the cgroup mounts)"
                     : !o->loc.dir ? "but it does not exist now: steered once it appears"
                     : mode_applies(m->mode) || m->mode == MODE_OBSERVE
                             ? "not sampled yet: no tick since"
                             : "but mode off samples nothing") < 0)
                e.lines[0].text = NULL;
        if (!e.lines[0].topic || !e.lines[0].text) {
                explanation_done(&e);
                return -ENOMEM;
        }
        *ret = e;
        return 0;
}

/* Appends (topic, text) to e, taking text. */
static int explain_append(Explanation *e, const char *topic, char *text) {
        ExplainLine *l = reallocarray(e->lines, e->n + 1, sizeof(ExplainLine));
        if (!l) {
                free(text);
                return -ENOMEM;
        }
        e->lines = l;
        l[e->n] = (ExplainLine){.topic = strdup(topic), .text = text};
        if (!l[e->n].topic) {
                free(text);
                return -ENOMEM;
        }
        e->n++;
        return 0;
}

/* What a trial or Evaluate=auto does to the cgroup: first, since it says
 * why the rest may not apply (a hands-off block, steering off). */
static int explain_trials(const Manager *m, const OptIn *o, uint64_t now, Explanation *e) {
        _cleanup_(freep) TrialSummary *s = NULL;
        size_t n = 0;
        char *t = NULL;
        int r;

        r = manager_trial_summaries(m, &s, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                if (!streq(s[i].cgroup, o->name))
                        continue;
                if (asprintf(&t,
                             "trial %s running, %.0f%% done, %s block now (hands-off blocks steer nothing): "
                             "%s",
                             s[i].id, s[i].progress * 100, s[i].arm, s[i].text) < 0)
                        return -ENOMEM;
                r = explain_append(e, "trial", TAKE_PTR(t));
                if (r < 0)
                        return r;
        }
        r = manager_search_explain(m, o->name, now, &t);
        if (r < 0 && r != -ENOENT)
                return r;
        if (r >= 0 && (r = explain_append(e, "search", TAKE_PTR(t))) < 0)
                return r;
        r = manager_evaluation_explain(m, o->name, now, &t);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        return explain_append(e, "evaluate", t);
}

int manager_explain(const Manager *m, const char *cgroup, Explanation *ret) {
        const OptIn *o = find_optin(m, cgroup);
        _cleanup_(explanation_done) Explanation e = {};
        uint64_t now = 0;
        int r;

        if (!o)
                return -ENOENT;
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        if (!m->last_snapshot)
                r = explain_unsampled(m, o, &e);
        else {
                Settings settings = m->config->settings;
                settings.mode = m->mode;
                r = policy_explain(m->last_snapshot, &settings, m->policy, m->last_plan, o->name, now, &e);
                if (r == -ENOENT)
                        r = explain_unsampled(m, o, &e);
        }
        if (r < 0)
                return r;
        r = explain_trials(m, o, now, &e);
        if (r < 0)
                return r;
        *ret = e;
        e = (Explanation){};
        return 0;
}

int manager_describe_json(const Manager *m, char **ret) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object(),
                                                *counters = json_object_new_object();
        ManagerCounters c;
        int r;

        if (!o || !counters)
                return -ENOMEM;
        json_object_object_add(o, "mode", json_object_new_string(mode_to_string(m->mode)));
        if (m->last_snapshot) {
                json_object *snap = NULL;
                r = snapshot_to_json(m->last_snapshot, &snap);
                if (r < 0)
                        return r;
                json_object_object_add(o, "snapshot", snap);
        } else
                json_object_object_add(o, "snapshot", NULL);
        json_object *plan = NULL;
        if (m->last_plan) {
                _cleanup_(freep) char *text = NULL;
                r = plan_to_json(m->last_plan, (unsigned) m->ticks, &text);
                if (r < 0)
                        return r;
                json_object *po = json_tokener_parse(text), *actions;
                if (po && json_object_object_get_ex(po, "actions", &actions))
                        plan = json_object_get(actions);
                json_object_put(po);
        }
        json_object_object_add(o, "plan", plan ?: json_object_new_array());
        manager_counters(m, &c);
        json_object_object_add(counters, "ticks", json_object_new_uint64(c.ticks));
        json_object_object_add(counters, "applied", json_object_new_uint64(c.applied));
        json_object_object_add(counters, "kept", json_object_new_uint64(c.kept));
        json_object_object_add(counters, "reverted", json_object_new_uint64(c.reverted));
        json_object_object_add(counters, "restored", json_object_new_uint64(c.restored));
        json_object_object_add(counters, "failed", json_object_new_uint64(c.failed));
        json_object_object_add(counters, "adopted", json_object_new_uint64(c.adopted));
        json_object_object_add(counters, "dropped", json_object_new_uint64(c.dropped));
        json_object_object_add(o, "counters", TAKE_PTR(counters));

        const char *t =
                json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        char *d = t ? strdup(t) : NULL;
        if (!d)
                return -ENOMEM;
        *ret = d;
        return 0;
}

int manager_reload(Manager *m, char **ret_error) {
        Config *c = NULL;
        int r;

        r = config_load_full(m->config_path ?: STEERD_DEFAULT_CONFIG,
                             !m->config_path || streq(m->config_path, STEERD_DEFAULT_CONFIG), &c, ret_error);
        if (r >= 0) {
                r = manager_check_config_rules(m, c, ret_error);
                if (r < 0)
                        c = config_free(c);
        }
        if (r < 0) {
                log_struct(LOG_ERR, STEERD_MESSAGE_CONFIG,
                           "Reload: %s is invalid (see above); the running configuration stays",
                           m->config_path ?: STEERD_DEFAULT_CONFIG);
                return r;
        }
        Mode old_config_mode = m->config->settings.mode;
        config_free(m->config);
        m->config = c;
        sampler_set_settings(m->sampler, &c->settings);
        if (c->settings.mode != old_config_mode) {
                /* The operator edited Mode= in the file: that is the latest word. */
                m->runtime.has_mode = false;
                m->runtime.mode_set_usec = 0;
                m->mode_source = MODE_SOURCE_CONFIG;
                m->mode_set_usec = 0;
                save_runtime(m);
                (void) manager_set_mode(m, c->settings.mode);
        }
        uint64_t now;
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        (void) manager_refresh_optins(m, now, true);
        log_struct(LOG_NOTICE, STEERD_MESSAGE_CONFIG, "Reloaded %s",
                   m->config_path ?: STEERD_DEFAULT_CONFIG);
        return 0;
}
