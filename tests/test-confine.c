/* SPDX-License-Identifier: MIT */
/* Hostile paths against the one confinement check (cgroup-confine.h) on
 * fixture roots: "..", ".", "//", symbolic links inside a cgroup tree that
 * point out (or anywhere), /proc/self/root/..., /proc/PID/cwd, paths beside
 * the mounts, a mount table that lies, another file system mounted into the
 * tree (as root), and a directory that is not on cgroupfs on the live host;
 * then the same through cgroup_resolve(), the xattr and rule walk, and the
 * rule check of config lines, bus calls and runtime.json. */
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "test-helpers.h"

#include "cgroup-confine.h"
#include "optin.h"

#define V1 "/sys/fs/cgroup/cpuset"
#define V2 "/sys/fs/cgroup/unified"

typedef struct Fixture {
        char *dir;     /* the fixture root */
        char *outside; /* a directory outside the root: what a symlink points at */
        RootDir *root;
        CgroupMounts m;
} Fixture;

static void fx_symlink(const Fixture *f, const char *target, const char *path) {
        char *p = NULL;
        assert_true(asprintf(&p, "%s%s", f->dir, path) > 0);
        if (symlink(target, p) < 0)
                fail_msg("symlink %s -> %s: %m", p, target);
        free(p);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(Fixture));
        assert_non_null(f);
        f->dir = test_mkdtemp();
        f->outside = test_mkdtemp();
        test_write_file(f->dir, "/proc/self/mounts",
                        "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n"
                        "cgroup /sys/fs/cgroup/../../etc cgroup rw,cpuset 0 0\n"
                        "cgroup2 /sys/fs/cgroup//unified cgroup2 rw 0 0\n"
                        "cgroup2 " V2 " cgroup2 rw 0 0\n"
                        "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n"
                        "cgroup " V1 " cgroup rw,cpuset 0 0\n");
        test_write_file(f->dir, V1 "/cpuset.cpus", "0-3\n");
        test_write_file(f->dir, V1 "/bench1/cpuset.cpus", "0-3\n");
        test_write_file(f->dir, V1 "/bench1/sub/cpuset.cpus", "0-3\n");
        test_write_file(f->dir, V2 "/app/cgroup.controllers", "cpuset\n");
        test_write_file(f->dir, "/sys/fs/cgroup/cpu/x/cpu.shares", "1024\n");
        test_write_file(f->dir, "/etc/passwd", "root:x:0:0::/root:/bin/sh\n");
        test_write_file(f->dir, "/tmp/x/cpuset.cpus", "0-1\n");
        test_write_file(f->outside, "/target/cpuset.cpus", "0-1\n");
        test_write_file(f->outside, "/target/inner/cpuset.cpus", "0-1\n");
        /* Symbolic links inside the cgroup trees: out of the root, back into
         * the root's /tmp, to a sibling cgroup, and one in a middle component. */
        char *out = NULL;
        assert_true(asprintf(&out, "%s/target", f->outside) > 0);
        fx_symlink(f, out, V1 "/evil");
        free(out);
        fx_symlink(f, "/tmp/x", V1 "/to-tmp");
        fx_symlink(f, "bench1", V1 "/alias");
        fx_symlink(f, "../../../../../etc", V2 "/up");
        assert_int_equal(rootdir_open(f->dir, &f->root), 0);
        assert_int_equal(cgroup_mounts_read(f->root, &f->m), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        char *p = NULL;
        /* test_mount_inside's mount, if a failure left it */
        if (asprintf(&p, "%s" V1 "/bench1/sub", f->dir) > 0)
                (void) umount2(p, MNT_DETACH);
        free(p);
        cgroup_mounts_done(&f->m);
        rootdir_free(f->root);
        test_rm_rf(f->dir);
        test_rm_rf(f->outside);
        free(f->dir);
        free(f->outside);
        free(f);
        return 0;
}

