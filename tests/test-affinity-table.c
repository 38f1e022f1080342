/* SPDX-License-Identifier: MIT */
/* A simulated host's sched_{get,set}affinity (affinity-table.h): on a
 * fixture root, a set writes the kernel's composition (the request within
 * the thread's cgroup CPUs) into the thread's status and logs the request;
 * EINVAL when nothing of it is left, ESRCH for a thread that is not there;
 * every CPU is the cgroup's. */

#include <stdlib.h>
#include <string.h>

#include "test-helpers.h"

#include "affinity-table.h"
#include "cpuset.h"

static const char status_fmt[] =
        "Name:\tsim\nTgid:\t%d\nPid:\t%d\nCpus_allowed_list:\t%s\nMems_allowed_list:\t0\n";

static void add_thread(const char *dir, int tid, const char *cgroup, const char *cpus) {
        char path[128], text[256];
        snprintf(path, sizeof(path), "proc/%d/task/%d/status", tid, tid);
        snprintf(text, sizeof(text), status_fmt, tid, tid, cpus);
        test_write_file(dir, path, text);
        snprintf(path, sizeof(path), "proc/%d/cpuset", tid);
        snprintf(text, sizeof(text), "%s\n", cgroup);
        test_write_file(dir, path, text);
}

static void assert_mask(AffinityTable *t, int tid, const char *want) {
        _cleanup_cpuset_ CpuSet got = NULL;
        char buf[CPUSET_STRLEN];
        assert_int_equal(affinity_table_get(t, tid, &got), 0);
        assert_string_equal(cpuset_to_string(got, buf, sizeof(buf)), want);
}

static void test_table(void **unused) {
        (void) unused;
        _cleanup_(freep) char *dir = test_mkdtemp();
        _cleanup_(rootdir_freep) RootDir *root = NULL;
        _cleanup_(affinity_table_freep) AffinityTable *t = NULL;
        _cleanup_cpuset_ CpuSet req = NULL, none = NULL;
        char log[512], *text = NULL;

        test_write_file(dir, "proc/self/mounts", "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n");
        test_write_file(dir, "sys/fs/cgroup/cpuset/cpuset.cpus", "0-7\n");
        test_write_file(dir, "sys/fs/cgroup/cpuset/a/cpuset.cpus", "0-7\n");
        test_write_file(dir, "sys/fs/cgroup/cpuset/a/cpuset.effective_cpus", "0-3\n");
        add_thread(dir, 100, "/a", "0-3");
        add_thread(dir, 101, "/", "0-7");
        assert_int_equal(rootdir_open(dir, &root), 0);
        snprintf(log, sizeof(log), "%s/requests.log", dir);
        assert_int_equal(affinity_table_open(root, log, &t), 0);

        assert_mask(t, 100, "0-3");
        /* Composed with the cgroup's effective CPUs, as the kernel does. */
        assert_int_equal(cpuset_parse("2-5", &req), 0);
        assert_int_equal(affinity_table_set(t, 100, req), 0);
        assert_mask(t, 100, "2-3");
        /* The rest of the status file is kept. */
        assert_int_equal(rootdir_read_file(root, "/proc/100/task/100/status", &text, NULL), 0);
        assert_non_null(strstr(text, "Tgid:\t100\n"));
        assert_non_null(strstr(text, "Mems_allowed_list:\t0\n"));
        free(text);
        /* Nothing left of the request: EINVAL, and nothing changes. */
        hwloc_bitmap_free(req);
        assert_int_equal(cpuset_parse("6-7", &req), 0);
        assert_int_equal(affinity_table_set(t, 100, req), -EINVAL);
        assert_mask(t, 100, "2-3");
        /* Every CPU: the cgroup's. */
        assert_int_equal(affinity_table_set(t, 100, NULL), 0);
        assert_mask(t, 100, "0-3");
        /* The root cgroup. */
        assert_int_equal(affinity_table_set(t, 101, req), 0);
        assert_mask(t, 101, "6-7");
        /* A thread that is not there; an empty request. */
        assert_int_equal(affinity_table_set(t, 999, req), -ESRCH);
        _cleanup_cpuset_ CpuSet got = NULL;
        assert_int_equal(affinity_table_get(t, 999, &got), -ESRCH);
        none = hwloc_bitmap_alloc();
        assert_int_equal(affinity_table_set(t, 100, none), -EINVAL);

        /* The requests, as the simulator reads them: only those taken. */
        t = affinity_table_free(t);
        assert_int_equal(rootdir_read_file(root, "/requests.log", &text, NULL), 0);
        assert_string_equal(text, "100 2-5\n100 all\n101 6-7\n");
        free(text);
        test_rm_rf(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
