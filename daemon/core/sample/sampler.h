/* SPDX-License-Identifier: MIT */
#pragma once

/* The sampler reads the OS through the root directory and builds one
 * immutable Snapshot per tick. It keeps only the previous raw counters and
 * the smoothed values; it makes no decisions. */

#include "cgroup-path.h"
#include "rootdir.h"
#include "settings.h"
#include "snapshot.h"
#include "topology.h"

typedef struct Sampler Sampler;

/* /proc/<tid>/sched is the largest per-thread file and only feeds the
 * reported nr_migrations (no decision reads it): it is read every this
 * many samples (5 s at 100 ms; at 10 it was a tenth of steerd's CPU during
 * hb4cg). */
#define SAMPLER_SCHED_FILE_EVERY 50

/* A thread that used less than this share of a CPU (run time and wait)
 * since its last read is read half as often, down to once every
 * SAMPLER_IDLE_MAX_TICKS ticks: most threads of a big host sleep. */
#define SAMPLER_IDLE_PERCENT 1
#define SAMPLER_IDLE_MAX_TICKS 8u

/* Turns: a busy cgroup's busy threads that steerd holds no mask on are
 * read about SAMPLER_TURN_THREADS a tick, each every ceil(n / that) ticks
 * (at most SAMPLER_TURN_MAX), their figures held in between as an idle
 * thread's are; a thread's turn comes when (tick + tid) % turns == 0, so
 * that the reads spread evenly over the ticks. Every thread is read at
 * once when the cgroup's use moved by more than SAMPLER_TURN_CHANGE_PERCENT
 * since the tick before (a phase starts or ends: the window policy reacts
 * within a tick or two), and steerd's held threads every tick. Reading 164
 * busy threads every tick was most of steerd's CPU during hb4cg, 16 a tick
 * (each every 4 ticks) still a third of it (docs/DECISIONS.md). */
#define SAMPLER_TURN_THREADS 8u
#define SAMPLER_TURN_MAX 8u
#define SAMPLER_TURN_CHANGE_PERCENT 25.0

/* The layers (docs/DECISIONS.md, "What the sampler reads"). A cgroup is
 * quiet while its CPU use, smoothed, stays under SAMPLER_QUIET_PERCENT of
 * one CPU plus SAMPLER_QUIET_THREAD_PERCENT per member: its threads then
 * wake, on average, less than about 5 times a second (a wakeup costs some
 * 10 us of CPU), too rarely for a pin, far too little for a window or a
 * move. Of a quiet cgroup only the threads steerd holds a mask on are
 * read. A cgroup is quiet too once its use stayed under that limit for
 * SAMPLER_QUIET_RAW_READS reads in a row, each read's own interval alone:
 * the smoothed use of a phase that ended takes some 5 s to decay from 30
 * CPUs to the limit, and the threads of every cgroup whose phase ended
 * were read (idle, every 2, 4, 8 ticks) all that time (on the simulated
 * host, half the threads read in a tick). Its use is then still read every
 * tick, and the host's ticks slow down only once the smoothed use is
 * quiet: a load that comes back is seen at the next tick. */
#define SAMPLER_QUIET_PERCENT 1.0
#define SAMPLER_QUIET_THREAD_PERCENT 0.005
#define SAMPLER_QUIET_RAW_READS 2u

/* Where a cgroup's processes stand in for its own accounting (a v1 cpuset
 * without cpuacct), a quiet cgroup of more than this many processes has
 * them read in slices, every tick, that go round all of them every
 * SAMPLER_IDLE_MAX_TICKS ticks (the back-off's pace), instead of all of
 * them every SAMPLER_IDLE_MAX_TICKS ticks: the same reads, but no tick
 * that reads 10,000 files at once (issue 12: the worst tick was 14x the
 * median). Its use is the sum of each process's rate at its last read. */
#define SAMPLER_USAGE_SLICE_MIN 64u

/* With the proc connector's joins, a cgroup's task lists are re-read only
 * every this many samples, to heal missed events (and to drop threads
 * that exited while their cgroup was quiet). */
