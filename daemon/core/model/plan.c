/* SPDX-License-Identifier: MIT */
#include <json-c/json.h>

#include "json-util.h"
#include "plan.h"

static const char *const action_kind_table[_ACTION_KIND_MAX] = {
        [ACTION_SET_CGROUP_CPUS] = "set_cgroup_cpus",
        [ACTION_SET_THREAD_CPUS] = "set_thread_cpus",
        [ACTION_RESTORE] = "restore",
};

static const char *const action_policy_table[_ACTION_POLICY_MAX] = {
        [ACTION_POLICY_WINDOW] = "window",
        [ACTION_POLICY_STICKY] = "sticky",
        [ACTION_POLICY_BALANCE] = "balance",
        [ACTION_POLICY_GUARD] = "guard",
        [ACTION_POLICY_SEARCH] = "search",
};

DEFINE_STRING_TABLE_LOOKUP(action_kind, ActionKind, _ACTION_KIND_MAX);

DEFINE_STRING_TABLE_LOOKUP(action_policy, ActionPolicy, _ACTION_POLICY_MAX);

int plan_new(Plan **ret) {
        Plan *p;

        if (!ret)
                return -EINVAL;
        p = calloc(1, sizeof(Plan));
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

static void action_done(Action *a) {
        free(a->cgroup);
        free(a->reason);
        hwloc_bitmap_free(a->cpus);
}

Plan *plan_free(Plan *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_actions; i++)
                action_done(&p->actions[i]);
        free(p->actions);
        free(p);
        return NULL;
}

int plan_add(Plan *p, ActionKind kind, ActionPolicy policy, const char *cgroup, pid_t tid,
             uint64_t starttime, const hwloc_const_bitmap_t cpus, const char *reason) {
        Action a = {
                .kind = kind,
                .policy = policy,
                .tid = tid,
                .starttime = starttime,
        };
        Action *n;

        if (!p || !cgroup || !cpus || kind < 0 || kind >= _ACTION_KIND_MAX || policy < 0 ||
            policy >= _ACTION_POLICY_MAX || tid < 0)
                return -EINVAL;

        a.cgroup = strdup(cgroup);
        a.reason = strdup(reason ?: "");
        a.cpus = hwloc_bitmap_dup(cpus);
        if (!a.cgroup || !a.reason || !a.cpus)
                goto oom;

        n = reallocarray(p->actions, p->n_actions + 1, sizeof(Action));
        if (!n)
                goto oom;
        p->actions = n;
        p->actions[p->n_actions++] = a;
        return 0;

oom:
        action_done(&a);
        return -ENOMEM;
}

bool action_is_move(const Action *a) {
        return a->policy == ACTION_POLICY_BALANCE && a->kind != ACTION_RESTORE;
}

size_t plan_count_moves(const Plan *p) {
        size_t n = 0;

        for (size_t i = 0; p && i < p->n_actions; i++)
                if (action_is_move(&p->actions[i]))
                        n++;
        return n;
}

static int action_to_json(const Action *a, json_object **ret) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_(freep) char *cpus = NULL;
        int r;

        r = cpuset_format(a->cpus, &cpus);
        if (r < 0)
                return r;

        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        /* json-c keeps insertion order: the key order of DESIGN.md 6. */
        r = json_add(o, "kind", json_object_new_string(action_kind_to_string(a->kind)));
        if (r >= 0)
                r = json_add(o, "cgroup", json_object_new_string(a->cgroup));
        if (r >= 0 && a->tid > 0)
                r = json_add(o, "tid", json_object_new_int64(a->tid));
        if (r >= 0)
                r = json_add(o, "cpus", json_object_new_string(cpus));
        if (r >= 0)
                r = json_add(o, "policy", json_object_new_string(action_policy_to_string(a->policy)));
        if (r >= 0)
                r = json_add(o, "reason", json_object_new_string(a->reason ?: ""));
        if (r < 0)
                return r;

        *ret = TAKE_PTR(o);
        return 0;
}

int plan_to_json(const Plan *p, unsigned tick, char **ret) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        json_object *arr;
        char *s;
        int r;

        if (!p || !ret)
                return -EINVAL;

        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        r = json_add(o, "tick", json_object_new_int64(tick));
        if (r < 0)
                return r;
        arr = json_object_new_array();
        r = json_add(o, "actions", arr);
        if (r < 0)
                return r;

        for (size_t i = 0; i < p->n_actions; i++) {
                json_object *a = NULL;

                r = action_to_json(&p->actions[i], &a);
                if (r < 0)
                        return r;
                if (json_object_array_add(arr, a) < 0) {
                        json_object_put(a);
                        return -ENOMEM;
                }
        }

        s = strdup(
                json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int plan_format_text(const Plan *p, unsigned tick, FILE *f) {
        if (!p || !f)
                return -EINVAL;

        if (p->n_actions == 0)
                fprintf(f, "tick %u: no actions\n", tick);

        for (size_t i = 0; i < p->n_actions; i++) {
                const Action *a = &p->actions[i];
                _cleanup_(freep) char *cpus = NULL;
                int r;

                r = cpuset_format(a->cpus, &cpus);
                if (r < 0)
                        return r;
                fprintf(f, "tick %u: %-7s %-15s %s", tick, action_policy_to_string(a->policy),
                        action_kind_to_string(a->kind), a->cgroup);
                if (a->tid > 0)
                        fprintf(f, "/%d", (int) a->tid);
                fprintf(f, " -> %s (%s)\n", cpus, a->reason ?: "");
        }

        return ferror(f) ? -EIO : 0;
}
