/* SPDX-License-Identifier: MIT */
/* Opt-in discovery on a fixture cgroup tree: xattrs, precedence of the
 * sources, cgroups that do not exist; the persisted runtime state. */
#include <sys/stat.h>
#include <sys/xattr.h>

#include "test-helpers.h"

#include "optin.h"
#include "runtime-state.h"

static char *make_tree(void) {
        char *dir = test_mkdtemp();
        test_write_file(dir, "/proc/self/mounts",
                        "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
                        "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n");
        test_write_file(dir, "/sys/fs/cgroup/cpuset/cpuset.cpus", "0-3\n");
        test_write_file(dir, "/sys/fs/cgroup/cpuset/bench1/cpuset.cpus", "0-3\n");
        test_write_file(dir, "/sys/fs/cgroup/cpuset/bench2/cpuset.cpus", "0-3\n");
        test_write_file(dir, "/sys/fs/cgroup/cpuset/deep/a/b/cpuset.cpus", "0-3\n");
        test_write_file(dir, "/sys/fs/cgroup/unified/system.slice/app.service/cgroup.threads", "");
        return dir;
}

static int set_xattr(const char *root, const char *path, const char *value) {
        char *p;
        assert_true(asprintf(&p, "%s%s", root, path) > 0);
        int r = setxattr(p, STEERD_XATTR, value, strlen(value), 0);
        free(p);
        return r;
}

static void test_xattr_scan_and_precedence(void **state) {
        char *dir = make_tree();
        RootDir *root = NULL;
        CgroupMounts m = {};
        OptInEntry *x = NULL;
        size_t nx = 0;

        if (set_xattr(dir, "/sys/fs/cgroup/cpuset/bench2", "balanced\n") < 0) {
                test_rm_rf(dir);
                free(dir);
                skip(); /* the temporary directory's file system has no user xattrs */
        }
        assert_int_equal(set_xattr(dir, "/sys/fs/cgroup/cpuset/deep/a/b", "latency"), 0);
        assert_int_equal(set_xattr(dir, "/sys/fs/cgroup/cpuset/bench1", "turbo"), 0); /* ignored */
        assert_int_equal(set_xattr(dir, "/sys/fs/cgroup/unified/system.slice/app.service", "latency"), 0);

        assert_int_equal(rootdir_open(dir, &root), 0);
        assert_int_equal(cgroup_mounts_read(root, &m), 0);
        assert_string_equal(m.v2, "/sys/fs/cgroup/unified");
        assert_string_equal(m.v1_cpuset, "/sys/fs/cgroup/cpuset");

        assert_int_equal(optin_scan_xattrs(root, &m, 16, &x, &nx), 0);
        assert_int_equal(nx, 3);
        /* Depth bound: a/b is two levels below "deep". */
        OptInEntry *shallow = NULL;
        size_t ns = 0;
        assert_int_equal(optin_scan_xattrs(root, &m, 2, &shallow, &ns), 0);
        assert_int_equal(ns, 2);
        optin_entries_free(shallow, ns);

        OptInEntry runtime[] = {{.cgroup = (char *) "/bench2", .policy = CGROUP_POLICY_LATENCY}};
        OptInEntry config[] = {{.cgroup = (char *) "/bench2", .policy = CGROUP_POLICY_BALANCED},
                               {.cgroup = (char *) "/deep/a/b", .policy = CGROUP_POLICY_BALANCED},
                               {.cgroup = (char *) "/missing", .policy = CGROUP_POLICY_LATENCY}};
        OptInSet set = {};
        assert_int_equal(optin_set_build(root, &m, runtime, 1, config, 3, x, nx, &set), 0);
        assert_int_equal(set.n, 4);

        const OptIn *o = optin_set_find(&set, "/bench2");
        assert_non_null(o);
        assert_int_equal(o->source, OPTIN_SOURCE_RUNTIME); /* runtime beats config and xattr */
        assert_int_equal(o->policy, CGROUP_POLICY_LATENCY);
        assert_string_equal(o->loc.dir, "/sys/fs/cgroup/cpuset/bench2");
        assert_false(o->loc.v2);

        o = optin_set_find(&set, "/deep/a/b");
        assert_int_equal(o->source, OPTIN_SOURCE_CONFIG); /* config beats xattr */
        assert_int_equal(o->policy, CGROUP_POLICY_BALANCED);

        o = optin_set_find(&set, "/system.slice/app.service");
        assert_int_equal(o->source, OPTIN_SOURCE_XATTR);
        assert_true(o->loc.v2);

        o = optin_set_find(&set, "/missing");
        assert_non_null(o);
        assert_null(o->loc.dir); /* kept, steered once it appears */
        assert_null(optin_set_find(&set, "/bench1"));

        optin_set_done(&set);
        optin_entries_free(x, nx);
        cgroup_mounts_done(&m);
        rootdir_free(root);
        test_rm_rf(dir);
        free(dir);
}