#define SAMPLER_MEMBERS_EVERY 50u
/* A task moved into a cgroup (echo PID > cgroup.procs: how a workload
 * starts in one) raises no event; the process list of a cgroup with fewer
 * members is cheap to read, so it is read (the thread list too when a
 * process came or went) every sample while the cgroup is empty or a
 * process came or went in the last SAMPLER_MEMBERS_FRESH samples, so that
 * a workload started in an empty cgroup is seen at once, and every
 * SAMPLER_MEMBERS_SMALL_EVERY samples otherwise (reading four lists every
 * tick was a sixth of steerd's CPU during hb4cg). */
#define SAMPLER_MEMBERS_SMALL 64u
#define SAMPLER_MEMBERS_FRESH 10u
#define SAMPLER_MEMBERS_SMALL_EVERY 10u

/* At most this many /proc descriptors kept open (two per thread). */
#define SAMPLER_MAX_KEPT_FDS ((size_t) 65536)

/* Malformed sched/debug reads in a row before the sampler stops using it. */
#define SAMPLER_DEBUGFS_MAX_FAILURES 3

/* Who wakes whom: sampled sched_waking, about SAMPLER_WAKE_SAMPLES
 * samples a second of the observed cgroups' wakeups, for
 * SAMPLER_WAKE_OBSERVE_US, then the result held for SAMPLER_WAKE_HOLD_US
 * before the next observation (while one is needed). An edge seen fewer
 * than SAMPLER_WAKE_MIN_SAMPLES times is noise: once, in hackbench, a
 * thread outside its groups linked two of them. */
#define SAMPLER_WAKE_MIN_SAMPLES 2u
#define SAMPLER_WAKE_SAMPLES 20000.0
#define SAMPLER_WAKE_MAX_PERIOD 64u
#define SAMPLER_WAKE_OBSERVE_US (1000 * USEC_PER_MSEC)
/* An observation ends early, after at least SAMPLER_WAKE_MIN_OBSERVE_US,
 * once it holds this many samples per thread of the observed cgroups: a
 * group placed half a second sooner is half a second of a short workload
 * (hackbench -g 4 here: 0.4 s). */
#define SAMPLER_WAKE_MIN_OBSERVE_US (300 * USEC_PER_MSEC)
#define SAMPLER_WAKE_ENOUGH_SAMPLES 40u
#define SAMPLER_WAKE_HOLD_US (10000 * USEC_PER_MSEC)

/* An opted-in cgroup, as the sampler needs it. */
typedef struct SamplerCgroup {
        const char *name;          /* as the operator named it */
        const CgroupLocation *loc; /* where it lives */
        CgroupPolicy policy;
        /* The CPUs it had before steerd first changed it, NULL if unchanged:
         * what it "allows" is what the operator gave it, not what we left. */
        hwloc_const_bitmap_t original_cpus;
        /* The threads steerd holds a mask on (sorted): read even while the
         * cgroup is quiet, so that a pin is released or checked as ever. */
        const pid_t *held;
        size_t n_held;
} SamplerCgroup;

/* root and topo must outlive the sampler. */
int sampler_new(const RootDir *root, const Topology *topo, const Settings *settings, Sampler **ret);
Sampler *sampler_free(Sampler *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Sampler *, sampler_free);

/* Frees a snapshot this sampler took, keeping its threads' masks for the
 * next samples to fill (a tick of 10,000 threads allocated and freed
 * 20,000 small blocks for them: a tenth of the tick on the simulated host,
 * most of it in malloc's sorting of what was freed). */
void sampler_snapshot_recycle(Sampler *s, Snapshot *snap);

/* Settings may change on reload; only the sampling ones matter here. */
void sampler_set_settings(Sampler *s, const Settings *settings);

/* Take a sample at now_us (CLOCK_MONOTONIC). The first call only primes the
 * counters and returns -EAGAIN; later calls return a snapshot of the deltas.
 * A malformed file fails the sample with -EBADMSG (the file and line are
 * logged) and leaves the previous counters as they were. A cgroup that
 * vanishes is left out of the snapshot, not an error. */
