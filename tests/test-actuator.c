/* SPDX-License-Identifier: MIT */
/* The actuator: backend choice, cpuset writes, ownership, the state file and
 * restore. Part 1 runs anywhere on fixture roots; part 2 needs root and the
 * v1 cpuset hierarchy, and steers real threads of this process. */
#include <fcntl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "test-helpers.h"

#include "actuator-cgroup.h"
#include "actuator-ctx.h"
#include "actuator-systemd.h"
#include "actuator.h"
#include "affinity.h"
#include "plan.h"
#include "proc-thread.h"
#include "snapshot.h"

/* ---- helpers ---- */

static CpuSet set_of(const char *list) {
        CpuSet s = NULL;
        assert_int_equal(cpuset_parse(list, &s), 0);
        return s;
}

static Snapshot *snap_new(const char *online) {
        Snapshot *s = calloc(1, sizeof(Snapshot));
        _cleanup_cpuset_ CpuSet on = set_of(online);
        int cpu;

        assert_non_null(s);
        s->cpus = calloc((size_t) hwloc_bitmap_weight(on) + 1, sizeof(CpuSample));
        assert_non_null(s->cpus);
        hwloc_bitmap_foreach_begin(cpu, on) {
                s->cpus[s->n_cpus++] =
                        (CpuSample){.cpu = (unsigned) cpu, .llc = 0, .core = cpu, .online = true};
        }
        hwloc_bitmap_foreach_end();
        return s;
}

static CgroupSample *snap_add_cgroup(Snapshot *s, const char *path, const char *cpus) {
        CgroupSample *n = reallocarray(s->cgroups, s->n_cgroups + 1, sizeof(CgroupSample));
        assert_non_null(n);
        s->cgroups = n;
        CgroupSample *c = &s->cgroups[s->n_cgroups++];
        *c = (CgroupSample){.path = strdup(path), .cpus = set_of(cpus), .allowed = set_of(cpus)};
        assert_non_null(c->path);
        return c;
}

static void snap_add_thread(CgroupSample *c, pid_t tid, uint64_t starttime, hwloc_const_bitmap_t allowed) {
        ThreadSample *n = reallocarray(c->threads, c->n_threads + 1, sizeof(ThreadSample));
        assert_non_null(n);
        c->threads = n;
        c->threads[c->n_threads++] =
                (ThreadSample){.tid = tid, .starttime = starttime, .allowed = hwloc_bitmap_dup(allowed)};
}

static Plan *plan_one(ActionKind kind, const char *cgroup, pid_t tid, uint64_t starttime, const char *cpus) {
        Plan *p = NULL;
        _cleanup_cpuset_ CpuSet s = set_of(cpus);
        assert_int_equal(plan_new(&p), 0);
        assert_int_equal(plan_add(p, kind, ACTION_POLICY_WINDOW, cgroup, tid, starttime, s, "test"), 0);
        return p;
}

static void apply_one(Actuator *a, const Snapshot *snap, ActionKind kind, const char *cgroup, pid_t tid,
                      uint64_t starttime, const char *cpus, ActuatorReport *ret) {
        _cleanup_plan_ Plan *p = plan_one(kind, cgroup, tid, starttime, cpus);
        assert_int_equal(actuator_apply(a, snap, p, ret), 0);
}

/* One tick's plan of two actions, applied against one snapshot: the second
 * sees the snapshot as the sampler took it, before the first changed it. */
static void apply_two(Actuator *a, const Snapshot *snap, const char *cgroup, ActionKind k1, pid_t tid1,
                      uint64_t st1, const char *cpus1, ActionKind k2, pid_t tid2, uint64_t st2,
                      const char *cpus2, ActuatorReport *ret) {
        _cleanup_plan_ Plan *p = plan_one(k1, cgroup, tid1, st1, cpus1);
        _cleanup_cpuset_ CpuSet s = set_of(cpus2);
        assert_int_equal(plan_add(p, k2, ACTION_POLICY_STICKY, cgroup, tid2, st2, s, "test"), 0);
        assert_int_equal(actuator_apply(a, snap, p, ret), 0);
}

static char *read_fixture(const char *dir, const char *path) {
        char *full = NULL, *text = NULL;
        int fd;
        assert_true(asprintf(&full, "%s%s", dir, path) > 0);
        fd = open(full, O_RDONLY | O_CLOEXEC);
        free(full);
        assert_true(fd >= 0);
        assert_int_equal(read_full_fd(fd, &text, NULL), 0);
        close(fd);
        size_t n = strlen(text);
        while (n > 0 && text[n - 1] == '\n')
                text[--n] = '\0';
        return text;
}

static void assert_file(const char *dir, const char *path, const char *want) {
        char *got = read_fixture(dir, path);
        if (!streq(got, want))
                fail_msg("%s: '%s', expected '%s'", path, got, want);
        free(got);
}

static bool exists(const char *path) {
        return access(path, F_OK) == 0;
}

/* ---- part 1: fixture roots ---- */

#define V1 "/sys/fs/cgroup/cpuset"
#define V2 "/sys/fs/cgroup/unified"

typedef struct Fixture {
        char *dir;
        RootDir *root;
        char *state;
} Fixture;

static int fixture_setup(void **state) {
        Fixture *f = calloc(1, sizeof(Fixture));
        assert_non_null(f);
        f->dir = test_mkdtemp();
        /* Where cgroup files may be written: nowhere else (cgroup-confine.h). */
        test_write_file(f->dir, "/proc/self/mounts",
                        "cgroup2 " V2 " cgroup2 rw 0 0\n"
                        "cgroup " V1 " cgroup rw,cpuset 0 0\n");
        /* The v1 cpuset hierarchy: its root group and bench1. */
        test_write_file(f->dir, V1 "/cpuset.cpus", "0-3\n");
        test_write_file(f->dir, V1 "/cpuset.effective_cpus", "0-3\n");
        test_write_file(f->dir, V1 "/bench1/cpuset.cpus", "0-3\n");
        test_write_file(f->dir, V1 "/bench1/cpuset.effective_cpus", "0-3\n");
        test_write_file(f->dir, V1 "/bench1/tasks", "");
        /* cgroup2 with the cpuset controller. */
        test_write_file(f->dir, V2 "/cpuset.cpus.effective", "0-3\n");
        test_write_file(f->dir, V2 "/app/cgroup.controllers", "cpu cpuset memory\n");
        test_write_file(f->dir, V2 "/app/cpuset.cpus", "\n");
        test_write_file(f->dir, V2 "/app/cpuset.cpus.effective", "0-3\n");
        test_write_file(f->dir, V2 "/app/cpuset.cpus.partition", "member\n");
        test_write_file(f->dir, V2 "/plain/cgroup.controllers", "cpu memory\n");
        test_write_file(f->dir, V2 "/part/cgroup.controllers", "cpuset\n");
        test_write_file(f->dir, V2 "/part/cpuset.cpus", "2-3\n");
        test_write_file(f->dir, V2 "/part/cpuset.cpus.effective", "2-3\n");
        test_write_file(f->dir, V2 "/part/cpuset.cpus.partition", "root\n");
        test_write_file(f->dir, V2 "/iso/cgroup.controllers", "cpuset\n");
        test_write_file(f->dir, V2 "/iso/cpuset.cpus", "3\n");
        test_write_file(f->dir, V2 "/iso/cpuset.cpus.partition",
                        "isolated invalid (Cpu list is not exclusive)\n");
        test_write_file(f->dir, V2 "/system.slice/cpuset.cpus.effective", "0-3\n");
        test_write_file(f->dir, V2 "/system.slice/app.service/cgroup.controllers", "cpuset\n");
        test_write_file(f->dir, V2 "/system.slice/app.service/cpuset.cpus", "\n");
        test_write_file(f->dir, V2 "/system.slice/app.service/cpuset.cpus.effective", "0-3\n");
        assert_int_equal(rootdir_open(f->dir, &f->root), 0);
        assert_true(asprintf(&f->state, "%s/run-state.json", f->dir) > 0);
        *state = f;
        return 0;
}

static int fixture_teardown(void **state) {
        Fixture *f = *state;
        rootdir_free(f->root);
        test_rm_rf(f->dir);
        free(f->dir);
        free(f->state);
        free(f);
        return 0;
}

static const char *const fx_names[] = {"/bench1", "/app", "/plain", "/part"};
static const CgroupLocation fx_locs[] = {
        {.dir = (char *) V1 "/bench1", .v2 = false},
        {.dir = (char *) V2 "/app", .v2 = true},
        {.dir = (char *) V2 "/plain", .v2 = true},
        {.dir = (char *) V2 "/part", .v2 = true},
};

static Actuator *fixture_actuator(Fixture *f, bool with_state) {
        Actuator *a = NULL;
        assert_int_equal(actuator_new(f->root, with_state ? f->state : NULL, NULL, &a), 0);
        assert_int_equal(actuator_set_cgroups(a, fx_names, fx_locs, ELEMENTSOF(fx_names)), 0);
        return a;
}

static Snapshot *fixture_snapshot(void) {
        Snapshot *s = snap_new("0-3");
        snap_add_cgroup(s, "/bench1", "0-3");
        snap_add_cgroup(s, "/app", "0-3");
        snap_add_cgroup(s, "/plain", "0-3");
        snap_add_cgroup(s, "/part", "2-3");
        return s;
}

static void test_backend_choice(void **state) {
        Fixture *f = *state;
        _cleanup_(actuator_freep) Actuator *a = fixture_actuator(f, false);
        static const struct {
                const char *dir;
                bool v2;
                int r;
                ActuatorBackend b;
        } cases[] = {
                {V1 "/bench1", false, 0, ACTUATOR_BACKEND_CPUSET},
                {V2 "/app", true, 0, ACTUATOR_BACKEND_CPUSET},
                {V2 "/plain", true, 0, ACTUATOR_BACKEND_THREADS},
                {V2 "/part", true, -EPERM, 0},
                {V2 "/iso", true, -EPERM, 0},
                /* The hierarchy's root group: no parent to stay within. */
                {V1, false, 0, ACTUATOR_BACKEND_THREADS},
                /* A unit's cgroup, but not the host's systemd: its cpuset. */
                {V2 "/system.slice/app.service", true, 0, ACTUATOR_BACKEND_CPUSET},
                {V1 "/nonexistent", false, -ENOENT, 0},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                CgroupLocation loc = {.dir = (char *) cases[i].dir, .v2 = cases[i].v2};
                ActuatorBackend b = _ACTUATOR_BACKEND_INVALID;
                int r = actuator_choose_backend(a, &loc, &b);
                if (r != cases[i].r)
                        fail_msg("%s: %d, expected %d", cases[i].dir, r, cases[i].r);
                if (r == 0 && b != cases[i].b)
                        fail_msg("%s: backend %s, expected %s", cases[i].dir, actuator_backend_to_string(b),
                                 actuator_backend_to_string(cases[i].b));
        }
        assert_string_equal(actuator_backend_to_string(ACTUATOR_BACKEND_SYSTEMD), "systemd");
        assert_null(actuator_backend_to_string(_ACTUATOR_BACKEND_MAX));
}

