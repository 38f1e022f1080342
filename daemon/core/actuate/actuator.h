/* SPDX-License-Identifier: MIT */
#pragma once

/* The actuator applies plans, records what it owns, and gives it back.
 *
 * Ownership (DESIGN.md 5): before its first change to a thread or cgroup it
 * records (tid, starttime, original mask) or (cgroup, original cpuset.cpus);
 * the record is kept in a state file (atomic write + rename, 0600) so that a
 * successor can restore after a crash. A mask that differs from what steerd
 * last set was changed by someone else: steerd lets go of it and does not
 * touch it again until the cgroup is opted in afresh.
 *
 * Backends, chosen per cgroup: the cgroup's own cpuset (v1 cpuset hierarchy,
 * or v2 with the cpuset controller enabled; written with libcgroup on the
 * live host, through the root directory on a fixture root), systemd's
 * SetUnitProperties(AllowedCPUs=) for a cgroup that belongs to a systemd unit
 * when systemd is PID 1, else sched_setaffinity() on every thread of the
 * cgroup. Thread actions always use sched_setaffinity().
 *
 * The backend choice, made at a cgroup's first change and kept while steerd
 * holds it (actuator_choose_backend()):
 *   1. a v2 cgroup whose cpuset.cpus.partition is "root…" or "isolated…" is a
 *      partition its operator carved: unmanaged (refused, reported let go);
 *   2. systemd: the live host ("/" root), a bus, sd_booted() > 0, a v2 cgroup
 *      whose last path component is a .service, .scope or .slice;
 *   3. cpuset: a v1 cgroup (cpuset hierarchy), or a v2 one with "cpuset" in
 *      its cgroup.controllers, whose cpuset.cpus is writable and whose parent
 *      has effective CPUs (so never a hierarchy's root group);
 *   4. threads: everything else.
 * A mask written is always within the parent's effective CPUs. The threads
 * backend composes the cgroup's window with each thread's own mask as the
 * kernel composes a cpuset with sched_setaffinity() (intersection, or the
 * window when that is empty), and adopts new threads (actuator_adopt_thread(),
 * else the next actuator_apply()).
 *
 * Given back: a restore whose CPUs cover the original (within what is online
 * and allowed) writes the exact original back ("" on v2 = inherit) and drops
 * the record. A thread whose original covered its whole cgroup is given back
 * with every CPU set, so that the kernel composes it with the cgroup's CPUs
 * of the moment, as if steerd had never touched it.
 *
 * On a root other than the host's "/", cpuset files are written below the
 * root and no thread is ever touched (their tids are not the host's). */

#include <systemd/sd-bus.h>

#include "cgroup-path.h"
#include "plan.h"
#include "rootdir.h"
#include "snapshot.h"

typedef struct Actuator Actuator;

typedef enum ActuatorBackend {
        ACTUATOR_BACKEND_THREADS,
        ACTUATOR_BACKEND_CPUSET,
        ACTUATOR_BACKEND_SYSTEMD,
        _ACTUATOR_BACKEND_MAX,
        _ACTUATOR_BACKEND_INVALID = -EINVAL,
} ActuatorBackend;

const char *actuator_backend_to_string(ActuatorBackend b);
ActuatorBackend actuator_backend_from_string(const char *s);

/* Something the actuator let go of, for the policy engine to forget
 * (policy_state_let_go()). tid 0 = the whole cgroup. */
typedef struct LetGo {
        char *cgroup;
        pid_t tid;
        uint64_t starttime;
} LetGo;

typedef struct ActuatorReport {
        unsigned applied;  /* actions that took effect */
        unsigned failed;   /* actions that could not (logged with cgroup and tid) */
        unsigned vanished; /* ESRCH/ENOENT: the thread or cgroup is gone; dropped */
        LetGo *let_go;     /* third-party changes and EPERM'd threads/cgroups */
        size_t n_let_go;
} ActuatorReport;

void actuator_report_done(ActuatorReport *r);

/* state_path: e.g. /run/steerd/state.json (NULL: keep no state file, for
 * tests). bus: the system bus for the systemd backend, NULL if none. */
int actuator_new(const RootDir *root, const char *state_path, sd_bus *bus, Actuator **ret);
/* Gives nothing back and leaves the state file as it is (what a crash
 * leaves): call actuator_release_all() first. */
