/* SPDX-License-Identifier: MIT */
/* The read verbs that show the daemon's state: status and list. */

#include <inttypes.h>
#include <time.h>

#include "bus-util.h"
#include "output.h"
#include "table.h"

typedef struct CgroupList {
        CgroupInfo *items;
        size_t n;
} CgroupList;

static void cgroup_list_done(CgroupList *l) {
        cgroup_infos_free(l->items, l->n);
        *l = (CgroupList){};
}

static int cgroup_to_json(const CgroupInfo *c, json_object **ret) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

        if (!o || json_add(o, "name", json_object_new_string(c->name)) < 0 ||
            json_add(o, "policy", json_object_new_string(c->policy)) < 0 ||
            json_add(o, "source", json_object_new_string(c->source)) < 0 ||
            json_add(o, "rule", json_object_new_string(c->rule)) < 0 ||
            json_add(o, "directory", json_object_new_string(c->directory)) < 0 ||
            json_add(o, "cpus", json_object_new_string(c->cpus)) < 0 ||
            json_add(o, "threads", json_object_new_int64(c->threads)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

static int cgroups_to_json(const CgroupList *l, json_object **ret) {
        _cleanup_(json_object_putp) json_object *a = json_object_new_array();

        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++) {
                json_object *o;
                int r;

                r = cgroup_to_json(&l->items[i], &o);
                if (r < 0)
                        return r;
                r = json_append(a, o);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(a);
        return 0;
}

static int status_to_json(const ManagerInfo *info, const CgroupList *l, json_object **ret) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        _cleanup_(json_object_putp) json_object *counters = json_object_new_object();
        json_object *cgroups;
        int r;

        if (!o || !counters)
                return -ENOMEM;
        for (size_t i = 0; i < info->n_counters; i++)
                if (json_add(counters, info->counters[i].name,
                             json_object_new_uint64(info->counters[i].value)) < 0)
                        return -ENOMEM;
        r = cgroups_to_json(l, &cgroups);
        if (r < 0)
                return r;
        if (json_add(o, "mode", info->mode ? json_object_new_string(info->mode) : json_object_new_null()) <
                    0 ||
            json_add_full(o, "mode_source",
                          info->mode_source ? json_object_new_string(info->mode_source) : NULL, true) < 0 ||
            json_add(o, "mode_set_usec", json_object_new_uint64(info->mode_set_usec)) < 0 ||
            json_add_full(o, "config_mode",
                          info->config_mode ? json_object_new_string(info->config_mode) : NULL, true) < 0 ||
            json_add(o, "version",
                     info->version ? json_object_new_string(info->version) : json_object_new_null()) < 0 ||
            json_add(o, "sample_period_usec", json_object_new_uint64(info->sample_period_usec)) < 0 ||
            json_add_full(o, "wake_sampling",
                          info->wake_sampling ? json_object_new_string(info->wake_sampling) : NULL,
                          true) < 0 ||
            json_add_full(o, "kernel_cache_aware",
                          info->kernel_cache ? json_object_new_string(info->kernel_cache) : NULL,
                          true) < 0 ||
            json_add(o, "counters", TAKE_PTR(counters)) < 0 || json_add(o, "cgroups", cgroups) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

static void print_cgroup_line(const CgroupInfo *c) {
        printf("%s%s%s: %s (%s), ", ansi(ANSI_HIGHLIGHT), c->name, ansi(ANSI_NORMAL), c->policy, c->source);
        if (!*c->directory)
                printf("not present\n");
        else
                printf("CPUs %s, %" PRIu32 " thread%s\n", *c->cpus ? c->cpus : "-", c->threads,
                       c->threads == 1 ? "" : "s");
}

/* " (from the config)" or " (set by steerctl at TIME; the config says X;
 * `steerctl mode --reset` goes back to it)": an operator who edited the
 * config sees at once why it does not apply. */
static void print_mode_source(const ManagerInfo *info) {
        if (!info->mode_source)
                return;
        if (!streq(info->mode_source, "runtime")) {
                printf(" (from the config)");
                return;
        }
        char when[64] = "an unknown time";
        time_t t = (time_t) (info->mode_set_usec / USEC_PER_SEC);
        struct tm tm;
        if (info->mode_set_usec > 0 && localtime_r(&t, &tm))
                strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", &tm);
        printf(" (set by steerctl at %s", when);
        if (info->config_mode && !streq(info->config_mode, info->mode ?: ""))
                printf("; the config says %s, `steerctl mode --reset` goes back to it", info->config_mode);
        printf(")");
}

static void print_status(const ManagerInfo *info, const CgroupList *l) {
        char span[FORMAT_TIMESPAN_MAX];

        printf("%ssteerd%s %s\n", ansi(ANSI_HIGHLIGHT), ansi(ANSI_NORMAL),
               info->version ?: "(unknown version)");
        printf("         Mode: %s%s%s", ansi(ANSI_HIGHLIGHT), info->mode ?: "-", ansi(ANSI_NORMAL));
        print_mode_source(info);
        printf("\n");
        printf("Sample period: %s\n", format_timespan(span, sizeof(span), info->sample_period_usec));
        if (info->wake_sampling)
                printf("Wake sampling: %s\n", info->wake_sampling);
        if (info->kernel_cache)
                printf("Kernel cache-aware scheduling: %s\n", info->kernel_cache);
        printf("     Counters:");
        if (info->n_counters == 0)
                printf(" -");
        for (size_t i = 0; i < info->n_counters; i++)
                printf("%s %s %" PRIu64, i > 0 ? "," : "", info->counters[i].name, info->counters[i].value);
        printf("\n");
        printf("      Cgroups: %zu opted in\n", l->n);
        for (size_t i = 0; i < l->n; i++) {
                printf("               ");
                print_cgroup_line(&l->items[i]);
        }
}

int verb_status(int argc, char *argv[], const Args *args) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(manager_info_done) ManagerInfo info = {};
        _cleanup_(cgroup_list_done) CgroupList list = {};
        int r;

        r = bus_connect(&bus);
        if (r < 0)
                return r;
        r = bus_get_manager_info(bus, &info);
        if (r != 0)
                return r;
        r = bus_list_cgroups(bus, &list.items, &list.n);
        if (r != 0)
                return r;

        if (args->json != JSON_OFF) {
                _cleanup_(json_object_putp) json_object *o = NULL;

                r = status_to_json(&info, &list, &o);
                if (r < 0)
                        return log_oom();
                return json_print(o, args->json);
        }
        print_status(&info, &list);
        return fflush(stdout) == 0 ? 0 : -EIO;
}

int verb_list(int argc, char *argv[], const Args *args) {
        static const char *const headers[] = {"CGROUP", "POLICY",  "SOURCE",   "RULE",
                                              "CPUS",   "THREADS", "DIRECTORY"};
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(cgroup_list_done) CgroupList list = {};
        _cleanup_(table_freep) Table *t = NULL;
        int r;

        r = bus_connect(&bus);
        if (r < 0)
                return r;
        r = bus_list_cgroups(bus, &list.items, &list.n);
        if (r != 0)
                return r;

        if (args->json != JSON_OFF) {
                _cleanup_(json_object_putp) json_object *a = NULL;

                r = cgroups_to_json(&list, &a);
                if (r < 0)
                        return log_oom();
                return json_print(a, args->json);
        }

        r = table_new(ELEMENTSOF(headers), headers, &t);
        if (r < 0)
                return log_oom();
        (void) table_set_align_right(t, 5, true);
        for (size_t i = 0; i < list.n; i++) {
                const CgroupInfo *c = &list.items[i];
                bool present = *c->directory;

                if (table_add_cell(t, c->name) < 0 || table_add_cell(t, c->policy) < 0 ||
                    table_add_cell(t, c->source) < 0 || table_add_cell(t, c->rule) < 0 ||
                    table_add_cell(t, present ? c->cpus : "-") < 0 ||
                    (present ? table_add_cellf(t, "%" PRIu32, c->threads) : table_add_cell(t, "-")) < 0 ||
                    table_add_cell(t, present ? c->directory : "(not present)") < 0)
                        return log_oom();
        }
        if (list.n > 0 || args->legend) {
                r = table_print(t, stdout, args->legend);
                if (r < 0)
                        return log_error_errno(r, "Failed to print the table: %s", strerror(-r));
        }
        if (args->legend)
                printf("\n%zu cgroup%s listed.\n", list.n, list.n == 1 ? "" : "s");
        return fflush(stdout) == 0 ? 0 : -EIO;
}