static void test_cpuset_v1_write_and_release(void **state) {
        Fixture *f = *state;
        _cleanup_(actuator_freep) Actuator *a = fixture_actuator(f, true);
        _cleanup_(snapshot_freep) Snapshot *snap = fixture_snapshot();
        ActuatorReport rep = {};
        size_t nt, nc;
        char *s = NULL;

        /* Within the parent's effective CPUs: 4-5 are not there. */
        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/bench1", 0, 0, "1-5", &rep);
        assert_int_equal(rep.applied, 1);
        assert_int_equal(rep.failed, 0);
        actuator_report_done(&rep);
        assert_file(f->dir, V1 "/bench1/cpuset.cpus", "1-3");
        actuator_counts(a, &nt, &nc);
        assert_int_equal(nt, 0);
        assert_int_equal(nc, 1);
        /* The sampler's "allowed" stays what the cgroup had. */
        assert_non_null(actuator_cgroup_original(a, "/bench1"));
        assert_int_equal(cpuset_format(actuator_cgroup_original(a, "/bench1"), &s), 0);
        assert_string_equal(s, "0-3");
        free(s);
        assert_null(actuator_cgroup_original(a, "/app"));

        /* The state file while owning: 0600. */
        struct stat st;
        assert_int_equal(stat(f->state, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);

        /* A narrower restore (a layer below) is a new window, not a give-back. */
        apply_one(a, snap, ACTION_RESTORE, "/bench1", 0, 0, "1-2", &rep);
        assert_int_equal(rep.applied, 1);
        actuator_report_done(&rep);
        assert_file(f->dir, V1 "/bench1/cpuset.cpus", "1-2");

        /* A restore covering the original gives it back exactly. */
        apply_one(a, snap, ACTION_RESTORE, "/bench1", 0, 0, "0-3", &rep);
        assert_int_equal(rep.applied, 1);
        actuator_report_done(&rep);
        assert_file(f->dir, V1 "/bench1/cpuset.cpus", "0-3");
        actuator_counts(a, &nt, &nc);
        assert_int_equal(nc, 0);
        assert_false(exists(f->state)); /* nothing owned: no state file */

        /* Opt-out gives back too. */
        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/bench1", 0, 0, "2", &rep);
        actuator_report_done(&rep);
        assert_file(f->dir, V1 "/bench1/cpuset.cpus", "2");
        assert_true(exists(f->state));
        assert_int_equal(actuator_release_cgroup(a, "/bench1"), 0);
        assert_file(f->dir, V1 "/bench1/cpuset.cpus", "0-3");
        assert_false(exists(f->state));

        /* Not opted in: refused, nothing written. */
        test_write_file(f->dir, V1 "/other/cpuset.cpus", "0-3\n");
        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/other", 0, 0, "1", &rep);
        assert_int_equal(rep.failed, 1);
        assert_int_equal(rep.applied, 0);
        actuator_report_done(&rep);
        assert_file(f->dir, V1 "/other/cpuset.cpus", "0-3");
}

static void test_cpuset_v2_inherit(void **state) {
        Fixture *f = *state;
        _cleanup_(actuator_freep) Actuator *a = fixture_actuator(f, true);
        _cleanup_(snapshot_freep) Snapshot *snap = fixture_snapshot();
        ActuatorReport rep = {};
        char *s = NULL;

        test_write_file(f->dir, V2 "/cpuset.cpus.effective", "0-2\n");
        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/app", 0, 0, "2-3", &rep);
        assert_int_equal(rep.applied, 1);
        actuator_report_done(&rep);
        assert_file(f->dir, V2 "/app/cpuset.cpus", "2");
        /* "" was "inherit": what it had is its effective CPUs. */
        assert_int_equal(cpuset_format(actuator_cgroup_original(a, "/app"), &s), 0);
        assert_string_equal(s, "0-3");
        free(s);

        assert_int_equal(actuator_release_all(a), 0);
        assert_file(f->dir, V2 "/app/cpuset.cpus", "");
        assert_false(exists(f->state));

        /* Nothing of the action is within the parent: dropped, not written. */
        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/app", 0, 0, "3", &rep);
        assert_int_equal(rep.applied, 0);
        assert_int_equal(rep.failed, 1);
        actuator_report_done(&rep);
        assert_file(f->dir, V2 "/app/cpuset.cpus", "");
}

static void test_partition_unmanaged(void **state) {
        Fixture *f = *state;
        _cleanup_(actuator_freep) Actuator *a = fixture_actuator(f, false);
        _cleanup_(snapshot_freep) Snapshot *snap = fixture_snapshot();
        ActuatorReport rep = {};

        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/part", 0, 0, "2", &rep);
        assert_int_equal(rep.applied, 0);
        assert_int_equal(rep.failed, 1);
        assert_int_equal(rep.n_let_go, 1);
        assert_string_equal(rep.let_go[0].cgroup, "/part");
        assert_int_equal(rep.let_go[0].tid, 0);
        actuator_report_done(&rep);
        assert_file(f->dir, V2 "/part/cpuset.cpus", "2-3");

        /* Refused from now on, reported once. */
        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/part", 0, 0, "3", &rep);
        assert_int_equal(rep.failed, 1);
        assert_int_equal(rep.n_let_go, 0);
        actuator_report_done(&rep);
        assert_file(f->dir, V2 "/part/cpuset.cpus", "2-3");
}

static void test_ownership_cgroup_fixture(void **state) {
        Fixture *f = *state;
        _cleanup_(actuator_freep) Actuator *a = fixture_actuator(f, true);
        _cleanup_(snapshot_freep) Snapshot *snap = fixture_snapshot();
        ActuatorReport rep = {};
        size_t nt, nc;

        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/bench1", 0, 0, "1", &rep);
        actuator_report_done(&rep);
        assert_int_equal(actuator_check_ownership(a, snap, &rep), 0);
        assert_int_equal(rep.n_let_go, 0);
        actuator_report_done(&rep);

        /* An operator writes the cgroup's CPUs: theirs now. */
        test_write_file(f->dir, V1 "/bench1/cpuset.cpus", "0,2\n");
        assert_int_equal(actuator_check_ownership(a, snap, &rep), 0);
        assert_int_equal(rep.n_let_go, 1);
        assert_string_equal(rep.let_go[0].cgroup, "/bench1");
        assert_int_equal(rep.let_go[0].tid, 0);
        actuator_report_done(&rep);
        actuator_counts(a, &nt, &nc);
        assert_int_equal(nc, 0);
        assert_false(exists(f->state));

        /* Hands off until opted in afresh; release gives nothing back. */
        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/bench1", 0, 0, "3", &rep);
        assert_int_equal(rep.failed, 1);
        actuator_report_done(&rep);
        assert_file(f->dir, V1 "/bench1/cpuset.cpus", "0,2");
        assert_int_equal(actuator_release_cgroup(a, "/bench1"), 0);
        assert_file(f->dir, V1 "/bench1/cpuset.cpus", "0,2");
        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/bench1", 0, 0, "2", &rep);
        assert_int_equal(rep.applied, 1);
        actuator_report_done(&rep);
        assert_file(f->dir, V1 "/bench1/cpuset.cpus", "2");
        assert_int_equal(actuator_release_all(a), 0);
        assert_file(f->dir, V1 "/bench1/cpuset.cpus", "0,2");
}

static void test_state_round_trip(void **state) {
        Fixture *f = *state;
        Actuator *a = fixture_actuator(f, true);
        _cleanup_(snapshot_freep) Snapshot *snap = fixture_snapshot();
        ActuatorReport rep = {};

        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/bench1", 0, 0, "1", &rep);
        actuator_report_done(&rep);
        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/app", 0, 0, "2", &rep);
        actuator_report_done(&rep);
        assert_file(f->dir, V1 "/bench1/cpuset.cpus", "1");
        assert_file(f->dir, V2 "/app/cpuset.cpus", "2");

        /* A crash: nothing given back, the state file stays. */
        actuator_free(a);
        assert_true(exists(f->state));
        assert_file(f->dir, V1 "/bench1/cpuset.cpus", "1");

        /* Killed between creating its temporary and renaming it, once. */
        char tmp[PATH_MAX], other[PATH_MAX];
        snprintf(tmp, sizeof(tmp), "%s/.run-state.json.Ab12Cd", f->dir);
        snprintf(other, sizeof(other), "%s/.run-state.json.keep-me", f->dir);
        test_write_file("/", tmp, "");
        test_write_file("/", other, "");
        assert_int_equal(actuator_restore_predecessor(f->root, f->state, NULL), 0);
        assert_file(f->dir, V1 "/bench1/cpuset.cpus", "0-3");
        assert_file(f->dir, V2 "/app/cpuset.cpus", "");
        assert_false(exists(f->state));
        assert_false(exists(tmp));
        assert_true(exists(other)); /* not one of steerd's temporaries */
        /* No file: nothing to do. */
        assert_int_equal(actuator_restore_predecessor(f->root, f->state, NULL), 0);

        /* Changed by someone else after the crash: left alone. */
        a = fixture_actuator(f, true);
        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/bench1", 0, 0, "1", &rep);
        actuator_report_done(&rep);
        actuator_free(a);
        test_write_file(f->dir, V1 "/bench1/cpuset.cpus", "3\n");
        assert_int_equal(actuator_restore_predecessor(f->root, f->state, NULL), 0);
        assert_file(f->dir, V1 "/bench1/cpuset.cpus", "3");
        assert_false(exists(f->state));
}

/* Write-ahead: a predecessor killed between a write and its state file
 * left the change as "pending"; that is given back too. */
static void test_state_pending(void **state) {
        Fixture *f = *state;
        static const char *const bench1_now[] = {"2", "1", "0-3"};

        for (size_t i = 0; i < ELEMENTSOF(bench1_now); i++) {
                FILE *fp = fopen(f->state, "we");
                assert_non_null(fp);
                fputs("{\"version\": 1, \"threads\": [], \"cgroups\": ["
                      "{\"name\": \"/bench1\", \"dir\": \"" V1
                      "/bench1\", \"v2\": false, \"backend\": \"cpuset\","
                      " \"original_text\": \"0-3\", \"original\": \"0-3\", \"window\": \"1\", \"pending\": "
                      "\"2\"},"
                      "{\"name\": \"/app\", \"dir\": \"" V2 "/app\", \"v2\": true, \"backend\": \"cpuset\","
                      " \"original_text\": \"\", \"original\": \"0-3\", \"pending\": \"3\"}]}",
                      fp);
                fclose(fp);
                test_write_file(f->dir, V1 "/bench1/cpuset.cpus", bench1_now[i]);
                /* The first write of /app happened, its state file did not. */
                test_write_file(f->dir, V2 "/app/cpuset.cpus", "3\n");
                assert_int_equal(actuator_restore_predecessor(f->root, f->state, NULL), 0);
                assert_file(f->dir, V1 "/bench1/cpuset.cpus", "0-3");
                assert_file(f->dir, V2 "/app/cpuset.cpus", "");
                assert_false(exists(f->state));
        }
}

static void test_state_malformed(void **state) {
        Fixture *f = *state;
        char *bad = NULL;
        static const char *const files[] = {
                "{ this is not json",
                "[]",
                "{\"version\": 2, \"threads\": [], \"cgroups\": []}",
                /* A good cgroup entry, then a bad thread: nothing is touched. */
                "{\"version\": 1, \"cgroups\": [{\"name\": \"/bench1\", \"dir\": \"" V1
                "/bench1\", \"v2\": false,"
                " \"backend\": \"cpuset\", \"unit\": null, \"original_text\": \"0\", \"original\": \"0\","
                " \"window\": \"0-3\"}], \"threads\": [{\"tid\": \"12\", \"starttime\": 1, \"cgroup\": "
                "\"/bench1\","
                " \"original\": \"0\", \"original_full\": false, \"request\": null, \"last_set\": \"0\"}]}",
                "{\"version\": 1, \"threads\": [], \"cgroups\": [{\"name\": \"/x\", \"dir\": "
                "\"/sys/../etc\","
                " \"v2\": false, \"backend\": \"cpuset\", \"unit\": null, \"original_text\": \"0\","
                " \"original\": \"0\", \"window\": \"1\"}]}",
                "{\"version\": 1, \"threads\": [], \"cgroups\": [{\"name\": \"/bench1\", \"dir\": \"" V1
                "/bench1\","
                " \"v2\": false, \"backend\": \"nope\", \"unit\": null, \"original_text\": \"0\","
                " \"original\": \"0\", \"window\": \"1\"}]}",
        };

        assert_true(asprintf(&bad, "%s.bad", f->state) > 0);
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                FILE *fp = fopen(f->state, "we");
                assert_non_null(fp);
                fputs(files[i], fp);
                fclose(fp);
                (void) unlink(bad);
                if (actuator_restore_predecessor(f->root, f->state, NULL) != -EBADMSG)
                        fail_msg("state file %zu was accepted: %s", i, files[i]);
                assert_false(exists(f->state));
                assert_true(exists(bad));
                assert_file(f->dir, V1 "/bench1/cpuset.cpus", "0-3");
        }
        free(bad);
}

