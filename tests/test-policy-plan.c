/* SPDX-License-Identifier: MIT */
/* The plan and its two renderings (DESIGN.md section 6). */

#include <json-c/json.h>

#include "test-policy-util.h"

static void test_empty(void **unused) {
        _cleanup_plan_ Plan *plan = NULL;
        _cleanup_(freep) char *json = NULL, *text = NULL;
        size_t size = 0;

        assert_int_equal(plan_new(&plan), 0);
        assert_int_equal(plan_to_json(plan, 3, &json), 0);
        assert_string_equal(json, "{\"tick\":3,\"actions\":[]}");

        FILE *f = open_memstream(&text, &size);
        assert_non_null(f);
        assert_int_equal(plan_format_text(plan, 3, f), 0);
        fclose(f);
        assert_string_equal(text, "tick 3: no actions\n");
}

static void test_actions(void **unused) {
        _cleanup_plan_ Plan *plan = NULL;
        _cleanup_cpuset_ CpuSet a = topo_parse("0-3,8-11"), b = topo_parse("5");
        _cleanup_(freep) char *json = NULL, *text = NULL;
        size_t size = 0;

        assert_int_equal(plan_new(&plan), 0);
        assert_int_equal(plan_add(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW,
                                  "/system.slice/app.service", 0, 0, a,
                                  "llc 0 nr_idle_scan 0 < 2; demand 612"),
                         0);
        assert_int_equal(plan_add(plan, ACTION_RESTORE, ACTION_POLICY_GUARD, "/bench1", 1234, 5678, b,
                                  "quote \" and backslash \\"),
                         0);
        assert_int_equal(plan_count_moves(plan), 0);

        assert_int_equal(plan_to_json(plan, 0, &json), 0);
        assert_string_equal(json, "{\"tick\":0,\"actions\":["
                                  "{\"kind\":\"set_cgroup_cpus\",\"cgroup\":\"/system.slice/app.service\","
                                  "\"cpus\":\"0-3,8-11\",\"policy\":\"window\","
                                  "\"reason\":\"llc 0 nr_idle_scan 0 < 2; demand 612\"},"
                                  "{\"kind\":\"restore\",\"cgroup\":\"/bench1\",\"tid\":1234,\"cpus\":\"5\","
                                  "\"policy\":\"guard\",\"reason\":\"quote \\\" and backslash \\\\\"}]}");

        /* It is JSON. */
        json_object *o = json_tokener_parse(json);
        assert_non_null(o);
        json_object_put(o);

        FILE *f = open_memstream(&text, &size);
        assert_non_null(f);
        assert_int_equal(plan_format_text(plan, 7, f), 0);
        fclose(f);
        assert_string_equal(
                text, "tick 7: window  set_cgroup_cpus /system.slice/app.service -> 0-3,8-11 "
                      "(llc 0 nr_idle_scan 0 < 2; demand 612)\n"
                      "tick 7: guard   restore         /bench1/1234 -> 5 (quote \" and backslash \\)\n");
}

static void test_strings(void **unused) {
        for (ActionKind k = 0; k < _ACTION_KIND_MAX; k++)
                assert_int_equal(action_kind_from_string(action_kind_to_string(k)), k);
        for (ActionPolicy p = 0; p < _ACTION_POLICY_MAX; p++)
                assert_int_equal(action_policy_from_string(action_policy_to_string(p)), p);
        assert_int_equal(action_kind_from_string("move"), _ACTION_KIND_INVALID);
        assert_int_equal(action_policy_from_string(NULL), _ACTION_POLICY_INVALID);
        assert_null(action_kind_to_string(_ACTION_KIND_MAX));
}

static void test_add_refuses(void **unused) {
        _cleanup_plan_ Plan *plan = NULL;
        _cleanup_cpuset_ CpuSet a = topo_parse("1");

        assert_int_equal(plan_new(&plan), 0);
        assert_int_equal(plan_add(plan, _ACTION_KIND_MAX, ACTION_POLICY_WINDOW, "/a", 0, 0, a, ""), -EINVAL);
        assert_int_equal(plan_add(plan, ACTION_RESTORE, ACTION_POLICY_WINDOW, NULL, 0, 0, a, ""), -EINVAL);
        assert_int_equal(plan_add(plan, ACTION_RESTORE, ACTION_POLICY_WINDOW, "/a", 0, 0, NULL, ""),
                         -EINVAL);
        assert_int_equal(plan_add(plan, ACTION_RESTORE, ACTION_POLICY_WINDOW, "/a", -1, 0, a, ""), -EINVAL);
        assert_int_equal(plan->n_actions, 0);
        /* Copies: the caller's set may change afterwards. */
        assert_int_equal(plan_add(plan, ACTION_RESTORE, ACTION_POLICY_WINDOW, "/a", 0, 0, a, NULL), 0);
        hwloc_bitmap_set(a, 2);
        assert_int_equal(hwloc_bitmap_weight(plan->actions[0].cpus), 1);
        assert_string_equal(plan->actions[0].reason, "");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_empty),
                cmocka_unit_test(test_actions),
                cmocka_unit_test(test_strings),
                cmocka_unit_test(test_add_refuses),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
