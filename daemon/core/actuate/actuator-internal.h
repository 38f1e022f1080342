/* SPDX-License-Identifier: MIT */
#pragma once

/* Shared by the actuator's files; not part of the API (tests include it for
 * the pure helpers).
 *
 *   actuator.c          bookkeeping, plan dispatch, ownership check, release
 *   actuator-threads.c  sched_setaffinity(): thread actions, the threads backend
 *   actuator-cpuset.c   the cgroup's own CPUs: cpuset files and the systemd call
 *   actuator-systemd.c  systemd's D-Bus API and its encodings
 *   actuator-state.c    the state file and restoring a predecessor's state
 *
 * Write-ahead: before a mask is changed, the mask it is about to get is
 * recorded as "pending" and the state file written; a successor gives back
 * what has its last-set or its pending mask, so a SIGKILL between the change
 * and the state file loses nothing. */

#include "actuator.h"
#include "affinity.h"
#include "log.h"

/* A thread steerd changed. */
typedef struct ActThread {
        pid_t tid;
        uint64_t starttime;
        char *cgroup;    /* the opted-in cgroup's name */
        CpuSet original; /* sched_getaffinity() before steerd's first change */
        /* The original covered all of its cgroup's CPUs: the thread had no
         * affinity of its own. It is given back with every CPU set, so that
         * the kernel composes it with whatever the cgroup allows by then
         * instead of freezing the cgroup's CPUs of today into the thread. */
        bool original_full;
        CpuSet request;  /* the thread-level mask the plan asked for; NULL: none */
        CpuSet last_set; /* what the thread had after steerd's last change (read back) */
        CpuSet pending;  /* what it is about to get (write-ahead); NULL between changes */
        bool unapplied;  /* recorded for a change that has not happened yet */
} ActThread;

/* A cgroup steerd changed. */
typedef struct ActCgroup {
        char *name;
        char *dir;
        bool v2;
        ActuatorBackend backend;
        char *unit; /* systemd backend: the unit */
        /* cpuset: cpuset.cpus as it was ("" = inherit on v2); systemd:
         * AllowedCPUs as a cpulist ("" = unset); threads: unused. */
        char *original_text;
        CpuSet original; /* the CPUs it had (effective) before steerd's first change */
        CpuSet window;   /* what steerd set last; NULL only while the first change is pending */
        CpuSet pending;  /* what it is about to get (write-ahead) */
} ActCgroup;

/* A thread or cgroup (tid 0) steerd must not touch until the cgroup is
 * released: someone else changed it, or the kernel refused steerd. */
typedef struct HandsOff {
        char *cgroup;
        pid_t tid;
        uint64_t starttime;
        bool logged; /* a refused action was logged already */
} HandsOff;

typedef struct OptedIn {
        char *name;
        char *dir;
        bool v2;
} OptedIn;

struct Actuator {
        const RootDir *root; /* borrowed */
        bool live;           /* the root is the host's "/": syscalls and libcgroup apply */
        char *state_path;
        sd_bus *bus;
        bool libcgroup_ready;
        size_t affinity_bytes; /* the kernel's cpumask size, for "every CPU" */
        bool fixture_threads_logged;

        OptedIn *cgroups;
        size_t n_cgroups;
        ActThread *threads; /* sorted by tid */
        size_t n_threads;
        ActCgroup *owned;
        size_t n_owned;
        HandsOff *hands_off;
        size_t n_hands_off;
        bool dirty; /* the state file is behind */
        /* Cgroups whose give-back failed (or a predecessor left): given back
         * by actuator_retry() even while opted in, since no plan of this
         * steerd's holds them. */
        char **retry;
        size_t n_retry;
};

/* One apply, check or release. */
typedef struct ActCtx {
        Actuator *a;
        const Snapshot *snap; /* NULL on release */
        CpuSet online;        /* NULL: unknown; masks are then compared as they are */
        ActuatorReport rep;
} ActCtx;

/* ---- actuator.c ---- */
int act_ctx_init(ActCtx *c, Actuator *a, const Snapshot *snap);
void act_ctx_done(ActCtx *c);
void act_and_online(const ActCtx *c, CpuSet s);