/* A state file that names a directory outside the cgroup mounts was not
 * written by steerd: the whole file is set aside and nothing of it is acted
 * on (not even its good entries), and nothing outside is written. */
static void test_state_hostile(void **state) {
        Fixture *f = *state;
        _cleanup_(freep) char *bad = NULL, *outside = test_mkdtemp(), *target = NULL, *link = NULL;
        char entries[8][PATH_MAX * 2];
        size_t n = 0;

        assert_true(asprintf(&bad, "%s.bad", f->state) > 0);
        /* What an attacker would have steerd write "0" into: the root's /tmp/x
         * and /etc, a directory outside the root that a link in the cgroup
         * tree points at. */
        test_write_file(f->dir, "/tmp/x/cpuset.cpus", "0-1\n");
        test_write_file(f->dir, "/etc/cpuset.cpus", "0-1\n");
        test_write_file(outside, "/target/cpuset.cpus", "0-1\n");
        assert_true(asprintf(&target, "%s/target", outside) > 0);
        assert_true(asprintf(&link, "%s" V1 "/evil", f->dir) > 0);
        assert_int_equal(symlink(target, link), 0);
        static const char *const dirs[][3] = {
                /* dir, v2, backend */
                {"/etc", "false", "cpuset"},
                {"/tmp/x", "false", "cpuset"},
                {V1 "/evil", "false", "cpuset"},
                {"/proc/self/root/tmp/x", "false", "cpuset"},
                {V1 "/../../../../tmp/x", "false", "cpuset"},
                {V1 "//bench1", "false", "cpuset"},
                {V1 "/bench1", "true", "cpuset"}, /* not the hierarchy it claims */
                {V2 "/app", "true", "systemd"},   /* a unit that is not the directory's */
        };
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
                snprintf(entries[n++], sizeof(entries[0]),
                         "{\"name\": \"/x%zu\", \"dir\": \"%s\", \"v2\": %s, \"backend\": \"%s\", \"unit\": "
                         "%s, \"original_text\": \"0\", \"original\": \"0\", \"window\": \"0-1\"}",
                         i, dirs[i][0], dirs[i][1], dirs[i][2],
                         streq(dirs[i][2], "systemd") ? "\"sshd.service\"" : "null");
        for (size_t i = 0; i < n; i++) {
                FILE *fp = fopen(f->state, "we");
                assert_non_null(fp);
                /* A good entry first: it is not given back either. */
                fprintf(fp,
                        "{\"version\": 1, \"threads\": [], \"cgroups\": ["
                        "{\"name\": \"/bench1\", \"dir\": \"" V1 "/bench1\", \"v2\": false, \"backend\": "
                        "\"cpuset\", \"original_text\": \"0-3\", \"original\": \"0-3\", \"window\": \"1\"}, "
                        "%s]}",
                        entries[i]);
                fclose(fp);
                test_write_file(f->dir, V1 "/bench1/cpuset.cpus", "1\n");
                (void) unlink(bad);
                /* A successor that goes on running: it gives back what it
                 * holds at its stop, and holds nothing of the file. */
                Actuator *a = NULL;
                size_t nt = 1, nc = 1;
                assert_int_equal(actuator_new(f->root, f->state, NULL, &a), 0);
                if (actuator_take_over(a) != -EBADMSG)
                        fail_msg("hostile state file %zu was accepted: %s", i, entries[i]);
                actuator_counts(a, &nt, &nc);
                assert_int_equal(nt + nc, 0);
                assert_int_equal(actuator_release_all(a), 0);
                actuator_free(a);
                assert_false(exists(f->state));
                assert_true(exists(bad));
                assert_file(f->dir, V1 "/bench1/cpuset.cpus", "1");
                assert_file(f->dir, "/tmp/x/cpuset.cpus", "0-1");
                assert_file(f->dir, "/etc/cpuset.cpus", "0-1");
                assert_file(outside, "/target/cpuset.cpus", "0-1");
                assert_file(f->dir, V2 "/app/cpuset.cpus", "");
        }
        /* A cgroup directory that is gone since is no attack: given back = dropped. */
        FILE *fp = fopen(f->state, "we");
        assert_non_null(fp);
        fputs("{\"version\": 1, \"threads\": [], \"cgroups\": [{\"name\": \"/gone\", \"dir\": \"" V1
              "/gone\", \"v2\": false, \"backend\": \"cpuset\", \"original_text\": \"0\", \"original\": "
              "\"0\", \"window\": \"1\"}]}",
              fp);
        fclose(fp);
        assert_int_equal(actuator_restore_predecessor(f->root, f->state, NULL), 0);
        assert_false(exists(f->state));
        test_rm_rf(outside);
}

/* Nothing is written outside the mounts, whatever the opted-in list says or
 * became: a directory that is a link now, or one outside. */
static void test_write_confined(void **state) {
        Fixture *f = *state;
        _cleanup_(freep) char *outside = test_mkdtemp(), *target = NULL, *dir = NULL;
        _cleanup_(snapshot_freep) Snapshot *snap = snap_new("0-3");
        ActuatorReport rep = {};

        test_write_file(outside, "/target/cpuset.cpus", "0-3\n");
        test_write_file(outside, "/target/cpuset.effective_cpus", "0-3\n");
        test_write_file(f->dir, "/tmp/x/cpuset.cpus", "0-3\n");
        test_write_file(f->dir, "/tmp/x/cpuset.effective_cpus", "0-3\n");
        test_write_file(f->dir, "/tmp/cpuset.effective_cpus", "0-3\n");
        assert_true(asprintf(&target, "%s/target", outside) > 0);
        /* bench1 becomes a link to the outside after it was resolved. */
        assert_true(asprintf(&dir, "%s" V1 "/bench1", f->dir) > 0);
        test_rm_rf(dir);
        assert_int_equal(symlink(target, dir), 0);
        static const char *const names[] = {"/bench1", "/tmp-x"};
        static const CgroupLocation locs[] = {{.dir = (char *) V1 "/bench1"}, {.dir = (char *) "/tmp/x"}};
        Actuator *a = NULL;
        assert_int_equal(actuator_new(f->root, f->state, NULL, &a), 0);
        assert_int_equal(actuator_set_cgroups(a, names, locs, 2), 0);
        snap_add_cgroup(snap, "/bench1", "0-3");
        snap_add_cgroup(snap, "/tmp-x", "0-3");
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_plan_ Plan *p = plan_one(ACTION_SET_CGROUP_CPUS, names[i], 0, 0, "1");
                (void) actuator_apply(a, snap, p, &rep);
                assert_int_equal(rep.applied, 0);
                actuator_report_done(&rep);
        }
        assert_file(outside, "/target/cpuset.cpus", "0-3");
        assert_file(f->dir, "/tmp/x/cpuset.cpus", "0-3");
        assert_int_equal(actuator_release_all(a), 0);
        assert_file(outside, "/target/cpuset.cpus", "0-3");
        actuator_free(a);
        test_rm_rf(outside);
}

/* A give-back that cannot be done is never dropped: the record stays, in
 * memory and in the state file, and a retry or a successor gives it back. */
static void test_state_kept_on_failure(void **state) {
        Fixture *f = *state;
        Actuator *a = fixture_actuator(f, true);
        _cleanup_(snapshot_freep) Snapshot *snap = fixture_snapshot();
        ActuatorReport rep = {};
        char path[PATH_MAX];
        size_t nt, nc;

        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/bench1", 0, 0, "1", &rep);
        actuator_report_done(&rep);
        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/app", 0, 0, "2", &rep);
        actuator_report_done(&rep);

        /* /bench1's cpuset.cpus cannot be read or written (here: it is a
         * directory now); /app can. */
        snprintf(path, sizeof(path), "%s" V1 "/bench1/cpuset.cpus", f->dir);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_true(actuator_release_all(a) < 0);
        assert_file(f->dir, V2 "/app/cpuset.cpus", "");
        actuator_counts(a, &nt, &nc);
        assert_int_equal(nc, 1);
        assert_true(exists(f->state));
        {
                _cleanup_(freep) char *text = read_fixture("", f->state);
                assert_non_null(strstr(text, "/bench1"));
                assert_null(strstr(text, "/app"));
        }
        char what[256];
        assert_int_equal(actuator_kept_description(a, what, sizeof(what)), 1);
        assert_string_equal(what, "/bench1 (its CPUs, 0 threads)");

        /* Still failing: still kept. Then the file is back as steerd left it. */
        assert_true(actuator_retry(a, true) < 0);
        assert_true(exists(f->state));
        assert_int_equal(rmdir(path), 0);
        test_write_file(f->dir, V1 "/bench1/cpuset.cpus", "1\n");
        /* Opted in (listed) and yet tried again: no plan holds it any more. */
        assert_int_equal(actuator_retry(a, false), 0);
        assert_file(f->dir, V1 "/bench1/cpuset.cpus", "0-3");
        actuator_counts(a, &nt, &nc);
        assert_int_equal(nt + nc, 0);
        assert_false(exists(f->state));
        actuator_free(a);

        /* A successor that cannot give back keeps the entry for the next. */
        a = fixture_actuator(f, true);
        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/bench1", 0, 0, "2", &rep);
        actuator_report_done(&rep);
        actuator_free(a); /* killed */
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_true(actuator_restore_predecessor(f->root, f->state, NULL) < 0);
        assert_true(exists(f->state));
        assert_int_equal(rmdir(path), 0);
        test_write_file(f->dir, V1 "/bench1/cpuset.cpus", "2\n");
        a = fixture_actuator(f, true);
        assert_int_equal(actuator_take_over(a), 0);
        assert_file(f->dir, V1 "/bench1/cpuset.cpus", "0-3");
        assert_false(exists(f->state));
        actuator_free(a);
}

/* A v2 cgroup without the cpuset controller (a scope in a slice with
 * AllowedCPUs=) has the CPUs of its nearest ancestor that has them. */
