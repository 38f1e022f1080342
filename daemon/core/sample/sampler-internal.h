/* SPDX-License-Identifier: MIT */
#pragma once

/* Shared by the sampler's files; not part of the API (sampler.h is).
 *
 * The files, callers above callees (calls only go down this list):
 *
 *   sampler.c           one tick: sampler_new/free/sample, the commit of
 *                       this tick's counters
 *   sampler-cgroup.c    an opted-in cgroup: its layers (usage, membership,
 *                       threads), CPUs, pressure; whether it is quiet
 *   sampler-wake.c      who wakes whom: when to observe, the samples into
 *                       each thread's partners (wake-events.c reads them)
 *   sampler-usage.c     the cgroup layer: its CPU use (cpu.stat,
 *                       cpuacct.usage, else its processes' stat)
 *   sampler-members.c   the membership layer: task lists when due, the
 *                       proc connector's joins in between
 *   sampler-runnable.c  the runnable sources (schedstat, debugfs, threads):
 *                       the choice, the fallback, the threads scan
 *   sampler-cpu.c       per-CPU util from /proc/stat, its smoothing, the
 *                       host's PSI
 *   sampler-threads.c   leaf: the per-thread file cache (descriptors kept
 *                       open, pread(), the idle back-off), and the kept
 *                       files read every tick (sampler_read_kept())
 *   sampler-llc.c       leaf: the per-LLC figures derived from the CPUs'
 */

#include <limits.h>
#include <time.h>

#include "kernel-cache.h"
#include "proc-schedstat.h"
#include "proc-stat.h"
#include "sampler.h"
#include "wake-events.h"

/* What we remember of a thread between two ticks, keyed by tid and checked
 * against starttime so that a reused tid starts afresh. */
typedef struct ThreadPrev {
        pid_t tid;
        pid_t tgid; /* its process: 0 not known yet, -1 not readable (not tried again) */
        uint64_t starttime;
        uint64_t exec_ns, run_delay_ns;
        double util, wait; /* smoothed */
        int processor;
        uint64_t delta_run_delay_ns; /* this tick's, for the THREADS source */
        uint64_t pcount;             /* schedstat's third field: times scheduled in */
        double wakeups;              /* per second, smoothed */
        bool measured;               /* util/wait/wakeups hold at least one interval */
        uint64_t nr_migrations;      /* last read of /proc/<tid>/sched */
        bool have_migrations;        /* it was read for this thread */
        /* Live root only: stat and schedstat kept open and re-read with
         * pread(). The descriptors pin the task: once it exits they give
         * ESRCH, never a reused tid's figures. -1 when not kept. */
        int stat_fd, schedstat_fd;
        /* A fixture root kept open (sampler_keep_open()): its status, the
         * mask's source, kept the same way, one read as sched_getaffinity()
         * is one call on the live root. -1 when not kept. */
        int status_fd;
        CpuSet allowed;          /* live: the mask at its last read, NULL */
        uint64_t read_us;        /* when its files were last read */
        unsigned interval, skip; /* idle back-off, in ticks */
        bool fresh;              /* its files were read this tick */
} ThreadPrev;

/* This tick's threads, built while sampling. */
typedef struct ThreadTable {
        ThreadPrev *items;
        size_t n, alloc;
} ThreadTable;

/* A process of a cgroup whose CPU time stands in for the cgroup's own
 * accounting (a v1 cpuset without cpuacct). */
typedef struct ProcUsage {
        pid_t tgid;
        uint64_t ticks;   /* utime + stime, clock ticks */
        uint64_t read_us; /* when ticks was read */
        double rate;      /* CPU time per wall time between its last two reads */
        bool have;        /* ticks holds a reading */
        bool have_rate;   /* rate holds a figure */
        int fd;           /* /proc/<tgid>/stat kept open, -EBADF */
} ProcUsage;

/* What the sampler keeps of an opted-in cgroup between ticks, by directory:
 * its layers. */