ActThread *actuator_find_thread(const Actuator *a, pid_t tid);
size_t act_thread_index(const Actuator *a, pid_t tid, bool *found);
int actuator_add_thread(Actuator *a, const ActThread *t); /* takes what t points to */
void actuator_forget_thread(Actuator *a, pid_t tid);
ActCgroup *actuator_find_owned(const Actuator *a, const char *name);
int actuator_add_owned(Actuator *a, const ActCgroup *c); /* takes what c points to */
void actuator_forget_owned(Actuator *a, const char *name);
void act_thread_done(ActThread *t);
void act_cgroup_done(ActCgroup *c);
HandsOff *act_hands_off_find(const Actuator *a, const char *cgroup, pid_t tid, uint64_t starttime);
int act_hands_off_add(Actuator *a, const char *cgroup, pid_t tid, uint64_t starttime);
int act_report_let_go(ActuatorReport *r, const char *cgroup, pid_t tid, uint64_t starttime);
/* EPERM/EACCES: logged once (the mark keeps steerd from trying again),
 * reported as let go. */
int act_mark_unmanaged(ActCtx *c, const char *cgroup, pid_t tid, uint64_t starttime, int error);
void act_log_refused(HandsOff *h, const Action *act);
const CgroupSample *act_snap_cgroup(const Snapshot *snap, const char *name);
const ThreadSample *act_cgroup_thread(const CgroupSample *cs, pid_t tid);

/* a == b on the CPUs in online (NULL: all of them). */
bool act_cpuset_equal_on(hwloc_const_bitmap_t a, hwloc_const_bitmap_t b, hwloc_const_bitmap_t online);
int act_dup_set(hwloc_const_bitmap_t s, CpuSet *ret);
/* The kernel's composition of a thread's own mask with its cpuset: base ∩
 * cg, or cg when that is empty. base NULL = every CPU. */
int act_compose(hwloc_const_bitmap_t base, hwloc_const_bitmap_t cg, CpuSet *ret);
/* The CPUs a thread of the cgroup may have right now, as far as steerd knows. */
int act_cgroup_cpus_now(const ActCtx *c, const char *dir, bool v2, const CgroupSample *cs,
                        const ActCgroup *crec, CpuSet *ret);
bool act_is_einval(int r);
bool act_is_eperm(int r);
/* actuator_state_save(), logged. */
void act_save_state(Actuator *a);

/* ---- actuator-threads.c ---- */
/* Every CPU the kernel knows: the thread gets what its cpuset allows. */
/* Field 22 of ROOT/proc/<tid>/task/<tid>/stat; -ESRCH when the thread is gone. */
int act_thread_read_starttime(const RootDir *root, pid_t tid, uint64_t *ret);
/* 0 if the tid still names that thread, -ESRCH if not. */
int act_thread_check_identity(const Actuator *a, pid_t tid, uint64_t starttime);
/* ROOT/sys/devices/system/cpu/online. */
int act_read_online_cpus(const RootDir *root, CpuSet *ret);

/* The mask a thread gets from its own base (request, else original) within
 * cg_now, or within the threads backend's window. */
int act_thread_predict(const ActThread *t, const ActCgroup *crec, hwloc_const_bitmap_t request,
                       hwloc_const_bitmap_t cg_now, CpuSet *ret);
/* A thread action in two steps, so that a run of them shares one write-ahead
 * save of the state file: prepare records the thread and its intent (go is
 * false when there is nothing to apply: vanished, refused, nothing held);
 * finish, after the save, sets the mask, logs and counts. */
typedef struct ActPrepared {
        bool go;
        bool full_restore; /* the original, not act->cpus */
        pid_t tid;
        uint64_t starttime;
        CpuSet cg_now, before;
} ActPrepared;
int act_prepare_thread_action(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, const Action *act,
                              ActPrepared *ret);
int act_finish_thread_action(ActCtx *c, const OptedIn *cg, const Action *act, ActPrepared *p);
void act_prepared_done(ActPrepared *p);
int act_apply_cgroup_threads(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, ActCgroup *crec,
                             const Action *act);
