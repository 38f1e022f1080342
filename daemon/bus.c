/* SPDX-License-Identifier: MIT */
#include <json-c/json.h>
#include <systemd/sd-bus.h>

#include "bus.h"
#include "log.h"
#include "snapshot-json.h"
#include "steerd-bus.h"

/* ---- privilege ---- */

/* polkit, when it runs: CheckAuthorization for the caller's bus name. No
 * interaction: a daemon's caller is a script or an operator's shell. */
static int check_polkit(sd_bus_message *msg) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus *bus = sd_bus_message_get_bus(msg);
        const char *sender = sd_bus_message_get_sender(msg);
        int authorized = 0, challenge = 0, r;

        if (!sender)
                return -EACCES;
        r = sd_bus_message_new_method_call(bus, &call, "org.freedesktop.PolicyKit1",
                                           "/org/freedesktop/PolicyKit1/Authority",
                                           "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization");
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "(sa{sv})sa{ss}us", "system-bus-name", 1, "name", "s", sender,
                                  STEERD_POLKIT_ACTION, 0, 0, "");
        if (r < 0)
                return r;
        r = sd_bus_call(bus, call, 5 * USEC_PER_SEC, &error, &reply);
        sd_bus_error_free(&error);
        if (r < 0)
                return -EACCES; /* no polkit: only root may change things */
        r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
        if (r < 0)
                return r;
        return authorized ? 0 : -EACCES;
}

static int verify_privileged(sd_bus_message *msg, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        uid_t uid;
        int r;

        r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID | SD_BUS_CREDS_AUGMENT, &creds);
        if (r >= 0)
                r = sd_bus_creds_get_euid(creds, &uid);
        if (r >= 0 && uid == 0)
                return 0;
        if (check_polkit(msg) >= 0)
                return 0;
        return sd_bus_error_setf(error, STEERD_ERROR_ACCESS_DENIED,
                                 "Changing steerd needs root or the polkit action %s", STEERD_POLKIT_ACTION);
}

/* ---- properties ---- */

static int property_get_mode(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "s", mode_to_string(m->mode));
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
        return sd_bus_message_append(reply, "a{st}", 7, "ticks", c.ticks, "applied", c.applied, "kept",
                                     c.kept, "reverted", c.reverted, "restored", c.restored, "failed",
                                     c.failed, "adopted", c.adopted);
}

/* ---- methods ---- */

static int method_set_mode(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *s;
        int r;

        r = sd_bus_message_read(msg, "s", &s);
        if (r < 0)
                return r;
        r = verify_privileged(msg, error);
        if (r < 0)
                return r;
        Mode mode = mode_from_string(s);
        if (mode < 0)
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                         "Unknown mode '%.64s': use off, observe, latency or balanced", s);
        r = manager_set_mode_runtime(m, mode);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, NULL);
}

static int check_cgroup_arg(const char *cgroup, sd_bus_error *error) {
        size_t n = strnlen(cgroup, STEERD_BUS_PATH_MAX + 1);
        if (n > STEERD_BUS_PATH_MAX)
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                         "A cgroup path is at most %d characters", STEERD_BUS_PATH_MAX);
        if (config_validate_cgroup_path(cgroup) < 0)
                return sd_bus_error_setf(
                        error, STEERD_ERROR_INVALID_ARGUMENT,
                        "'%.256s' is not a cgroup: give an absolute path such as /bench1 or "
                        "/system.slice/app.service, without '.' or '..'",
                        cgroup);
        return 0;
}

