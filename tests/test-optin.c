/* SPDX-License-Identifier: MIT */
/* Opt-in discovery on a fixture cgroup tree: xattrs, precedence of the
 * sources, cgroups that do not exist; the persisted runtime state. */
#include <sys/stat.h>
#include <sys/xattr.h>

#include "test-helpers.h"

#include "optin.h"
#include "runtime-state.h"
#include "steerd-bus.h"

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
        OptInScan scan = {.xattr = x, .n_xattr = nx};
        OptInCandidate *c = NULL;
        size_t nc = 0;
        assert_int_equal(optin_candidates(&scan, runtime, 1, config, 3, &c, &nc), 0);
        assert_int_equal(nc, 1 + 3 + nx);
        assert_int_equal(optin_set_build(root, &m, c, nc, &set), 0);
        free(c);
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

static void test_rule_kinds_and_globs(void **state) {
        assert_int_equal(optin_rule_kind("/bench1"), OPTIN_RULE_PATH);
        assert_int_equal(optin_rule_kind("/sys/fs/cgroup/cpuset/bench1"), OPTIN_RULE_PATH);
        assert_int_equal(optin_rule_kind("/system.slice/docker-*.scope"), OPTIN_RULE_GLOB);
        assert_int_equal(optin_rule_kind("/kubepods.slice/**/cri-containerd-*.scope"), OPTIN_RULE_GLOB);
        assert_int_equal(optin_rule_kind("/machine.slice/vm-[0-9]?"), OPTIN_RULE_GLOB);
        assert_int_equal(optin_rule_kind("nginx.service"), OPTIN_RULE_UNIT);
        assert_int_equal(optin_rule_kind("run-r1b2.scope"), OPTIN_RULE_UNIT);
        assert_int_equal(optin_rule_kind("user-1000.slice"), OPTIN_RULE_UNIT);
        assert_int_equal(optin_rule_kind("getty@tty1.service"), OPTIN_RULE_UNIT);
        assert_int_equal(optin_rule_kind("getty@.service"), -EINVAL); /* a template has no cgroup */
        assert_int_equal(optin_rule_kind("nginx"), -EINVAL);
        assert_int_equal(optin_rule_kind("nginx.timer"), -EINVAL); /* no cgroup of its own */
        assert_int_equal(optin_rule_kind("../x.service"), -EINVAL);
        assert_int_equal(optin_rule_kind("/a/../b*"), -EINVAL);
        assert_int_equal(optin_rule_kind("/a/*\n"), -EINVAL);
        assert_int_equal(optin_rule_kind(""), -EINVAL);
        assert_int_equal(optin_rule_kind(NULL), -EINVAL);

        assert_true(optin_glob_match("/system.slice/docker-*.scope", "/system.slice/docker-abc.scope"));
        assert_false(optin_glob_match("/system.slice/docker-*.scope", "/system.slice/docker-abc.service"));
        assert_false(optin_glob_match("/system.slice/docker-*.scope", "/system.slice/x/docker-abc.scope"));
        assert_true(optin_glob_match("/machine.slice/*", "/machine.slice/vm1"));
        assert_false(optin_glob_match("/machine.slice/*", "/machine.slice")); /* the parent is not a child */
        assert_false(optin_glob_match("/machine.slice/*", "/machine.slice/vm1/sub"));
        const char *k8s = "/kubepods.slice/**/cri-containerd-*.scope";
        assert_true(optin_glob_match(k8s, "/kubepods.slice/cri-containerd-1.scope")); /* ** = none */
        assert_true(
                optin_glob_match(k8s, "/kubepods.slice/kubepods-burstable.slice/cri-containerd-1.scope"));
        assert_true(optin_glob_match(k8s, "/kubepods.slice/a.slice/b.slice/cri-containerd-2.scope"));
        assert_false(optin_glob_match(k8s, "/kubepods.slice/a.slice/cri-containerd-2.scope/sub"));
        assert_false(optin_glob_match(k8s, "/system.slice/cri-containerd-1.scope"));
        assert_true(optin_glob_match("/bench/**", "/bench/a/b/c"));
        assert_false(optin_glob_match("/bench/**", "/benchx/a"));
        assert_true(optin_glob_match("/b?nch[0-9]", "/bench7"));
        assert_false(optin_glob_match("/b?nch[0-9]", "/bench"));
        assert_false(optin_glob_match("/*", "/"));
        assert_false(optin_glob_match("bench*", "/bench1")); /* a glob is absolute */
        assert_true(optin_glob_match("/sys/fs/cgroup/cpuset/g*", "/sys/fs/cgroup/cpuset/g12"));

        /* Many "**" against a deep cgroup: polynomial, not one try per split
         * of the path per "**" (hung for minutes; found by fuzz-optin). */
        {
                char rule[256] = "", deep[256] = "";
                for (int i = 0; i < 16; i++)
                        strcat(rule, "/**/*");
                for (int i = 0; i < 40; i++)
                        strcat(deep, "/a");
                assert_true(optin_glob_match(rule, deep));
                strcat(rule, "/x");
                assert_false(optin_glob_match(rule, deep));
                strcat(deep, "/x");
                assert_true(optin_glob_match(rule, deep));
        }
}

