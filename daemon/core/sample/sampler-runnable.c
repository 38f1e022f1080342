/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>

#include "log.h"
#include "sampler-internal.h"
#include "sched-debug.h"

#define SCHED_DEBUG_PATH "/sys/kernel/debug/sched/debug"

RunnableSource runnable_probe_source(const RootDir *root) {
        if (rootdir_access(root, "/proc/schedstat", R_OK) >= 0)
                return RUNNABLE_SOURCE_SCHEDSTAT;
        if (rootdir_access(root, SCHED_DEBUG_PATH, R_OK) >= 0) {
                /* debugfs may be mounted but its files unreadable (lockdown):
                 * access() passes for root, so try a real read. */
                _cleanup_(closep) int fd = -EBADF;
                char c;
                if (rootdir_open_file(root, SCHED_DEBUG_PATH, O_RDONLY, &fd) >= 0 && read(fd, &c, 1) == 1)
                        return RUNNABLE_SOURCE_DEBUGFS;
        }
        return RUNNABLE_SOURCE_THREADS;
}

static bool is_pid_name(const char *s) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (!isdigit((unsigned char) *s))
                        return false;
        return true;
}

/* The threads of process pid into t; *scanned counts them against the
 * bound. 1 when the bound was hit, 0 otherwise, or -errno. */
static int scan_process(Sampler *s, ThreadTable *t, pid_t pid, uint64_t now_us, size_t *scanned) {
        _cleanup_(closedirp) DIR *task = NULL;
        struct dirent *te;
        char path[64];
        int r;

        snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
        if (rootdir_opendir(s->root, path, &task) < 0)
                return 0; /* exited */
        while ((te = readdir(task))) {
                if (!is_pid_name(te->d_name))
                        continue;
                if (*scanned >= s->settings.max_scan_threads)
                        return 1;
                ThreadPrev *n;
                /* Every tick: each thread's run delay is this tick's runnable. */
                r = thread_cache_sample(s, s->threads, s->n_threads, t, pid, (pid_t) atoi(te->d_name),
                                        now_us, /* turns= */ 1, &n);
                if (r < 0)
                        return r;
                if (n)
                        n->tgid = pid;
                (*scanned)++;
        }
        return 0;
}

/* The THREADS source: every thread on the host, up to max_scan_threads. */
static int scan_all_threads(Sampler *s, ThreadTable *t, uint64_t now_us, bool *ret_truncated) {
        _cleanup_(closedirp) DIR *proc = NULL;
        struct dirent *de;
        size_t scanned = 0;
        bool truncated = false;
        int r;

        r = rootdir_opendir(s->root, "/proc", &proc);
        if (r < 0)
                return log_error_errno(r, "Cannot list /proc");

        while (!truncated && (de = readdir(proc))) {
                if (!is_pid_name(de->d_name))
                        continue;
                r = scan_process(s, t, (pid_t) atoi(de->d_name), now_us, &scanned);
                if (r < 0)
                        return r;
                truncated = r > 0;
        }
        *ret_truncated = truncated;
        return 0;
}

static int runnable_from_schedstat(Sampler *s, uint64_t dt_us, const double *util_raw, double *raw,
                                   ProcSchedstat *ret_schedstat) {
        const Topology *topo = s->topo;
        _cleanup_(freep) char *text = NULL;
        int r;

        r = sampler_read_file(s, "/proc/schedstat", &text);
        if (r < 0)
                return log_error_errno(r, "Cannot read /proc/schedstat");
        r = proc_schedstat_parse(text, DISPLAY(s, "/proc/schedstat"), ret_schedstat, NULL);
        if (r < 0)
                return r;
        if (!s->have_prev || dt_us == 0)
                return 0;
        for (size_t i = 0; i < topo->n_cpus; i++) {
                const CpuSchedstat *c = proc_schedstat_find(ret_schedstat, topo->cpus[i].cpu),
                                   *p = proc_schedstat_find(&s->prev_schedstat, topo->cpus[i].cpu);
                if (!c || !p || c->wait_ns < p->wait_ns || isnan(util_raw[i]))
                        continue;
                raw[i] = util_raw[i] + (double) (c->wait_ns - p->wait_ns) * SCHED_CAPACITY_SCALE /
                                               ((double) dt_us * NSEC_PER_USEC);
        }
        return 0;
}

/* Util plus each CPU's contention as last read from sched/debug. */
static void debugfs_hold(const Sampler *s, const double *util_raw, double *raw) {
        for (size_t i = 0; i < s->topo->n_cpus; i++)
                if (!isnan(util_raw[i]))
                        raw[i] = util_raw[i] + s->cpus[i].contention;
}

/* PELT's averages decay on their own 32 ms clock while util comes from
 * /proc/stat deltas: mixing the two raw would let runnable drop below util.
 * What PELT adds is the contention, the part of runnable_avg above
 * util_avg: add that to our util. */
static void debugfs_take(Sampler *s, const SchedDebug *sd, const double *util_raw, double *raw) {
        const Topology *topo = s->topo;

        for (size_t i = 0; i < topo->n_cpus; i++) {
                const SchedDebugCpu *c = sched_debug_find(sd, topo->cpus[i].cpu);
                s->cpus[i].contention =
                        c && c->runnable_avg > c->util_avg ? (double) (c->runnable_avg - c->util_avg) : 0.0;
                if (c && !isnan(util_raw[i]))
                        raw[i] = util_raw[i] + s->cpus[i].contention;
        }
}