/* dir is refused, and why mentions what. */
static void assert_refused(const Fixture *f, const char *dir, const char *what) {
        char why[CGROUP_WHY_MAX] = "";
        int fd = -1;
        int r = cgroup_dir_confined(f->root, &f->m, dir, NULL, &fd, why, sizeof(why));
        if (r != CGROUP_NOT_CONFINED)
                fail_msg("%s: %d (%s), expected refused", dir, r, why);
        assert_int_equal(fd, -1);
        if (!strstr(why, what))
                fail_msg("%s: reason '%s' does not say '%s'", dir, why, what);
}

static void test_mounts(void **state) {
        Fixture *f = *state;
        /* The lines with ".." and "//" are ignored; the cpu hierarchy is not steerable. */
        assert_string_equal(f->m.v2, V2);
        assert_string_equal(f->m.v1_cpuset, V1);
        assert_false(f->m.host);
}

static void test_confined(void **state) {
        Fixture *f = *state;
        char why[CGROUP_WHY_MAX];
        bool v2 = true;
        int fd = -1;

        assert_int_equal(cgroup_dir_confined(f->root, &f->m, V1 "/bench1", &v2, &fd, why, sizeof(why)), 0);
        assert_false(v2);
        /* The descriptor is the directory's. */
        struct stat a, b;
        char *p = NULL;
        assert_true(asprintf(&p, "%s" V1 "/bench1", f->dir) > 0);
        assert_int_equal(fstat(fd, &a), 0);
        assert_int_equal(stat(p, &b), 0);
        assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
        free(p);
        close(fd);
        assert_int_equal(cgroup_dir_confined(f->root, &f->m, V1 "/bench1/sub", NULL, NULL, why, sizeof(why)),
                         0);
        assert_int_equal(cgroup_dir_confined(f->root, &f->m, V1, &v2, NULL, why, sizeof(why)), 0);
        assert_false(v2);
        assert_int_equal(cgroup_dir_confined(f->root, &f->m, V2 "/app", &v2, NULL, why, sizeof(why)), 0);
        assert_true(v2);
        /* Confined but not there: a cgroup gone, or not yet created. */
        assert_int_equal(cgroup_dir_confined(f->root, &f->m, V1 "/nope", NULL, NULL, why, sizeof(why)),
                         -ENOENT);
        assert_non_null(strstr(why, "does not exist"));
        assert_int_equal(cgroup_path_confined(&f->m, V1 "/nope", &v2, why, sizeof(why)), 0);
}

static void test_lexical(void **state) {
        Fixture *f = *state;

        assert_refused(f, V1 "/bench1/../../../../etc", "'..'");
        assert_refused(f, V1 "/..", "'..'");
        assert_refused(f, V1 "/./bench1", "'.'");
        assert_refused(f, V1 "//bench1", "empty component");
        assert_refused(f, V1 "/bench1/", "empty component");
        assert_refused(f, "/sys/fs/cgroup/cpuset/bench1\n", "control character");
        assert_refused(f, "bench1", "not an absolute path");
        assert_refused(f, "", "not an absolute path");
}

static void test_outside(void **state) {
        Fixture *f = *state;

        assert_refused(f, "/etc", "outside the cgroup mounts");
        assert_refused(f, "/etc/passwd", "outside the cgroup mounts");
        assert_refused(f, "/tmp/x", "outside the cgroup mounts");
        assert_refused(f, "/", "outside the cgroup mounts");
        assert_refused(f, "/sys/fs/cgroup", "outside the cgroup mounts");
        assert_refused(f, "/sys/fs/cgroup/cpu/x", "outside the cgroup mounts");   /* not steerable */
        assert_refused(f, "/sys/fs/cgroup/cpusetx", "outside the cgroup mounts"); /* a prefix is no parent */
        assert_refused(f, "/proc/self/root" V1 "/bench1", "outside the cgroup mounts");
        assert_refused(f, "/proc/1/cwd", "outside the cgroup mounts");
        assert_refused(f, "/proc/self/fd/3", "outside the cgroup mounts");
        /* No mounts at all: nothing is confined. */
        CgroupMounts none = {};
        char why[CGROUP_WHY_MAX];
        assert_int_equal(cgroup_dir_confined(f->root, &none, V1 "/bench1", NULL, NULL, why, sizeof(why)),
                         CGROUP_NOT_CONFINED);
        assert_non_null(strstr(why, "none found"));
}

