/* SPDX-License-Identifier: MIT */
#pragma once

/* Shared by the actuator's files; not part of the API (tests include it for
 * the pure helpers). */

#include "actuator.h"
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
        CpuSet window;   /* what steerd set last */
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
};

/* ---- actuator.c: bookkeeping ---- */
ActThread *actuator_find_thread(const Actuator *a, pid_t tid);
int actuator_add_thread(Actuator *a, const ActThread *t); /* takes what t points to */
void actuator_forget_thread(Actuator *a, pid_t tid);
ActCgroup *actuator_find_owned(const Actuator *a, const char *name);
int actuator_add_owned(Actuator *a, const ActCgroup *c); /* takes what c points to */
void actuator_forget_owned(Actuator *a, const char *name);
void act_thread_done(ActThread *t);
void act_cgroup_done(ActCgroup *c);

/* a == b on the CPUs in online (NULL: all of them). */
bool act_cpuset_equal_on(hwloc_const_bitmap_t a, hwloc_const_bitmap_t b, hwloc_const_bitmap_t online);

/* ---- actuator-threads.c: sched_setaffinity and /proc ---- */
int act_affinity_probe_bytes(size_t *ret);
int act_thread_get_affinity(pid_t tid, CpuSet *ret);
int act_thread_set_affinity(pid_t tid, hwloc_const_bitmap_t set);
/* Every CPU the kernel knows: the thread gets what its cpuset allows. */
int act_thread_set_affinity_all(pid_t tid, size_t affinity_bytes);
/* Field 22 of ROOT/proc/<tid>/task/<tid>/stat; -ESRCH when the thread is gone. */
int act_thread_read_starttime(const RootDir *root, pid_t tid, uint64_t *ret);
/* ROOT/sys/devices/system/cpu/online. */
int act_read_online_cpus(const RootDir *root, CpuSet *ret);

/* ---- actuator-cpuset.c: cpuset files ---- */
/* Where the cgroup's CPUs are written: CPUSET, THREADS, or (only when eligible)
 * SYSTEMD. -EPERM for a v2 partition root (never written: unmanaged), -ENOENT
 * when the cgroup is gone. */
int act_cgroup_choose_backend(const RootDir *root, bool live, sd_bus *bus, const char *dir, bool v2,
                              ActuatorBackend *ret);
/* The parent's effective CPUs (v2 cpuset.cpus.effective, v1
 * cpuset.effective_cpus, else cpuset.cpus). */
int act_cgroup_parent_effective(const RootDir *root, const char *dir, bool v2, CpuSet *ret);
/* The cgroup's own effective CPUs. */
int act_cgroup_effective(const RootDir *root, const char *dir, bool v2, CpuSet *ret);
/* cpuset.cpus, trimmed ("" on v2 = inherit). */
int act_cgroup_read_cpus_text(const RootDir *root, const char *dir, char **ret);
/* Write cpuset.cpus: libcgroup on the live host, else through the root dir.
 * "" is written as "\n" directly (libcgroup skips empty values). */
int act_cgroup_write_cpus(Actuator *a, const char *dir, const char *text);

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
/* Rewrite (or, when nothing is owned, remove) the state file if dirty. */
int actuator_state_save(Actuator *a);
/* Load a state file into an empty actuator; -EBADMSG (logged with the file
 * name) when malformed, -ENOENT when there is none. */
int actuator_state_load(Actuator *a, const char *path);
