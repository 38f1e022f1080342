/* SPDX-License-Identifier: MIT */
#include <json-c/json.h>
#include <systemd/sd-bus.h>

#include <systemd/sd-event.h>

#include "bus.h"
#include "cgroup-confine.h"
#include "sampling.h"
#include "log.h"
#include "snapshot-json.h"
#include "manager-trial.h"
#include "steerd-bus.h"
#include "trial-store.h"

/* ---- privilege ---- */

/* polkit, when it runs: CheckAuthorization for the caller's bus name, without
 * interaction (a daemon's caller is a script or an operator's shell). The
 * check is asynchronous, as systemd's bus_verify_polkit_async() is: the
 * method call is parked, polkit's answer recorded, and the call put back in
 * the bus's read queue, where its handler runs again and finds the answer.
 * Nothing waits: ticks and the watchdog go on while polkit thinks. */

typedef struct PendingAuth {
        Manager *m;
        sd_bus_message *request; /* the parked method call (ref) */
        sd_bus_slot *slot;       /* the CheckAuthorization call in flight */
        int result;              /* 1 authorized, -EACCES denied, 0 pending */
} PendingAuth;

static void pending_auth_free(Manager *m, size_t i) {
        PendingAuth *p = m->pending_auths[i];
        sd_bus_slot_unref(p->slot);
        sd_bus_message_unref(p->request);
        free(p);
        m->pending_auths[i] = m->pending_auths[--m->n_pending_auths];
}

void bus_pending_auths_free(Manager *m) {
        while (m->n_pending_auths > 0)
                pending_auth_free(m, 0);
        free(m->pending_auths);
        m->pending_auths = NULL;
}

static int on_polkit_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        PendingAuth *p = userdata;
        int authorized = 0, challenge = 0, r;

        p->slot = sd_bus_slot_unref(p->slot);
        p->result = -EACCES; /* no polkit, or any error: only root may change things */
        if (!sd_bus_message_is_method_error(reply, NULL) &&
            sd_bus_message_enter_container(reply, 'r', "bba{ss}") >= 0 &&
            sd_bus_message_read(reply, "bb", &authorized, &challenge) >= 0 && authorized)
                p->result = 1;
        /* Run the method again, from its first argument. */
        r = sd_bus_message_rewind(p->request, true);
        if (r >= 0)
                r = sd_bus_enqueue_for_read(sd_bus_message_get_bus(p->request), p->request);
        if (r < 0) {
                log_warning_errno(r, "Cannot resume a method call after the polkit check");
                for (size_t i = 0; i < p->m->n_pending_auths; i++)
                        if (p->m->pending_auths[i] == p) {
                                pending_auth_free(p->m, i);
                                break;
                        }
        }
        return 0;
}

/* 1: go ahead; 0: parked, the handler must return 1 without replying; < 0:
 * refused (error set) or failed. */
static int verify_privileged(Manager *m, sd_bus_message *msg, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        const char *sender = sd_bus_message_get_sender(msg);
        uid_t uid;
        int r;

        r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID | SD_BUS_CREDS_AUGMENT, &creds);
        if (r >= 0)
                r = sd_bus_creds_get_euid(creds, &uid);
        if (r >= 0 && uid == 0)
                return 1;

        for (size_t i = 0; m && i < m->n_pending_auths; i++) {
                PendingAuth *p = m->pending_auths[i];
                if (p->request != msg)
                        continue;
                if (p->result == 0)
                        return 0; /* still waiting (a duplicate dispatch) */
                int result = p->result;
                pending_auth_free(m, i);
                if (result > 0)
                        return 1;
                goto denied;
        }
        if (!m || !sender || m->n_pending_auths >= BUS_MAX_PENDING_AUTHS)
                goto denied;

        r = sd_bus_message_new_method_call(sd_bus_message_get_bus(msg), &call, "org.freedesktop.PolicyKit1",
                                           "/org/freedesktop/PolicyKit1/Authority",
                                           "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization");
        if (r >= 0)
                r = sd_bus_message_append(call, "(sa{sv})sa{ss}us", "system-bus-name", 1, "name", "s",
                                          sender, STEERD_POLKIT_ACTION, 0, 0, "");
        if (r < 0)
                return r;
        PendingAuth **list = reallocarray(m->pending_auths, m->n_pending_auths + 1, sizeof(PendingAuth *));
        if (!list)
                return -ENOMEM;
        m->pending_auths = list;
        PendingAuth *p = calloc(1, sizeof(PendingAuth));
        if (!p)
                return -ENOMEM;
        *p = (PendingAuth){.m = m, .request = sd_bus_message_ref(msg)};
        r = sd_bus_call_async(sd_bus_message_get_bus(msg), &p->slot, call, on_polkit_reply, p,
                              5 * USEC_PER_SEC);
        if (r < 0) {
                sd_bus_message_unref(p->request);
                free(p);
                goto denied;
        }
        m->pending_auths[m->n_pending_auths++] = p;
        return 0;