/* Globs and units match cgroups that appear later: each walk finds what
 * exists now. An explicit path beats a glob, runtime beats config, config
 * beats xattr; a unit is found by its cgroup's name on cgroup2 (no systemd
 * here to ask). */
static void test_glob_and_unit_rules(void **state) {
        char *dir = make_tree();
        RootDir *root = NULL;
        CgroupMounts m = {};
        OptInScan scan = {};

        test_write_file(dir, "/sys/fs/cgroup/unified/system.slice/docker-aa.scope/cgroup.threads", "");
        test_write_file(dir, "/sys/fs/cgroup/unified/system.slice/docker-bb.scope/cgroup.threads", "");
        test_write_file(dir, "/sys/fs/cgroup/unified/system.slice/nginx.service/cgroup.threads", "");
        test_write_file(dir, "/sys/fs/cgroup/unified/kubepods.slice/kp-b.slice/cri-containerd-1.scope/x",
                        "");
        test_write_file(dir, "/sys/fs/cgroup/cpuset/nginx.service/cpuset.cpus",
                        "0-3\n"); /* v1: not a unit */
        assert_int_equal(rootdir_open(dir, &root), 0);
        assert_int_equal(cgroup_mounts_read(root, &m), 0);

        const char *rules[] = {"/system.slice/docker-*.scope",
                               "nginx.service",
                               "/bench*",
                               "/kubepods.slice/**/cri-containerd-*.scope",
                               "/bench1",
                               "gone.service"};
        assert_int_equal(optin_scan(root, &m, 16, rules, ELEMENTSOF(rules), &scan), 0);
        const OptInMatch *x = optin_scan_find(&scan, "/system.slice/docker-*.scope");
        assert_non_null(x);
        assert_string_equal(x[0].cgroup, "/system.slice/docker-aa.scope");
        assert_string_equal(x[1].cgroup, "/system.slice/docker-bb.scope");
        x = optin_scan_find(&scan, "nginx.service");
        assert_non_null(x);
        assert_string_equal(x->cgroup, "/system.slice/nginx.service");
        assert_true(x + 1 == scan.matches + scan.n_matches || !streq(x[1].rule, "nginx.service"));
        x = optin_scan_find(&scan, "/kubepods.slice/**/cri-containerd-*.scope");
        assert_string_equal(x->cgroup, "/kubepods.slice/kp-b.slice/cri-containerd-1.scope");
        assert_null(optin_scan_find(&scan, "/bench1")); /* a path rule is no pattern */
        assert_null(optin_scan_find(&scan, "gone.service"));
        assert_int_equal(scan.n_matches, 2 + 1 + 2 + 1); /* /bench* in v1: bench1, bench2 */
        /* systemd's answer for a unit joins the walk's. */
        assert_int_equal(optin_scan_add_match(&scan, "gone.service", "/system.slice/gone.service"), 0);
        assert_string_equal(optin_scan_find(&scan, "gone.service")->cgroup, "/system.slice/gone.service");

        OptInEntry runtime[] = {{.cgroup = (char *) "/bench*", .policy = CGROUP_POLICY_BALANCED}};
        OptInEntry config[] = {
                {.cgroup = (char *) "/system.slice/docker-*.scope", .policy = CGROUP_POLICY_BALANCED},
                {.cgroup = (char *) "/system.slice/docker-bb.scope", .policy = CGROUP_POLICY_LATENCY},
                {.cgroup = (char *) "/bench1", .policy = CGROUP_POLICY_LATENCY},
                {.cgroup = (char *) "nginx.service", .policy = CGROUP_POLICY_LATENCY}};
        OptInCandidate *c = NULL;
        size_t nc = 0;
        OptInSet set = {};
        assert_int_equal(optin_candidates(&scan, runtime, 1, config, 4, &c, &nc), 0);
        assert_int_equal(optin_set_build(root, &m, c, nc, &set), 0);
        free(c);

        const OptIn *o = optin_set_find(&set, "/system.slice/docker-aa.scope");
        assert_non_null(o);
        assert_int_equal(o->policy, CGROUP_POLICY_BALANCED);
        assert_string_equal(o->rule, "/system.slice/docker-*.scope");
        assert_true(o->loc.v2);
        o = optin_set_find(&set, "/system.slice/docker-bb.scope");
        assert_int_equal(o->policy, CGROUP_POLICY_LATENCY); /* the explicit path beats the glob */
        assert_string_equal(o->rule, "/system.slice/docker-bb.scope");
        o = optin_set_find(&set, "/bench1");
        assert_int_equal(o->source, OPTIN_SOURCE_RUNTIME); /* a runtime glob beats a config path */
        assert_string_equal(o->rule, "/bench*");
        o = optin_set_find(&set, "/system.slice/nginx.service");
        assert_string_equal(o->rule, "nginx.service");
        assert_string_equal(o->loc.dir, "/sys/fs/cgroup/unified/system.slice/nginx.service");
        assert_null(optin_set_find(&set, "nginx.service"));
        assert_int_equal(set.n, 2 + 2 + 1);
        optin_set_done(&set);
        optin_scan_done(&scan);

        /* The next walk after a container left and another came. */
        char *p = NULL;
        assert_true(asprintf(&p, "%s/sys/fs/cgroup/unified/system.slice/docker-aa.scope", dir) > 0);
        test_rm_rf(p);
        free(p);
        test_write_file(dir, "/sys/fs/cgroup/unified/system.slice/docker-cc.scope/cgroup.threads", "");
        assert_int_equal(optin_scan(root, &m, 16, rules, 1, &scan), 0);
        assert_int_equal(scan.n_matches, 2);
        assert_string_equal(scan.matches[0].cgroup, "/system.slice/docker-bb.scope");
        assert_string_equal(scan.matches[1].cgroup, "/system.slice/docker-cc.scope");
        optin_scan_done(&scan);

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
        assert_int_equal(runtime_state_opt_in_full(&s, "/b", CGROUP_POLICY_BALANCED, OPTIN_EVALUATE_AUTO,
                                                   OPTIN_SEARCH_YES),
                         0);
        assert_int_equal(runtime_state_opt_in_full(&s, "/b", CGROUP_POLICY_BALANCED, 7, OPTIN_SEARCH_YES),
                         -EINVAL);
        assert_int_equal(runtime_state_opt_in_full(&s, "/b", CGROUP_POLICY_BALANCED, OPTIN_EVALUATE_AUTO, 9),
                         -EINVAL);
        assert_int_equal(s.opt_ins[1].search, OPTIN_SEARCH_YES); /* a refused edit changed nothing */
        assert_int_equal(runtime_state_opt_out(&s, "/a"), 0);    /* opt-out removes the opt-in */
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
        assert_int_equal(back.opt_ins[0].evaluate, OPTIN_EVALUATE_AUTO);
        assert_int_equal(back.opt_ins[0].search, OPTIN_SEARCH_YES);
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
        test_write_file(
                dir, "runtime.json",
                "{\"opt_ins\": [{\"cgroup\": \"/a\", \"policy\": \"latency\", \"search\": \"maybe\"}]}");
        assert_int_equal(runtime_state_load(path, &back), 0);
        assert_int_equal(back.n_opt_ins, 0);
        /* Rules survive a restart as written. */
        test_write_file(dir, "runtime.json",
                        "{\"opt_ins\": [{\"cgroup\": \"/machine.slice/*\", \"policy\": \"balanced\"},"
                        " {\"cgroup\": \"nginx.service\", \"policy\": \"latency\"}]}");
        assert_int_equal(runtime_state_load(path, &back), 0);
        assert_int_equal(back.n_opt_ins, 2);
        assert_string_equal(back.opt_ins[0].cgroup, "/machine.slice/*");
        assert_string_equal(back.opt_ins[1].cgroup, "nginx.service");
        runtime_state_done(&back);

        free(path);
        test_rm_rf(dir);
        free(dir);
}