int sampler_sample(Sampler *s, uint64_t now_us, const SamplerCgroup *cgroups, size_t n_cgroups,
                   Snapshot **ret);

/* Who wakes whom decides only where pins may follow (latency, observe);
 * elsewhere it is not observed. Default: wanted. */
void sampler_set_wake_wanted(Sampler *s, bool wanted);
/* "idle", "observing", "held" (partners from the last observation), or
 * "unavailable: why" (said once in the log; a reload tries again). */
const char *sampler_wake_status(const Sampler *s);
/* The kernel's cache-aware scheduling as last probed: "on: HOW", "off:
 * HOW" (built in, turned off) or "absent: HOW" (kernel-cache.h). */
const char *sampler_kernel_cache_status(const Sampler *s);
#define SAMPLER_KERNEL_CACHE_PROBE_US (10 * USEC_PER_SEC)

/* Read every thread in full at the next sample. An idle thread's mask is
 * held between its reads like the rest of its figures: after steerd
 * changed masks, a held one would look like someone else's change. */
void sampler_reread_threads(Sampler *s);
/* The same for what one plan changed: the thread tid of the cgroup at dir,
 * or (tid 0) every thread of it, whose masks a cgroup-wide write
 * recomposed. The other threads keep their back-off. */
void sampler_reread(Sampler *s, const char *dir, pid_t tid);

/* Runnable feeds only contention-aware balancing (and the operator's view
 * in observe mode): without it, sched/debug and the threads scan are not
 * read and snapshots say RUNNABLE_SOURCE_NONE. Default: needed. */
void sampler_set_runnable_needed(Sampler *s, bool needed);
RunnableSource sampler_source(const Sampler *s);

/* The proc connector keeps the cgroups' membership up to date: with it on,
 * task lists are re-read every SAMPLER_MEMBERS_EVERY samples instead of
 * every sample. A thread new in the cgroup at dir (tgid its process) is
 * added at once; sampler_members_stale() (the connector overflowed)
 * re-reads every list at the next sample. */
void sampler_set_membership_events(Sampler *s, bool on);
/* Every member of every cgroup read each sample, quiet or not: for the
 * operator's one-shot view (steerd --once), where cost does not matter and
 * a cgroup without its threads would puzzle. Default: layered. */
void sampler_set_full(Sampler *s, bool full);

/* The host layer (docs/DECISIONS.md, "An idle steerd"): whether every
 * opted-in cgroup of the last sample was quiet, with members that have
 * settled (none empty, none with a process come or gone in the last
 * SAMPLER_MEMBERS_FRESH samples), and none failed: true with none opted
 * in. The daemon then samples less often; while it does, it says so with
 * sampler_set_host_idle(), and each cgroup's use is read at every sample
 * (not every few), so that one that wakes up ends it at the next. */
bool sampler_all_quiet(const Sampler *s);
void sampler_set_host_idle(Sampler *s, bool idle);
/* A fixture root whose files are rewritten in place, as /proc's are (the
 * simulated host, tests/sim): its files are kept open and re-read as on
 * the live root, so that a simulation measures what a host costs. A root
 * whose files are replaced by rename must not use it: a kept descriptor
 * would read the replaced file for good. */
void sampler_keep_open(Sampler *s);
void sampler_member_joined(Sampler *s, const char *dir, pid_t tid, pid_t tgid);
void sampler_members_stale(Sampler *s);
/* The opted-in cgroup a task new since the last sample is in, from the
 * membership alone: a new thread of a member process, or a new process of
 * a member parent (a fork starts in its parent's cgroup). 1 with *ret_dir
 * (borrowed), 0 if in none, -ENODATA when some cgroup's membership is not
 * known yet (read /proc/TID/cgroup instead). Costs no file read: a host
 * forks far more often than steerd's cgroups do. */
int sampler_member_cgroup(const Sampler *s, pid_t tid, pid_t tgid, pid_t parent_tgid, const char **ret_dir);