static void test_symlinks(void **state) {
        Fixture *f = *state;

        assert_refused(f, V1 "/evil", "symbolic link");       /* out of the root */
        assert_refused(f, V1 "/evil/inner", "symbolic link"); /* through one */
        assert_refused(f, V1 "/to-tmp", "symbolic link");     /* to the root's /tmp/x */
        assert_refused(f, V1 "/alias", "symbolic link");      /* even to a sibling cgroup */
        assert_refused(f, V2 "/up", "symbolic link");
        assert_refused(f, V1 "/bench1/cpuset.cpus", "not a directory");

        /* A link above the mount: the mount table names a path that is one. */
        char *d = test_mkdtemp(), *p = NULL;
        RootDir *root = NULL;
        CgroupMounts m = {};
        char why[CGROUP_WHY_MAX];
        test_write_file(d, "/proc/self/mounts", "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n");
        test_write_file(d, "/real/bench1/cpuset.cpus", "0-1\n");
        test_write_file(d, "/sys/fs/cgroup/.keep", "");
        assert_true(asprintf(&p, "%s/sys/fs/cgroup/cpuset", d) > 0);
        assert_int_equal(symlink("/real", p), 0);
        free(p);
        assert_int_equal(rootdir_open(d, &root), 0);
        assert_int_equal(cgroup_mounts_read(root, &m), 0);
        assert_int_equal(cgroup_dir_confined(root, &m, V1 "/bench1", NULL, NULL, why, sizeof(why)),
                         CGROUP_NOT_CONFINED);
        assert_non_null(strstr(why, V1 " is a symbolic link"));
        /* The walk does not follow it either. */
        OptInEntry *x = NULL;
        size_t nx = 1;
        assert_int_equal(optin_scan_xattrs(root, &m, 16, &x, &nx), 0);
        assert_int_equal(nx, 0);
        optin_entries_free(x, nx);
        cgroup_mounts_done(&m);
        rootdir_free(root);
        test_rm_rf(d);
        free(d);
}

/* On the live host a directory below a mount must be on cgroupfs: a mount
 * table that names /tmp as the cpuset mount does not make /tmp a cgroup. */
static void test_live_fs_type(void **state) {
        RootDir *root = NULL;
        char why[CGROUP_WHY_MAX];
        char *t = test_mkdtemp();

        assert_int_equal(rootdir_open("/", &root), 0);
        assert_true(rootdir_is_host(root));
        CgroupMounts fake = {.v1_cpuset = t, .host = true};
        assert_int_equal(cgroup_dir_confined(root, &fake, t, NULL, NULL, why, sizeof(why)),
                         CGROUP_NOT_CONFINED);
        assert_non_null(strstr(why, "not on a cgroup file system"));
        /* The host's own mounts, where it has them. */
        CgroupMounts m = {};
        assert_int_equal(cgroup_mounts_read(root, &m), 0);
        assert_true(m.host);
        if (m.v1_cpuset)
                assert_int_equal(cgroup_dir_confined(root, &m, m.v1_cpuset, NULL, NULL, why, sizeof(why)),
                                 0);
        if (m.v2)
                assert_int_equal(cgroup_dir_confined(root, &m, m.v2, NULL, NULL, why, sizeof(why)), 0);
        cgroup_mounts_done(&m);
        rootdir_free(root);
        test_rm_rf(t);
        free(t);
}

/* Another file system mounted into a cgroup tree (a bind mount): refused
 * by the walk and by the check. Needs mount(2): skipped without it. */
