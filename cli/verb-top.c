/* SPDX-License-Identifier: MIT */
/* top: a refreshing view of steerd's Describe() document, like systemd-cgtop:
 * per-LLC load, the opted-in cgroups, the last plan and per-CPU load. On a
 * terminal every frame clears the screen and is cut to the terminal's
 * height; otherwise frames follow each other, separated by an empty line. */

#include <inttypes.h>
#include <math.h>

#include "bus-util.h"
#include "output.h"
#include "plan.h"
#include "table.h"

typedef struct Top {
        sd_bus *bus;
        const Args *args;
        uint64_t frames;
        int error; /* < 0: a frame failed, the message is printed */
} Top;

static int describe(sd_bus *bus, json_object **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        enum json_tokener_error jerr;
        json_object *o;
        const char *s;
        int r;

        r = bus_call(bus, "Describe", &error, &reply, "");
        if (r < 0)
                return log_bus_error(r, &error, false, "Failed to describe steerd's state");
        r = sd_bus_message_read(reply, "s", &s);
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply of Describe: %s", strerror(-r));
        o = json_tokener_parse_verbose(s, &jerr);
        if (!o || !json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                return log_error_errno(EBADMSG, "steerd's Describe returned no JSON object: %s",
                                       o ? "not an object" : json_tokener_error_desc(jerr));
        }
        *ret = o;
        return 0;
}

static void print_counters(FILE *f, json_object *counters) {
        bool first = true;

        if (!counters || !json_object_is_type(counters, json_type_object))
                return;
        fputs("Counters:", f);
        json_object_object_foreach(counters, key, val) {
                fprintf(f, "%s %s %" PRIi64, first ? "" : ",", key, json_object_get_int64(val));
                first = false;
        }
        fputc('\n', f);
}

static void print_header(FILE *f, json_object *d, json_object *snap) {
        char span[FORMAT_TIMESPAN_MAX];
        json_object *psi = json_get(snap, "psi"), *source = json_get(snap, "source");

        fprintf(f, "%ssteerd%s mode %s%s%s", ansi(ANSI_HIGHLIGHT), ansi(ANSI_NORMAL), ansi(ANSI_HIGHLIGHT),
                json_get_string(d, "mode", "?"), ansi(ANSI_NORMAL));
        if (snap) {
                fprintf(f, ", period %s",
                        format_timespan(span, sizeof(span),
                                        (uint64_t) MAX(json_get_int(snap, "period_us", 0), 0)));
                fprintf(f, ", runnable from %s", json_get_string(source, "runnable", "?"));
                if (json_get_bool(source, "threads_truncated", false))
                        fputs(" (truncated)", f);
                if (psi)
                        fprintf(f, ", CPU pressure some %.1f%% full %.1f%%",
                                json_get_double(psi, "some_avg10", 0),
                                json_get_double(psi, "full_avg10", 0));
        }
        fputc('\n', f);
        print_counters(f, json_get(d, "counters"));
}

static int add_capacity(Table *t, json_object *o, const char *key) {
        char buf[FORMAT_CAPACITY_MAX];

        return table_add_cell(t, format_capacity(buf, sizeof(buf), json_get_double(o, key, NAN)));
}

static int print_llcs(FILE *f, json_object *llcs, const Args *args) {
        static const char *const headers[] = {"LLC",     "CPUS",      "WEIGHT",    "UTIL",
                                              "BOOSTED", "IDLE-SCAN", "OVERLOADED"};
        _cleanup_(table_freep) Table *t = NULL;
        size_t n = json_object_array_length(llcs);

        if (table_new(ELEMENTSOF(headers), headers, &t) < 0)
                return -ENOMEM;
        for (size_t c = 0; c < ELEMENTSOF(headers); c++)
                (void) table_set_align_right(t, c, c != 1 && c != 6);
        for (size_t i = 0; i < n; i++) {
                json_object *l = json_object_array_get_idx(llcs, i);
                bool overloaded = json_get_bool(l, "overloaded", false);

                if (table_add_cellf(t, "%" PRIi64, json_get_int(l, "id", -1)) < 0 ||
                    table_add_cell(t, json_get_string(l, "cpus", "-")) < 0 ||
                    table_add_cellf(t, "%" PRIi64, json_get_int(l, "weight", 0)) < 0 ||
                    add_capacity(t, l, "util") < 0 || add_capacity(t, l, "boosted") < 0 ||
                    table_add_cellf(t, "%" PRIi64, json_get_int(l, "nr_idle_scan", 0)) < 0 ||
                    table_add_cellf(t, "%s%s%s", overloaded ? ansi(ANSI_HIGHLIGHT_RED) : "",
                                    overloaded ? "yes" : "no", overloaded ? ansi(ANSI_NORMAL) : "") < 0)
                        return -ENOMEM;
        }
        return table_print(t, f, args->legend);
}

