/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <stdarg.h>

#include "bus-util.h"
#include "output.h"

int bus_connect(sd_bus **ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        r = sd_bus_open_system(&bus);
        if (r < 0)
                return log_error_errno(r, "Failed to connect to the system bus: %s", strerror(-r));
        *ret = TAKE_PTR(bus);
        return 0;
}

int bus_call(sd_bus *bus, const char *member, sd_bus_error *ret_error, sd_bus_message **ret_reply,
             const char *types, ...) {
        va_list ap;
        int r;

        va_start(ap, types);
        r = sd_bus_call_methodv(bus, STEERD_BUS_NAME, STEERD_BUS_PATH, STEERD_BUS_INTERFACE, member,
                                ret_error, ret_reply, types, ap);
        va_end(ap);
        return r;
}

int log_bus_error(int r, const sd_bus_error *error, bool invalid_is_usage, const char *fmt, ...) {
        const char *reason;
        va_list ap;

        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);

        if (sd_bus_error_has_names(error, "org.freedesktop.DBus.Error.ServiceUnknown",
                                   "org.freedesktop.DBus.Error.NameHasNoOwner"))
                reason = "steerd is not running (nobody owns " STEERD_BUS_NAME " on the system bus).";
        else if (sd_bus_error_is_set(error) && error->message && *error->message)
                reason = error->message;
        else
                reason = strerror(-r);
        fprintf(stderr, ": %s\n", reason);

        /* steerd's own AccessDenied says what is needed; the bus's does not. */
        if (sd_bus_error_has_names(error, "org.freedesktop.DBus.Error.AccessDenied",
                                   "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired"))
                fprintf(stderr,
                        "Changing steerd needs root, or the polkit action " STEERD_POLKIT_ACTION ".\n");

        if (sd_bus_error_has_name(error, STEERD_ERROR_NO_SUCH_CGROUP))
                return EXIT_NO_SUCH_CGROUP;
        if (invalid_is_usage && sd_bus_error_has_names(error, STEERD_ERROR_INVALID_ARGUMENT,
                                                       "org.freedesktop.DBus.Error.InvalidArgs"))
                return EXIT_USAGE;
        return r < 0 ? r : -EIO;
}

void manager_info_done(ManagerInfo *i) {
        if (!i)
                return;
        free(i->mode);
        free(i->mode_source);
        free(i->config_mode);
        free(i->wake_sampling);
        free(i->kernel_cache);
        free(i->version);
        for (size_t k = 0; k < i->n_counters; k++)
                free(i->counters[k].name);
        free(i->counters);
        *i = (ManagerInfo){};
}

static int read_string_variant(sd_bus_message *m, char **ret) {
        const char *s;
        char *copy;
        int r;

        r = sd_bus_message_read(m, "v", "s", &s);
        if (r < 0)
                return r;
        copy = strdup(s);
        if (!copy)
                return -ENOMEM;
        free(*ret);
        *ret = copy;
        return 0;
}