Actuator *actuator_free(Actuator *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(Actuator *, actuator_free);

/* The opted-in cgroups and where they live, for resolving plan actions. The
 * actuator copies what it keeps. Call before check/apply each tick. */
int actuator_set_cgroups(Actuator *a, const char *const *names, const CgroupLocation *locs, size_t n);

/* Compare the masks in snap with what steerd last set; report (and forget,
 * without restoring) what someone else changed. */
int actuator_check_ownership(Actuator *a, const Snapshot *snap, ActuatorReport *ret);

/* Apply a plan. Errors per action are handled as DESIGN.md/issue 4 say:
 * ESRCH -> dropped; EINVAL -> the mask is recomputed against the thread's
 * and cgroup's current CPUs and tried once more, else dropped; EPERM/EACCES ->
 * logged once, the thread or cgroup marked unmanaged (reported in let_go). */
int actuator_apply(Actuator *a, const Snapshot *snap, const Plan *plan, ActuatorReport *ret);

/* The backend a cgroup-wide action on loc would use now: -EPERM for a v2
 * partition root (unmanaged), -ENOENT when the cgroup is gone. */
int actuator_choose_backend(const Actuator *a, const CgroupLocation *loc, ActuatorBackend *ret);

/* A new thread appeared in an opted-in cgroup (proc connector): if that
 * cgroup's window is applied per thread, apply it to the new thread now.
 * 1 if its mask was changed, 0 if there was nothing to do. */
int actuator_adopt_thread(Actuator *a, const char *cgroup, pid_t tid);
/* A new thread of an opted-in cgroup created by a thread steerd pinned
 * inherits the pin: record it (with its creator's original mask) so that it
 * is given back too. 1 if recorded, 0 if there was nothing to do. */
int actuator_adopt_child(Actuator *a, const char *cgroup, pid_t child_tid);

/* The original mask of the cgroup, if steerd changed it (NULL otherwise):
 * what the sampler reports as the cgroup's "allowed". */
hwloc_const_bitmap_t actuator_cgroup_original(const Actuator *a, const char *cgroup);

/* Give back everything of one cgroup (opt-out), or everything (mode off,
 * SIGTERM). Threads whose starttime no longer matches are skipped; a mask
 * someone else changed since is left alone; a cgroup that is gone is logged
 * and dropped. A give-back that fails for any other reason (the bus is
 * down, the kernel refuses) is logged with the cgroup, the tid and the
 * error, and its record is KEPT, in memory and in the state file, so that
 * actuator_retry() or a successor gives it back: nothing is ever dropped
 * silently. 0 when everything was given back, else the first error. */
int actuator_release_cgroup(Actuator *a, const char *cgroup);
int actuator_release_all(Actuator *a);
/* Try again what is still recorded: everything (all), or the give-backs
 * that failed before (a predecessor's leftovers included, even of cgroups
 * opted in now: no plan of this steerd's holds them) and the records of
 * cgroups not in actuator_set_cgroups()'s list. */
int actuator_retry(Actuator *a, bool all);
/* The system bus changed (reconnected): NULL when there is none. */
void actuator_set_bus(Actuator *a, sd_bus *bus);

/* At start, on the daemon's own actuator (still empty): take over what a
 * killed or failed predecessor left in the actuator's state file and give it
 * back. What cannot be given back now stays recorded (and in the file) for
 * actuator_retry() and the stop. Entries whose tid's starttime differs are
 * skipped; masks changed since by someone else are left alone. 0 also when
 * there is no file. A malformed file is logged with its name, renamed to
 * STATE_PATH.bad, nothing is touched, and -EBADMSG returned. */
int actuator_take_over(Actuator *a);
/* The same with an actuator of its own (tests, tools): what cannot be given
 * back is left in the file. */
int actuator_restore_predecessor(const RootDir *root, const char *state_path, sd_bus *bus);

/* "NAME (its CPUs, N threads), ..." of every cgroup a record is kept for,
 * for messages; returns how many cgroups. */
size_t actuator_kept_description(const Actuator *a, char *buf, size_t size);

/* How many threads and cgroups the actuator currently owns. */
void actuator_counts(const Actuator *a, size_t *ret_threads, size_t *ret_cgroups);