static void test_mount_inside(void **state) {
        Fixture *f = *state;
        char *p = NULL;
        char why[CGROUP_WHY_MAX];

        assert_true(asprintf(&p, "%s" V1 "/bench1/sub", f->dir) > 0);
        if (mount("steerd-test", p, "tmpfs", 0, "size=64k") < 0) {
                free(p);
                skip();
        }
        test_write_file(f->dir, V1 "/bench1/sub/deeper/cpuset.cpus", "0-1\n");
        int x = setxattr(p, STEERD_XATTR, "latency", 7, 0);
        assert_int_equal(cgroup_dir_confined(f->root, &f->m, V1 "/bench1/sub", NULL, NULL, why, sizeof(why)),
                         CGROUP_NOT_CONFINED);
        assert_non_null(strstr(why, "another file system"));
        assert_int_equal(
                cgroup_dir_confined(f->root, &f->m, V1 "/bench1/sub/deeper", NULL, NULL, why, sizeof(why)),
                CGROUP_NOT_CONFINED);
        const char *rules[] = {"/bench1/**"};
        OptInScan scan = {};
        assert_int_equal(optin_scan(f->root, &f->m, 16, rules, 1, &scan), 0);
        for (size_t i = 0; i < scan.n_xattr; i++)
                assert_null(strstr(scan.xattr[i].cgroup, "/sub"));
        for (size_t i = 0; i < scan.n_matches; i++)
                assert_null(strstr(scan.matches[i].cgroup, "/sub"));
        assert_true(x < 0 || scan.n_xattr == 0);
        optin_scan_done(&scan);
        assert_int_equal(umount2(p, MNT_DETACH), 0);
        free(p);
}

static void test_resolve(void **state) {
        Fixture *f = *state;
        CgroupLocation loc = {};
        char why[CGROUP_WHY_MAX];

        assert_int_equal(cgroup_resolve_full(f->root, &f->m, "/bench1", &loc, why, sizeof(why)), 0);
        assert_string_equal(loc.dir, V1 "/bench1");
        cgroup_location_done(&loc);
        /* A name whose directory is a link: refused, not looked up elsewhere. */
        assert_int_equal(cgroup_resolve_full(f->root, &f->m, "/evil", &loc, why, sizeof(why)),
                         CGROUP_NOT_CONFINED);
        assert_non_null(strstr(why, "symbolic link"));
        assert_null(loc.dir);
        assert_int_equal(cgroup_resolve_full(f->root, &f->m, V1 "/alias", &loc, why, sizeof(why)),
                         CGROUP_NOT_CONFINED);
        assert_int_equal(cgroup_resolve_full(f->root, &f->m, "/up", &loc, why, sizeof(why)),
                         CGROUP_NOT_CONFINED);
        /* /proc/self/root/... as a name is a cgroup under a mount: there is none. */
        assert_int_equal(cgroup_resolve(f->root, &f->m, "/proc/self/root" V1 "/bench1", &loc), -ENOENT);
        assert_int_equal(cgroup_resolve(f->root, &f->m, "/nope", &loc), -ENOENT);
        assert_int_equal(cgroup_resolve(f->root, &f->m, V1 "/nope", &loc), -ENOENT);
}

/* The walk for xattrs and rules never enters a symbolic link, even one whose
 * target carries the xattr and matches the glob. */
static void test_scan_symlinks(void **state) {
        Fixture *f = *state;
        char *p = NULL;

        assert_true(asprintf(&p, "%s/target", f->outside) > 0);
        if (setxattr(p, STEERD_XATTR, "latency", 7, 0) < 0) {
                free(p);
                skip(); /* no user xattrs on this file system */
        }
        free(p);
        const char *rules[] = {"/e*", "/evil/**", "/to-*"};
        OptInScan scan = {};
        assert_int_equal(optin_scan(f->root, &f->m, 16, rules, ELEMENTSOF(rules), &scan), 0);
        assert_int_equal(scan.n_xattr, 0);
        for (size_t i = 0; i < scan.n_matches; i++)
                fail_msg("rule %s matched %s through a link", scan.matches[i].rule, scan.matches[i].cgroup);
        optin_scan_done(&scan);

        /* A path rule naming the link stays in the set, refused, never resolved. */
        OptInCandidate c[] = {{.cgroup = "/evil", .rule = "/evil", .source = OPTIN_SOURCE_CONFIG},
                              {.cgroup = "/bench1", .rule = "/bench1", .source = OPTIN_SOURCE_CONFIG}};
        OptInSet set = {};
        assert_int_equal(optin_set_build(f->root, &f->m, c, ELEMENTSOF(c), &set), 0);
        const OptIn *o = optin_set_find(&set, "/evil");
        assert_non_null(o);
        assert_null(o->loc.dir);
        assert_non_null(o->refused);
        assert_non_null(strstr(o->refused, "symbolic link"));
        o = optin_set_find(&set, "/bench1");
        assert_non_null(o->loc.dir);
        assert_null(o->refused);
        optin_set_done(&set);
}