/* runtime.json and steerctl's edits are capped: STEERD_RUNTIME_RULES_MAX
 * opt-ins and as many opt-outs; a file with more is set aside. */
static void test_runtime_caps(void **state) {
        char *dir = test_mkdtemp(), *path = NULL, *bad = NULL;
        RuntimeState s = {}, back = {};
        char name[64];

        assert_true(asprintf(&path, "%s/runtime.json", dir) > 0);
        assert_true(asprintf(&bad, "%s.bad", path) > 0);
        for (int i = 0; i < STEERD_RUNTIME_RULES_MAX; i++) {
                snprintf(name, sizeof(name), "/g%d", i);
                assert_int_equal(runtime_state_opt_in(&s, name, CGROUP_POLICY_LATENCY), 0);
        }
        assert_int_equal(runtime_state_opt_in(&s, "/one-more", CGROUP_POLICY_LATENCY), -E2BIG);
        assert_int_equal(runtime_state_opt_in(&s, "/g7", CGROUP_POLICY_BALANCED), 0); /* not new */
        assert_int_equal(s.n_opt_ins, STEERD_RUNTIME_RULES_MAX);
        for (int i = 0; i < STEERD_RUNTIME_RULES_MAX; i++) {
                snprintf(name, sizeof(name), "/o%d", i);
                assert_int_equal(runtime_state_opt_out(&s, name), 0);
        }
        /* A full opt-out list: refused, and the opt-in it would drop stays. */
        assert_int_equal(runtime_state_opt_out(&s, "/g1"), -E2BIG);
        assert_int_equal(s.n_opt_ins, STEERD_RUNTIME_RULES_MAX);
        assert_int_equal(runtime_state_save(&s, path), 0);
        assert_int_equal(runtime_state_load(path, &back), 0); /* at the cap: taken */
        assert_int_equal(back.n_opt_ins, STEERD_RUNTIME_RULES_MAX);
        assert_int_equal(back.n_opt_outs, STEERD_RUNTIME_RULES_MAX);
        runtime_state_done(&back);
        runtime_state_done(&s);

        /* One over: the file is set aside, nothing of it taken. */
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs("{\"mode\": \"latency\", \"opt_ins\": [", f);
        for (int i = 0; i <= STEERD_RUNTIME_RULES_MAX; i++)
                fprintf(f, "%s{\"cgroup\": \"/g%d\", \"policy\": \"latency\"}", i ? ", " : "", i);
        fputs("]}", f);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(runtime_state_load(path, &back), 0);
        assert_false(back.has_mode);
        assert_int_equal(back.n_opt_ins, 0);
        assert_int_equal(access(bad, F_OK), 0);
        assert_int_equal(access(path, F_OK), -1);

        free(bad);
        free(path);
        test_rm_rf(dir);
        free(dir);
}