static void test_effective_cpus_walk(void **state) {
        Fixture *f = *state;
        CpuSet s = NULL;

        test_write_file(f->dir, V2 "/t.slice/cgroup.controllers", "cpuset cpu\n");
        test_write_file(f->dir, V2 "/t.slice/cpuset.cpus.effective", "2-3\n");
        test_write_file(f->dir, V2 "/t.slice/b.scope/cgroup.controllers", "\n");
        test_write_file(f->dir, V2 "/t.slice/b.scope/sub/cgroup.controllers", "\n");
        test_write_file(f->dir, V1 "/nofiles/tasks", "");

        _cleanup_cpuset_ CpuSet want = set_of("2-3");
        assert_int_equal(cgroup_effective_cpus(f->root, V2 "/t.slice/b.scope", true, &s), 0);
        assert_true(hwloc_bitmap_isequal(s, want));
        hwloc_bitmap_free(s);
        s = NULL;
        assert_int_equal(cgroup_effective_cpus(f->root, V2 "/t.slice/b.scope/sub", true, &s), 0);
        assert_true(hwloc_bitmap_isequal(s, want));
        hwloc_bitmap_free(s);
        s = NULL;
        assert_int_equal(act_cgroup_parent_effective(f->root, V2 "/t.slice/b.scope/sub", true, &s), 0);
        assert_true(hwloc_bitmap_isequal(s, want));
        hwloc_bitmap_free(s);
        s = NULL;
        /* Its own files win. */
        assert_int_equal(cgroup_effective_cpus(f->root, V2 "/app", true, &s), 0);
        hwloc_bitmap_free(want);
        want = set_of("0-3");
        assert_true(hwloc_bitmap_isequal(s, want));
        hwloc_bitmap_free(s);
        s = NULL;
        /* Gone, or not a cgroup: no CPUs, and no walk out of the hierarchy. */
        assert_int_equal(cgroup_effective_cpus(f->root, V2 "/t.slice/gone.scope", true, &s), -ENOENT);
        assert_int_equal(cgroup_effective_cpus(f->root, "/etc", true, &s), -ENOENT);
        /* v1 has its files in every cpuset: no walk. */
        assert_int_equal(cgroup_effective_cpus(f->root, V1 "/nofiles", false, &s), -ENOENT);
        assert_null(s);
}

static void test_fixture_threads_untouched(void **state) {
        Fixture *f = *state;
        _cleanup_(actuator_freep) Actuator *a = fixture_actuator(f, false);
        _cleanup_(snapshot_freep) Snapshot *snap = fixture_snapshot();
        _cleanup_cpuset_ CpuSet all = set_of("0-3");
        ActuatorReport rep = {};
        size_t nt, nc;

        /* The fixture's tids are not the host's: never sched_setaffinity(). */
        snap_add_thread(&snap->cgroups[2], getpid(), 1, all);
        apply_one(a, snap, ACTION_SET_THREAD_CPUS, "/plain", getpid(), 1, "1", &rep);
        assert_int_equal(rep.applied, 0);
        assert_int_equal(rep.failed, 1);
        actuator_report_done(&rep);
        apply_one(a, snap, ACTION_SET_CGROUP_CPUS, "/plain", 0, 0, "1", &rep);
        assert_int_equal(rep.applied, 0);
        assert_int_equal(rep.failed, 1);
        actuator_report_done(&rep);
        actuator_counts(a, &nt, &nc);
        assert_int_equal(nt + nc, 0);
}

static void test_systemd_helpers(void **state) {
        static const struct {
                const char *path, *unit;
        } names[] = {
                {"/system.slice/app.service", "app.service"},
                {"/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope", "session-2.scope"},
                {"/system.slice", "system.slice"},
                {"/system.slice/getty@tty1.service", "getty@tty1.service"},
                {"/bench1", NULL},
                {"/system.slice/app.service/worker", NULL},
                {"/system.slice/.service", NULL},
                {"/system.slice/getty@.service", NULL},
                {"/system.slice/a b.service", NULL},
                {"/system.slice/", NULL},
                {"/app.socket", NULL},
        };
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                char *u = NULL;
                int r = systemd_unit_from_cgroup(names[i].path, &u);
                if (names[i].unit) {
                        if (r != 0)
                                fail_msg("%s: %d", names[i].path, r);
                        assert_string_equal(u, names[i].unit);
                } else if (r != -EINVAL)
                        fail_msg("%s was taken for a unit (%s)", names[i].path, u);
                free(u);
        }

        static const struct {
                const char *cpus;
                size_t n;
                uint8_t bytes[8];
        } masks[] = {
                {"", 0, {0}},           {"0", 1, {0x01}}, {"0-3,8", 2, {0x0f, 0x01}},
                {"9", 2, {0x00, 0x02}}, {"7", 1, {0x80}}, {"63", 8, {0, 0, 0, 0, 0, 0, 0, 0x80}},
        };
        for (size_t i = 0; i < ELEMENTSOF(masks); i++) {
                _cleanup_cpuset_ CpuSet s = set_of(masks[i].cpus), back = NULL;
                uint8_t *b = NULL;
                size_t n = 99;
                assert_int_equal(cpuset_to_unit_bitmask(s, &b, &n), 0);
                assert_int_equal(n, masks[i].n);
                if (n > 0)
                        assert_memory_equal(b, masks[i].bytes, n);
                assert_int_equal(cpuset_from_unit_bitmask(b, n, &back), 0);
                assert_true(hwloc_bitmap_isequal(s, back));
                free(b);
        }
        /* Sparse and large ids survive the round trip. */
        _cleanup_cpuset_ CpuSet sparse = set_of("1,100,1000-1002"), back = NULL;
        uint8_t *b = NULL;
        size_t n;
        assert_int_equal(cpuset_to_unit_bitmask(sparse, &b, &n), 0);
        assert_int_equal(n, 126);
        assert_int_equal(b[125], 0x07 << 0 | 0);
        assert_int_equal(cpuset_from_unit_bitmask(b, n, &back), 0);
        assert_true(hwloc_bitmap_isequal(sparse, back));
        free(b);

        /* Never on a fixture root, never without a bus, never on v1. */
        assert_false(systemd_backend_eligible(false, NULL, V2 "/system.slice/app.service", true));
        assert_false(systemd_backend_eligible(true, NULL, V2 "/system.slice/app.service", true));
}

/* ---- part 2: real threads in a real v1 cpuset cgroup ---- */

typedef struct Worker {
        pthread_t th;
        _Atomic pid_t tid;
        atomic_bool stop;
        uint64_t starttime;
} Worker;

#define N_WORKERS 3

typedef struct Live {
        RootDir *root;
        char *name, *dir; /* the v1 cgroup */
        unsigned c0, c1;  /* two CPUs it has */
        char both[32], only0[16], only1[16];
        Worker w[N_WORKERS];
        char *tmp, *state;
        char *v2dir; /* test_live_threads_backend's cgroup2 group, while this process is in it */
        Actuator *a;
} Live;

static void *worker_main(void *p) {
        Worker *w = p;
        atomic_store(&w->tid, (pid_t) syscall(SYS_gettid));
        while (!atomic_load(&w->stop))
                usleep(2000);
        return NULL;
}

static uint64_t starttime_of(pid_t tid) {
        char path[80], *text = NULL;
        ThreadStat st;
        int fd;
        snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int) tid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(read_full_fd(fd, &text, NULL), 0);
        close(fd);
        assert_int_equal(thread_stat_parse(text, path, &st, NULL), 0);
        free(text);
        return st.starttime;
}

static void worker_start(Worker *w) {
        *w = (Worker){};
        assert_int_equal(pthread_create(&w->th, NULL, worker_main, w), 0);
        while (atomic_load(&w->tid) == 0)
                usleep(500);
        w->starttime = starttime_of(w->tid);
}

static void worker_stop(Worker *w) {
        if (!w->th)
                return;
        atomic_store(&w->stop, true);
        pthread_join(w->th, NULL);
        w->th = 0;
        test_wait_thread_gone(w->tid);
}

static void write_str(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                fail_msg("open %s: %m", path);
        if (write(fd, text, strlen(text)) != (ssize_t) strlen(text))
                fail_msg("write '%s' to %s: %m", text, path);
        close(fd);
}

static void cg_write(const char *dir, const char *file, const char *text) {
        char *p = NULL;
        assert_true(asprintf(&p, "%s/%s", dir, file) > 0);
        write_str(p, text);
        free(p);
}

static char *cg_read(const char *dir, const char *file) {
        char *rel = NULL;
        assert_true(asprintf(&rel, "/%s", file) > 0);
        char *text = read_fixture(dir, rel);
        free(rel);
        return text;
}

static void assert_cg(const char *dir, const char *file, const char *want) {
        char *got = cg_read(dir, file);
        if (!streq(got, want))
                fail_msg("%s/%s: '%s', expected '%s'", dir, file, got, want);
        free(got);
}

static void assert_mask(pid_t tid, const char *want) {
        _cleanup_cpuset_ CpuSet s = NULL;
        char *got = NULL;
        assert_int_equal(thread_get_affinity(tid, &s), 0);
        assert_int_equal(cpuset_format(s, &got), 0);
        if (!streq(got, want))
                fail_msg("tid %d: mask '%s', expected '%s'", (int) tid, got, want);
        free(got);
}

static void pin(pid_t tid, const char *cpus) {
        _cleanup_cpuset_ CpuSet s = set_of(cpus);
        assert_int_equal(thread_set_affinity(tid, s), 0);
}

static void move_to(const char *dir, pid_t tid) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%d\n", (int) tid);
        cg_write(dir, "tasks", buf);
}

static const char *live_skip_reason(void) {
        if (geteuid() != 0)
                return "not root";
        if (access(V1 "/cpuset.cpus", F_OK) < 0)
                return V1 " is absent (no cgroup v1 cpuset hierarchy)";
        return NULL;
}

static int live_setup(void **state) {
        Live *l = calloc(1, sizeof(Live));
        assert_non_null(l);
        *state = l;
        if (live_skip_reason())
                return 0;

        _cleanup_cpuset_ CpuSet eff = NULL;
        char *text = cg_read(V1, "cpuset.effective_cpus");
        assert_int_equal(cpuset_parse(text, &eff), 0);
        free(text);
        if (hwloc_bitmap_weight(eff) < 2)
                return 0; /* skipped in the test: one CPU steers nothing */
        l->c0 = (unsigned) hwloc_bitmap_first(eff);
        l->c1 = (unsigned) hwloc_bitmap_next(eff, (int) l->c0);
        snprintf(l->only0, sizeof(l->only0), "%u", l->c0);
        snprintf(l->only1, sizeof(l->only1), "%u", l->c1);
        if (l->c1 == l->c0 + 1)
                snprintf(l->both, sizeof(l->both), "%u-%u", l->c0, l->c1);
        else
                snprintf(l->both, sizeof(l->both), "%u,%u", l->c0, l->c1);

        assert_int_equal(rootdir_open("/", &l->root), 0);
        assert_true(asprintf(&l->name, "/steerd-test-act-%d", (int) getpid()) > 0);
        assert_true(asprintf(&l->dir, V1 "%s", l->name) > 0);
        if (mkdir(l->dir, 0755) < 0 && errno != EEXIST)
                fail_msg("mkdir %s: %m", l->dir);
        cg_write(l->dir, "cpuset.cpus", l->both);
        text = cg_read(V1, "cpuset.effective_mems");
        cg_write(l->dir, "cpuset.mems", text);
        free(text);

        for (size_t i = 0; i < N_WORKERS; i++) {
                worker_start(&l->w[i]);
                /* No affinity of their own, whatever this test runs under. */
                assert_int_equal(thread_set_affinity_all(l->w[i].tid, 1024), 0);
                move_to(l->dir, l->w[i].tid);
                assert_mask(l->w[i].tid, l->both);
        }
        l->tmp = test_mkdtemp();
        assert_true(asprintf(&l->state, "%s/state.json", l->tmp) > 0);
        assert_int_equal(actuator_new(l->root, l->state, NULL, &l->a), 0);
        const char *names[] = {l->name};
        CgroupLocation locs[] = {{.dir = l->dir, .v2 = false}};
        assert_int_equal(actuator_set_cgroups(l->a, names, locs, 1), 0);
        return 0;
}