denied:
        return sd_bus_error_setf(error, STEERD_ERROR_ACCESS_DENIED,
                                 "Changing steerd needs root or the polkit action %s", STEERD_POLKIT_ACTION);
}

/* ---- properties ---- */

static int property_get_mode(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "s", mode_to_string(m->mode));
}

static int property_get_mode_source(sd_bus *bus, const char *path, const char *interface,
                                    const char *property, sd_bus_message *reply, void *userdata,
                                    sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "s", mode_source_to_string(m->mode_source));
}

static int property_get_mode_set(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "t",
                                     m->mode_source == MODE_SOURCE_RUNTIME ? m->mode_set_usec : 0);
}

static int property_get_config_mode(sd_bus *bus, const char *path, const char *interface,
                                    const char *property, sd_bus_message *reply, void *userdata,
                                    sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "s", mode_to_string(m->config->settings.mode));
}

static int property_get_wake_sampling(sd_bus *bus, const char *path, const char *interface,
                                      const char *property, sd_bus_message *reply, void *userdata,
                                      sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "s", sampler_wake_status(m->sampler));
}

static int property_get_kernel_cache(sd_bus *bus, const char *path, const char *interface,
                                     const char *property, sd_bus_message *reply, void *userdata,
                                     sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "s", sampler_kernel_cache_status(m->sampler));
}

static int property_get_period(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "t",
                                     (uint64_t) (m->config->settings.sample_period_ms * USEC_PER_MSEC));
}

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", STEERD_VERSION);
}

static int property_get_counters(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        ManagerCounters c;

        manager_counters(m, &c);
        return sd_bus_message_append(reply, "a{st}", 8, "ticks", c.ticks, "applied", c.applied, "kept",
                                     c.kept, "reverted", c.reverted, "restored", c.restored, "failed",
                                     c.failed, "adopted", c.adopted, "dropped", c.dropped);
}

/* ---- methods ---- */

static int method_set_mode(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *s;
        int r;

        r = sd_bus_message_read(msg, "s", &s);
        if (r < 0)
                return r;
        r = verify_privileged(m, msg, error);
        if (r <= 0)
                return r < 0 ? r : 1; /* refused, or parked until polkit answers */
        Mode mode = mode_from_string(s);
        if (mode < 0)
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                         "Unknown mode '%.64s': use off, observe, latency or balanced", s);
        r = manager_set_mode_runtime(m, mode);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_reset_mode(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r;

        r = verify_privileged(m, msg, error);
        if (r <= 0)
                return r < 0 ? r : 1; /* refused, or parked until polkit answers */
        r = manager_reset_mode(m);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "b", r > 0);
}

/* The length cap, the syntax of a rule, and its confinement to the cgroup
 * mounts (optin_rule_check(); check_dir: also the directory of a path rule
 * that exists: what OptIn acts on). */
