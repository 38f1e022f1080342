/* SPDX-License-Identifier: MIT */
/* monitor: steerd's signals as a stream, one line each, until SIGINT/SIGTERM. */

#include <inttypes.h>
#include <time.h>

#include "bus-util.h"
#include "output.h"
#include "plan.h"

typedef struct Monitor {
        const Args *args;
} Monitor;

static uint64_t now_realtime_usec(void) {
        struct timespec ts;

        if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

static void print_time(uint64_t usec) {
        time_t sec = (time_t) (usec / USEC_PER_SEC);
        char buf[64];
        struct tm tm;

        if (!localtime_r(&sec, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm) == 0)
                snprintf(buf, sizeof(buf), "%" PRIu64, (uint64_t) (usec / USEC_PER_SEC));
        printf("%s.%03" PRIu64 " ", buf, (uint64_t) ((usec % USEC_PER_SEC) / USEC_PER_MSEC));
}

static int on_mode_changed(sd_bus_message *m, const Args *args, uint64_t t) {
        const char *mode;
        int r;

        r = sd_bus_message_read(m, "s", &mode);
        if (r < 0)
                return r;
        if (args->json != JSON_OFF) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                if (!o || json_add(o, "time_usec", json_object_new_uint64(t)) < 0 ||
                    json_add(o, "signal", json_object_new_string("ModeChanged")) < 0 ||
                    json_add(o, "mode", json_object_new_string(mode)) < 0)
                        return log_oom();
                return json_print(o, JSON_SHORT);
        }
        print_time(t);
        printf("ModeChanged: mode %s\n", mode);
        return 0;
}

static int on_llc_overload(sd_bus_message *m, const Args *args, uint64_t t) {
        char buf[FORMAT_CAPACITY_MAX];
        uint32_t llc;
        int overloaded;
        double util;
        int r;

        r = sd_bus_message_read(m, "ubd", &llc, &overloaded, &util);
        if (r < 0)
                return r;
        if (args->json != JSON_OFF) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                if (!o || json_add(o, "time_usec", json_object_new_uint64(t)) < 0 ||
                    json_add(o, "signal", json_object_new_string("LLCOverload")) < 0 ||
                    json_add(o, "llc", json_object_new_int64(llc)) < 0 ||
                    json_add(o, "overloaded", json_object_new_boolean(overloaded)) < 0 ||
                    json_add(o, "util", json_object_new_double(util)) < 0)
                        return log_oom();
                return json_print(o, JSON_SHORT);
        }
        print_time(t);
        printf("LLCOverload: LLC %" PRIu32 " %s, util %s\n", llc,
               overloaded ? "overloaded" : "no longer overloaded", format_capacity(buf, sizeof(buf), util));
        return 0;
}

static int on_actions_applied(sd_bus_message *m, const Args *args, uint64_t t) {
        _cleanup_(json_object_putp) json_object *plan = NULL;
        const char *plan_json;
        json_object *actions;
        uint32_t count;
        int r;

        r = sd_bus_message_read(m, "us", &count, &plan_json);
        if (r < 0)
                return r;
        plan = json_tokener_parse(plan_json); /* NULL: not JSON, passed on as a string */

        if (args->json != JSON_OFF) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                if (!o || json_add(o, "time_usec", json_object_new_uint64(t)) < 0 ||
                    json_add(o, "signal", json_object_new_string("ActionsApplied")) < 0 ||
                    json_add(o, "count", json_object_new_int64(count)) < 0 ||
                    json_add(o, "plan", plan ? json_object_get(plan) : json_object_new_string(plan_json)) <
                            0)
                        return log_oom();
                return json_print(o, JSON_SHORT);
        }
        print_time(t);
        printf("ActionsApplied: %" PRIu32 " action%s", count, count == 1 ? "" : "s");
        actions = plan_actions(plan);
        for (size_t i = 0; actions && i < json_object_array_length(actions); i++) {
                fputs(i == 0 ? ": " : "; ", stdout);
                plan_format_action(stdout, json_object_array_get_idx(actions, i), true);
        }
        putchar('\n');
        return 0;
}

static int on_other(sd_bus_message *m, const Args *args, uint64_t t) {
        const char *member = sd_bus_message_get_member(m), *sig = sd_bus_message_get_signature(m, true);

        /* A signal a newer steerd added: named, with its signature. */
        if (args->json != JSON_OFF) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                if (!o || json_add(o, "time_usec", json_object_new_uint64(t)) < 0 ||
                    json_add(o, "signal", json_object_new_string(member ?: "")) < 0 ||
                    json_add(o, "signature", json_object_new_string(sig ?: "")) < 0)
                        return log_oom();
                return json_print(o, JSON_SHORT);
        }
        print_time(t);
        printf("%s (signature '%s')\n", member ?: "?", sig ?: "");
        return 0;
}

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        const Monitor *mon = userdata;
        const char *member = sd_bus_message_get_member(m);
        uint64_t t = now_realtime_usec();
        int r;

        if (!member)
                return 0;
        if (streq(member, "ModeChanged"))
                r = on_mode_changed(m, mon->args, t);
        else if (streq(member, "LLCOverload"))
                r = on_llc_overload(m, mon->args, t);
        else if (streq(member, "ActionsApplied"))
                r = on_actions_applied(m, mon->args, t);
        else
                r = on_other(m, mon->args, t);
        if (r < 0)
                /* A malformed signal is reported and skipped; the stream goes on. */
                fprintf(stderr, "Failed to parse signal %s (signature '%s'): %s\n", member,
                        sd_bus_message_get_signature(m, true) ?: "", strerror(-r));
        fflush(stdout);
        return 0;
}

static void warn_if_not_running(sd_bus *bus) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int has_owner = 1;

        if (sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "NameHasOwner", NULL, &reply, "s", STEERD_BUS_NAME) < 0)
                return;
        if (sd_bus_message_read(reply, "b", &has_owner) >= 0 && !has_owner)
                fprintf(stderr,
                        "steerd is not running (nobody owns " STEERD_BUS_NAME "); waiting for it.\n");
}

int verb_monitor(int argc, char *argv[], const Args *args) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        Monitor mon = {.args = args};
        int r;

        r = event_new_exit_on_signals(&event);
        if (r < 0)
                return r;
        r = bus_connect(&bus);
        if (r < 0)
                return r;

        /* Every signal of the interface, from whoever owns org.steerd1 (also
         * after a restart of steerd). */
        r = sd_bus_match_signal(bus, &slot, STEERD_BUS_NAME, STEERD_BUS_PATH, STEERD_BUS_INTERFACE, NULL,
                                on_signal, &mon);
        if (r < 0)
                return log_error_errno(r, "Failed to subscribe to steerd's signals: %s", strerror(-r));
        warn_if_not_running(bus);

        r = sd_bus_attach_event(bus, event, SD_EVENT_PRIORITY_NORMAL);
        if (r >= 0)
                r = sd_bus_set_exit_on_disconnect(bus, true);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus to the event loop: %s", strerror(-r));

        r = sd_event_loop(event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %s", strerror(-r));
        if (r > 0)
                return log_error_errno(ECONNRESET, "Lost the connection to the system bus.");
        return 0;
}