static void rmdir_retry(const char *dir) {
        for (int i = 0; i < 100; i++) {
                if (rmdir(dir) == 0 || errno == ENOENT)
                        return;
                usleep(10000);
        }
        fprintf(stderr, "could not remove %s: %m\n", dir);
}

static int live_teardown(void **state) {
        Live *l = *state;
        if (l->a) {
                (void) actuator_release_all(l->a);
                actuator_free(l->a);
        }
        for (size_t i = 0; i < N_WORKERS; i++)
                worker_stop(&l->w[i]);
        if (l->v2dir) {
                char buf[32];
                snprintf(buf, sizeof(buf), "%d\n", (int) getpid());
                cg_write(V2, "cgroup.procs", buf);
                rmdir_retry(l->v2dir);
                free(l->v2dir);
        }
        if (l->dir) {
                char *inner = NULL; /* test_live_giveback_cut()'s, if it failed half way */
                assert_true(asprintf(&inner, "%s/inner", l->dir) > 0);
                if (access(inner, F_OK) == 0)
                        rmdir_retry(inner);
                free(inner);
                rmdir_retry(l->dir);
        }
        if (l->tmp)
                test_rm_rf(l->tmp);
        rootdir_free(l->root);
        free(l->name);
        free(l->dir);
        free(l->tmp);
        free(l->state);
        free(l);
        return 0;
}

#define LIVE_OR_SKIP(l)                                                                                     \
        do {                                                                                                \
                const char *_why = live_skip_reason();                                                      \
                if (!_why && !(l)->root)                                                                    \
                        _why = "fewer than two CPUs in the cpuset hierarchy";                               \
                if (_why) {                                                                                 \
                        print_message("skipped: %s\n", _why);                                               \
                        skip();                                                                             \
                }                                                                                           \
        } while (0)

/* A snapshot as the sampler would take it now, of the given workers. */
static Snapshot *live_snapshot(const Live *l, const char *name, const char *dir, const Worker *const *ws,
                               size_t n) {
        _cleanup_cpuset_ CpuSet on = NULL;
        char *online = NULL, *eff = NULL;

        assert_int_equal(act_read_online_cpus(l->root, &on), 0);
        assert_int_equal(cpuset_format(on, &online), 0);
        Snapshot *s = snap_new(online);
        free(online);
        if (strstr(dir, V1))
                eff = cg_read(dir, "cpuset.effective_cpus");
        CgroupSample *c = snap_add_cgroup(s, name, eff ?: l->both);
        free(eff);
        for (size_t i = 0; i < n; i++) {
                _cleanup_cpuset_ CpuSet m = NULL;
                if (thread_get_affinity(ws[i]->tid, &m) < 0)
                        m = hwloc_bitmap_dup(c->cpus); /* exited: as it was sampled */
                snap_add_thread(c, ws[i]->tid, ws[i]->starttime, m);
        }
        return s;
}

static Snapshot *live_snap_all(const Live *l) {
        const Worker *ws[N_WORKERS];
        for (size_t i = 0; i < N_WORKERS; i++)
                ws[i] = &l->w[i];
        return live_snapshot(l, l->name, l->dir, ws, N_WORKERS);
}

static void test_live_thread_set_restore(void **state) {
        Live *l = *state;
        LIVE_OR_SKIP(l);
        ActuatorReport rep = {};
        pid_t t0 = l->w[0].tid, t1 = l->w[1].tid;
        size_t nt, nc;

        /* w1 came with a mask of its own, narrower than its cgroup. */
        pin(t1, l->only0);
        _cleanup_(snapshot_freep) Snapshot *snap = live_snap_all(l);

        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, t0, l->w[0].starttime, l->only1, &rep);
        assert_int_equal(rep.applied, 1);
        assert_int_equal(rep.failed + rep.vanished, 0);
        actuator_report_done(&rep);
        assert_mask(t0, l->only1);
        actuator_counts(l->a, &nt, &nc);
        assert_int_equal(nt, 1);
        assert_int_equal(nc, 0);
        struct stat st;
        assert_int_equal(stat(l->state, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);

        /* The engine's restore: the original within the cgroup. */
        apply_one(l->a, snap, ACTION_RESTORE, l->name, t0, l->w[0].starttime, l->both, &rep);
        assert_int_equal(rep.applied, 1);
        actuator_report_done(&rep);
        assert_mask(t0, l->both);
        actuator_counts(l->a, &nt, NULL);
        assert_int_equal(nt, 0);
        assert_false(exists(l->state));

        /* A thread with its own mask gets exactly that back. */
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, t1, l->w[1].starttime, l->both, &rep);
        actuator_report_done(&rep);
        assert_mask(t1, l->both);
        apply_one(l->a, snap, ACTION_RESTORE, l->name, t1, l->w[1].starttime, l->only0, &rep);
        actuator_report_done(&rep);
        assert_mask(t1, l->only0);

        /* And on release. */
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, t1, l->w[1].starttime, l->only1, &rep);
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, t0, l->w[0].starttime, l->only0, &rep);
        actuator_report_done(&rep);
        assert_mask(t1, l->only1);
        assert_mask(t0, l->only0);
        assert_int_equal(actuator_release_all(l->a), 0);
        assert_mask(t1, l->only0);
        assert_mask(t0, l->both);
        assert_false(exists(l->state));

        /* A thread the plan names with another identity is not touched. */
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, t0, l->w[0].starttime + 1, l->only1, &rep);
        assert_int_equal(rep.applied, 0);
        assert_int_equal(rep.vanished, 1);
        actuator_report_done(&rep);
        assert_mask(t0, l->both);
}

static void test_live_cpuset_window(void **state) {
        Live *l = *state;
        LIVE_OR_SKIP(l);
        ActuatorReport rep = {};
        pid_t t0 = l->w[0].tid, t1 = l->w[1].tid, t2 = l->w[2].tid;
        size_t nt, nc;

        _cleanup_(snapshot_freep) Snapshot *snap = live_snap_all(l);
        /* A pin inside the window to come survives it. */
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, t0, l->w[0].starttime, l->only1, &rep);
        /* A pin outside it gives way to it, and is kept for the give-back. */
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, t2, l->w[2].starttime, l->only0, &rep);
        actuator_report_done(&rep);

        apply_one(l->a, snap, ACTION_SET_CGROUP_CPUS, l->name, 0, 0, l->only1, &rep);
        assert_int_equal(rep.applied, 1);
        actuator_report_done(&rep);
        assert_cg(l->dir, "cpuset.cpus", l->only1);
        assert_mask(t0, l->only1);
        assert_mask(t1, l->only1);
        assert_mask(t2, l->only1);
        actuator_counts(l->a, &nt, &nc);
        assert_int_equal(nt, 2);
        assert_int_equal(nc, 1);
        {
                /* The tick's one-pass lookup agrees with the per-cgroup one. */
                _cleanup_(freep) ActOwned *owned = NULL;
                _cleanup_(freep) pid_t *tids = NULL;
                size_t n_owned = 0, n = 0, alloc = 0;
                assert_int_equal(actuator_owned_by_cgroup(l->a, &owned, &n_owned), 0);
                assert_int_equal(actuator_owned_tids(l->a, l->name, &tids, &n, &alloc), 0);
                assert_int_equal(n_owned, 2);
                assert_int_equal(n, 2);
                assert_string_equal(owned[0].cgroup, l->name);
                assert_string_equal(owned[1].cgroup, l->name);
                assert_int_equal(owned[0].tid, MIN(t0, t2));
                assert_int_equal(owned[1].tid, MAX(t0, t2));
                assert_true((tids[0] == t0 && tids[1] == t2) || (tids[0] == t2 && tids[1] == t0));
        }

        /* A pin outside the window: invalid (EINVAL), nothing of it is left
         * within the cgroup, dropped; the thread is not recorded. */
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, t1, l->w[1].starttime, l->only0, &rep);
        assert_int_equal(rep.applied, 0);
        assert_int_equal(rep.failed, 1);
        assert_int_equal(rep.vanished, 0);
        actuator_report_done(&rep);
        assert_mask(t1, l->only1);
        actuator_counts(l->a, &nt, NULL);
        assert_int_equal(nt, 2);
        /* A thread action without a thread is malformed. */
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, 0, 0, l->only1, &rep);
        assert_int_equal(rep.failed, 1);
        actuator_report_done(&rep);

        /* What the kernel did to the threads is not a third party's change. */
        {
                _cleanup_(snapshot_freep) Snapshot *now = live_snap_all(l);
                assert_int_equal(actuator_check_ownership(l->a, now, &rep), 0);
                assert_int_equal(rep.n_let_go, 0);
                actuator_report_done(&rep);
        }

        /* The window goes: the pins are what they were. */
        apply_one(l->a, snap, ACTION_RESTORE, l->name, 0, 0, l->both, &rep);
        assert_int_equal(rep.applied, 1);
        actuator_report_done(&rep);
        assert_cg(l->dir, "cpuset.cpus", l->both);
        assert_mask(t0, l->only1);
        assert_mask(t1, l->both);
        assert_mask(t2, l->only0);
        {
                _cleanup_(snapshot_freep) Snapshot *now = live_snap_all(l);
                assert_int_equal(actuator_check_ownership(l->a, now, &rep), 0);
                assert_int_equal(rep.n_let_go, 0);
                actuator_report_done(&rep);
        }

        /* Window again, then everything back on release. */
        apply_one(l->a, snap, ACTION_SET_CGROUP_CPUS, l->name, 0, 0, l->only0, &rep);
        actuator_report_done(&rep);
        assert_mask(t0, l->only0);
        assert_int_equal(actuator_release_all(l->a), 0);
        assert_cg(l->dir, "cpuset.cpus", l->both);
        for (size_t i = 0; i < N_WORKERS; i++)
                assert_mask(l->w[i].tid, l->both);
        actuator_counts(l->a, &nt, &nc);
        assert_int_equal(nt + nc, 0);
        assert_false(exists(l->state));
}

/* An operator pinned a thread (taskset) before steerd narrowed its cgroup:
 * the pin is recorded at the first cgroup-wide write and is what the thread
 * has again when the cgroup is given back, on any kernel (before 6.2 the
 * write reset it; the guest check in tests/vm runs on such a kernel). */