static int check_cgroup_arg(const Manager *m, const char *cgroup, bool check_dir, sd_bus_error *error) {
        char why[CGROUP_WHY_MAX] = "";
        size_t n = strnlen(cgroup, STEERD_BUS_PATH_MAX + 1);
        if (n > STEERD_BUS_PATH_MAX)
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                         "A cgroup path is at most %d characters", STEERD_BUS_PATH_MAX);
        if (optin_rule_kind(cgroup) < 0)
                return sd_bus_error_setf(
                        error, STEERD_ERROR_INVALID_ARGUMENT,
                        "'%.256s' is not a cgroup: give an absolute path such as /bench1 or "
                        "/system.slice/app.service (without '.', '..' or empty components), a glob such as "
                        "/system.slice/docker-*.scope, or a systemd unit name such as nginx.service",
                        cgroup);
        int r = optin_rule_check(m->root, &m->mounts, cgroup, check_dir, why, sizeof(why));
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                         "'%.256s' is refused: %s; steerd acts only on cgroups below the "
                                         "cgroup mounts",
                                         cgroup, why);
        return 0;
}

static int too_many_rules(sd_bus_error *error, bool opt_in) {
        return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                 opt_in ? "steerd keeps at most %d runtime opt-ins: opt one out first"
                                        : "steerd keeps at most %d runtime opt-outs: opting a cgroup in "
                                          "again drops its opt-out",
                                 STEERD_RUNTIME_RULES_MAX);
}

typedef enum OptInArgs {
        OPT_IN_ARGS_PLAIN,   /* OptIn(s cgroup, s policy) */
        OPT_IN_ARGS_EX,      /* OptInEx(..., s evaluate) */
        OPT_IN_ARGS_OPTIONS, /* OptInWithOptions(..., a{ss} options) */
} OptInArgs;

/* OptInWithOptions' dictionary: evaluate and search, each "" for the
 * global setting. An unknown key is refused, not ignored: an operator who
 * typed "serach" must not get an opt-in without the search he asked for. */
static int read_opt_in_options(sd_bus_message *msg, const char **evaluate, const char **search,
                               sd_bus_error *error) {
        const char *k, *v;
        int r;

        r = sd_bus_message_enter_container(msg, 'a', "{ss}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(msg, "{ss}", &k, &v)) > 0) {
                if (streq(k, "evaluate"))
                        *evaluate = v;
                else if (streq(k, "search"))
                        *search = v;
                else
                        return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                                 "Unknown option '%.64s': use evaluate or search", k);
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(msg);
}

static int opt_in(sd_bus_message *msg, Manager *m, OptInArgs args, sd_bus_error *error) {
        const char *cgroup, *policy, *evaluate = "", *search = "";
        int r;

        if (args == OPT_IN_ARGS_EX)
                r = sd_bus_message_read(msg, "sss", &cgroup, &policy, &evaluate);
        else
                r = sd_bus_message_read(msg, "ss", &cgroup, &policy);
        if (r >= 0 && args == OPT_IN_ARGS_OPTIONS)
                r = read_opt_in_options(msg, &evaluate, &search, error);
        if (r < 0)
                return r;
        r = verify_privileged(m, msg, error);
        if (r <= 0)
                return r < 0 ? r : 1; /* refused, or parked until polkit answers */
        r = check_cgroup_arg(m, cgroup, /* check_dir= */ true, error);
        if (r < 0)
                return r;
        CgroupPolicy p = cgroup_policy_from_string(policy);
        if (p < 0)
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                         "Unknown policy '%.64s': use latency or balanced", policy);
        OptInEvaluate ev = optin_evaluate_from_string(evaluate);
        if (ev < 0)
                return sd_bus_error_setf(
                        error, STEERD_ERROR_INVALID_ARGUMENT,
                        "Unknown evaluate '%.64s': use auto, no or \"\" (the global Evaluate=)", evaluate);
        OptInSearch se = optin_search_from_string(search);
        if (se < 0)
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                         "Unknown search '%.64s': use yes, no or \"\" (the global Search=)",
                                         search);
        r = manager_opt_in_full(m, cgroup, p, ev, se);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, STEERD_ERROR_NO_SUCH_CGROUP,
                                         "No cgroup %s in the cgroup2 or cpuset hierarchy", cgroup);
        if (r == -E2BIG)
                return too_many_rules(error, true);
        if (r == -EINVAL || r == CGROUP_NOT_CONFINED) /* it changed since the check above */
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                         "'%.256s' is refused: its directory is not confined to the cgroup "
                                         "mounts",
                                         cgroup);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_opt_in(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return opt_in(msg, userdata, OPT_IN_ARGS_PLAIN, error);
}

