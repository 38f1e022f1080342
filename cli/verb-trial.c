/* SPDX-License-Identifier: MIT */
/* trial, trials: start a trial and follow it with a progress bar (Ctrl-C
 * leaves it running), stop one, list the kept records, draw one's blocks. */

#include <inttypes.h>
#include <math.h>
#include <time.h>

#include "bus-util.h"
#include "output.h"
#include "table.h"

#define TRIAL_STRUCT "(sssssddddss)"

typedef struct TrialRow {
        const char *id, *cgroup, *state, *arm, *verdict, *text, *reserved;
        double progress, ratio, ci_low, ci_high;
} TrialRow;

static int read_row(sd_bus_message *m, TrialRow *ret) {
        TrialRow t = {};
        int r = sd_bus_message_read(m, TRIAL_STRUCT, &t.id, &t.cgroup, &t.state, &t.arm, &t.verdict,
                                    &t.progress, &t.ratio, &t.ci_low, &t.ci_high, &t.text, &t.reserved);
        if (r > 0)
                *ret = t;
        return r;
}

static int print_json_text(const char *text, JsonMode mode) {
        _cleanup_(json_object_putp) json_object *o = json_tokener_parse(text);
        if (!o)
                return log_error("steerd sent a record that is not JSON.");
        return json_print(o, mode);
}

/* ---- trials ---- */

int verb_trials(int argc, char *argv[], const Args *args) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        _cleanup_(json_object_putp) json_object *a = json_object_new_array();
        static const char *const headers[] = {"ID", "CGROUP", "STATE", "VERDICT", "RATIO", "95% CI", "SAYS"};
        TrialRow row;
        int r;

        if (!a)
                return log_oom();
        r = bus_connect(&bus);
        if (r < 0)
                return r;
        r = bus_call(bus, "ListTrials", &error, &reply, "");
        if (r < 0)
                return log_bus_error(r, &error, false, "Failed to list the trials");
        r = table_new(ELEMENTSOF(headers), headers, &t);
        if (r < 0)
                return log_oom();
        table_set_align_right(t, 4, true);
        r = sd_bus_message_enter_container(reply, 'a', TRIAL_STRUCT);
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply: %s", strerror(-r));
        while ((r = read_row(reply, &row)) > 0) {
                if (args->json != JSON_OFF) {
                        json_object *o = json_object_new_object();
                        if (!o || json_add(o, "id", json_object_new_string(row.id)) < 0 ||
                            json_add(o, "cgroup", json_object_new_string(row.cgroup)) < 0 ||
                            json_add(o, "state", json_object_new_string(row.state)) < 0 ||
                            json_add(o, "verdict", json_object_new_string(row.verdict)) < 0 ||
                            json_add(o, "progress", json_object_new_double(row.progress)) < 0 ||
                            json_add_full(o, "ratio",
                                          isnan(row.ratio) ? NULL : json_object_new_double(row.ratio),
                                          true) < 0 ||
                            json_add_full(o, "ci_low",
                                          isnan(row.ci_low) ? NULL : json_object_new_double(row.ci_low),
                                          true) < 0 ||
                            json_add_full(o, "ci_high",
                                          isnan(row.ci_high) ? NULL : json_object_new_double(row.ci_high),
                                          true) < 0 ||
                            json_add(o, "text", json_object_new_string(row.text)) < 0 ||
                            json_append(a, o) < 0)
                                return log_oom();
                        continue;
                }
                char state[64];
                if (streq(row.state, "running"))
                        snprintf(state, sizeof(state), "running %.0f%%", row.progress * 100);
                else
                        snprintf(state, sizeof(state), "%s", row.state);
                if (table_add_cell(t, row.id) < 0 || table_add_cell(t, row.cgroup) < 0 ||
                    table_add_cell(t, state) < 0 || table_add_cell(t, row.verdict) < 0 ||
                    (isnan(row.ratio) ? table_add_cell(t, "-") : table_add_cellf(t, "%.3f", row.ratio)) <
                            0 ||
                    (isnan(row.ci_low) ? table_add_cell(t, "-")
                                       : table_add_cellf(t, "[%.3f, %.3f]", row.ci_low, row.ci_high)) < 0 ||
                    table_add_cell(t, row.text) < 0)
                        return log_oom();
        }
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply: %s", strerror(-r));
        if (args->json != JSON_OFF)
                return json_print(a, args->json);
        size_t n = table_rows(t);
        if (n > 0)
                table_print(t, stdout, args->legend);
        if (args->legend)
                printf("%s%zu trial%s kept.\n", n > 0 ? "\n" : "", n, n == 1 ? "" : "s");
        return 0;
}

/* ---- trial --show ---- */