static void test_live_operator_mask(void **state) {
        Live *l = *state;
        LIVE_OR_SKIP(l);
        ActuatorReport rep = {};
        pid_t t0 = l->w[0].tid, t1 = l->w[1].tid;
        size_t nt, nc;

        pin(t1, l->only0);
        {
                _cleanup_(snapshot_freep) Snapshot *snap = live_snap_all(l);
                apply_one(l->a, snap, ACTION_SET_CGROUP_CPUS, l->name, 0, 0, l->only1, &rep);
                assert_int_equal(rep.applied, 1);
                actuator_report_done(&rep);
        }
        assert_cg(l->dir, "cpuset.cpus", l->only1);
        assert_mask(t1, l->only1); /* nothing of its pin is left within the window */
        actuator_counts(l->a, &nt, &nc);
        assert_int_equal(nt, 1); /* t1's own mask, not t0 (it had none) */
        assert_int_equal(nc, 1);
        {
                _cleanup_(snapshot_freep) Snapshot *now = live_snap_all(l);
                assert_int_equal(actuator_check_ownership(l->a, now, &rep), 0);
                assert_int_equal(rep.n_let_go, 0);
                actuator_report_done(&rep);
        }
        assert_int_equal(actuator_release_all(l->a), 0);
        assert_cg(l->dir, "cpuset.cpus", l->both);
        assert_mask(t1, l->only0);
        assert_mask(t0, l->both);
        assert_false(exists(l->state));

        /* The engine's restore (a guard revert) too, and then the record of
         * the pin is not kept any longer than the window. */
        {
                _cleanup_(snapshot_freep) Snapshot *snap = live_snap_all(l);
                apply_one(l->a, snap, ACTION_SET_CGROUP_CPUS, l->name, 0, 0, l->only1, &rep);
                actuator_report_done(&rep);
                apply_one(l->a, snap, ACTION_RESTORE, l->name, 0, 0, l->both, &rep);
                assert_int_equal(rep.applied, 1);
                actuator_report_done(&rep);
        }
        assert_mask(t1, l->only0);
        actuator_counts(l->a, &nt, &nc);
        assert_int_equal(nt + nc, 0);
        assert_false(exists(l->state));
}

/* A kernel before 6.2 (Debian 12's 6.1, the guest check's): a write of a
 * cpuset's CPUs resets every task in it to them, and the task's own mask
 * is gone. Played here on any kernel: sched_setaffinity() replaces what
 * a later kernel would remember (user_cpus_ptr) too. */
static void old_kernel_reset(const char *dir, void *userdata) {
        _cleanup_cpuset_ CpuSet cpus = NULL;
        char *text = cg_read(dir, "cpuset.effective_cpus"), *tasks = cg_read(dir, "tasks");
        unsigned *resets = userdata;

        assert_int_equal(cpuset_parse(text, &cpus), 0);
        for (char *save = NULL, *tok = strtok_r(tasks, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save))
                if (thread_set_affinity((pid_t) atoi(tok), cpus) >= 0)
                        (*resets)++;
        free(text);
        free(tasks);
}

typedef struct MaskProp {
        Live *l;
        const char *operator[N_WORKERS]; /* each worker's own mask, set before steerd */
        unsigned seed;
        char trace[4096];
        size_t trace_len;
} MaskProp;

static void prop_trace(MaskProp *m, const char *step) {
        int n = snprintf(m->trace + m->trace_len, sizeof(m->trace) - m->trace_len, "%s%s",
                         m->trace_len ? ", " : "", step);
        if (n > 0 && (size_t) n < sizeof(m->trace) - m->trace_len)
                m->trace_len += (size_t) n;
}

/* The oracle: with steerd holding nothing, every mask is the operator's. */
static void prop_check(MaskProp *m, const char *when) {
        Live *l = m->l;
        for (size_t i = 0; i < N_WORKERS; i++) {
                _cleanup_cpuset_ CpuSet s = NULL;
                char *got = NULL;
                assert_int_equal(thread_get_affinity(l->w[i].tid, &s), 0);
                assert_int_equal(cpuset_format(s, &got), 0);
                if (!streq(got, m->operator[i]))
                        fail_msg("seed %u, %s: worker %zu has '%s', its operator set '%s'; steps: %s",
                                 m->seed, when, i, got, m->operator[i], m->trace);
                free(got);
        }
        char *cg = cg_read(l->dir, "cpuset.cpus");
        if (!streq(cg, l->both))
                fail_msg("seed %u, %s: cpuset.cpus '%s', was '%s'; steps: %s", m->seed, when, cg, l->both,
                         m->trace);
        free(cg);
}

static void prop_new_actuator(Live *l, unsigned *resets) {
        assert_int_equal(actuator_new(l->root, l->state, NULL, &l->a), 0);
        const char *names[] = {l->name};
        CgroupLocation locs[] = {{.dir = l->dir, .v2 = false}};
        assert_int_equal(actuator_set_cgroups(l->a, names, locs, 1), 0);
        actuator_set_write_hook(l->a, old_kernel_reset, resets);
}

/* The guest's sequence (issue 30), on a played kernel before 6.2: a thread
 * an operator set with taskset; a window; the guard's revert; a sticky pin
 * and its give-back; the window again; a pin and give-back inside it; the
 * stop. The operator's mask after it all. */
static void test_live_operator_mask_guest_sequence(void **state) {
        Live *l = *state;
        LIVE_OR_SKIP(l);
        unsigned resets = 0;
        pid_t t1 = l->w[1].tid;
        uint64_t s1 = l->w[1].starttime;
        struct {
                ActionKind kind;
                pid_t tid;
                const char *cpus;
        } steps[] = {
                {ACTION_SET_CGROUP_CPUS, 0, l->only1},  /* window */
                {ACTION_RESTORE, 0, l->both},           /* guard revert */
                {ACTION_SET_THREAD_CPUS, t1, l->only0}, /* sticky pin */
                {ACTION_RESTORE, t1, l->both},          /* given back */
                {ACTION_SET_CGROUP_CPUS, 0, l->only1},  /* window again */
                {ACTION_SET_THREAD_CPUS, t1, l->only1}, /* pin inside it */
                {ACTION_RESTORE, t1, l->both},          /* given back inside it */
        };

        actuator_set_write_hook(l->a, old_kernel_reset, &resets);
        pin(t1, l->only0); /* the operator's taskset */
        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                _cleanup_(snapshot_freep) Snapshot *snap = live_snap_all(l);
                ActuatorReport rep = {};
                assert_int_equal(actuator_check_ownership(l->a, snap, &rep), 0);
                assert_int_equal(rep.n_let_go, 0);
                actuator_report_done(&rep);
                apply_one(l->a, snap, steps[i].kind, l->name, steps[i].tid, steps[i].tid ? s1 : 0,
                          steps[i].cpus, &rep);
                actuator_report_done(&rep);
        }
        assert_int_equal(actuator_release_all(l->a), 0);
        assert_cg(l->dir, "cpuset.cpus", l->both);
        assert_mask(t1, l->only0);
        assert_mask(l->w[0].tid, l->both);
        assert_true(resets > 0);
}

/* The guard's revert and a sticky pin in one tick's plan (the guest, issue
 * 30): the pin is recorded after the revert gave the cgroup back, while the
 * snapshot still shows the window. The thread's own mask, which the window
 * covers, must not be taken for "no mask of its own": a later give-back
 * inside a new window would drop its record, and the old kernel's reset at
 * the stop would leave it with the cgroup's CPUs. */
static void test_live_operator_mask_revert_and_pin(void **state) {
        Live *l = *state;
        LIVE_OR_SKIP(l);
        unsigned resets = 0;
        pid_t t1 = l->w[1].tid;
        uint64_t s1 = l->w[1].starttime;
        ActuatorReport rep = {};

        actuator_set_write_hook(l->a, old_kernel_reset, &resets);
        pin(t1, l->only0); /* the operator's taskset */
        {
                _cleanup_(snapshot_freep) Snapshot *snap = live_snap_all(l);
                apply_one(l->a, snap, ACTION_SET_CGROUP_CPUS, l->name, 0, 0, l->only0, &rep);
                assert_int_equal(rep.applied, 1);
                actuator_report_done(&rep);
        }
        {
                _cleanup_(snapshot_freep) Snapshot *snap = live_snap_all(l);
                apply_two(l->a, snap, l->name, ACTION_RESTORE, 0, 0, l->both, ACTION_SET_THREAD_CPUS, t1, s1,
                          l->only0, &rep);
                assert_int_equal(rep.applied, 2);
                actuator_report_done(&rep);
        }
        assert_cg(l->dir, "cpuset.cpus", l->both);
        assert_mask(t1, l->only0);
        {
                _cleanup_(snapshot_freep) Snapshot *snap = live_snap_all(l);
                apply_one(l->a, snap, ACTION_SET_CGROUP_CPUS, l->name, 0, 0, l->only0, &rep);
                actuator_report_done(&rep);
        }
        {
                _cleanup_(snapshot_freep) Snapshot *snap = live_snap_all(l);
                apply_one(l->a, snap, ACTION_RESTORE, l->name, t1, s1, l->both, &rep);
                actuator_report_done(&rep);
        }
        assert_int_equal(actuator_release_all(l->a), 0);
        assert_true(resets > 0);
        assert_cg(l->dir, "cpuset.cpus", l->both);
        assert_mask(t1, l->only0);
        assert_mask(l->w[0].tid, l->both);
}

/* Random sequences of window / pin / revert / give-back / ownership check
 * / opt-out / stop over threads that came with masks of their own, on a
 * kernel that forgets them at every cpuset write (issue 30: a window, a
 * refused give-back, a guard revert and a sticky pin and give-back met on
 * one thread in the guest, and the operator's `taskset -c 0-3` came back
 * as 0-7). STEERD_PROP_SEED=N replays one sequence. */