static int method_opt_in_ex(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return opt_in(msg, userdata, OPT_IN_ARGS_EX, error);
}

static int method_opt_in_with_options(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return opt_in(msg, userdata, OPT_IN_ARGS_OPTIONS, error);
}

static int method_opt_out(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *cgroup;
        int r;

        r = sd_bus_message_read(msg, "s", &cgroup);
        if (r < 0)
                return r;
        r = verify_privileged(m, msg, error);
        if (r <= 0)
                return r < 0 ? r : 1; /* refused, or parked until polkit answers */
        r = check_cgroup_arg(m, cgroup, /* check_dir= */ false, error);
        if (r < 0)
                return r;
        r = manager_opt_out(m, cgroup);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, STEERD_ERROR_NO_SUCH_CGROUP, "Cgroup %s is not opted in",
                                         cgroup);
        if (r == -E2BIG)
                return too_many_rules(error, false);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, NULL);
}

static const CgroupSample *last_sample(const Manager *m, const char *name) {
        if (!m->last_snapshot)
                return NULL;
        for (size_t i = 0; i < m->last_snapshot->n_cgroups; i++)
                if (streq(m->last_snapshot->cgroups[i].path, name))
                        return &m->last_snapshot->cgroups[i];
        return NULL;
}

/* ListCgroups a(sssssu), and ListCgroupsEx a(sssssus) with the rule that
 * brought each cgroup in (a new method, so that ListCgroups keeps its
 * signature for the clients that know it). */
static int list_cgroups(sd_bus_message *msg, Manager *m, bool with_rule) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *type = with_rule ? "(sssssus)" : "(sssssu)";
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', type);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->optins.n; i++) {
                const OptIn *o = &m->optins.items[i];
                const CgroupSample *c = last_sample(m, o->name);
                _cleanup_(freep) char *cpus = NULL;
                if (c && cpuset_format(c->cpus, &cpus) < 0)
                        return -ENOMEM;
                const char *policy = cgroup_policy_to_string(o->policy),
                           *src = optin_source_to_string(o->source);
                uint32_t threads = (uint32_t) (c ? c->n_members : 0);
                if (with_rule)
                        r = sd_bus_message_append(reply, type, o->name, policy, src, o->loc.dir ?: "",
                                                  cpus ?: "", threads, o->rule);
                else
                        r = sd_bus_message_append(reply, type, o->name, policy, src, o->loc.dir ?: "",
                                                  cpus ?: "", threads);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_list_cgroups(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return list_cgroups(msg, userdata, /* with_rule= */ false);
}

static int method_list_cgroups_ex(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return list_cgroups(msg, userdata, /* with_rule= */ true);
}

static int method_describe(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        _cleanup_(freep) char *text = NULL;
        int r;

        r = manager_describe_json(m, &text);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "s", text);
}

static int method_explain(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(explanation_done) Explanation e = {};
        Manager *m = userdata;
        const char *cgroup;
        int r;

        r = sd_bus_message_read(msg, "s", &cgroup);
        if (r < 0)
                return r;
        r = check_cgroup_arg(m, cgroup, /* check_dir= */ false, error);
        if (r < 0)
                return r;
        r = manager_explain(m, cgroup, &e);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, STEERD_ERROR_NO_SUCH_CGROUP, "Cgroup %s is not opted in",
                                         cgroup);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ss)");
        for (size_t i = 0; r >= 0 && i < e.n; i++)
                r = sd_bus_message_append(reply, "(ss)", e.lines[i].topic, e.lines[i].text);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r;

        r = verify_privileged(m, msg, error);
        if (r <= 0)
                return r < 0 ? r : 1; /* refused, or parked until polkit answers */
        _cleanup_(freep) char *why = NULL;
        r = manager_reload(m, &why);
        if (r == -EBADMSG || r == -ENOENT || r == -EACCES)
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                         "%s; the running configuration stays",
                                         why ?: m->config_path ?: STEERD_DEFAULT_CONFIG);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, NULL);
}

