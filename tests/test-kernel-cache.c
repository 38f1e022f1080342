/* SPDX-License-Identifier: MIT */
/* The kernel's cache-aware scheduling (kernel-cache.h, docs/DECISIONS.md):
 * found on fixture roots with its knobs, with the build option only, or
 * not at all; a snapshot carries it and each cgroup's processes through
 * JSON; the policy opens no window for a one-process cgroup on such a
 * kernel, and does for one of two processes. */

#include <stdlib.h>
#include <string.h>

#include "test-helpers.h"
#include "test-policy-util.h"

#include "kernel-cache.h"
#include "policy-internal.h"
#include "snapshot-json.h"

static KernelCacheAware probe_tree(const char *const *files) {
        _cleanup_(freep) char *dir = test_mkdtemp();
        _cleanup_(rootdir_freep) RootDir *root = NULL;
        KernelCacheAware k;

        test_write_file(dir, "proc/sys/kernel/osrelease", "6.99.0-test\n");
        for (size_t i = 0; files[i]; i += 2)
                test_write_file(dir, files[i], files[i + 1]);
        assert_int_equal(rootdir_open(dir, &root), 0);
        kernel_cache_aware_probe(root, &k);
        test_rm_rf(dir);
        return k;
}

static void test_probe(void **unused) {
        (void) unused;
        KernelCacheAware k;

        /* The posted series from v3 on: sched/llc_balancing/, aggr_tolerance 0 is off. */
        k = probe_tree((const char *[]){"sys/kernel/debug/sched/llc_balancing/aggr_tolerance", "1\n", NULL});
        assert_true(k.present && k.enabled);
        assert_non_null(strstr(k.how, "aggr_tolerance 1"));
        k = probe_tree((const char *[]){"sys/kernel/debug/sched/llc_balancing/aggr_tolerance", "0\n", NULL});
        assert_true(k.present && !k.enabled);
        k = probe_tree((const char *[]){"sys/kernel/debug/sched/llc_balancing/enabled", "0\n",
                                        "sys/kernel/debug/sched/llc_balancing/aggr_tolerance", "50\n",
                                        NULL});
        assert_true(k.present && !k.enabled);
        assert_non_null(strstr(k.how, "enabled 0"));
        /* v2: one switch, sched/llc_enabled. */
        k = probe_tree((const char *[]){"sys/kernel/debug/sched/llc_enabled", "1\n", NULL});
        assert_true(k.present && k.enabled);
        /* debugfs not mounted: the build option, taken as on. */
        k = probe_tree(
                (const char *[]){"boot/config-6.99.0-test", "CONFIG_SMP=y\nCONFIG_SCHED_CACHE=y\n", NULL});
        assert_true(k.present && k.enabled);
        assert_non_null(strstr(k.how, "CONFIG_SCHED_CACHE=y in /boot/config-6.99.0-test"));
        k = probe_tree((const char *[]){"boot/config-6.99.0-test",
                                        "CONFIG_SMP=y\n# CONFIG_SCHED_CACHE is not set\n", NULL});
        assert_false(k.present || k.enabled);
        assert_non_null(strstr(k.how, "not built"));
        k = probe_tree((const char *[]){NULL});
        assert_false(k.present || k.enabled);
        assert_non_null(strstr(k.how, "not found"));
}

/* LLC 0 of 8 CPUs at 90%: /one (one process) and /two (two), each two busy threads. */
static Snapshot *two_cgroups(bool kernel_cache_aware) {
        Snapshot *s = topo_new(2, 4, 2, 0);
        topo_set_llc(s, 0, 973, 973);
        topo_set_llc(s, 1, 300, 300);
        size_t one = topo_add_cgroup(s, "/one", CGROUP_POLICY_LATENCY, NULL);
        topo_add_thread(s, one, 101, 1, 0, 700, 0);
        topo_add_thread(s, one, 102, 1, 1, 700, 0);
        size_t two = topo_add_cgroup(s, "/two", CGROUP_POLICY_LATENCY, NULL);
        topo_add_thread(s, two, 201, 1, 4, 700, 0);
        topo_add_thread(s, two, 202, 1, 5, 700, 0);
        topo_finish(s);
        s->kernel_cache_aware = kernel_cache_aware;
        s->cgroups[one].n_processes = 1;
        s->cgroups[two].n_processes = 2;
        return s;
}

static void test_no_window_for_one_process(void **unused) {
        (void) unused;
        Settings st;

        settings_latency(&st);
        for (int aware = 0; aware <= 1; aware++) {
                _cleanup_policy_state_ PolicyState *state = NULL;
                _cleanup_(snapshot_freep) Snapshot *s = two_cgroups(aware);
                assert_int_equal(policy_state_new(&state), 0);
                _cleanup_plan_ Plan *plan = decide_checked(s, &st, state);
                dump_plan(plan, (unsigned) aware);
                const Action *one = plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/one", 0);
                const Action *two = plan_find(plan, ACTION_SET_CGROUP_CPUS, ACTION_POLICY_WINDOW, "/two", 0);
                assert_non_null(two); /* two processes: the kernel does not aggregate them */
                if (aware) {
                        assert_null(one);
                        Explanation e = {};
                        assert_int_equal(policy_explain(s, &st, state, plan, "/one", s->time_us, &e), 0);
                        bool said = false;
                        for (size_t i = 0; i < e.n; i++)
                                said |= strstr(e.lines[i].text, "cache-aware scheduling") != NULL;
                        explanation_done(&e);
                        assert_true(said);
                } else
                        assert_non_null(one);
        }
}

/* Recorded on such a kernel, replayed anywhere: the flag and the processes
 * go through JSON; a snapshot without them writes neither. */
static void test_json_round_trip(void **unused) {
        (void) unused;
        for (int aware = 0; aware <= 1; aware++) {
                _cleanup_(snapshot_freep) Snapshot *s = two_cgroups(aware), *back = NULL;
                _cleanup_(freep) char *text = NULL;
                assert_int_equal(snapshot_to_json_string(s, &text), 0);
                assert_int_equal(strstr(text, "\"kernel_cache_aware\"") != NULL, aware);
                assert_int_equal(strstr(text, "\"processes\"") != NULL, aware);
                assert_int_equal(snapshot_from_json_string(text, "test", 1, &back), 0);
                assert_int_equal(back->kernel_cache_aware, aware);
                assert_int_equal(back->cgroups[0].n_processes, aware ? 1 : 0);
                assert_int_equal(back->cgroups[1].n_processes, aware ? 2 : 0);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_probe),
                cmocka_unit_test(test_no_window_for_one_process),
                cmocka_unit_test(test_json_round_trip),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