static void test_live_operator_mask_property(void **state) {
        Live *l = *state;
        LIVE_OR_SKIP(l);
        const char *env = getenv("STEERD_PROP_SEED");
        unsigned first = env ? (unsigned) strtoul(env, NULL, 10) : (unsigned) time(NULL);
        unsigned rounds = env ? 1 : 40, resets = 0, steps = 0;
        const char *masks[] = {l->only0, l->only1};

        actuator_free(l->a);
        l->a = NULL;
        for (unsigned round = 0; round < rounds; round++) {
                MaskProp m = {.l = l, .seed = first + round};
                unsigned rs = m.seed;

                prop_new_actuator(l, &resets);
                for (size_t i = 0; i < N_WORKERS; i++) {
                        int k = rand_r(&rs) % 3;
                        m.operator[i] = k == 2 ? l->both : masks[k];
                        pin(l->w[i].tid, m.operator[i]);
                }
                _cleanup_(snapshot_freep) Snapshot *stale = NULL;
                for (unsigned step = 0; step < 30; step++, steps++) {
                        _cleanup_(snapshot_freep) Snapshot *snap = live_snap_all(l);
                        if (!stale || rand_r(&rs) % 4 == 0) {
                                snapshot_free(stale);
                                stale = live_snap_all(l);
                                for (size_t k = 0; k < stale->cgroups[0].n_threads; k++)
                                        stale->cgroups[0].threads[k].allowed_held = true;
                        }
                        ActuatorReport rep = {};
                        size_t w = (size_t) rand_r(&rs) % N_WORKERS;
                        const char *cpus = masks[rand_r(&rs) % 2];
                        char buf[64];

                        switch (rand_r(&rs) % 9) {
                        case 0:
                        case 1:
                                snprintf(buf, sizeof(buf), "window %s", cpus);
                                apply_one(l->a, snap, ACTION_SET_CGROUP_CPUS, l->name, 0, 0, cpus, &rep);
                                break;
                        case 2:
                                snprintf(buf, sizeof(buf), "revert window");
                                apply_one(l->a, snap, ACTION_RESTORE, l->name, 0, 0, l->both, &rep);
                                break;
                        case 3:
                        case 4:
                                snprintf(buf, sizeof(buf), "pin w%zu %s", w, cpus);
                                apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, l->w[w].tid,
                                          l->w[w].starttime, cpus, &rep);
                                break;
                        case 5:
                                snprintf(buf, sizeof(buf), "give back w%zu", w);
                                apply_one(l->a, snap, ACTION_RESTORE, l->name, l->w[w].tid,
                                          l->w[w].starttime, l->both, &rep);
                                break;
                        case 6:
                                /* Half the ticks see the threads' masks as an
                                 * idle thread's are held: read a step or more
                                 * ago, before steerd's last change. */
                                if (stale && rand_r(&rs) % 2) {
                                        snprintf(buf, sizeof(buf), "tick (masks held)");
                                        assert_int_equal(actuator_check_ownership(l->a, stale, &rep), 0);
                                } else {
                                        snprintf(buf, sizeof(buf), "tick");
                                        assert_int_equal(actuator_check_ownership(l->a, snap, &rep), 0);
                                }
                                if (rep.n_let_go > 0)
                                        fail_msg("seed %u: the ownership check let go of %zu record(s) that "
                                                 "nobody else changed; steps: %s, tick",
                                                 m.seed, rep.n_let_go, m.trace);
                                break;
                        case 7:
                                /* The guard's revert and a pin in one tick:
                                 * the pin sees the snapshot of before it. */
                                snprintf(buf, sizeof(buf), "revert window + pin w%zu %s", w, cpus);
                                apply_two(l->a, snap, l->name, ACTION_RESTORE, 0, 0, l->both,
                                          ACTION_SET_THREAD_CPUS, l->w[w].tid, l->w[w].starttime, cpus,
                                          &rep);
                                break;
                        default:
                                snprintf(buf, sizeof(buf), "opt-out");
                                prop_trace(&m, buf);
                                assert_int_equal(actuator_release_cgroup(l->a, l->name), 0);
                                prop_check(&m, "after an opt-out");
                                continue;
                        }
                        actuator_report_done(&rep);
                        prop_trace(&m, buf);
                }
                prop_trace(&m, "stop");
                assert_int_equal(actuator_release_all(l->a), 0);
                actuator_free(l->a);
                l->a = NULL;
                prop_check(&m, "after the stop");
                assert_false(exists(l->state));
        }
        print_message("%u sequences (seeds %u..%u), %u steps, %u tasks reset by the played kernel\n", rounds,
                      first, first + rounds - 1, steps, resets);
        assert_true(resets > 0);
        prop_new_actuator(l, &resets);
}

static void test_live_third_party(void **state) {
        Live *l = *state;
        LIVE_OR_SKIP(l);
        ActuatorReport rep = {};
        pid_t t0 = l->w[0].tid, t1 = l->w[1].tid;
        size_t nt, nc;

        _cleanup_(snapshot_freep) Snapshot *snap = live_snap_all(l);
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, t0, l->w[0].starttime, l->only1, &rep);
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, t1, l->w[1].starttime, l->only1, &rep);
        actuator_report_done(&rep);

        /* `taskset -p` from outside. */
        pin(t0, l->only0);
        {
                _cleanup_(snapshot_freep) Snapshot *now = live_snap_all(l);
                assert_int_equal(actuator_check_ownership(l->a, now, &rep), 0);
        }
        assert_int_equal(rep.n_let_go, 1);
        assert_string_equal(rep.let_go[0].cgroup, l->name);
        assert_int_equal(rep.let_go[0].tid, t0);
        assert_int_equal(rep.let_go[0].starttime, l->w[0].starttime);
        actuator_report_done(&rep);
        actuator_counts(l->a, &nt, &nc);
        assert_int_equal(nt, 1);

        /* Never touched again, neither by a plan nor by release. */
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, t0, l->w[0].starttime, l->only1, &rep);
        assert_int_equal(rep.applied, 0);
        assert_int_equal(rep.failed, 1);
        actuator_report_done(&rep);
        assert_mask(t0, l->only0);

        /* A third party on the cgroup's CPUs, likewise. */
        apply_one(l->a, snap, ACTION_SET_CGROUP_CPUS, l->name, 0, 0, l->only1, &rep);
        actuator_report_done(&rep);
        cg_write(l->dir, "cpuset.cpus", l->both);
        {
                _cleanup_(snapshot_freep) Snapshot *now = live_snap_all(l);
                assert_int_equal(actuator_check_ownership(l->a, now, &rep), 0);
        }
        assert_int_equal(rep.n_let_go, 1);
        assert_int_equal(rep.let_go[0].tid, 0);
        actuator_report_done(&rep);
        apply_one(l->a, snap, ACTION_SET_CGROUP_CPUS, l->name, 0, 0, l->only0, &rep);
        assert_int_equal(rep.failed, 1);
        actuator_report_done(&rep);
        assert_cg(l->dir, "cpuset.cpus", l->both);

        /* Opt-out: w1 back, w0 left as its new owner set it. */
        assert_int_equal(actuator_release_cgroup(l->a, l->name), 0);
        assert_mask(t0, l->only0);
        assert_mask(t1, l->both);
        /* Opted in afresh: steerd may steer it again. */
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, t0, l->w[0].starttime, l->only1, &rep);
        assert_int_equal(rep.applied, 1);
        actuator_report_done(&rep);
        assert_int_equal(actuator_release_all(l->a), 0);
        assert_mask(t0, l->only0);
}

static void test_live_crash_restore(void **state) {
        Live *l = *state;
        LIVE_OR_SKIP(l);
        ActuatorReport rep = {};
        pid_t t0 = l->w[0].tid, t1 = l->w[1].tid, t2 = l->w[2].tid;

        _cleanup_(snapshot_freep) Snapshot *snap = live_snap_all(l);
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, t0, l->w[0].starttime, l->only1, &rep);
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, t1, l->w[1].starttime, l->only0, &rep);
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, t2, l->w[2].starttime, l->only1, &rep);
        apply_one(l->a, snap, ACTION_SET_CGROUP_CPUS, l->name, 0, 0, l->only1, &rep);
        actuator_report_done(&rep);
        assert_cg(l->dir, "cpuset.cpus", l->only1);

        /* Killed: nothing given back, the state file says what was ours. */
        actuator_free(l->a);
        l->a = NULL;
        assert_true(exists(l->state));
        assert_mask(t0, l->only1);

        /* w2's entry names another thread now (its starttime differs): the
         * successor must not touch it. */
        json_object *j = json_object_from_file(l->state), *threads = NULL;
        assert_non_null(j);
        assert_true(json_object_object_get_ex(j, "threads", &threads));
        for (size_t i = 0; i < json_object_array_length(threads); i++) {
                json_object *t = json_object_array_get_idx(threads, i), *tid = NULL;
                assert_true(json_object_object_get_ex(t, "tid", &tid));
                if (json_object_get_int(tid) == t2)
                        json_object_object_add(t, "starttime",
                                               json_object_new_uint64(l->w[2].starttime + 1));
                /* w1's mask was set but the state file written after that was
                 * not: only the pending mask names it. */
                if (json_object_get_int(tid) == t1) {
                        json_object_object_add(t, "pending", json_object_new_string(l->only1));
                        json_object_object_add(t, "last_set", json_object_new_string(l->only0));
                }
        }
        assert_int_equal(json_object_to_file(l->state, j), 0);
        json_object_put(j);

        assert_int_equal(actuator_restore_predecessor(l->root, l->state, NULL), 0);
        assert_false(exists(l->state));
        assert_cg(l->dir, "cpuset.cpus", l->both);
        assert_mask(t0, l->both);
        assert_mask(t1, l->both);
        assert_mask(t2, l->only1); /* not the recorded thread: not touched */
        pin(t2, l->both);
}

/* Killed between a thread's give-back and its cgroup's: the thread's own
 * mask had no room in the window, so its give-back leaves it on the window
 * until the cgroup's CPUs are written. A successor must still know it as
 * steerd's (t-kill, seed 11277: it was let go as someone else's, and the
 * cgroup write then widened the operator's pin to all CPUs). The first
 * kill is made by editing the state file as the kill leaves it; the second
 * by a parent that refuses the successor's cgroup write. */
static void test_live_giveback_cut(void **state) {
        Live *l = *state;
        LIVE_OR_SKIP(l);
        ActuatorReport rep = {};
        const Worker *w1 = &l->w[1];
        char *name = NULL, *dir = NULL;

        assert_true(asprintf(&name, "%s/inner", l->name) > 0);
        assert_true(asprintf(&dir, "%s/inner", l->dir) > 0);
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                fail_msg("mkdir %s: %m", dir);
        cg_write(dir, "cpuset.cpus", l->both);
        char *mems = cg_read(l->dir, "cpuset.mems");
        cg_write(dir, "cpuset.mems", mems);
        free(mems);
        move_to(dir, w1->tid);
        pin(w1->tid, l->only0);
        const char *names[] = {name};
        CgroupLocation locs[] = {{.dir = dir, .v2 = false}};
        assert_int_equal(actuator_set_cgroups(l->a, names, locs, 1), 0);
        {
                _cleanup_(snapshot_freep) Snapshot *snap = live_snapshot(l, name, dir, &w1, 1);
                apply_one(l->a, snap, ACTION_SET_CGROUP_CPUS, name, 0, 0, l->only1, &rep);
                assert_int_equal(rep.applied, 1);
                actuator_report_done(&rep);
        }
        assert_mask(w1->tid, l->only1);

        /* Killed after the write, before the record that follows it: the
         * state file has the write-ahead (pending) and the mask before. */
        actuator_free(l->a);
        l->a = NULL;
        json_object *j = json_object_from_file(l->state), *threads = NULL;
        assert_non_null(j);
        assert_true(json_object_object_get_ex(j, "threads", &threads));
        assert_int_equal(json_object_array_length(threads), 1);
        json_object *t = json_object_array_get_idx(threads, 0);
        json_object_object_add(t, "pending", json_object_new_string(l->only1));
        json_object_object_add(t, "last_set", json_object_new_string(l->only0));
        assert_int_equal(json_object_to_file(l->state, j), 0);
        json_object_put(j);

        /* The successor is cut short too: its parent keeps only the window's
         * CPU, so the cgroup's give-back fails after the thread's, and the
         * records stay for the next one. */
        cg_write(l->dir, "cpuset.cpus", l->only1);
        assert_true(actuator_restore_predecessor(l->root, l->state, NULL) < 0);
        assert_cg(dir, "cpuset.cpus", l->only1);
        assert_mask(w1->tid, l->only1);
        assert_true(exists(l->state));

        cg_write(l->dir, "cpuset.cpus", l->both);
        assert_int_equal(actuator_restore_predecessor(l->root, l->state, NULL), 0);
        assert_false(exists(l->state));
        assert_cg(dir, "cpuset.cpus", l->both);
        assert_mask(w1->tid, l->only0); /* the operator's pin, as it was */

        pin(w1->tid, l->both);
        move_to(l->dir, w1->tid);
        rmdir_retry(dir);
        free(dir);
        free(name);
}