static int method_opt_in(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *cgroup, *policy;
        int r;

        r = sd_bus_message_read(msg, "ss", &cgroup, &policy);
        if (r < 0)
                return r;
        r = verify_privileged(msg, error);
        if (r < 0)
                return r;
        r = check_cgroup_arg(cgroup, error);
        if (r < 0)
                return r;
        CgroupPolicy p = cgroup_policy_from_string(policy);
        if (p < 0)
                return sd_bus_error_setf(error, STEERD_ERROR_INVALID_ARGUMENT,
                                         "Unknown policy '%.64s': use latency or balanced", policy);
        r = manager_opt_in(m, cgroup, p);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, STEERD_ERROR_NO_SUCH_CGROUP,
                                         "No cgroup %s in the cgroup2 or cpuset hierarchy", cgroup);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_opt_out(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *cgroup;
        int r;

        r = sd_bus_message_read(msg, "s", &cgroup);
        if (r < 0)
                return r;
        r = verify_privileged(msg, error);
        if (r < 0)
                return r;
        r = check_cgroup_arg(cgroup, error);
        if (r < 0)
                return r;
        r = manager_opt_out(m, cgroup);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, STEERD_ERROR_NO_SUCH_CGROUP, "Cgroup %s is not opted in",
                                         cgroup);
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

static int method_list_cgroups(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = userdata;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(sssssu)");
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->optins.n; i++) {
                const OptIn *o = &m->optins.items[i];
                const CgroupSample *c = last_sample(m, o->name);
                _cleanup_(freep) char *cpus = NULL;
                if (c && cpuset_format(c->cpus, &cpus) < 0)
                        return -ENOMEM;
                r = sd_bus_message_append(reply, "(sssssu)", o->name, cgroup_policy_to_string(o->policy),
                                          optin_source_to_string(o->source), o->loc.dir ?: "", cpus ?: "",
                                          (uint32_t) (c ? c->n_threads : 0));
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
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

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r;

        r = verify_privileged(msg, error);
        if (r < 0)
                return r;
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

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Mode", "s", property_get_mode, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("SamplePeriodUSec", "t", property_get_period, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Counters", "a{st}", property_get_counters, 0, 0),
        SD_BUS_METHOD_WITH_ARGS("SetMode", SD_BUS_ARGS("s", mode), SD_BUS_NO_RESULT, method_set_mode,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OptIn", SD_BUS_ARGS("s", cgroup, "s", policy), SD_BUS_NO_RESULT,
                                method_opt_in, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OptOut", SD_BUS_ARGS("s", cgroup), SD_BUS_NO_RESULT, method_opt_out,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListCgroups", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(sssssu)", cgroups),
                                method_list_cgroups, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Describe", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", json), method_describe,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Reload", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_reload,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("ModeChanged", SD_BUS_ARGS("s", mode), 0),
        SD_BUS_SIGNAL_WITH_ARGS("LLCOverload", SD_BUS_ARGS("u", llc, "b", overloaded, "d", util), 0),
        SD_BUS_SIGNAL_WITH_ARGS("ActionsApplied", SD_BUS_ARGS("u", count, "s", plan), 0),
        SD_BUS_VTABLE_END,
};

int bus_setup(Manager *m) {
        int r;

        if (!m->bus)
                return log_notice("No system bus: steerctl cannot reach this steerd"), 0;
        r = sd_bus_add_object_vtable(m->bus, NULL, STEERD_BUS_PATH, STEERD_BUS_INTERFACE, manager_vtable, m);
        if (r < 0)
                return log_error_errno(r, "Cannot add the bus object");
        r = sd_bus_request_name(m->bus, STEERD_BUS_NAME, 0);
        if (r < 0)
                return log_error_errno(
                        r,
                        "Cannot own %s on the system bus (is another steerd running, or the bus "
                        "policy not installed?)",
                        STEERD_BUS_NAME);
        r = sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Cannot attach the bus to the event loop");
        return 0;
}

void bus_emit_mode_changed(Manager *m) {
        if (!m->bus)
                return;
        (void) sd_bus_emit_signal(m->bus, STEERD_BUS_PATH, STEERD_BUS_INTERFACE, "ModeChanged", "s",
                                  mode_to_string(m->mode));
        (void) sd_bus_emit_properties_changed(m->bus, STEERD_BUS_PATH, STEERD_BUS_INTERFACE, "Mode", NULL);
}

void bus_emit_tick(Manager *m, const Snapshot *prev, const Snapshot *cur, const Plan *applied) {
        if (!m->bus)
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
