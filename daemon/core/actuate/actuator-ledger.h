/* SPDX-License-Identifier: MIT */
#pragma once

/* The ledger: what the actuator owns on the host (threads and cgroups it
 * changed, with their original masks), the marks of what it must not
 * touch, the give-backs to try again, and the opted-in cgroups. Records are
 * found, added and forgotten here; nothing here does I/O. Adding or
 * forgetting a record sets dirty: the state file is behind.
 *
 * Write-ahead: before a mask is changed, the mask it is about to get is
 * recorded as "pending" and the state file written; a successor gives back
 * what has its last-set or its pending mask, so a SIGKILL between the change
 * and the state file loses nothing. */

#include "actuator.h"

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
        CgroupMounts mounts; /* what cgroup directories may be written (cgroup-confine.h) */
        char *state_path;
        sd_bus *bus;
        bool libcgroup_ready;
        size_t affinity_bytes; /* the kernel's cpumask size, for "every CPU" */
        AffinityTable *affinity; /* borrowed; a simulated host's thread masks (NULL: the syscalls) */
        bool fixture_threads_logged;

        OptedIn *cgroups;
        size_t n_cgroups;
        ActThread *threads; /* sorted by tid */
        size_t n_threads;
        ActCgroup *owned;
        size_t n_owned;
        HandsOff *hands_off;
        size_t n_hands_off;
        bool dirty;        /* the state file is behind */
        bool save_failing; /* the state file could not be written: nothing new is changed */
        /* Cgroups whose give-back failed (or a predecessor left): given back
         * by actuator_retry() even while opted in, since no plan of this
         * steerd's holds them. */
        char **retry;
        size_t n_retry;
        uint64_t givebacks_failed; /* give-backs of a cgroup that failed, each attempt (metrics) */
        /* Tests only (actuator_set_write_hook()): called after each write
         * of a cgroup's CPUs, so that a test on a kernel 6.2 or later can
         * play one before it, which resets every task of the cpuset. */
        ActuatorWriteHook write_hook;
        void *write_hook_userdata;
};

/* Frees every record and list of the ledger (not the Actuator). */
void act_ledger_done(Actuator *a);

void act_thread_done(ActThread *t);
void act_cgroup_done(ActCgroup *c);

/* Where tid is or would go in the sorted threads. */
size_t act_thread_index(const Actuator *a, pid_t tid, bool *found);
ActThread *actuator_find_thread(const Actuator *a, pid_t tid);
int actuator_add_thread(Actuator *a, const ActThread *t); /* takes what t points to */
void actuator_forget_thread(Actuator *a, pid_t tid);
ActCgroup *actuator_find_owned(const Actuator *a, const char *name);
int actuator_add_owned(Actuator *a, const ActCgroup *c); /* takes what c points to */
void actuator_forget_owned(Actuator *a, const char *name);

HandsOff *act_hands_off_find(const Actuator *a, const char *cgroup, pid_t tid, uint64_t starttime);
int act_hands_off_add(Actuator *a, const char *cgroup, pid_t tid, uint64_t starttime);
void act_hands_off_remove_at(Actuator *a, size_t i);
void act_hands_off_clear_cgroup(Actuator *a, const char *cgroup);

/* failed: put the cgroup on the retry list, else take it off. */
void act_retry_mark(Actuator *a, const char *cgroup, bool failed);
bool act_retry_wanted(const Actuator *a, const char *cgroup);

/* Replaces the opted-in list with copies of names and locs. */
int act_opted_in_set(Actuator *a, const char *const *names, const CgroupLocation *locs, size_t n);
const OptedIn *act_opted_in_find(const Actuator *a, const char *name);

/* The distinct cgroups of every record and mark, each once, borrowed from
 * the records (valid until one is forgotten). */
int act_owned_cgroup_names(const Actuator *a, char ***ret, size_t *ret_n);