/* ---- trials ---- */

/* a(sssssddddss): id, cgroup, state, arm, verdict, progress, ratio, ci_low,
 * ci_high (NaN: no estimate yet), text, "" (reserved). */
#define TRIAL_STRUCT "(sssssddddss)"

static int append_summary(sd_bus_message *reply, const TrialSummary *s) {
        return sd_bus_message_append(reply, TRIAL_STRUCT, s->id, s->cgroup, s->state, s->arm, s->verdict,
                                     s->progress, s->ratio, s->ci_low, s->ci_high, s->text, "");
}

static int property_get_trials(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        _cleanup_(freep) TrialSummary *s = NULL;
        size_t n;
        int r;

        r = manager_trial_summaries(m, &s, &n);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', TRIAL_STRUCT);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = append_summary(reply, &s[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

static int method_start_trial(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *cgroup, *metric, *direction;
        uint64_t duration, block;
        int r;

        r = sd_bus_message_read(msg, "sttss", &cgroup, &duration, &block, &metric, &direction);
        if (r < 0)
                return r;
        r = verify_privileged(m, msg, error);
        if (r <= 0)
                return r < 0 ? r : 1; /* refused, or parked until polkit answers */
        r = check_cgroup_arg(m, cgroup, /* check_dir= */ false, error);
        if (r < 0)
                return r;
        TrialDirection d = streq(direction, "")         ? TRIAL_DIRECTION_DEFAULT
                           : streq(direction, "higher") ? TRIAL_DIRECTION_HIGHER
                           : streq(direction, "lower")  ? TRIAL_DIRECTION_LOWER
                                                        : (TrialDirection) -1;
        if ((int) d < 0)
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                         "Unknown direction '%.64s': use higher, lower or \"\"", direction);
        if (strlen(metric) > STEERD_BUS_PATH_MAX)
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                         "The metric spec is too long");
        if (duration > 7 * 24 * 3600 * USEC_PER_SEC || (duration > 0 && block > duration))
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                         "A trial lasts at most a week, its blocks at most the trial");
        _cleanup_(freep) char *id = NULL, *why = NULL;
        r = manager_trial_start(m, cgroup, duration, block, metric, d, &id, &why);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, STEERD_ERROR_NO_SUCH_CGROUP, "Cgroup %s is not opted in",
                                         cgroup);
        if (r == -EBUSY)
                return sd_bus_error_setf(
                        error, STEERD_ERROR_INVALID_ARGUMENT,
                        "A trial of %s runs already: one at a time (steerctl trial --stop %s)", cgroup,
                        cgroup);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                         "Cannot start a trial of %s: %s", cgroup, why ?: strerror(-r));
        return sd_bus_reply_method_return(msg, "s", id);
}

static int method_stop_trial(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *cgroup;
        int r;

        r = sd_bus_message_read(msg, "s", &cgroup);
        if (r < 0)
                return r;
        r = verify_privileged(m, msg, error);
        if (r <= 0)
                return r < 0 ? r : 1;
        r = check_cgroup_arg(m, cgroup, /* check_dir= */ false, error);
        if (r < 0)
                return r;
        _cleanup_(freep) char *id = NULL;
        r = manager_trial_stop(m, cgroup, &id);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, STEERD_ERROR_NO_SUCH_TRIAL, "No trial of %s runs", cgroup);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "s", id);
}

