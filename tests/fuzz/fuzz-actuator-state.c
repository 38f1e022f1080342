/* SPDX-License-Identifier: MIT */
/* The actuator's state file (/run/steerd/state.json), through the public
 * API only (actuator.h): a successor takes over what a killed steerd left
 * (actuator_new() + actuator_take_over()), gives back, retries, and what is
 * still recorded then is read by the next successor
 * (actuator_restore_predecessor()).
 *
 * The root is a fixture tree in a private directory, never the host's "/":
 * on such a root the actuator writes cpuset files below it and touches no
 * thread (actuator.h), so the tids and paths of the input reach nothing on
 * the host. The tree's cpuset.cpus files are written afresh before each
 * input, so that one input's give-backs do not change the next one's run. */
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actuator.h"
#include "fuzz.h"

#define V1 "/sys/fs/cgroup/cpuset"
#define V2 "/sys/fs/cgroup/unified"

/* What test-actuator.c's fixture has: v1 and v2 cpusets, a v2 group
 * without the controller, partitions, a systemd unit's cgroup. */
static const struct {
        const char *path, *contents;
} fixture[] = {
        {"/sys/devices/system/cpu/online", "0-3\n"},
        {V1 "/cpuset.cpus", "0-3\n"},
        {V1 "/cpuset.effective_cpus", "0-3\n"},
        {V1 "/bench1/cpuset.cpus", "0-3\n"},
        {V1 "/bench1/cpuset.effective_cpus", "0-3\n"},
        {V1 "/bench1/tasks", ""},
        {V1 "/bench2/cpuset.cpus", "1\n"},
        {V1 "/bench2/cpuset.effective_cpus", "1\n"},
        {V1 "/bench2/tasks", ""},
        {V2 "/cpuset.cpus.effective", "0-3\n"},
        {V2 "/app/cgroup.controllers", "cpu cpuset memory\n"},
        {V2 "/app/cpuset.cpus", "\n"},
        {V2 "/app/cpuset.cpus.effective", "0-3\n"},
        {V2 "/app/cpuset.cpus.partition", "member\n"},
        {V2 "/plain/cgroup.controllers", "cpu memory\n"},
        {V2 "/part/cgroup.controllers", "cpuset\n"},
        {V2 "/part/cpuset.cpus", "2-3\n"},
        {V2 "/part/cpuset.cpus.effective", "2-3\n"},
        {V2 "/part/cpuset.cpus.partition", "root\n"},
        {V2 "/system.slice/cpuset.cpus.effective", "0-3\n"},
        {V2 "/system.slice/app.service/cgroup.controllers", "cpuset\n"},
        {V2 "/system.slice/app.service/cpuset.cpus", "2\n"},
        {V2 "/system.slice/app.service/cpuset.cpus.effective", "2\n"},
};

/* The opted-in cgroups, as the daemon hands them over before it takes over. */
static const char *const names[] = {"/bench1", "/app", "/plain", "/system.slice/app.service"};
static const CgroupLocation locs[] = {
        {.dir = (char *) V1 "/bench1", .v2 = false},
        {.dir = (char *) V2 "/app", .v2 = true},
        {.dir = (char *) V2 "/plain", .v2 = true},
        {.dir = (char *) V2 "/system.slice/app.service", .v2 = true},
};

static char *root_dir, *state, *bad;
static RootDir *root;

static void setup(void) {
        const char *dir = fuzz_tmpdir();
        _cleanup_(freep) char *run = fuzz_path(dir, "run");

        root_dir = fuzz_path(dir, "root");
        state = fuzz_path(run, "state.json");
        bad = fuzz_path(run, "state.json.bad");
        for (size_t i = 0; i < ELEMENTSOF(fixture); i++) {
                _cleanup_(freep) char *p = fuzz_path(root_dir, fixture[i].path + 1);
                fuzz_write_file(p, fixture[i].contents, strlen(fixture[i].contents));
        }
        (void) mkdir(run, 0700);
        FUZZ_CHECK(rootdir_open(root_dir, &root) == 0);
        /* The whole point: nothing here may reach the host. */
        FUZZ_CHECK(!rootdir_is_host(root));
}

static void reset_fixture(void) {
        for (size_t i = 0; i < ELEMENTSOF(fixture); i++)
                if (strstr(fixture[i].path, "/cpuset.cpus") &&
                    !strstr(fixture[i].path, "/cpuset.cpus.")) { /* the only files it writes */
                        _cleanup_(freep) char *p = fuzz_path(root_dir, fixture[i].path + 1);
                        fuzz_write_file(p, fixture[i].contents, strlen(fixture[i].contents));
                }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(actuator_freep) Actuator *a = NULL;
        size_t n_threads, n_cgroups;
        char what[512];
        int r;

        if (!root)
                setup();
        reset_fixture();
        (void) unlink(bad);
        fuzz_write_file(state, data, size);

        FUZZ_CHECK(actuator_new(root, state, NULL, &a) == 0);
        FUZZ_CHECK(actuator_set_cgroups(a, names, locs, ELEMENTSOF(names)) == 0);
        r = actuator_take_over(a);
        actuator_counts(a, &n_threads, &n_cgroups);
        if (r == -EBADMSG) {
                /* actuator.h: nothing touched, the file moved aside. */
                FUZZ_CHECK(access(state, F_OK) < 0 && access(bad, F_OK) == 0);
                /* A file refused half-way keeps nothing of what came before
                 * the bad entry (regressions/actuator-state/half-loaded-kept.json:
                 * once kept, and given back at the stop). */
                FUZZ_CHECK(n_threads == 0 && n_cgroups == 0);
                return 0;
        }
        FUZZ_CHECK(r <= 0);
        /* Every cgroup named once, those of recorded threads included. */
        size_t named = actuator_kept_description(a, what, sizeof(what));
        FUZZ_CHECK(named >= n_cgroups && named <= n_cgroups + n_threads);
        FUZZ_CHECK(strlen(what) < sizeof(what));
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                (void) actuator_cgroup_original(a, names[i]);
        (void) actuator_retry(a, false);
        (void) actuator_release_cgroup(a, "/bench1");
        (void) actuator_release_all(a);
        a = actuator_free(a);

        /* What is left is what steerd wrote: the next successor reads it. */
        if (access(state, F_OK) == 0) {
                r = actuator_restore_predecessor(root, state, NULL);
                FUZZ_CHECK(r != -EBADMSG);
        }
        return 0;
}