static const char *primary_key(const char *primary) {
        return streq(primary, "latency")    ? "latency_us"
               : streq(primary, "slices")   ? "slices_per_s"
               : streq(primary, "pressure") ? "pressure_pct"
                                            : "metric";
}

static int show(sd_bus *bus, const char *id, const Args *args) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(json_object_putp) json_object *o = NULL;
        const char *text;
        int r;

        r = bus_call(bus, "GetTrial", &error, &reply, "s", id);
        if (r < 0)
                return log_bus_error(r, &error, false, "Failed to get trial %s", id);
        r = sd_bus_message_read(reply, "s", &text);
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply: %s", strerror(-r));
        if (args->json != JSON_OFF)
                return print_json_text(text, args->json);
        o = json_tokener_parse(text);
        if (!o)
                return log_error("steerd sent a record that is not JSON.");

        const char *primary = json_get_string(o, "primary", "latency"), *key = primary_key(primary);
        json_object *blocks = json_get(o, "blocks");
        size_t n = blocks && json_object_is_type(blocks, json_type_array) ? json_object_array_length(blocks)
                                                                          : 0;
        double max = 0;
        for (size_t i = 0; i < n; i++)
                max = MAX(max, json_get_double(json_object_array_get_idx(blocks, i), key, 0));

        printf("%sTrial %s%s of %s: %s%s%s\n", ansi(ANSI_HIGHLIGHT), json_get_string(o, "id", id),
               ansi(ANSI_NORMAL), json_get_string(o, "cgroup", "?"), json_get_string(o, "state", "?"),
               json_get(o, "end_reason") ? ": " : "", json_get_string(o, "end_reason", ""));
        printf("Judged by %s (%s is better), blocks of %.0f s, margin %.0f%%\n",
               json_get_string(o, "metric", primary),
               json_get_bool(o, "higher_is_better", false) ? "higher" : "lower",
               json_get_int(o, "block_usec", 0) / 1e6, json_get_double(o, "margin", 0) * 100);
        if (json_get(o, "note"))
                printf("Note: %s\n", json_get_string(o, "note", ""));
        printf("\n  #  %-10s %-9s %8s  %12s\n", "ARM", "SETTLED", "SETTLE", key);
        for (size_t i = 0; i < n; i++) {
                json_object *b = json_object_array_get_idx(blocks, i);
                if (!json_get_bool(b, "started", false))
                        break;
                double v = json_get_double(b, key, NAN);
                bool steered = streq(json_get_string(b, "arm", ""), "steered");
                int64_t start = json_get_int(b, "start_usec", 0),
                        measure = json_get_int(b, "measure_usec", -1);
                char settle[32] = "-", value[32] = "-", bar[41] = "";
                if (measure >= start)
                        snprintf(settle, sizeof(settle), "%.1f s", (measure - start) / 1e6);
                if (!isnan(v)) {
                        snprintf(value, sizeof(value), "%.4g", v);
                        size_t w = max > 0 ? (size_t) lround(v / max * 40) : 0;
                        memset(bar, steered ? '#' : '-', MIN(w, sizeof(bar) - 1));
                        bar[MIN(w, sizeof(bar) - 1)] = 0;
                }
                printf("%3zu  %-10s %-9s %8s  %12s  %s\n", i + 1,
                       json_get_bool(b, "readiness", false) ? "readiness" : json_get_string(b, "arm", "?"),
                       !json_get_bool(b, "measuring", false) ? "-"
                       : json_get_bool(b, "settled", false)  ? "yes"
                                                             : "no (acting)",
                       settle, value, bar);
        }
        printf("\n  # steered  - hands-off\n\n%sVerdict:%s %s\n", ansi(ANSI_HIGHLIGHT), ansi(ANSI_NORMAL),
               json_get_string(o, "verdict_text", "?"));
        json_object *signals = json_get(o, "signals");
        if (signals && json_object_is_type(signals, json_type_object)) {
                json_object_object_foreach(signals, name, e) {
                        printf("  %-9s steered/hands-off %.3f [%.3f, %.3f] over %" PRIi64 " pairs\n", name,
                               json_get_double(e, "ratio", NAN), json_get_double(e, "ci_low", NAN),
                               json_get_double(e, "ci_high", NAN), json_get_int(e, "pairs", 0));
                }
        }
        if (json_get(o, "readiness_noise"))
                printf("  the two hands-off readiness blocks differed by %.1f%%\n",
                       json_get_double(o, "readiness_noise", 0) * 100);
        return 0;
}

/* ---- trial CGROUP: follow it ---- */

typedef struct Follow {
        sd_bus *bus;
        const char *id;
        const Args *args;
        bool tty;
        bool ended;
        int last_percent;
        char last_text[256];
} Follow;

