/* SPDX-License-Identifier: MIT */
#include <inttypes.h>

#include "plan.h"

json_object *plan_actions(json_object *plan) {
        json_object *a;

        if (!plan)
                return NULL;
        if (json_object_is_type(plan, json_type_array))
                return plan;
        a = json_get(plan, "actions");
        return a && json_object_is_type(a, json_type_array) ? a : NULL;
}

void plan_format_action(FILE *f, json_object *action, bool reason) {
        const char *policy = json_get_string(action, "policy", NULL),
                   *kind = json_get_string(action, "kind", "action"),
                   *cgroup = json_get_string(action, "cgroup", NULL),
                   *cpus = json_get_string(action, "cpus", NULL),
                   *why = json_get_string(action, "reason", NULL);
        int64_t tid = json_get_int(action, "tid", 0);

        if (policy)
                fprintf(f, "%s ", policy);
        fputs(kind, f);
        if (cgroup)
                fprintf(f, " %s", cgroup);
        if (tid > 0)
                fprintf(f, " tid %" PRIi64, tid);
        if (cpus)
                fprintf(f, " -> %s", cpus);
        if (reason && why && *why)
                fprintf(f, " (%s)", why);
}