static int print_cgroups(FILE *f, json_object *cgroups, const Args *args) {
        static const char *const headers[] = {"CGROUP",  "POLICY", "ALLOWED", "CPUS",
                                              "THREADS", "UTIL",   "WAIT",    "PRESSURE"};
        _cleanup_(table_freep) Table *t = NULL;
        size_t n = json_object_array_length(cgroups);

        if (table_new(ELEMENTSOF(headers), headers, &t) < 0)
                return -ENOMEM;
        for (size_t c = 4; c < ELEMENTSOF(headers); c++)
                (void) table_set_align_right(t, c, true);
        for (size_t i = 0; i < n; i++) {
                json_object *cg = json_object_array_get_idx(cgroups, i), *threads = json_get(cg, "threads");
                char buf[FORMAT_CAPACITY_MAX];
                double util = 0, wait = 0;
                size_t n_threads = 0;

                if (threads && json_object_is_type(threads, json_type_array)) {
                        n_threads = json_object_array_length(threads);
                        for (size_t k = 0; k < n_threads; k++) {
                                json_object *th = json_object_array_get_idx(threads, k);

                                util += json_get_double(th, "util", 0);
                                wait += json_get_double(th, "wait", 0);
                        }
                }
                if (table_add_cell(t, json_get_string(cg, "path", "-")) < 0 ||
                    table_add_cell(t, json_get_string(cg, "policy", "-")) < 0 ||
                    table_add_cell(t, json_get_string(cg, "allowed", "-")) < 0 ||
                    table_add_cell(t, json_get_string(cg, "cpus", "-")) < 0 ||
                    table_add_cellf(t, "%zu", n_threads) < 0 ||
                    table_add_cell(t, format_capacity(buf, sizeof(buf), util)) < 0 ||
                    table_add_cell(t, format_capacity(buf, sizeof(buf), wait)) < 0 ||
                    table_add_cellf(t, "%.1f%%", json_get_double(cg, "pressure_some_avg10", 0)) < 0)
                        return -ENOMEM;
        }
        return table_print(t, f, args->legend);
}

static int print_cpus(FILE *f, json_object *cpus, const Args *args) {
        static const char *const headers[] = {"CPU", "LLC", "CORE", "UTIL", "RUNNABLE", "BOOSTED"};
        _cleanup_(table_freep) Table *t = NULL;
        size_t n = json_object_array_length(cpus);

        if (table_new(ELEMENTSOF(headers), headers, &t) < 0)
                return -ENOMEM;
        for (size_t c = 0; c < ELEMENTSOF(headers); c++)
                (void) table_set_align_right(t, c, true);
        for (size_t i = 0; i < n; i++) {
                json_object *c = json_object_array_get_idx(cpus, i);
                bool online = json_get_bool(c, "online", true);
                int r;

                r = table_add_cellf(t, "%" PRIi64, json_get_int(c, "cpu", -1));
                if (r >= 0)
                        r = table_add_cellf(t, "%" PRIi64, json_get_int(c, "llc", -1));
                if (r >= 0)
                        r = table_add_cellf(t, "%" PRIi64, json_get_int(c, "core", -1));
                if (r >= 0 && online) {
                        r = add_capacity(t, c, "util");
                        if (r >= 0)
                                r = add_capacity(t, c, "runnable");
                        if (r >= 0)
                                r = add_capacity(t, c, "boosted");
                } else if (r >= 0) {
                        r = table_add_cell(t, "offline");
                        if (r >= 0)
                                r = table_add_cell(t, "-");
                        if (r >= 0)
                                r = table_add_cell(t, "-");
                }
                if (r < 0)
                        return r;
        }
        return table_print(t, f, args->legend);
}

