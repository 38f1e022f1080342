/* SPDX-License-Identifier: MIT */
#pragma once

/* The actuator applies plans, records what it owns, and gives it back.
 *
 * The two ledgers (the contract with the policy engine). The actuator's
 * ledger (ActThread/ActCgroup, and the state file that mirrors it) is the
 * truth of what steerd owns on the host and of what it gives back: its
 * originals are read from the host before steerd's first change (a thread's
 * sched_getaffinity(), or, for a thread born into steerd's window, the
 * cgroup's original, into steerd's pin, its creator's; a cgroup's cpuset.cpus
 * or AllowedCPUs as text, and its effective CPUs), and a give-back writes
 * those, never a mask the engine computed. A RESTORE action gives back only
 * when its CPUs cover the recorded original (as far as it is online and, for
 * a thread, within its cgroup's CPUs); any other RESTORE is applied as an
 * ordinary change and the record stays.
 *
 * The engine keeps originals of its own (CgroupState.orig, ThreadState.orig
 * in policy-internal.h), only to compute the masks it asks for. It never
 * reads this ledger; it learns from the snapshots:
 *   - a cgroup's orig is the snapshot's "cpus" (its effective CPUs) at the
 *     engine's first set_cgroup_cpus on it; a thread's is, at its first
 *     set_thread_cpus, its own mask as last seen unnarrowed by a cgroup layer
 *     of the engine's, else the snapshot's "allowed" of the thread;
 *   - a cgroup's "allowed" in the snapshot is where this ledger shows
 *     through: the daemon hands actuator_cgroup_original() (NULL for the
 *     threads backend, whose cgroup CPUs stay untouched, and when no record
 *     is kept) to the sampler, which reports (that original, else the
 *     cgroup's CPUs now) ∩ its parent's effective CPUs ∩ online. The engine
 *     bounds every mask and restore by it; it is not the engine's orig.
 * The engine records a layer (and its orig) when it emits the action, not
 * when it is applied: applied/failed/vanished are not fed back to it. It
 * forgets an orig when it restores the last layer itself, when the cgroup or
 * the (tid, starttime) leaves the snapshot, when the daemon starts it afresh
 * (a mode change between applying and not applying, mode off, a topology
 * change), and on the one path by which it follows the actuator: every
 * ActuatorReport.let_go entry of actuator_check_ownership() and
 * actuator_apply() goes to policy_state_let_go() in the same tick, which
 * drops the cgroup's layers and orig (tid 0; its threads' layers stay) or the
 * thread's. A let-go the engine holds nothing for is ignored (e.g. a thread
 * of a threads-backend window: the layer is the cgroup's). Nothing else is
 * reported: releases, retries, take-overs and adoptions return no report.
 *
 * Divergences, as the code handles them:
 *   - Someone else changed a mask. actuator_check_ownership() (every tick of
 *     an applying mode, before the engine decides) compares, on the online
 *     CPUs, a cpuset/systemd cgroup's cpuset.cpus (where it can be read) with
 *     the window steerd set, and each recorded thread's sampled affinity with
 *     what steerd last set (the kernel's composition with a cpuset/systemd
 *     window is no change). A difference: the record is forgotten without
 *     restoring, marked hands-off and reported let go, so the engine forgets
 *     it before it decides. The actuator then refuses the actions on it (a
 *     cgroup's mark: cgroup-wide actions; a thread's: that thread's),
 *     counted failed, logged once, not reported, until the cgroup is given
 *     back without a failure (a thread's mark also goes when the thread
 *     exits); a layer the engine sets there again is never applied. At a
 *     give-back, a mask that is no longer steerd's is left alone and its
 *     record dropped, unreported.
 *   - A thread vanished (ESRCH, or the tid names another starttime): the
 *     actuator drops the record (in actuator_apply() counted vanished),
 *     unreported; the engine drops the thread when its identity leaves the
 *     snapshot. A thread that moved to another cgroup leaves the engine's
 *     cgroup but stays in the ledger, given back with the cgroup it was
 *     recorded for. A cgroup that is gone: its record is dropped and its
 *     threads given back; the engine drops it when it leaves the snapshot.
 *   - A give-back failed (bus down, kernel refused): the record is kept, in
 *     memory and in the state file, and the cgroup put on the retry list
 *     (actuator_retry(), the stop, else a successor). The engine is not
 *     told; its state of the cgroup is usually gone anyway (opted out, a
 *     fresh engine after a mode or topology change). An engine that acts on
 *     the cgroup again takes steerd's leftover window from the snapshot's
 *     "cpus" as its orig, while the actuator keeps the record, with its
 *     backend and true original, and gives that back in the end.
 *   - A give-back succeeded under a cgroup the engine still sees (its opt-in
 *     policy or place changed; actuator_retry() gave back a retry-list
 *     cgroup that is opted in): unreported, so the engine believes in its
 *     layers until it acts again: a restore then finds nothing held
 *     ("nothing to do"), a change is recorded afresh.
 *   - An action failed in actuator_apply() (other than EPERM/EACCES, which
 *     is a let-go): counted failed; the record keeps what the host has (or
 *     goes, if it was made for that first change), while the engine has
 *     already set or dropped its layer.
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

#include "affinity-table.h"
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
/* A simulated host (a fixture root): thread masks are set and read through
 * the table (affinity-table.h) instead of the syscalls, so thread actions
 * run end to end. Borrowed; NULL: none. */
void actuator_set_affinity_table(Actuator *a, AffinityTable *t);
/* For tests: hook(dir, userdata) runs after every successful write of a
 * cgroup's cpuset.cpus (NULL: none). */
typedef void (*ActuatorWriteHook)(const char *dir, void *userdata);
void actuator_set_write_hook(Actuator *a, ActuatorWriteHook hook, void *userdata);

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

/* Give-backs that failed since the start, each attempt counted (a retry
 * that fails again counts again), and the cgroups whose records wait for a
 * retry now: what an operator's alert watches. */
void actuator_giveback_counts(const Actuator *a, uint64_t *ret_failed, size_t *ret_pending);

/* How many threads and cgroups the actuator currently owns. */
void actuator_counts(const Actuator *a, size_t *ret_threads, size_t *ret_cgroups);
/* The threads of the cgroup the ledger owns, appended to *tids (n, alloc as
 * for realloc), in no order. */
int actuator_owned_tids(const Actuator *a, const char *cgroup, pid_t **tids, size_t *n, size_t *alloc);
/* Every thread steerd holds a mask on, sorted by its cgroup's name: the
 * tick looks its cgroups up in it, where a pass over all of them per
 * cgroup was 6% of a tick at 200 cgroups. The names are the actuator's,
 * valid until its next change. */
typedef struct ActOwned {
        const char *cgroup;
        pid_t tid;
} ActOwned;
int actuator_owned_by_cgroup(const Actuator *a, ActOwned **ret, size_t *ret_n);