typedef struct CgroupCache {
        char *dir;
        bool v2;
        bool seen; /* passed in this tick */

        /* Membership: sorted, from the task lists when due (members_read),
         * and the proc connector's joins in between. */
        pid_t *tids;
        size_t n_tids, alloc_tids;
        ProcUsage *procs; /* sorted by tgid */
        size_t n_procs, alloc_procs;
        bool members_valid;
        uint64_t members_read;  /* Sampler.n_samples when last read */
        uint64_t procs_read;    /* ... when cgroup.procs was last read */
        uint64_t procs_changed; /* ... when a process came or went */

        /* The cgroup layer: cumulative CPU time and its smoothed rate, read
         * every 2, 4, up to SAMPLER_IDLE_MAX_TICKS ticks while quiet. */
        int usage_fd;       /* cpu.stat or cpuacct.usage kept open, -EBADF */
        int cpus_fd;        /* its own effective CPUs file kept open, -EBADF */
        int parent_cpus_fd; /* its parent's, kept open while steerd holds its CPUs, -EBADF */
        bool no_own;        /* neither exists: its processes stand in (until the next list read) */
        bool by_procs;      /* its last use figure came from its processes */
        size_t procs_next;  /* where the next slice of its processes starts */
        unsigned usage_interval, usage_skip;
        uint64_t usage_ns;
        uint64_t usage_us;  /* when usage_ns was read */
        bool have_usage;    /* usage_ns holds a reading */
        double turns_usage; /* usage when its threads were last read in turns, < 0: not */
        double usage;       /* capacity scale, smoothed; valid once usage_primed */
        double usage_raw;   /* the same over the last interval alone */
        bool usage_primed;
        bool quiet; /* at the last sample: quiet, with settled members */
        unsigned raw_low;  /* reads in a row whose own interval's use was under the quiet limit */
        bool fds_released; /* quiet, and its threads' descriptors given up */

        /* The thread layer: the members' figures as of their last read,
         * sorted by tid. A quiet cgroup's stay as they are. */
        ThreadPrev *threads;
        size_t n_threads;
} CgroupCache;

typedef struct CpuState {
        double util, runnable; /* smoothed */
        double contention;     /* debugfs: runnable_avg - util_avg at its last read */
        bool primed;           /* smoothed values hold data */
} CpuState;

/* One sampled wakeup between two members of one cgroup, a < b. */
typedef struct WakeEdge {
        pid_t a, b;
} WakeEdge;

/* A thread's busiest partners from the last observation. */
typedef struct ThreadPartners {
        pid_t tid;
        unsigned n;
        WakePartner p[SNAPSHOT_MAX_PARTNERS];
} ThreadPartners;

struct Sampler {
        const RootDir *root;
        const Topology *topo;
        Settings settings;
        RunnableSource source;

        bool have_prev;
        uint64_t prev_time_us;
        ProcStat prev_stat;
        ProcSchedstat prev_schedstat;

        CpuState *cpus; /* parallel to topo->cpus */

        ThreadPrev *threads; /* sorted by tid: the THREADS source's scan */
        size_t n_threads;
        CgroupCache *cgroups; /* the opted-in cgroups' layers */
        size_t n_cgroups;
        bool membership_events;          /* the proc connector feeds joins */
        bool full;                       /* no quiet cgroups: every member read */
        bool host_idle;                  /* ticks are SAMPLER_IDLE_MAX_TICKS apart at most (sampler.h) */
        bool all_quiet;                  /* the last sample's cgroups were all quiet and settled */
        long clock_ticks;                /* sysconf(_SC_CLK_TCK) */
        size_t n_kept_fds, max_kept_fds; /* the descriptors of ThreadPrev */
        CpuSet *mask_pool;               /* masks of recycled snapshots, for the next */
        size_t n_mask_pool, alloc_mask_pool;

        bool live;                 /* the root is "/": the threads are this host's */
        bool keep_open;            /* files kept open and re-read: live, or sampler_keep_open() */
        bool runnable_needed;      /* false: skip the dear runnable sources */
        uint64_t n_samples;        /* for the files read only every few ticks */
        uint64_t debugfs_read_us;  /* when sched/debug was last read */
        unsigned debugfs_failures; /* malformed reads in a row */
        uint64_t self_ns;          /* steerd's CPU time at the last sample */
        int stat_fd, psi_fd;       /* /proc/stat, /proc/pressure/cpu kept open */