static void print_plan(FILE *f, json_object *plan) {
        json_object *actions = plan_actions(plan);
        size_t n = actions ? json_object_array_length(actions) : 0;

        if (n == 0) {
                fputs("Last plan: no actions\n", f);
                return;
        }
        fprintf(f, "Last plan: %zu action%s\n", n, n == 1 ? "" : "s");
        for (size_t i = 0; i < n; i++) {
                fputs("  ", f);
                plan_format_action(f, json_object_array_get_idx(actions, i), true);
                fputc('\n', f);
        }
}

static bool is_array(json_object *o) {
        return o && json_object_is_type(o, json_type_array);
}

/* Everything but the (long) per-CPU table first, so that cutting the frame
 * to the terminal's height loses CPUs, not the summary. */
static int render(FILE *f, json_object *d, const Args *args) {
        json_object *snap = json_get(d, "snapshot"), *x;
        int r;

        if (snap && !json_object_is_type(snap, json_type_object))
                snap = NULL;
        print_header(f, d, snap);
        if (!snap) {
                fputs("\nNo sample yet: steerd has not completed a tick.\n", f);
                return 0;
        }
        if (is_array(x = json_get(snap, "llcs"))) {
                fputc('\n', f);
                r = print_llcs(f, x, args);
                if (r < 0)
                        return r;
        }
        if (is_array(x = json_get(snap, "cgroups")) && json_object_array_length(x) > 0) {
                fputc('\n', f);
                r = print_cgroups(f, x, args);
                if (r < 0)
                        return r;
        }
        fputc('\n', f);
        print_plan(f, json_get(d, "plan"));
        if (is_array(x = json_get(snap, "cpus"))) {
                fputc('\n', f);
                r = print_cpus(f, x, args);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* On a terminal: clear it and print at most rows - 1 lines, so that the
 * frame's top stays visible. */
static int show_frame(const char *text, size_t size, bool first) {
        unsigned rows = terminal_rows();

        if (on_tty()) {
                size_t lines = 0, len = 0;

                while (len < size && (rows <= 1 || lines < rows - 1)) {
                        const char *nl = memchr(text + len, '\n', size - len);

                        len = nl ? (size_t) (nl - text) + 1 : size;
                        lines++;
                }
                fputs(ANSI_HOME_CLEAR, stdout);
                fwrite(text, 1, len, stdout);
        } else {
                if (!first)
                        fputc('\n', stdout);
                fwrite(text, 1, size, stdout);
        }
        return fflush(stdout) == 0 && !ferror(stdout) ? 0 : -EIO;
}

static int top_frame(Top *top) {
        _cleanup_(json_object_putp) json_object *d = NULL;
        _cleanup_(freep) char *text = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        r = describe(top->bus, &d);
        if (r != 0)
                return r < 0 ? r : -EIO;

        if (top->args->json != JSON_OFF)
                return json_print(d, top->args->json);

        f = open_memstream(&text, &size);
        if (!f)
                return log_oom();
        r = render(f, d, top->args);
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return log_error_errno(r, "Failed to format the frame: %s", strerror(-r));
        r = show_frame(text, size, top->frames == 0);
        if (r < 0)
                return log_error_errno(r, "Failed to write to standard output: %s", strerror(-r));
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Top *top = userdata;
        int r;

        r = top_frame(top);
        if (r < 0) {
                top->error = r;
                return sd_event_exit(sd_event_source_get_event(s), 1);
        }
        top->frames++;
        if (top->args->iterations > 0 && top->frames >= top->args->iterations)
                return sd_event_exit(sd_event_source_get_event(s), 0);

        r = sd_event_source_set_time_relative(s, top->args->delay_usec);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        if (r < 0) {
                top->error = log_error_errno(r, "Failed to rearm the timer: %s", strerror(-r));
                return sd_event_exit(sd_event_source_get_event(s), 1);
        }
        return 0;
}

int verb_top(int argc, char *argv[], const Args *args) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_(sd_event_source_unrefp) sd_event_source *timer = NULL;
        Top top = {.args = args};
        int r;

        r = bus_connect(&bus);
        if (r < 0)
                return r;
        top.bus = bus;

        /* One frame needs no loop, and leaves the signals alone. */
        if (args->iterations == 1)
                return top_frame(&top);

        r = event_new_exit_on_signals(&event);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(event, &timer, CLOCK_MONOTONIC, 0, 10 * USEC_PER_MSEC, on_timer,
                                       &top);
        if (r < 0)
                return log_error_errno(r, "Failed to add a timer: %s", strerror(-r));
        r = sd_event_loop(event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %s", strerror(-r));
        return top.error < 0 ? top.error : 0;
}