static int runnable_from_debugfs(Sampler *s, uint64_t now_us, const double *util_raw, double *raw) {
        _cleanup_(freep) char *text = NULL;
        SchedDebug sd = {};
        int r;

        /* sched/debug lists every task of the host (236 KB, ~3 ms a read on
         * a 2-CPU VM): read it every RunnableIntervalMs and hold each CPU's
         * contention in between. */
        if (s->have_prev && now_us - s->debugfs_read_us < s->settings.runnable_interval_ms * USEC_PER_MSEC) {
                debugfs_hold(s, util_raw, raw);
                return 0;
        }
        r = sampler_read_file(s, SCHED_DEBUG_PATH, &text);
        if (r < 0)
                return log_error_errno(r, "Cannot read %s", SCHED_DEBUG_PATH);
        r = sched_debug_parse(text, DISPLAY(s, SCHED_DEBUG_PATH), &sd, NULL);
        if (r < 0) {
                /* The file is printed while the scheduler runs: one odd read
                 * is no reason to scan every thread of the host from now on.
                 * Hold the last figures; give up on it only when it keeps
                 * failing. */
                if (++s->debugfs_failures >= SAMPLER_DEBUGFS_MAX_FAILURES)
                        return r;
                s->debugfs_read_us = now_us;
                debugfs_hold(s, util_raw, raw);
                return 0;
        }
        s->debugfs_failures = 0;
        debugfs_take(s, &sd, util_raw, raw);
        s->debugfs_read_us = now_us;
        sched_debug_done(&sd);
        return 0;
}

/* Every thread's run delay of this tick charged to its last CPU. */
static void runnable_from_threads(const Sampler *s, const ThreadTable *t, uint64_t dt_us,
                                  const double *util_raw, double *raw) {
        const Topology *topo = s->topo;

        if (dt_us == 0)
                return;
        for (size_t i = 0; i < topo->n_cpus; i++)
                if (!isnan(util_raw[i]))
                        raw[i] = util_raw[i];
        for (size_t j = 0; j < t->n; j++) {
                const TopoCpu *tc = t->items[j].processor >= 0
                                            ? topology_cpu(topo, (unsigned) t->items[j].processor)
                                            : NULL;
                if (!tc)
                        continue;
                size_t i = (size_t) (tc - topo->cpus);
                if (!isnan(raw[i]))
                        raw[i] += (double) t->items[j].delta_run_delay_ns * SCHED_CAPACITY_SCALE /
                                  ((double) dt_us * NSEC_PER_USEC);
        }
}

/* Raw (unsmoothed) runnable of each CPU for this tick from s->source, or NAN
 * where unknown. */
static int runnable_raw(Sampler *s, ProcSchedstat *ret_schedstat, const ThreadTable *t, uint64_t now_us,
                        uint64_t dt_us, const double *util_raw, double *raw) {
        for (size_t i = 0; i < s->topo->n_cpus; i++)
                raw[i] = NAN;

        switch (s->source) {
        case RUNNABLE_SOURCE_SCHEDSTAT:
                return runnable_from_schedstat(s, dt_us, util_raw, raw, ret_schedstat);
        case RUNNABLE_SOURCE_DEBUGFS:
                return runnable_from_debugfs(s, now_us, util_raw, raw);
        case RUNNABLE_SOURCE_THREADS:
                runnable_from_threads(s, t, dt_us, util_raw, raw);
                return 0;
        default:
                return -EINVAL;
        }
}

int runnable_sample(Sampler *s, ThreadTable *t, uint64_t now_us, uint64_t dt_us, const double *util_raw,
                    double *run_raw, ProcSchedstat *ret_schedstat, RunnableSource *ret_source,
                    bool *ret_truncated) {
        _cleanup_(proc_schedstat_done) ProcSchedstat schedstat = {};
        bool truncated = false;
        int r = 0;

        /* /proc/schedstat is one small file; sched/debug (every task of
         * the host) and the threads scan are read only for a policy that
         * uses runnable. */
        if (!s->runnable_needed && s->source != RUNNABLE_SOURCE_SCHEDSTAT) {
                for (size_t i = 0; i < s->topo->n_cpus; i++)
                        run_raw[i] = NAN;
                *ret_schedstat = (ProcSchedstat){};
                *ret_source = RUNNABLE_SOURCE_NONE;
                *ret_truncated = false;
                return 0;
        }

        if (s->source == RUNNABLE_SOURCE_THREADS) {
                r = scan_all_threads(s, t, now_us, &truncated);
                if (r < 0)
                        return r;
        }
        thread_table_sort(t);

        r = runnable_raw(s, &schedstat, t, now_us, dt_us, util_raw, run_raw);
        if (r < 0 && s->source == RUNNABLE_SOURCE_DEBUGFS) {
                /* debugfs can be unmounted under us: fall back for good. */
                log_warning("The debugfs runnable source failed; using per-thread run delay from now on.");
                s->source = RUNNABLE_SOURCE_THREADS;
                r = 0;
        }
        if (r < 0)
                return r;

        *ret_schedstat = schedstat;
        schedstat = (ProcSchedstat){};
        *ret_source = s->source;
        *ret_truncated = truncated;
        return 0;
}