        /* Who wakes whom (sampler-wake.c). */
        WakeEvents *wake;       /* open during an observation */
        uint64_t wake_start_us; /* the observation began */
        uint64_t wake_next_us;  /* no observation before */
        WakeEdge *wake_edges;   /* this observation's samples */
        size_t n_wake_edges, alloc_wake_edges;
        ThreadPartners *partners; /* the last observation's, by tid */
        size_t n_partners;
        pid_t *wake_known; /* the threads the last finished observation covered, sorted */
        size_t n_wake_known;
        bool wake_wanted; /* the mode may place groups (default: yes) */
        bool wake_off;    /* not available: said once, not tried again until a reload */
        char wake_status[600];

        /* The kernel's cache-aware scheduling (kernel-cache.h), probed every
         * SAMPLER_KERNEL_CACHE_PROBE_US: its knobs can change at run time. */
        KernelCacheAware kernel_cache;
        uint64_t kernel_cache_probed_us;
        bool kernel_cache_probed;
        char kernel_cache_status[260];
};

static inline int sampler_read_file(const Sampler *s, const char *path, char **ret) {
        return rootdir_read_file(s->root, path, ret, NULL);
}

/* The name of a file in messages: with a root other than /, say which tree. */
static inline const char *sampler_display(const Sampler *s, const char *path, char *buf, size_t size) {
        if (streq(s->root->path, "/"))
                return path;
        snprintf(buf, size, "%s%s", s->root->path, path);
        return buf;
}
#define DISPLAY(s, path) sampler_display((s), (path), (char[PATH_MAX]){}, PATH_MAX)

/* When a counter was read: on the live host the clock now, else (a fixture
 * root, whose counters are a function of the tick) the tick's time. A rate
 * divides a counter's change by the time between its two reads, not
 * between two tick starts: steerd runs SCHED_BATCH beside the load it
 * steers, and on a saturated host a tick's reads stretch over tens of
 * milliseconds; divided by the tick period, 41 hackbench threads confined
 * to one CPU summed to 1.5 CPUs, and their window was given back as
 * outgrown (measured on a 2-vCPU VM). */
