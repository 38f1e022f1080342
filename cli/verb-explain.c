/* SPDX-License-Identifier: MIT */
/* explain: why steerd did what it did for one cgroup in its last tick. */

#include "bus-util.h"
#include "output.h"

typedef struct Line {
        const char *topic, *text;
} Line;

static int print_json(const char *cgroup, const Line *l, size_t n, JsonMode mode) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object(), *a = json_object_new_array();

        if (!o || !a)
                return log_oom();
        for (size_t i = 0; i < n; i++) {
                json_object *x = json_object_new_object();
                if (!x || json_add(x, "topic", json_object_new_string(l[i].topic)) < 0 ||
                    json_add(x, "text", json_object_new_string(l[i].text)) < 0 || json_append(a, x) < 0) {
                        json_object_put(x);
                        return log_oom();
                }
        }
        if (json_add(o, "cgroup", json_object_new_string(cgroup)) < 0 ||
            json_add(o, "lines", TAKE_PTR(a)) < 0)
                return log_oom();
        return json_print(o, mode);
}

static void print_text(const Line *l, size_t n) {
        for (size_t i = 0; i < n; i++) {
                if (streq(l[i].topic, "cgroup")) {
                        printf("%s%s%s\n", ansi(ANSI_HIGHLIGHT), l[i].text, ansi(ANSI_NORMAL));
                        continue;
                }
                printf("  %-8s %s\n", l[i].topic, l[i].text);
        }
}

int verb_explain(int argc, char *argv[], const Args *args) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(freep) Line *lines = NULL;
        const char *cgroup = argv[1];
        size_t n = 0;
        int r;

        r = bus_connect(&bus);
        if (r < 0)
                return r;
        r = bus_call(bus, "Explain", &error, &reply, "s", cgroup);
        if (r < 0)
                return log_bus_error(r, &error, true, "Failed to explain %s", cgroup);
        r = sd_bus_message_enter_container(reply, 'a', "(ss)");
        while (r >= 0) {
                const char *topic, *text;
                r = sd_bus_message_read(reply, "(ss)", &topic, &text);
                if (r <= 0)
                        break;
                Line *l = reallocarray(lines, n + 1, sizeof(Line));
                if (!l)
                        return log_oom();
                lines = l;
                lines[n++] = (Line){topic, text};
        }
        if (r < 0)
                return log_error_errno(r, "Failed to parse the explanation: %s", strerror(-r));
        if (args->json != JSON_OFF)
                return print_json(cgroup, lines, n, args->json);
        print_text(lines, n);
        return fflush(stdout) == 0 ? 0 : -EIO;
}