/* New threads of threads-backend windows, found in the snapshot. */
int act_adopt_new_threads(ActCtx *c);
/* One new thread (proc connector): 1 if its mask was changed. */
int act_adopt_thread(Actuator *a, const ActCgroup *crec, pid_t tid);
/* Before steerd's first cgroup-wide write (cpuset or systemd backend): a
 * thread of the cgroup with a mask of its own (narrower than cg_cpus, the
 * cgroup's CPUs: an operator's taskset) is recorded with that mask as its
 * original. Kernels before 6.2 reset every task of a cpuset whose CPUs are
 * written; the record is what sets it again while the window holds and gives
 * it back after. 1 if recorded. */
int act_record_own_mask(Actuator *a, const char *cgroup, pid_t tid, uint64_t starttime,
                        hwloc_const_bitmap_t cg_cpus);
/* Give a thread its original back if its mask is still steerd's. 1 if it
 * had a mask of its own (not "every CPU"), to be set once more after its
 * cgroup's CPUs are given back, 0 when done otherwise (or
 * nothing to do: gone, someone else's); the caller then forgets it. < 0: the
 * give-back failed and the caller keeps the record. */
int act_release_thread(ActCtx *c, ActThread *t);

/* ---- actuator-cpuset.c ---- */
/* Where the cgroup's CPUs are written: CPUSET, THREADS, or (only when eligible)
 * SYSTEMD. -EPERM for a v2 partition root (never written: unmanaged), -ENOENT
 * when the cgroup is gone. */
int act_cgroup_choose_backend(const RootDir *root, bool live, sd_bus *bus, const char *dir, bool v2,
                              ActuatorBackend *ret);
/* The parent's effective CPUs (v2 cpuset.cpus.effective, v1
 * cpuset.effective_cpus, else cpuset.cpus). */
int act_cgroup_parent_effective(const RootDir *root, const char *dir, bool v2, CpuSet *ret);
/* cpuset.cpus, trimmed ("" on v2 = inherit). */
int act_cgroup_read_cpus_text(const RootDir *root, const char *dir, char **ret);
/* Write cpuset.cpus: libcgroup on the live host, else through the root dir.
 * "" is written as "\n" directly (libcgroup skips empty values). */
int act_cgroup_write_cpus(Actuator *a, const char *dir, const char *text);

int act_cgroup_record(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, ActuatorBackend backend,
                      ActCgroup *ret);
/* cpuset and systemd backends. crec NULL: the first change. */
int act_apply_cgroup_file(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, ActCgroup *crec,
                          ActuatorBackend backend, const Action *act);
/* The cgroup is gone: drop its record, give its threads back. cgroup must
 * not point into the record. */
void act_cgroup_gone(ActCtx *c, const char *cgroup, const char *dir);
/* Give the cgroup's own CPUs back if they are still steerd's. 1 if written. */
int act_release_cgroup_record(ActCtx *c, ActCgroup *crec);

/* ---- actuator-systemd.c ---- */
/* "/system.slice/app.service" -> "app.service"; -EINVAL unless the last
 * component is a .service, .scope or .slice unit name. */
int systemd_unit_from_cgroup(const char *path, char **ret);
/* AllowedCPUs= as D-Bus "ay": byte i bit j = CPU 8i+j; the empty set is the
 * empty array (unset). */
int cpuset_to_unit_bitmask(hwloc_const_bitmap_t set, uint8_t **ret, size_t *ret_size);
int cpuset_from_unit_bitmask(const uint8_t *bytes, size_t size, CpuSet *ret);
bool systemd_backend_eligible(bool live, sd_bus *bus, const char *dir, bool v2);
int systemd_get_allowed_cpus(sd_bus *bus, const char *unit, CpuSet *ret);
int systemd_set_allowed_cpus(sd_bus *bus, const char *unit, hwloc_const_bitmap_t set);

/* ---- actuator-state.c ---- */
/* Rewrite (or, when nothing is owned, remove) the state file if dirty;
 * failures are logged and returned. */
int actuator_state_save(Actuator *a);
/* Load a state file into an empty actuator; -EBADMSG (logged with the file
 * name) when malformed, -ENOENT when there is none. */
int actuator_state_load(Actuator *a, const char *path);