static void test_resolve_absolute(void **state) {
        char *dir = make_tree();
        RootDir *root = NULL;
        CgroupMounts m = {};
        CgroupLocation loc = {};

        assert_int_equal(rootdir_open(dir, &root), 0);
        assert_int_equal(cgroup_mounts_read(root, &m), 0);
        assert_int_equal(cgroup_resolve(root, &m, "/sys/fs/cgroup/cpuset/bench1", &loc), 0);
        assert_string_equal(loc.dir, "/sys/fs/cgroup/cpuset/bench1");
        cgroup_location_done(&loc);
        assert_int_equal(cgroup_resolve(root, &m, "/sys/fs/cgroup/cpuset/nope", &loc), -ENOENT);
        assert_int_equal(cgroup_resolve(root, &m, "/nope", &loc), -ENOENT);
        cgroup_mounts_done(&m);
        rootdir_free(root);
        test_rm_rf(dir);
        free(dir);
}

static void test_runtime_state(void **state) {
        char *dir = test_mkdtemp(), *path = NULL;
        RuntimeState s = {}, back = {};

        assert_true(asprintf(&path, "%s/runtime.json", dir) > 0);
        assert_int_equal(runtime_state_load(path, &s), 0); /* missing = empty */
        assert_false(s.has_mode);
        s.has_mode = true;
        s.mode = MODE_LATENCY;
        assert_int_equal(runtime_state_opt_in(&s, "/a", CGROUP_POLICY_LATENCY), 0);
        assert_int_equal(runtime_state_opt_in(&s, "/b", CGROUP_POLICY_BALANCED), 0);
        assert_int_equal(runtime_state_opt_out(&s, "/a"), 0); /* opt-out removes the opt-in */
        assert_int_equal(runtime_state_opt_out(&s, "/c"), 0);
        assert_int_equal(s.n_opt_ins, 1);
        assert_true(runtime_state_opted_out(&s, "/a"));
        assert_int_equal(runtime_state_save(&s, path), 0);

        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);

        assert_int_equal(runtime_state_load(path, &back), 0);
        assert_true(back.has_mode);
        assert_int_equal(back.mode, MODE_LATENCY);
        assert_int_equal(back.n_opt_ins, 1);
        assert_string_equal(back.opt_ins[0].cgroup, "/b");
        assert_int_equal(back.opt_ins[0].policy, CGROUP_POLICY_BALANCED);
        assert_int_equal(back.n_opt_outs, 2);
        assert_int_equal(runtime_state_opt_in(&back, "/a", CGROUP_POLICY_LATENCY), 0); /* and back */
        assert_false(runtime_state_opted_out(&back, "/a"));
        runtime_state_done(&back);
        runtime_state_done(&s);

        /* Malformed: moved aside, empty state, no error. */
        test_write_file(dir, "runtime.json", "{\"mode\": \"warp\"}");
        assert_int_equal(runtime_state_load(path, &back), 0);
        assert_false(back.has_mode);
        char *bad;
        assert_true(asprintf(&bad, "%s.bad", path) > 0);
        assert_int_equal(access(bad, F_OK), 0);
        free(bad);
        test_write_file(dir, "runtime.json",
                        "{\"opt_ins\": [{\"cgroup\": \"../etc\", \"policy\": \"latency\"}]}");
        assert_int_equal(runtime_state_load(path, &back), 0);
        assert_int_equal(back.n_opt_ins, 0);

        free(path);
        test_rm_rf(dir);
        free(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_xattr_scan_and_precedence),
                cmocka_unit_test(test_resolve_absolute),
                cmocka_unit_test(test_runtime_state),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