static int read_counters_variant(sd_bus_message *m, ManagerInfo *info) {
        const char *name;
        uint64_t value;
        int r;

        r = sd_bus_message_enter_container(m, 'v', "a{st}");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', "{st}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "{st}", &name, &value)) > 0) {
                Counter *c = reallocarray(info->counters, info->n_counters + 1, sizeof(Counter));

                if (!c)
                        return -ENOMEM;
                info->counters = c;
                c[info->n_counters] = (Counter){.name = strdup(name), .value = value};
                if (!c[info->n_counters].name)
                        return -ENOMEM;
                info->n_counters++;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int parse_manager_properties(sd_bus_message *m, ManagerInfo *info) {
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *name;

                r = sd_bus_message_read(m, "s", &name);
                if (r < 0)
                        return r;
                if (streq(name, "Mode"))
                        r = read_string_variant(m, &info->mode);
                else if (streq(name, "ModeSource"))
                        r = read_string_variant(m, &info->mode_source);
                else if (streq(name, "ModeSetUSec"))
                        r = sd_bus_message_read(m, "v", "t", &info->mode_set_usec);
                else if (streq(name, "ConfigMode"))
                        r = read_string_variant(m, &info->config_mode);
                else if (streq(name, "WakeSampling"))
                        r = read_string_variant(m, &info->wake_sampling);
                else if (streq(name, "KernelCacheAware"))
                        r = read_string_variant(m, &info->kernel_cache);
                else if (streq(name, "Version"))
                        r = read_string_variant(m, &info->version);
                else if (streq(name, "SamplePeriodUSec"))
                        r = sd_bus_message_read(m, "v", "t", &info->sample_period_usec);
                else if (streq(name, "Counters"))
                        r = read_counters_variant(m, info);
                else /* a newer daemon's property */
                        r = sd_bus_message_skip(m, "v");
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

int bus_get_manager_info(sd_bus *bus, ManagerInfo *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(manager_info_done) ManagerInfo info = {};
        int r;

        r = sd_bus_call_method(bus, STEERD_BUS_NAME, STEERD_BUS_PATH, "org.freedesktop.DBus.Properties",
                               "GetAll", &error, &reply, "s", STEERD_BUS_INTERFACE);
        if (r < 0)
                return log_bus_error(r, &error, false, "Failed to read steerd's properties");
        r = parse_manager_properties(reply, &info);
        if (r < 0)
                return log_error_errno(r, "Failed to parse steerd's properties: %s", strerror(-r));

        *ret = info;
        info = (ManagerInfo){};
        return 0;
}

void cgroup_infos_free(CgroupInfo *c, size_t n) {
        for (size_t i = 0; c && i < n; i++) {
                free(c[i].name);
                free(c[i].policy);
                free(c[i].source);
                free(c[i].directory);
                free(c[i].cpus);
                free(c[i].rule);
        }
        free(c);
}

static int cgroup_info_append(CgroupInfo **list, size_t *n, const char *name, const char *policy,
                              const char *source, const char *directory, const char *cpus, uint32_t threads,
                              const char *rule) {
        CgroupInfo *l = reallocarray(*list, *n + 1, sizeof(CgroupInfo));
        CgroupInfo *c;

        if (!l)
                return -ENOMEM;
        *list = l;
        c = &l[*n];
        *c = (CgroupInfo){
                .name = strdup(name),
                .policy = strdup(policy),
                .source = strdup(source),
                .directory = strdup(directory),
                .cpus = strdup(cpus),
                .threads = threads,
                .rule = strdup(rule),
        };
        (*n)++; /* counted also when a strdup() failed, so that it is freed */
        if (!c->name || !c->policy || !c->source || !c->directory || !c->cpus || !c->rule)
                return -ENOMEM;
        return 0;
}

int bus_list_cgroups(sd_bus *bus, CgroupInfo **ret, size_t *ret_n) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        CgroupInfo *list = NULL;
        size_t n = 0;
        int r;

        /* ListCgroupsEx names the rule; a daemon older than it has ListCgroups. */
        bool ex = true;
        r = bus_call(bus, "ListCgroupsEx", &error, &reply, "");
        if (r < 0 && sd_bus_error_has_name(&error, SD_BUS_ERROR_UNKNOWN_METHOD)) {
                sd_bus_error_free(&error);
                ex = false;
                r = bus_call(bus, "ListCgroups", &error, &reply, "");
        }
        if (r < 0)
                return log_bus_error(r, &error, false, "Failed to list cgroups");

        const char *type = ex ? "(sssssus)" : "(sssssu)";
        r = sd_bus_message_enter_container(reply, 'a', type);
        if (r >= 0) {
                const char *name, *policy, *source, *directory, *cpus, *rule = NULL;
                uint32_t threads;

                while ((r = ex ? sd_bus_message_read(reply, type, &name, &policy, &source, &directory, &cpus,
                                                     &threads, &rule)
                               : sd_bus_message_read(reply, type, &name, &policy, &source, &directory, &cpus,
                                                     &threads)) > 0) {
                        r = cgroup_info_append(&list, &n, name, policy, source, directory, cpus, threads,
                                               rule ?: name);
                        if (r < 0)
                                break;
                }
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r < 0) {
                cgroup_infos_free(list, n);
                return log_error_errno(r, "Failed to parse the cgroup list: %s", strerror(-r));
        }

        *ret = list;
        *ret_n = n;
        return 0;
}

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

int event_new_exit_on_signals(sd_event **ret) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        sigset_t mask;
        int r;

        /* A shell without job control starts background commands with SIGINT
         * ignored, and an ignored signal never reaches a signalfd: top and
         * monitor are documented to end on SIGINT, so take it back. */
        if (sigaction(SIGINT, &(const struct sigaction){.sa_handler = SIG_DFL}, NULL) < 0 ||
            sigaction(SIGTERM, &(const struct sigaction){.sa_handler = SIG_DFL}, NULL) < 0)
                return log_error_errno(errno, "Failed to reset SIGINT and SIGTERM: %m");

        /* sd-event takes signals through a signalfd: they must be blocked. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "Failed to block SIGINT and SIGTERM: %m");

        r = sd_event_new(&e);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate an event loop: %s", strerror(-r));
        r = sd_event_add_signal(e, NULL, SIGINT, on_exit_signal, NULL);
        if (r >= 0)
                r = sd_event_add_signal(e, NULL, SIGTERM, on_exit_signal, NULL);
        if (r < 0)
                return log_error_errno(r, "Failed to watch SIGINT and SIGTERM: %s", strerror(-r));

        *ret = TAKE_PTR(e);
        return 0;
}