static void draw(Follow *f, const TrialRow *row) {
        int pct = (int) lround(row->progress * 100);
        if (f->tty) {
                char bar[31];
                size_t w = (size_t) CLAMP(lround(row->progress * 30), 0L, 30L);
                memset(bar, '#', w);
                memset(bar + w, '.', 30 - w);
                bar[30] = 0;
                printf("\r\x1b[K[%s] %3d%% %-9s %s", bar, pct, row->arm, row->text);
                fflush(stdout);
        } else if (pct / 10 != f->last_percent / 10 || !streq(f->last_text, row->text)) {
                printf("%3d%% %s: %s\n", pct, row->arm[0] ? row->arm : row->state, row->text);
                fflush(stdout);
        }
        f->last_percent = pct;
        snprintf(f->last_text, sizeof(f->last_text), "%s", row->text);
}

static int poll_once(Follow *f) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        TrialRow row;
        int r;

        r = sd_bus_get_property(f->bus, STEERD_BUS_NAME, STEERD_BUS_PATH, STEERD_BUS_INTERFACE, "Trials",
                                &error, &reply, "a" TRIAL_STRUCT);
        if (r < 0)
                return log_bus_error(r, &error, false, "Failed to follow the trial");
        r = sd_bus_message_enter_container(reply, 'a', TRIAL_STRUCT);
        while (r >= 0 && (r = read_row(reply, &row)) > 0)
                if (streq(row.id, f->id)) {
                        draw(f, &row);
                        return 0;
                }
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply: %s", strerror(-r));
        f->ended = true;
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Follow *f = userdata;
        int r = poll_once(f);
        if (r < 0 || f->ended)
                return sd_event_exit(sd_event_source_get_event(s), r < 0 ? r : 0);
        r = sd_event_source_set_time(s, usec + USEC_PER_SEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ON);
        return r;
}

static int follow(sd_bus *bus, const char *id, const Args *args) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        Follow f = {.bus = bus, .id = id, .args = args, .tty = on_tty(), .last_percent = -100};
        uint64_t now;
        int r;

        r = event_new_exit_on_signals(&e);
        if (r < 0)
                return r;
        (void) sd_event_now(e, CLOCK_MONOTONIC, &now);
        r = sd_event_add_time(e, NULL, CLOCK_MONOTONIC, now, 0, on_timer, &f);
        if (r < 0)
                return log_error_errno(r, "Failed to set up a timer: %s", strerror(-r));
        r = sd_event_loop(e);
        if (f.tty)
                printf("\n");
        if (r < 0)
                return r;
        if (!f.ended) {
                printf("The trial goes on in steerd: 'steerctl trial --show %s' shows it, 'steerctl trial "
                       "--stop "
                       "CGROUP' ends it.\n",
                       id);
                return 0;
        }
        return show(bus, id, args);
}

static int start(sd_bus *bus, const char *cgroup, const Args *args) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *id;
        int r;

        r = bus_call(bus, "StartTrial", &error, &reply, "sttss", cgroup, args->trial_duration_usec,
                     args->trial_block_usec, args->trial_metric ?: "",
                     args->trial_direction > 0   ? "higher"
                     : args->trial_direction < 0 ? "lower"
                                                 : "");
        if (r < 0)
                return log_bus_error(r, &error, true, "Failed to start a trial of %s", cgroup);
        r = sd_bus_message_read(reply, "s", &id);
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply: %s", strerror(-r));
        if (args->json != JSON_OFF) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();
                if (!o || json_add(o, "id", json_object_new_string(id)) < 0)
                        return log_oom();
                return json_print(o, args->json);
        }
        printf("Trial %s of %s started.\n", id, cgroup);
        if (args->trial_no_wait)
                return 0;
        _cleanup_(freep) char *copy = strdup(id);
        if (!copy)
                return log_oom();
        return follow(bus, copy, args);
}

int verb_trial(int argc, char *argv[], const Args *args) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        if (argc != 2)
                return log_error("trial takes one CGROUP (or, with --show, one trial ID)."), EXIT_USAGE;
        r = bus_connect(&bus);
        if (r < 0)
                return r;
        if (args->trial_show)
                return show(bus, argv[1], args);
        if (args->trial_stop) {
                const char *id;
                r = bus_call(bus, "StopTrial", &error, &reply, "s", argv[1]);
                if (r < 0)
                        return log_bus_error(r, &error, true, "Failed to stop the trial of %s", argv[1]);
                if (sd_bus_message_read(reply, "s", &id) > 0)
                        printf("Trial %s of %s stopped.\n", id, argv[1]);
                return 0;
        }
        return start(bus, argv[1], args);
}