/* The daemon's check of each rule of runtime.json (its confinement): one
 * refused rule sets the whole file aside. */
static int refuse_proc(const char *rule, bool opt_in, void *userdata, char *why, size_t why_size) {
        (*(unsigned *) userdata)++;
        if (strncmp(rule, "/proc/", 6) != 0)
                return 0;
        snprintf(why, why_size, "%s is outside the cgroup mounts", rule);
        return -EXDEV;
}

static void test_runtime_checked(void **state) {
        char *dir = test_mkdtemp(), *path = NULL, *bad = NULL;
        RuntimeState back = {};
        unsigned calls = 0;

        assert_true(asprintf(&path, "%s/runtime.json", dir) > 0);
        assert_true(asprintf(&bad, "%s.bad", path) > 0);
        test_write_file(dir, "runtime.json",
                        "{\"mode\": \"latency\", \"opt_ins\": [{\"cgroup\": \"/bench1\", \"policy\": "
                        "\"latency\"}], \"opt_outs\": [\"/b\"]}");
        assert_int_equal(runtime_state_load_checked(path, refuse_proc, &calls, &back), 0);
        assert_int_equal(calls, 2);
        assert_int_equal(back.n_opt_ins, 1);
        runtime_state_done(&back);
        static const char *const hostile[] = {
                "{\"mode\": \"latency\", \"opt_ins\": [{\"cgroup\": \"/bench1\", \"policy\": "
                "\"latency\"}, {\"cgroup\": \"/proc/self/root/sys/fs/cgroup/cpuset/x\", \"policy\": "
                "\"latency\"}]}",
                "{\"opt_outs\": [\"/proc/1/cwd\"]}",
                "{\"opt_ins\": [{\"cgroup\": \"/a//b\", \"policy\": \"latency\"}]}",
        };
        for (size_t i = 0; i < ELEMENTSOF(hostile); i++) {
                test_write_file(dir, "runtime.json", hostile[i]);
                (void) unlink(bad);
                assert_int_equal(runtime_state_load_checked(path, refuse_proc, &calls, &back), 0);
                assert_false(back.has_mode);
                assert_int_equal(back.n_opt_ins, 0);
                assert_int_equal(back.n_opt_outs, 0);
                assert_int_equal(access(bad, F_OK), 0);
        }
        free(bad);
        free(path);
        test_rm_rf(dir);
        free(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_xattr_scan_and_precedence),
                cmocka_unit_test(test_rule_kinds_and_globs),
                cmocka_unit_test(test_glob_and_unit_rules),
                cmocka_unit_test(test_resolve_absolute),
                cmocka_unit_test(test_runtime_state),
                cmocka_unit_test(test_runtime_caps),
                cmocka_unit_test(test_runtime_checked),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