/* Rules from a config line, a bus call or runtime.json. */
static void test_rule_check(void **state) {
        Fixture *f = *state;
        char why[CGROUP_WHY_MAX];
        static const struct {
                const char *rule;
                bool check_dir;
                int r;
                const char *why;
        } cases[] = {
                {"/bench1", true, 0, NULL},
                {V1 "/bench1", true, 0, NULL},
                {"/nope", true, 0, NULL}, /* may appear later */
                {"/bench*", true, 0, NULL},
                {V1 "/b*", true, 0, NULL},
                {"nginx.service", true, 0, NULL},
                {"/tmp/x", true, 0, NULL}, /* a cgroup named /tmp/x under a hierarchy: none here */
                {"/evil", true, CGROUP_NOT_CONFINED, "symbolic link"},
                {"/evil", false, 0, NULL}, /* opt-out, explain: the text alone */
                {V1 "/alias", true, CGROUP_NOT_CONFINED, "symbolic link"},
                {"/proc/self/root" V1 "/bench1", true, CGROUP_NOT_CONFINED, "outside the cgroup mounts"},
                {"/proc/self/root" V1 "/bench1", false, CGROUP_NOT_CONFINED, "outside the cgroup mounts"},
                {"/proc/1/cwd", true, CGROUP_NOT_CONFINED, "outside the cgroup mounts"},
                {"/proc/*/cwd", true, CGROUP_NOT_CONFINED, "outside the cgroup mounts"},
                {"/sys/fs/cgroup/cpu/x", true, CGROUP_NOT_CONFINED, "outside the cgroup mounts"},
                {"/sys/kernel/debug", true, CGROUP_NOT_CONFINED, "outside the cgroup mounts"},
                {"/dev/shm", true, CGROUP_NOT_CONFINED, "outside the cgroup mounts"},
                {"/bench1/../../etc", true, -EINVAL, "not a cgroup"},
                {"/bench1/.", true, -EINVAL, "not a cgroup"},
                {"//bench1", true, -EINVAL, "not a cgroup"},
                {"/bench1/", true, -EINVAL, "not a cgroup"},
                {"bench1", true, -EINVAL, "not a cgroup"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                why[0] = '\0';
                int r = optin_rule_check(f->root, &f->m, cases[i].rule, cases[i].check_dir, why,
                                         sizeof(why));
                if (r != cases[i].r)
                        fail_msg("%s (check_dir %d): %d (%s), expected %d", cases[i].rule,
                                 cases[i].check_dir, r, why, cases[i].r);
                if (cases[i].why && !strstr(why, cases[i].why))
                        fail_msg("%s: reason '%s' does not say '%s'", cases[i].rule, why, cases[i].why);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_mounts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_confined, setup, teardown),
                cmocka_unit_test_setup_teardown(test_lexical, setup, teardown),
                cmocka_unit_test_setup_teardown(test_outside, setup, teardown),
                cmocka_unit_test_setup_teardown(test_symlinks, setup, teardown),
                cmocka_unit_test(test_live_fs_type),
                cmocka_unit_test_setup_teardown(test_mount_inside, setup, teardown),
                cmocka_unit_test_setup_teardown(test_resolve, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scan_symlinks, setup, teardown),
                cmocka_unit_test_setup_teardown(test_rule_check, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