static void test_live_thread_exits(void **state) {
        Live *l = *state;
        LIVE_OR_SKIP(l);
        ActuatorReport rep = {};
        Worker gone;
        size_t nt, nc;

        worker_start(&gone);
        move_to(l->dir, gone.tid);
        const Worker *ws[] = {&l->w[0], &gone};
        _cleanup_(snapshot_freep) Snapshot *snap = live_snapshot(l, l->name, l->dir, ws, 2);
        worker_stop(&gone);

        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, gone.tid, gone.starttime, l->only1, &rep);
        assert_int_equal(rep.applied, 0);
        assert_int_equal(rep.failed, 0);
        assert_int_equal(rep.vanished, 1);
        assert_int_equal(rep.n_let_go, 0);
        actuator_report_done(&rep);
        actuator_counts(l->a, &nt, &nc);
        assert_int_equal(nt + nc, 0);

        /* Owned, then gone: dropped by the check, no error. */
        worker_start(&gone);
        move_to(l->dir, gone.tid);
        snapshot_free(snap);
        snap = live_snapshot(l, l->name, l->dir, ws, 2);
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, gone.tid, gone.starttime, l->only1, &rep);
        assert_int_equal(rep.applied, 1);
        actuator_report_done(&rep);
        worker_stop(&gone);
        const Worker *left[] = {&l->w[0]};
        _cleanup_(snapshot_freep) Snapshot *now = live_snapshot(l, l->name, l->dir, left, 1);
        assert_int_equal(actuator_check_ownership(l->a, now, &rep), 0);
        assert_int_equal(rep.n_let_go, 0);
        actuator_report_done(&rep);
        actuator_counts(l->a, &nt, &nc);
        assert_int_equal(nt, 0);
}

static void test_live_cgroup_removed(void **state) {
        Live *l = *state;
        LIVE_OR_SKIP(l);
        ActuatorReport rep = {};
        char *name = NULL, *dir = NULL;
        Worker w;
        size_t nt, nc;

        assert_true(asprintf(&name, "%s-gone", l->name) > 0);
        assert_true(asprintf(&dir, V1 "%s", name) > 0);
        assert_int_equal(mkdir(dir, 0755), 0);
        cg_write(dir, "cpuset.cpus", l->both);
        char *mems = cg_read(V1, "cpuset.effective_mems");
        cg_write(dir, "cpuset.mems", mems);
        free(mems);
        worker_start(&w);
        move_to(dir, w.tid);

        const char *names[] = {l->name, name};
        CgroupLocation locs[] = {{.dir = l->dir}, {.dir = dir}};
        assert_int_equal(actuator_set_cgroups(l->a, names, locs, 2), 0);
        const Worker *ws[] = {&w};
        _cleanup_(snapshot_freep) Snapshot *snap = live_snapshot(l, name, dir, ws, 1);
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, name, w.tid, w.starttime, l->only1, &rep);
        assert_int_equal(rep.applied, 1);
        actuator_report_done(&rep);
        apply_one(l->a, snap, ACTION_SET_CGROUP_CPUS, name, 0, 0, l->only1, &rep);
        assert_int_equal(rep.applied, 1);
        actuator_report_done(&rep);
        assert_mask(w.tid, l->only1);

        /* The cgroup goes while managed (its thread moved out first). */
        move_to(V1, w.tid);
        rmdir_retry(dir);
        assert_false(exists(dir));

        apply_one(l->a, snap, ACTION_SET_CGROUP_CPUS, name, 0, 0, l->only0, &rep);
        assert_int_equal(rep.vanished, 1);
        assert_int_equal(rep.failed, 0);
        actuator_report_done(&rep);
        assert_int_equal(actuator_release_cgroup(l->a, name), 0);
        actuator_counts(l->a, &nt, &nc);
        assert_int_equal(nt + nc, 0);
        assert_false(exists(l->state));
        /* Its thread lives on in the root cpuset: its pin was given back. */
        char *root_cpus = cg_read(V1, "cpuset.effective_cpus");
        assert_mask(w.tid, root_cpus);
        free(root_cpus);

        worker_stop(&w);
        free(name);
        free(dir);
}

/* The threads backend, live: a cgroup2 group without the cpuset controller. */
/* A thread created by a thread steerd pinned inherits the pin: it is
 * recorded and given back with its creator's original on release. */
static void test_live_inherited_pin(void **state) {
        Live *l = *state;
        LIVE_OR_SKIP(l);
        ActuatorReport rep = {};
        Worker child;
        size_t nt;

        _cleanup_(snapshot_freep) Snapshot *snap = live_snap_all(l);
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, l->name, l->w[0].tid, l->w[0].starttime, l->only1,
                  &rep);
        assert_int_equal(rep.applied, 1);
        actuator_report_done(&rep);

        /* The child is born with exactly the pinned mask, as clone() gives it. */
        worker_start(&child);
        pin(child.tid, l->only1);
        assert_int_equal(actuator_adopt_child(l->a, l->name, child.tid), 1);
        actuator_counts(l->a, &nt, NULL);
        assert_int_equal(nt, 2);
        /* Not twice, and not a thread whose mask is its own. */
        assert_int_equal(actuator_adopt_child(l->a, l->name, child.tid), 0);
        pin(l->w[1].tid, l->only0);
        assert_int_equal(actuator_adopt_child(l->a, l->name, l->w[1].tid), 0);
        /* Not for another cgroup. */
        assert_int_equal(actuator_adopt_child(l->a, "/elsewhere", l->w[2].tid), 0);

        assert_int_equal(actuator_release_all(l->a), 0);
        assert_mask(l->w[0].tid, l->both);
        assert_mask(child.tid, l->both);
        assert_mask(l->w[1].tid, l->only0); /* never steerd's */
        worker_stop(&child);
}

static void test_live_threads_backend(void **state) {
        Live *l = *state;
        LIVE_OR_SKIP(l);
        ActuatorReport rep = {};
        char *name = NULL, *dir = NULL, buf[32];
        size_t nt, nc;

        if (access(V2 "/cgroup.procs", W_OK) < 0) {
                print_message("skipped: no writable cgroup2 at " V2 "\n");
                skip();
        }
        char *ctl = cg_read(V2, "cgroup.controllers");
        bool has_cpuset = strstr(ctl, "cpuset");
        free(ctl);
        if (has_cpuset) {
                print_message("skipped: " V2 " has the cpuset controller\n");
                skip();
        }
        assert_true(asprintf(&name, "/steerd-test-act-%d", (int) getpid()) > 0);
        assert_true(asprintf(&dir, V2 "%s", name) > 0);
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                fail_msg("mkdir %s: %m", dir);
        l->v2dir = strdup(dir);
        /* cgroup2 moves whole processes: this one, with its workers. */
        snprintf(buf, sizeof(buf), "%d\n", (int) getpid());
        cg_write(dir, "cgroup.procs", buf);

        const char *names[] = {name};
        CgroupLocation locs[] = {{.dir = dir, .v2 = true}};
        assert_int_equal(actuator_set_cgroups(l->a, names, locs, 1), 0);
        ActuatorBackend b;
        assert_int_equal(actuator_choose_backend(l->a, &locs[0], &b), 0);
        assert_int_equal(b, ACTUATOR_BACKEND_THREADS);

        const Worker *ws[] = {&l->w[0], &l->w[1]};
        _cleanup_(snapshot_freep) Snapshot *snap = live_snapshot(l, name, dir, ws, 2);
        pin(l->w[1].tid, l->only0); /* a mask of its own, taken in by the window */
        apply_one(l->a, snap, ACTION_SET_CGROUP_CPUS, name, 0, 0, l->only1, &rep);
        assert_int_equal(rep.applied, 1);
        actuator_report_done(&rep);
        assert_mask(l->w[0].tid, l->only1);
        assert_mask(l->w[1].tid, l->only1);
        assert_mask(l->w[2].tid, l->both); /* not in the snapshot: not touched */
        actuator_counts(l->a, &nt, &nc);
        assert_int_equal(nt, 2);
        assert_int_equal(nc, 1);
        assert_null(actuator_cgroup_original(l->a, name));

        /* A new thread, born of a creator inside the window. */
        Worker born;
        _cleanup_cpuset_ CpuSet self = NULL;
        assert_int_equal(thread_get_affinity(0, &self), 0);
        pin(0, l->only1);
        worker_start(&born);
        assert_int_equal(thread_set_affinity(0, self), 0);
        move_to(l->dir, born.tid); /* in v1, where the workers are */
        assert_int_equal(actuator_adopt_thread(l->a, name, born.tid), 1);
        assert_int_equal(actuator_adopt_thread(l->a, name, born.tid), 0);
        assert_mask(born.tid, l->only1);

        /* A thread-level action composes with the window. */
        apply_one(l->a, snap, ACTION_SET_THREAD_CPUS, name, l->w[0].tid, l->w[0].starttime, l->both, &rep);
        assert_int_equal(rep.applied, 1);
        actuator_report_done(&rep);
        assert_mask(l->w[0].tid, l->only1);

        assert_int_equal(actuator_release_all(l->a), 0);
        assert_mask(l->w[0].tid, l->both);
        assert_mask(l->w[1].tid, l->only0);
        assert_mask(born.tid, l->both); /* it inherited the window, not its own mask */
        actuator_counts(l->a, &nt, &nc);
        assert_int_equal(nt + nc, 0);

        worker_stop(&born);
        pin(l->w[1].tid, l->both);
        cg_write(V2, "cgroup.procs", buf);
        rmdir_retry(dir);
        free(l->v2dir);
        l->v2dir = NULL;
        free(name);
        free(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_backend_choice, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_cpuset_v1_write_and_release, fixture_setup,
                                                fixture_teardown),
                cmocka_unit_test_setup_teardown(test_cpuset_v2_inherit, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_partition_unmanaged, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_ownership_cgroup_fixture, fixture_setup,
                                                fixture_teardown),
                cmocka_unit_test_setup_teardown(test_state_round_trip, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_state_pending, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_state_malformed, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_state_hostile, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_write_confined, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_state_kept_on_failure, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_effective_cpus_walk, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_fixture_threads_untouched, fixture_setup,
                                                fixture_teardown),
                cmocka_unit_test(test_systemd_helpers),
                cmocka_unit_test_setup_teardown(test_live_thread_set_restore, live_setup, live_teardown),
                cmocka_unit_test_setup_teardown(test_live_cpuset_window, live_setup, live_teardown),
                cmocka_unit_test_setup_teardown(test_live_operator_mask, live_setup, live_teardown),
                cmocka_unit_test_setup_teardown(test_live_operator_mask_guest_sequence, live_setup,
                                                live_teardown),
                cmocka_unit_test_setup_teardown(test_live_operator_mask_revert_and_pin, live_setup,
                                                live_teardown),
                cmocka_unit_test_setup_teardown(test_live_operator_mask_property, live_setup, live_teardown),
                cmocka_unit_test_setup_teardown(test_live_third_party, live_setup, live_teardown),
                cmocka_unit_test_setup_teardown(test_live_crash_restore, live_setup, live_teardown),
                cmocka_unit_test_setup_teardown(test_live_giveback_cut, live_setup, live_teardown),
                cmocka_unit_test_setup_teardown(test_live_thread_exits, live_setup, live_teardown),
                cmocka_unit_test_setup_teardown(test_live_cgroup_removed, live_setup, live_teardown),
                cmocka_unit_test_setup_teardown(test_live_threads_backend, live_setup, live_teardown),
                cmocka_unit_test_setup_teardown(test_live_inherited_pin, live_setup, live_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
