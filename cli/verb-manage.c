/* SPDX-License-Identifier: MIT */
/* The verbs that change the daemon (mode MODE, opt-in, opt-out, reload) and
 * `mode` without argument. The client checks what is obviously wrong (an
 * unknown mode or policy, a path that cannot be a cgroup) so that a typo
 * gets exit status 2 without a bus round trip; everything else is the
 * daemon's to judge. */

#include "bus-util.h"
#include "output.h"

static const char *const modes[] = {"off", "observe", "latency", "balanced"};
static const char *const policies[] = {"latency", "balanced"};

static bool string_in(const char *s, const char *const *list, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (streq(s, list[i]))
                        return true;
        return false;
}

static int check_cgroup_path(const char *cgroup) {
        size_t len = strlen(cgroup);

        if (len == 0)
                return log_error_errno(EINVAL, "Invalid cgroup: the path is empty."), EXIT_USAGE;
        if (len > STEERD_BUS_PATH_MAX)
                return log_error_errno(EINVAL,
                                       "Invalid cgroup: the path is %zu bytes long, at most %d are allowed.",
                                       len, STEERD_BUS_PATH_MAX),
                       EXIT_USAGE;
        /* A unit name (nginx.service) is checked by steerd, which knows
         * systemd's rules. */
        if (cgroup[0] != '/' && !strchr(cgroup, '/') && strchr(cgroup, '.'))
                return 0;
        if (cgroup[0] != '/')
                return log_error_errno(
                               EINVAL,
                               "Invalid cgroup '%s': it must be an absolute path, the cgroup's path "
                               "under its hierarchy (e.g. /system.slice/app.service) or its directory "
                               "(e.g. /sys/fs/cgroup/system.slice/app.service), a glob of such paths "
                               "(e.g. '/system.slice/docker-*.scope'), or a systemd unit name (e.g. "
                               "nginx.service).",
                               cgroup),
                       EXIT_USAGE;
        for (const char *p = cgroup; *p;) {
                size_t n;

                p += strspn(p, "/");
                n = strcspn(p, "/");
                if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return log_error_errno(
                                       EINVAL,
                                       "Invalid cgroup '%s': '.' and '..' are not allowed in the path.",
                                       cgroup),
                               EXIT_USAGE;
                p += n;
        }
        return 0;
}

static int show_mode(const Args *args) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(freep) char *mode = NULL;
        int r;

        r = bus_connect(&bus);
        if (r < 0)
                return r;
        r = sd_bus_get_property_string(bus, STEERD_BUS_NAME, STEERD_BUS_PATH, STEERD_BUS_INTERFACE, "Mode",
                                       &error, &mode);
        if (r < 0)
                return log_bus_error(r, &error, false, "Failed to get the mode");

        if (args->json != JSON_OFF) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                if (!o || json_add(o, "mode", json_object_new_string(mode)) < 0)
                        return log_oom();
                return json_print(o, args->json);
        }
        puts(mode);
        return fflush(stdout) == 0 ? 0 : -EIO;
}

static int reset_mode(void) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(freep) char *mode = NULL;
        int dropped = 0, r;

        r = bus_connect(&bus);
        if (r < 0)
                return r;
        r = bus_call(bus, "ResetMode", &error, &reply, NULL);
        if (r < 0)
                return log_bus_error(r, &error, true, "Failed to reset the mode");
        r = sd_bus_message_read(reply, "b", &dropped);
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply: %s", strerror(-r));
        r = sd_bus_get_property_string(bus, STEERD_BUS_NAME, STEERD_BUS_PATH, STEERD_BUS_INTERFACE, "Mode",
                                       &error, &mode);
        if (r < 0)
                return log_bus_error(r, &error, false, "Failed to get the mode");
        printf("%s: mode %s, from the config\n",
               dropped ? "Dropped the mode steerctl had set" : "No mode was set by steerctl", mode);
        return fflush(stdout) == 0 ? 0 : -EIO;
}

int verb_mode(int argc, char *argv[], const Args *args) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *mode;
        int r;

        if (args->reset)
                return reset_mode();
        if (argc < 2)
                return show_mode(args);

        mode = argv[1];
        if (!string_in(mode, modes, ELEMENTSOF(modes)))
                return log_error("Unknown mode '%s'. Modes: off, observe, latency, balanced (see --help).",
                                 mode),
                       EXIT_USAGE;

        r = bus_connect(&bus);
        if (r < 0)
                return r;
        r = bus_call(bus, "SetMode", &error, NULL, "s", mode);
        if (r < 0)
                return log_bus_error(r, &error, true, "Failed to set mode %s", mode);
        return 0;
}

int verb_opt_in(int argc, char *argv[], const Args *args) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *cgroup = argv[1], *policy = args->policy ?: "latency";
        int r;

        if (!string_in(policy, policies, ELEMENTSOF(policies)))
                return log_error("Unknown policy '%s'. Policies: latency, balanced (see --help).", policy),
                       EXIT_USAGE;
        r = check_cgroup_path(cgroup);
        if (r != 0)
                return r;

        r = bus_connect(&bus);
        if (r < 0)
                return r;
        if (args->search)
                r = bus_call(bus, "OptInWithOptions", &error, NULL, "ssa{ss}", cgroup, policy, 2, "evaluate",
                             args->evaluate ?: "", "search", args->search);
        else if (args->evaluate)
                r = bus_call(bus, "OptInEx", &error, NULL, "sss", cgroup, policy, args->evaluate);
        else
                r = bus_call(bus, "OptIn", &error, NULL, "ss", cgroup, policy);
        if (r < 0)
                return log_bus_error(r, &error, true, "Failed to opt in %s", cgroup);
        return 0;
}

int verb_opt_out(int argc, char *argv[], const Args *args) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *cgroup = argv[1];
        int r;

        r = check_cgroup_path(cgroup);
        if (r != 0)
                return r;

        r = bus_connect(&bus);
        if (r < 0)
                return r;
        r = bus_call(bus, "OptOut", &error, NULL, "s", cgroup);
        if (r < 0)
                return log_bus_error(r, &error, true, "Failed to opt out %s", cgroup);
        return 0;
}

int verb_reload(int argc, char *argv[], const Args *args) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = bus_connect(&bus);
        if (r < 0)
                return r;
        r = bus_call(bus, "Reload", &error, NULL, "");
        if (r < 0) {
                /* InvalidArgument here is a bad config file, not a bad argument: exit status 1. */
                r = log_bus_error(r, &error, false, "Failed to reload steerd's configuration");
                if (sd_bus_error_has_name(&error, STEERD_ERROR_INVALID_ARGUMENT))
                        fprintf(stderr, "steerd keeps running with the configuration it had.\n");
                return r;
        }
        return 0;
}