static inline uint64_t sampler_read_time_us(const Sampler *s, uint64_t tick_us) {
        struct timespec ts;

        if (!s->live || clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
                return tick_us;
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

static inline bool sampler_vanished(int r) {
        /* A thread that exits between readdir and open, or while we read. */
        return r == -ENOENT || r == -ESRCH || r == -ENOTDIR;
}

/* sampler-threads.c */

/* Read thread tid of process pid through the cache prev[0..n_prev) (sorted
 * by tid) and append it to t. Returns 0 and sets *ret (NULL if the thread
 * vanished or its files are malformed: both are logged and skipped, never
 * fatal). turns: a busy thread is read again after that many ticks (1:
 * next tick; SAMPLER_TURN_THREADS). */
int thread_cache_sample(Sampler *s, ThreadPrev *prev, size_t n_prev, ThreadTable *t, pid_t pid, pid_t tid,
                        uint64_t now_us, unsigned turns, ThreadPrev **ret);
/* items[0..n) sorted by tid; NULL if tid is not among them. */
ThreadPrev *thread_cache_find(ThreadPrev *items, size_t n, pid_t tid);
void thread_table_sort(ThreadTable *t);
/* A file read every tick (path through the root), kept open in *fd on the
 * live root and re-read with pread() from offset 0, where seq_file builds
 * it afresh: the path lookup is most of what a small /proc or cgroup file
 * costs. Fixture roots open it each time, unless sampler_keep_open() says
 * they are rewritten in place as /proc is. *fd is -EBADF after an error. */
int sampler_read_kept(Sampler *s, int *fd, const char *path, char **ret);
/* A thread's status through its kept descriptor (opened, and kept while
 * the budget allows, on first use): a fixture root kept open. */
int thread_read_status(Sampler *s, ThreadPrev *tp, const char *path, char **ret);

/* sampler-masks.c: the masks of recycled snapshots (sampler_snapshot_recycle()). */

/* A copy of src: a recycled mask or a new one. */
CpuSet sampler_mask_dup(Sampler *s, hwloc_const_bitmap_t src);
/* Frees the pool (sampler_free()). */
void sampler_masks_done(Sampler *s);

/* Closes what the entries keep open and frees them. */
void thread_prevs_free(Sampler *s, ThreadPrev *items, size_t n);
/* The same for one entry, which stays allocated (descriptors -1, no mask). */
void thread_prev_done(Sampler *s, ThreadPrev *p);
/* Close the thread's kept descriptors; its figures stay. */
void thread_prev_close(Sampler *s, ThreadPrev *p);

/* sampler-runnable.c */

/* The source a new sampler uses: the cheapest the host offers. */
RunnableSource runnable_probe_source(const RootDir *root);

/* This tick's raw (unsmoothed) runnable of each CPU into run_raw, NAN where
 * unknown; threads read for the THREADS source are appended to t. Sets
 * *ret_schedstat (the counters to keep for the next tick), the source the
 * snapshot names and whether the threads scan hit its bound. */
int runnable_sample(Sampler *s, ThreadTable *t, uint64_t now_us, uint64_t dt_us, const double *util_raw,
                    double *run_raw, ProcSchedstat *ret_schedstat, RunnableSource *ret_source,
                    bool *ret_truncated);

/* sampler-cgroup.c */

/* Every cgroup into snap->cgroups; one that vanished or cannot be read is
 * left out. t->items[0..n_scanned) are sorted by tid. */
int cgroups_sample(Sampler *s, const SamplerCgroup *cgroups, size_t n_cgroups, ThreadTable *t,
                   size_t n_scanned, uint64_t now_us, hwloc_const_bitmap_t online, Snapshot *snap);
/* Frees what the sampler keeps of a cgroup (its threads' descriptors too). */
void cgroup_cache_done(Sampler *s, CgroupCache *cc);

/* sampler-usage.c */

/* The cgroup's CPU use since its last reading into cc->usage (smoothed);
 * cc->usage_primed says whether it holds a figure. A cgroup without its
 * own accounting is read through its processes (cc->procs): all of them,
 * or with sliced one slice (SAMPLER_USAGE_SLICE_MIN). */
int usage_sample(Sampler *s, CgroupCache *cc, uint64_t now_us, bool sliced);

/* Whether this tick reads a slice of the cgroup's processes rather than
 * following the quiet back-off. */
bool usage_sliced(const CgroupCache *cc);

/* sampler-members.c */

/* One line of a task list: a thread id and nothing else. */
int parse_tid(const char *p, const char *eol, pid_t *ret);
/* The task lists (tasks or cgroup.threads, and cgroup.procs) read again
 * when due: every sample without membership events, else every
 * SAMPLER_MEMBERS_EVERY samples. -ENOENT: the cgroup is gone. */
int members_refresh(Sampler *s, CgroupCache *cc);
/* Whether tgid is one of the cgroup's processes (cc->procs, sorted). */
bool cgroup_cache_has_proc(const CgroupCache *cc, pid_t tgid);
/* Insert into / remove from a sorted array; 1 if it changed. */
int pid_array_insert(pid_t **a, size_t *n, size_t *alloc, pid_t v);
bool pid_array_remove(pid_t *a, size_t *n, pid_t v);
bool pid_array_has(const pid_t *a, size_t n, pid_t v);

/* sampler-cpu.c */

int cpu_read_stat(Sampler *s, ProcStat *ret);
/* Raw util of each CPU since the previous tick (NAN where unknown), less
 * steerd's own CPU time; the CPUs in stat are set in online. */
void cpu_util_raw(Sampler *s, const ProcStat *stat, uint64_t dt_us, double *util_raw, CpuSet online);
/* The per-CPU figures into snap->cpus, smoothed over dt_us. */
int cpu_samples_build(Sampler *s, hwloc_const_bitmap_t online, const double *util_raw, const double *run_raw,
                      uint64_t dt_us, Snapshot *snap);
int cpu_read_psi(Sampler *s, Snapshot *snap);

/* sampler-llc.c */

int llc_samples_build(const Topology *topo, Snapshot *snap);

/* sampler-wake.c */

/* Drains or starts an observation of who wakes whom and puts each thread's
 * partners into snap. */
int sampler_wake_sample(Sampler *s, uint64_t now_us, Snapshot *snap);
void sampler_wake_done(Sampler *s);