static int method_list_trials(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(freep) TrialSummary *s = NULL;
        Manager *m = userdata;
        Trial **owned = NULL;
        size_t n, n_owned;
        int r;

        r = manager_trial_list(m, &s, &n, &owned, &n_owned);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', TRIAL_STRUCT);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = append_summary(reply, &s[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        trial_list_free(owned, n_owned);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_get_trial(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        _cleanup_(freep) char *json = NULL;
        const char *id;
        int r;

        r = sd_bus_message_read(msg, "s", &id);
        if (r < 0)
                return r;
        if (strlen(id) > STEERD_BUS_PATH_MAX)
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT, "The trial id is too long");
        r = manager_trial_json(m, id, &json);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, STEERD_ERROR_NO_SUCH_TRIAL,
                                         "No trial %.256s (steerctl trials lists them)", id);
        if (r == -EBADMSG)
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                         "The record of trial %.256s is damaged", id);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "s", json);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Mode", "s", property_get_mode, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ModeSource", "s", property_get_mode_source, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ModeSetUSec", "t", property_get_mode_set, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ConfigMode", "s", property_get_config_mode, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("SamplePeriodUSec", "t", property_get_period, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Counters", "a{st}", property_get_counters, 0, 0),
        SD_BUS_PROPERTY("WakeSampling", "s", property_get_wake_sampling, 0, 0),
        SD_BUS_PROPERTY("KernelCacheAware", "s", property_get_kernel_cache, 0, 0),
        SD_BUS_METHOD_WITH_ARGS("SetMode", SD_BUS_ARGS("s", mode), SD_BUS_NO_RESULT, method_set_mode,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ResetMode", SD_BUS_NO_ARGS, SD_BUS_RESULT("b", dropped), method_reset_mode,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OptIn", SD_BUS_ARGS("s", cgroup, "s", policy), SD_BUS_NO_RESULT,
                                method_opt_in, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OptInEx", SD_BUS_ARGS("s", cgroup, "s", policy, "s", evaluate),
                                SD_BUS_NO_RESULT, method_opt_in_ex, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OptInWithOptions", SD_BUS_ARGS("s", cgroup, "s", policy, "a{ss}", options),
                                SD_BUS_NO_RESULT, method_opt_in_with_options, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OptOut", SD_BUS_ARGS("s", cgroup), SD_BUS_NO_RESULT, method_opt_out,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListCgroups", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(sssssu)", cgroups),
                                method_list_cgroups, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListCgroupsEx", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(sssssus)", cgroups),
                                method_list_cgroups_ex, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Describe", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", json), method_describe,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Explain", SD_BUS_ARGS("s", cgroup), SD_BUS_RESULT("a(ss)", lines),
                                method_explain, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Reload", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_reload,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("ModeChanged", SD_BUS_ARGS("s", mode), 0),
        SD_BUS_SIGNAL_WITH_ARGS("LLCOverload", SD_BUS_ARGS("u", llc, "b", overloaded, "d", util), 0),
        SD_BUS_SIGNAL_WITH_ARGS("ActionsApplied", SD_BUS_ARGS("u", count, "s", plan), 0),
        SD_BUS_PROPERTY("Trials", "a" TRIAL_STRUCT, property_get_trials, 0, 0),
        SD_BUS_METHOD_WITH_ARGS(
                "StartTrial",
                SD_BUS_ARGS("s", cgroup, "t", duration_usec, "t", block_usec, "s", metric, "s", direction),
                SD_BUS_RESULT("s", id), method_start_trial, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("StopTrial", SD_BUS_ARGS("s", cgroup), SD_BUS_RESULT("s", id),
                                method_stop_trial, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListTrials", SD_BUS_NO_ARGS, SD_BUS_RESULT("a" TRIAL_STRUCT, trials),
                                method_list_trials, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetTrial", SD_BUS_ARGS("s", id), SD_BUS_RESULT("s", json), method_get_trial,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("TrialProgress", SD_BUS_ARGS(TRIAL_STRUCT, trial), 0),
        SD_BUS_SIGNAL_WITH_ARGS("SteeringEvaluated", SD_BUS_ARGS("s", cgroup, "b", steering, "s", why), 0),
        SD_BUS_VTABLE_END,
};

/* ---- the connection ---- */

static int on_name_acquired(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (!e) {
                log_info("Owning %s on the system bus", STEERD_BUS_NAME);
                return 0;
        }
        if (sd_bus_error_has_name(e, SD_BUS_ERROR_NO_REPLY) ||
            sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.Disconnected"))
                return 0; /* the bus went away meanwhile: the reconnect asks again */
        /* Another steerd owns it, or the bus policy is not installed: two
         * daemons steering the same cgroups would fight. */
        log_error("Cannot own %s on the system bus (is another steerd running, or the bus policy not "
                  "installed?): %s",
                  STEERD_BUS_NAME, e->message ?: e->name);
        return sd_event_exit(m->event, -EEXIST);
}

static int bus_reconnect_later(Manager *m, uint64_t delay_us);

/* sd-bus synthesizes org.freedesktop.DBus.Local.Connected once a watch-bind
 * connection is up, and .Disconnected when it drops (the bus daemon was
 * restarted or stopped). */
static int on_bus_local_signal(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;

        if (sd_bus_message_is_signal(msg, "org.freedesktop.DBus.Local", "Connected")) {
                log_info("Connected to the system bus");
                m->retry_now = true; /* give-backs that needed the bus */
                return 0;
        }
        if (!sd_bus_message_is_signal(msg, "org.freedesktop.DBus.Local", "Disconnected"))
                return 0;
        log_warning("The system bus connection was lost; reconnecting (steering goes on meanwhile)");
        (void) bus_reconnect_later(m, USEC_PER_SEC);
        return 0;
}

/* Like sd_bus_open_system(), with watch-bind (a bus socket that is not there
 * yet or comes back after a restart is waited for, without blocking) and the
 * Connected signal turned on: what systemd's own daemons do
 * (bus_open_system_watch_bind()). */
static int bus_open_system_watch_bind(sd_bus **ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        const char *address = secure_getenv("DBUS_SYSTEM_BUS_ADDRESS");
        int r;

        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        if ((r = sd_bus_set_description(bus, "steerd-system-bus")) < 0 ||
            (r = sd_bus_set_address(bus, address ?: "unix:path=/run/dbus/system_bus_socket")) < 0 ||
            (r = sd_bus_set_bus_client(bus, true)) < 0 ||
            (r = sd_bus_negotiate_creds(bus, true, SD_BUS_CREDS_UID | SD_BUS_CREDS_EUID)) < 0 ||
            (r = sd_bus_set_watch_bind(bus, true)) < 0 || (r = sd_bus_set_connected_signal(bus, true)) < 0)
                return r;
        r = sd_bus_start(bus);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(bus);
        return 0;
}

int bus_connect(Manager *m) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        r = bus_open_system_watch_bind(&bus);
        if (r < 0)
                return log_warning_errno(r, "Cannot connect to the system bus");
        r = sd_bus_add_filter(bus, NULL, on_bus_local_signal, m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch the bus connection");
        r = sd_bus_add_object_vtable(bus, NULL, STEERD_BUS_PATH, STEERD_BUS_INTERFACE, manager_vtable, m);
        if (r < 0)
                return log_error_errno(r, "Cannot add the bus object");
        r = sd_bus_request_name_async(bus, NULL, STEERD_BUS_NAME, 0, on_name_acquired, m);
        if (r < 0)
                return log_error_errno(r, "Cannot ask for %s on the system bus", STEERD_BUS_NAME);
        r = sd_bus_attach_event(bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Cannot attach the bus to the event loop");

        bus_drop(m);
        m->bus = TAKE_PTR(bus);
        if (m->actuator)
                actuator_set_bus(m->actuator, m->bus);
        return 0;
}

void bus_drop(Manager *m) {
        if (!m->bus)
                return;
        /* Parked calls belong to the old connection. */
        bus_pending_auths_free(m);
        sd_bus_detach_event(m->bus);
        m->bus = sd_bus_flush_close_unref(m->bus);
        if (m->actuator)
                actuator_set_bus(m->actuator, NULL);
}

static int on_bus_reconnect(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        m->bus_reconnect = sd_event_source_unref(m->bus_reconnect);
        if (bus_connect(m) < 0)
                return bus_reconnect_later(m, 5 * USEC_PER_SEC);
        return 0;
}

static int bus_reconnect_later(Manager *m, uint64_t delay_us) {
        uint64_t now;
        int r;

        if (m->bus_reconnect)
                return 0;
        r = sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        if (r < 0)
                return r;
        r = sd_event_add_time(m->event, &m->bus_reconnect, CLOCK_MONOTONIC, now + delay_us, 0,
                              on_bus_reconnect, m);
        if (r < 0)
                return log_error_errno(r, "Cannot schedule the reconnect to the system bus");
        return 0;
}

int bus_wait_ready(Manager *m, uint64_t timeout_us) {
        uint64_t start, now;
        int r;

        if (!m->bus)
                return -ENOTCONN;
        r = sd_event_now(m->event, CLOCK_MONOTONIC, &start);
        if (r < 0)
                return r;
        for (now = start; now - start < timeout_us; now = now_monotonic_us()) {
                r = sd_bus_is_ready(m->bus);
                if (r != 0)
                        return r < 0 ? r : 0;
                r = sd_bus_process(m->bus, NULL);
                if (r < 0)
                        return r;
                if (r == 0)
                        (void) sd_bus_wait(m->bus, timeout_us - (now - start));
        }
        return -ETIMEDOUT;
}

/* Signals go out only on a connection that is up: one still waiting for
 * the bus socket (watch-bind) queues every message it is given, and a
 * steerd started before the bus (or on a host without one) grew by every
 * tick's ActionsApplied until it came (measured on the simulated host:
 * 0.2 MB to 0.6 MB of queued signals in 100 s). Nobody can be listening
 * to a signal sent before the connection is up. */
static bool bus_can_emit(const Manager *m) {
        return m->bus && sd_bus_is_ready(m->bus) > 0;
}

void bus_emit_mode_changed(Manager *m) {
        if (!bus_can_emit(m))
                return;
        (void) sd_bus_emit_signal(m->bus, STEERD_BUS_PATH, STEERD_BUS_INTERFACE, "ModeChanged", "s",
                                  mode_to_string(m->mode));
        bus_emit_mode_properties(m);
}

void bus_emit_mode_properties(Manager *m) {
        if (!bus_can_emit(m))
                return;
        (void) sd_bus_emit_properties_changed(m->bus, STEERD_BUS_PATH, STEERD_BUS_INTERFACE, "Mode",
                                              "ModeSource", "ModeSetUSec", "ConfigMode", NULL);
}

void bus_emit_tick(Manager *m, const Snapshot *prev, const Snapshot *cur, const Plan *applied) {
        if (!bus_can_emit(m))
                return;
        for (size_t i = 0; i < cur->n_llcs; i++) {
                bool was = prev && i < prev->n_llcs ? prev->llcs[i].overloaded : false;
                if (cur->llcs[i].overloaded != was)
                        (void) sd_bus_emit_signal(m->bus, STEERD_BUS_PATH, STEERD_BUS_INTERFACE,
                                                  "LLCOverload", "ubd", (uint32_t) i,
                                                  (int) cur->llcs[i].overloaded, cur->llcs[i].util);
        }
        if (applied && applied->n_actions > 0) {
                _cleanup_(freep) char *json = NULL;
                if (plan_to_json(applied, (unsigned) m->ticks, &json) >= 0)
                        (void) sd_bus_emit_signal(m->bus, STEERD_BUS_PATH, STEERD_BUS_INTERFACE,
                                                  "ActionsApplied", "us", (uint32_t) applied->n_actions,
                                                  json);
        }
}

void bus_emit_trial_progress(Manager *m, const Trial *t) {
        TrialSummary s;
        uint64_t now = 0;

        if (!bus_can_emit(m))
                return;
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        trial_summary(t, now, &s);
        (void) sd_bus_emit_signal(m->bus, STEERD_BUS_PATH, STEERD_BUS_INTERFACE, "TrialProgress",
                                  TRIAL_STRUCT, s.id, s.cgroup, s.state, s.arm, s.verdict, s.progress,
                                  s.ratio, s.ci_low, s.ci_high, s.text, "");
}

void bus_emit_steering_evaluated(Manager *m, const char *cgroup, bool steering, const char *why) {
        if (!bus_can_emit(m))
                return;
        (void) sd_bus_emit_signal(m->bus, STEERD_BUS_PATH, STEERD_BUS_INTERFACE, "SteeringEvaluated", "sbs",
                                  cgroup, (int) steering, why);
}
