/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <time.h>
#include <sys/resource.h>

#include "ewma.h"
#include "affinity.h"
#include "log.h"
#include "proc-pressure.h"
#include "proc-schedstat.h"
#include "proc-stat.h"
#include "proc-thread.h"
#include "sampler.h"
#include "sched-debug.h"

#define SCHED_DEBUG_PATH "/sys/kernel/debug/sched/debug"

/* What we remember of a thread between two ticks, keyed by tid and checked
 * against starttime so that a reused tid starts afresh. */
typedef struct ThreadPrev {
        pid_t tid;
        uint64_t starttime;
        uint64_t exec_ns, run_delay_ns;
        double util, wait; /* smoothed */
        int processor;
        uint64_t delta_run_delay_ns; /* this tick's, for the THREADS source */
        uint64_t nr_migrations;      /* last read of /proc/<tid>/sched */
        bool have_migrations;        /* it was read for this thread */
        /* Live root only: stat and schedstat kept open and re-read with
         * pread(). The descriptors pin the task: once it exits they give
         * ESRCH, never a reused tid's figures. -1 when not kept. */
        int stat_fd, schedstat_fd;
        CpuSet allowed;          /* live: the mask at its last read, NULL */
        uint64_t read_us;        /* when its files were last read */
        unsigned interval, skip; /* idle back-off, in ticks */
        bool fresh;              /* its files were read this tick */
} ThreadPrev;

typedef struct CpuState {
        double util, runnable; /* smoothed */
        double contention;     /* debugfs: runnable_avg - util_avg at its last read */
        bool primed;           /* smoothed values hold data */
} CpuState;

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

        ThreadPrev *threads; /* sorted by tid */
        size_t n_threads;
        size_t n_kept_fds, max_kept_fds; /* the descriptors of ThreadPrev */

        bool live;                 /* the root is "/": the threads are this host's */
        bool runnable_needed;      /* false: skip the dear runnable sources */
        uint64_t n_samples;        /* for the files read only every few ticks */
        uint64_t debugfs_read_us;  /* when sched/debug was last read */
        unsigned debugfs_failures; /* malformed reads in a row */
        uint64_t self_ns;          /* steerd's CPU time at the last sample */
};

static void thread_prev_close(Sampler *s, ThreadPrev *p) {
        if (p->stat_fd >= 0 || p->schedstat_fd >= 0)
                s->n_kept_fds -= 2;
        if (p->stat_fd >= 0)
                close(p->stat_fd);
        if (p->schedstat_fd >= 0)
                close(p->schedstat_fd);
        p->stat_fd = p->schedstat_fd = -EBADF;
}

static void thread_prevs_free(Sampler *s, ThreadPrev *items, size_t n) {
        for (size_t i = 0; i < n; i++) {
                thread_prev_close(s, &items[i]);
                hwloc_bitmap_free(items[i].allowed);
        }
        free(items);
}

static int probe_source(const RootDir *root) {
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

int sampler_new(const RootDir *root, const Topology *topo, const Settings *settings, Sampler **ret) {
        _cleanup_(sampler_freep) Sampler *s = NULL;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->root = root;
        s->topo = topo;
        s->settings = *settings;
        s->cpus = calloc(MAX(topo->n_cpus, (size_t) 1), sizeof(CpuState));
        if (!s->cpus)
                return -ENOMEM;
        s->source = probe_source(root);
        s->live = streq(root->path, "/");
        s->runnable_needed = true;
        /* Keep two descriptors per thread while a quarter of the soft
         * limit allows (the daemon raises it to the hard limit at start). */
        struct rlimit rl;
        if (s->live && getrlimit(RLIMIT_NOFILE, &rl) >= 0)
                s->max_kept_fds = rl.rlim_cur == RLIM_INFINITY
                                          ? SAMPLER_MAX_KEPT_FDS
                                          : MIN((size_t) rl.rlim_cur / 4, SAMPLER_MAX_KEPT_FDS);
        log_debug("Runnable source: %s", runnable_source_to_string(s->source));

        *ret = TAKE_PTR(s);
        return 0;
}

Sampler *sampler_free(Sampler *s) {
        if (!s)
                return NULL;
        proc_stat_done(&s->prev_stat);
        proc_schedstat_done(&s->prev_schedstat);
        free(s->cpus);
        thread_prevs_free(s, s->threads, s->n_threads);
        free(s);
        return NULL;
}

void sampler_set_settings(Sampler *s, const Settings *settings) {
        s->settings = *settings;
}

void sampler_reread_threads(Sampler *s) {
        for (size_t i = 0; i < s->n_threads; i++)
                s->threads[i].skip = 0;
}

void sampler_set_runnable_needed(Sampler *s, bool needed) {
        s->runnable_needed = needed;
}

RunnableSource sampler_source(const Sampler *s) {
        return s->source;
}

static int read_file(const Sampler *s, const char *path, char **ret) {
        return rootdir_read_file(s->root, path, ret, NULL);
}

/* The name of a file in messages: with a root other than /, say which tree. */
static const char *display(const Sampler *s, const char *path, char *buf, size_t size) {
        if (streq(s->root->path, "/"))
                return path;
        snprintf(buf, size, "%s%s", s->root->path, path);
        return buf;
}
#define DISPLAY(s, path) display((s), (path), (char[PATH_MAX]){}, PATH_MAX)

/* ---- threads ---- */

typedef struct ThreadTable {
        ThreadPrev *items;
        size_t n, alloc;
        size_t n_sorted; /* items[0..n_sorted) are sorted by tid */
} ThreadTable;

static int cmp_thread_prev(const void *a, const void *b) {
        const ThreadPrev *x = a, *y = b;
        return (x->tid > y->tid) - (x->tid < y->tid);
}

static ThreadPrev *thread_find(ThreadPrev *items, size_t n, pid_t tid) {
        ThreadPrev key = {.tid = tid};
        if (n == 0)
                return NULL; /* bsearch() wants a non-NULL base even then */
        return bsearch(&key, items, n, sizeof(ThreadPrev), cmp_thread_prev);
}

static ThreadPrev *thread_table_push(ThreadTable *t) {
        if (t->n == t->alloc) {
                size_t n = t->alloc ? t->alloc * 2 : 256;
                ThreadPrev *p = realloc(t->items, n * sizeof(ThreadPrev));
                if (!p)
                        return NULL;
                t->items = p;
                t->alloc = n;
        }
        t->items[t->n] = (ThreadPrev){};
        return &t->items[t->n++];
}

static bool vanished(int r) {
        /* A thread that exits between readdir and open, or while we read. */
        return r == -ENOENT || r == -ESRCH || r == -ENOTDIR;
}

/* "/proc/PID/task/TID/NAME" into buf (THREAD_PATH_MAX): formatted for every
 * sampled thread every tick, where snprintf() was a third of the sampler's
 * instructions. */
#define THREAD_PATH_MAX 96
static char *append_uint(char *p, unsigned v) {
        char tmp[12];
        size_t n = 0;

        do
                tmp[n++] = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        while (n > 0)
                *p++ = tmp[--n];
        return p;
}

static void thread_path(char buf[static THREAD_PATH_MAX], pid_t pid, pid_t tid, const char *name) {
        char *p = stpcpy(buf, "/proc/");
        p = append_uint(p, (unsigned) pid);
        p = stpcpy(p, "/task/");
        p = append_uint(p, (unsigned) tid);
        *p++ = '/';
        assert(strlen(name) < 16);
        strcpy(p, name);
}

/* Re-read a /proc file through a descriptor kept open: seq_file
 * regenerates it at offset 0. */
static int pread_text(int fd, char *buf, size_t size) {
        ssize_t n = pread(fd, buf, size - 1, 0);
        if (n < 0)
                return negative_errno();
        if ((size_t) n >= size - 1)
                return -EFBIG; /* cut short: the caller opens it afresh */
        buf[n] = '\0';
        return 0;
}

/* Open one of the thread's files, read it into buf; *ret_fd keeps it open
 * (or -1 when fds is false). */
static int open_thread_file(Sampler *s, const char *path, bool keep, char *buf, size_t size, int *ret_fd) {
        _cleanup_(closep) int fd = -EBADF;
        int r;

        r = rootdir_open_file(s->root, path, O_RDONLY | O_CLOEXEC, &fd);
        if (r < 0)
                return r;
        r = pread_text(fd, buf, size);
        if (r < 0)
                return r;
        *ret_fd = keep ? TAKE_FD(fd) : -EBADF;
        return 0;
}

/* Move what p owns (descriptors, mask) into n. */
static void thread_prev_move(ThreadPrev *n, ThreadPrev *p) {
        n->stat_fd = p->stat_fd;
        n->schedstat_fd = p->schedstat_fd;
        n->allowed = p->allowed;
        p->stat_fd = p->schedstat_fd = -EBADF;
        p->allowed = NULL;
}

/* Read a thread's stat and schedstat and fold them into the table. Returns
 * 0 and sets *ret (NULL if the thread vanished or its files are malformed:
 * both are logged by the callee/parser and skipped, never fatal).
 *
 * What it costs decides what steerd costs (one /proc open is ~5 us, most of
 * it path lookup), hence: on the live root both files stay open and are
 * re-read with pread(); stat (the thread's CPU, its identity) is read again
 * only when schedstat moved, since a thread that neither ran nor waited is
 * where it was; and a thread that used under SAMPLER_IDLE_PERCENT of a CPU
 * (run and wait) since its last read is read every 2, 4, ... up to
 * SAMPLER_IDLE_MAX_TICKS ticks, its figures held in between. */
static int sample_thread(Sampler *s, ThreadTable *t, pid_t pid, pid_t tid, uint64_t now_us,
                         ThreadPrev **ret) {
        char path[THREAD_PATH_MAX], stat_text[1024], ss_text[128];
        _cleanup_(closep) int stat_fd = -EBADF, ss_fd = -EBADF;
        ThreadStat st = {.processor = -1};
        ThreadSchedstat ss;
        ThreadPrev *p, *n;
        bool kept;
        int r;

        *ret = NULL;
        p = thread_find(s->threads, s->n_threads, tid);

        if (p && p->skip > 0) {
                n = thread_table_push(t);
                if (!n)
                        return -ENOMEM;
                *n = *p;
                thread_prev_move(n, p);
                n->skip--;
                n->fresh = false;
                n->delta_run_delay_ns = 0;
                *ret = n;
                return 0;
        }

        kept = p && p->schedstat_fd >= 0;
        if (kept) {
                r = pread_text(p->schedstat_fd, ss_text, sizeof(ss_text));
                if (r < 0) {
                        /* Exited (ESRCH): a thread with this tid now is another. */
                        thread_prev_close(s, p);
                        p = NULL;
                        kept = false;
                }
        }
        if (kept) {
                thread_path(path, pid, tid, "schedstat");
                if (thread_schedstat_parse(ss_text, DISPLAY(s, path), &ss, NULL) < 0)
                        return 0;
                if (ss.sum_exec_runtime_ns == p->exec_ns && ss.run_delay_ns == p->run_delay_ns &&
                    p->processor >= 0) {
                        st.starttime = p->starttime;
                        st.processor = p->processor;
                } else {
                        thread_path(path, pid, tid, "stat");
                        r = pread_text(p->stat_fd, stat_text, sizeof(stat_text));
                        if (r < 0)
                                return vanished(r) ? 0 : r;
                        if (thread_stat_parse(stat_text, DISPLAY(s, path), &st, NULL) < 0)
                                return 0;
                }
        } else {
                bool keep = s->live && s->n_kept_fds + 2 <= s->max_kept_fds;
                thread_path(path, pid, tid, "stat");
                r = open_thread_file(s, path, keep, stat_text, sizeof(stat_text), &stat_fd);
                if (r < 0)
                        return vanished(r) ? 0 : r;
                if (thread_stat_parse(stat_text, DISPLAY(s, path), &st, NULL) < 0)
                        return 0;
                thread_path(path, pid, tid, "schedstat");
                r = open_thread_file(s, path, keep, ss_text, sizeof(ss_text), &ss_fd);
                if (r < 0)
                        return vanished(r) ? 0 : r;
                if (thread_schedstat_parse(ss_text, DISPLAY(s, path), &ss, NULL) < 0)
                        return 0;
        }

        n = thread_table_push(t);
        if (!n)
                return -ENOMEM;
        *n = (ThreadPrev){
                .tid = tid,
                .starttime = st.starttime,
                .exec_ns = ss.sum_exec_runtime_ns,
                .run_delay_ns = ss.run_delay_ns,
                .processor = st.processor,
                .stat_fd = TAKE_FD(stat_fd),
                .schedstat_fd = TAKE_FD(ss_fd),
                .read_us = now_us,
                .interval = 1,
                .fresh = true,
        };
        if (n->stat_fd >= 0)
                s->n_kept_fds += 2;
        if (p && p->starttime == st.starttime) {
                if (kept)
                        thread_prev_move(n, p);
                n->nr_migrations = p->nr_migrations;
                n->have_migrations = p->have_migrations;
        }
        uint64_t dt_us = p && now_us > p->read_us ? now_us - p->read_us : 0;
        if (p && p->starttime == st.starttime && dt_us > 0 && ss.sum_exec_runtime_ns >= p->exec_ns &&
            ss.run_delay_ns >= p->run_delay_ns) {
                double scale = (double) SCHED_CAPACITY_SCALE / ((double) dt_us * NSEC_PER_USEC);
                double util = MIN((double) (ss.sum_exec_runtime_ns - p->exec_ns) * scale,
                                  (double) SCHED_CAPACITY_SCALE);
                double wait = (double) (ss.run_delay_ns - p->run_delay_ns) * scale;
                double alpha = ewma_alpha(dt_us, s->settings.smoothing_half_life_ms * USEC_PER_MSEC);
                double idle = SAMPLER_IDLE_PERCENT * SCHED_CAPACITY_SCALE / 100.0;

                n->delta_run_delay_ns = ss.run_delay_ns - p->run_delay_ns;
                n->util = ewma_update(p->util, util, alpha);
                n->wait = ewma_update(p->wait, wait, alpha);
                if (util < idle && wait < idle && n->util < idle && n->wait < idle)
                        n->interval = MIN(MAX(p->interval, 1u) * 2, SAMPLER_IDLE_MAX_TICKS);
                n->skip = n->interval - 1;
        }
        /* A new thread (or a reused tid) has no history: it starts at 0 and
         * gets real figures from its second sample on. */
        *ret = n;
        return 0;
}

static bool is_pid_name(const char *s) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (!isdigit((unsigned char) *s))
                        return false;
        return true;
}

/* The THREADS source: every thread on the host, up to max_scan_threads. */
static int scan_all_threads(Sampler *s, ThreadTable *t, uint64_t now_us, bool *ret_truncated) {
        _cleanup_(closedirp) DIR *proc = NULL;
        struct dirent *de;
        size_t scanned = 0;
        int r;

        *ret_truncated = false;
        r = rootdir_opendir(s->root, "/proc", &proc);
        if (r < 0)
                return log_error_errno(r, "Cannot list /proc");

        while ((de = readdir(proc))) {
                if (!is_pid_name(de->d_name))
                        continue;
                char path[64];
                _cleanup_(closedirp) DIR *task = NULL;
                pid_t pid = (pid_t) atoi(de->d_name);

                snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
                if (rootdir_opendir(s->root, path, &task) < 0)
                        continue; /* exited */
                struct dirent *te;
                while ((te = readdir(task))) {
                        if (!is_pid_name(te->d_name))
                                continue;
                        if (scanned >= s->settings.max_scan_threads) {
                                *ret_truncated = true;
                                return 0;
                        }
                        ThreadPrev *n;
                        r = sample_thread(s, t, pid, (pid_t) atoi(te->d_name), now_us, &n);
                        if (r < 0)
                                return r;
                        scanned++;
                }
        }
        return 0;
}

/* ---- cgroups ---- */

/* The cgroup's effective CPUs (cgroup_effective_cpus()); a v2 hierarchy
 * without the cpuset controller anywhere: all online. */
static int sampler_cgroup_cpus(Sampler *s, const char *dir, bool v2, hwloc_const_bitmap_t online,
                               CpuSet *ret) {
        int r = cgroup_effective_cpus(s->root, dir, v2, ret);
        if (r != -ENOENT || !v2)
                return r;
        *ret = hwloc_bitmap_dup(online);
        return *ret ? 0 : -ENOMEM;
}

static int sample_cgroup(Sampler *s, const SamplerCgroup *sc, ThreadTable *t, size_t n_scanned,
                         uint64_t now_us, hwloc_const_bitmap_t online, CgroupSample *c) {
        _cleanup_(freep) char *path = NULL, *list = NULL, *parent = NULL;
        _cleanup_cpuset_ CpuSet parent_cpus = NULL;
        const char *dir = sc->loc->dir;
        int r;

        c->path = strdup(sc->name);
        if (!c->path)
                return -ENOMEM;
        c->policy = sc->policy;

        if (asprintf(&path, "%s/%s", dir, sc->loc->v2 ? "cgroup.threads" : "tasks") < 0)
                return -ENOMEM;
        r = read_file(s, path, &list);
        if (r < 0)
                return r; /* -ENOENT: the cgroup is gone */

        r = sampler_cgroup_cpus(s, dir, sc->loc->v2, online, &c->cpus);
        if (r < 0)
                return r;
        hwloc_bitmap_and(c->cpus, c->cpus, online);

        /* What the cgroup may use: what it had before steerd changed it (or
         * what it has now), within its parent's effective CPUs. */
        parent = strdup(dir);
        if (!parent)
                return -ENOMEM;
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent)
                *slash = '\0';
        if (sampler_cgroup_cpus(s, parent, sc->loc->v2, online, &parent_cpus) < 0) {
                parent_cpus = hwloc_bitmap_dup(online);
                if (!parent_cpus)
                        return -ENOMEM;
        }
        c->allowed = hwloc_bitmap_dup(sc->original_cpus ?: c->cpus);
        if (!c->allowed)
                return -ENOMEM;
        hwloc_bitmap_and(c->allowed, c->allowed, parent_cpus);
        hwloc_bitmap_and(c->allowed, c->allowed, online);

        if (sc->loc->v2) {
                _cleanup_(freep) char *pp = NULL, *ptext = NULL;
                Psi psi;
                if (asprintf(&pp, "%s/cpu.pressure", dir) < 0)
                        return -ENOMEM;
                if (read_file(s, pp, &ptext) >= 0 && psi_parse(ptext, DISPLAY(s, pp), &psi, NULL) >= 0)
                        c->pressure_some_avg10 = psi.some_avg10;
        }

        /* Count the lines for one allocation. */
        size_t n_lines = 0;
        for (const char *p = list; *p; p++)
                n_lines += *p == '\n';
        c->threads = calloc(n_lines + 1, sizeof(ThreadSample));
        if (!c->threads)
                return -ENOMEM;

        unsigned lineno = 0;
        char *save = NULL;
        for (char *line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                lineno++;
                char *end;
                errno = 0;
                long tid = strtol(line, &end, 10);
                if (errno || end == line || *end || tid <= 0 || tid > INT32_MAX) {
                        log_parse_error(DISPLAY(s, path), lineno, "'%s' is not a thread id", line);
                        continue;
                }

                ThreadPrev *tp = thread_find(t->items, n_scanned, (pid_t) tid);
                if (!tp) {
                        r = sample_thread(s, t, (pid_t) tid, (pid_t) tid, now_us, &tp);
                        if (r < 0)
                                return r;
                        if (!tp)
                                continue;
                }

                char tpath[96];
                _cleanup_(freep) char *status = NULL, *sched = NULL;
                ThreadSample *ts = &c->threads[c->n_threads];
                *ts = (ThreadSample){
                        .tid = tp->tid,
                        .starttime = tp->starttime,
                        .cpu = tp->processor,
                        .util = tp->util,
                        .wait = tp->wait,
                        .run_delay_ns = tp->run_delay_ns,
                };
                if (!tp->fresh && tp->allowed) {
                        /* Held with the rest of an idle thread's figures. */
                        ts->allowed = hwloc_bitmap_dup(tp->allowed);
                        if (!ts->allowed)
                                return -ENOMEM;
                } else if (s->live) {
                        /* One syscall instead of formatting and parsing status. */
                        r = thread_get_affinity((pid_t) tid, &ts->allowed);
                        if (r < 0) {
                                if (r == -ESRCH)
                                        continue;
                                return r;
                        }
                } else {
                        snprintf(tpath, sizeof(tpath), "/proc/%ld/task/%ld/status", tid, tid);
                        r = read_file(s, tpath, &status);
                        if (r < 0) {
                                if (vanished(r))
                                        continue;
                                return r;
                        }
                        if (thread_status_parse_cpus_allowed(status, DISPLAY(s, tpath), &ts->allowed, NULL) <
                            0)
                                continue;
                }
                if (!tp->allowed || !hwloc_bitmap_isequal(tp->allowed, ts->allowed)) {
                        hwloc_bitmap_free(tp->allowed);
                        tp->allowed = hwloc_bitmap_dup(ts->allowed);
                        if (!tp->allowed)
                                return -ENOMEM;
                }
                if (tp->fresh && (s->n_samples % SAMPLER_SCHED_FILE_EVERY == 0 || !tp->have_migrations)) {
                        snprintf(tpath, sizeof(tpath), "/proc/%ld/task/%ld/sched", tid, tid);
                        if (read_file(s, tpath, &sched) >= 0) {
                                ThreadSched sch;
                                if (thread_sched_parse(sched, DISPLAY(s, tpath), &sch, NULL) >= 0) {
                                        tp->nr_migrations = sch.nr_migrations;
                                        tp->have_migrations = true;
                                }
                        }
                }
                ts->nr_migrations = tp->nr_migrations;
                c->n_threads++;
        }
        return 0;
}

/* ---- CPUs ---- */

static int read_psi(Sampler *s, Snapshot *snap) {
        _cleanup_(freep) char *text = NULL;
        Psi psi;
        int r;

        r = read_file(s, "/proc/pressure/cpu", &text);
        if (r == -ENOENT || r == -EOPNOTSUPP)
                return 0; /* CONFIG_PSI=n or psi=0: no pressure, not an error */
        if (r < 0)
                return log_error_errno(r, "Cannot read /proc/pressure/cpu");
        r = psi_parse(text, DISPLAY(s, "/proc/pressure/cpu"), &psi, NULL);
        if (r < 0)
                return r;
        snap->psi_some_avg10 = psi.some_avg10;
        snap->psi_full_avg10 = psi.full_avg10;
        return 0;
}

/* Raw (unsmoothed) runnable of each CPU for this tick, or NAN where unknown. */
static int runnable_raw(Sampler *s, const ProcStat *stat, ProcSchedstat *ret_schedstat, const ThreadTable *t,
                        uint64_t now_us, uint64_t dt_us, const double *util_raw, double *raw) {
        const Topology *topo = s->topo;
        int r;

        for (size_t i = 0; i < topo->n_cpus; i++)
                raw[i] = NAN;

        switch (s->source) {
        case RUNNABLE_SOURCE_SCHEDSTAT: {
                _cleanup_(freep) char *text = NULL;
                r = read_file(s, "/proc/schedstat", &text);
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
        case RUNNABLE_SOURCE_DEBUGFS: {
                _cleanup_(freep) char *text = NULL;
                SchedDebug sd = {};
                /* sched/debug lists every task of the host (236 KB, ~3 ms a read
                 * on a 2-CPU VM): read it every RunnableIntervalMs and hold each
                 * CPU's contention in between. */
                if (s->have_prev &&
                    now_us - s->debugfs_read_us < s->settings.runnable_interval_ms * USEC_PER_MSEC) {
                        for (size_t i = 0; i < topo->n_cpus; i++)
                                if (!isnan(util_raw[i]))
                                        raw[i] = util_raw[i] + s->cpus[i].contention;
                        return 0;
                }
                r = read_file(s, SCHED_DEBUG_PATH, &text);
                if (r < 0)
                        return log_error_errno(r, "Cannot read %s", SCHED_DEBUG_PATH);
                r = sched_debug_parse(text, DISPLAY(s, SCHED_DEBUG_PATH), &sd, NULL);
                if (r < 0) {
                        /* The file is printed while the scheduler runs: one odd
                         * read is no reason to scan every thread of the host
                         * from now on. Hold the last figures; give up on it
                         * only when it keeps failing. */
                        if (++s->debugfs_failures >= SAMPLER_DEBUGFS_MAX_FAILURES)
                                return r;
                        s->debugfs_read_us = now_us;
                        for (size_t i = 0; i < topo->n_cpus; i++)
                                if (!isnan(util_raw[i]))
                                        raw[i] = util_raw[i] + s->cpus[i].contention;
                        return 0;
                }
                s->debugfs_failures = 0;
                /* PELT's averages decay on their own 32 ms clock while util comes
                 * from /proc/stat deltas: mixing the two raw would let runnable
                 * drop below util. What PELT adds is the contention, the part of
                 * runnable_avg above util_avg: add that to our util. */
                for (size_t i = 0; i < topo->n_cpus; i++) {
                        const SchedDebugCpu *c = sched_debug_find(&sd, topo->cpus[i].cpu);
                        s->cpus[i].contention = c && c->runnable_avg > c->util_avg
                                                        ? (double) (c->runnable_avg - c->util_avg)
                                                        : 0.0;
                        if (c && !isnan(util_raw[i]))
                                raw[i] = util_raw[i] + s->cpus[i].contention;
                }
                s->debugfs_read_us = now_us;
                sched_debug_done(&sd);
                return 0;
        }
        case RUNNABLE_SOURCE_THREADS:
                if (dt_us == 0)
                        return 0;
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
                (void) stat;
                return 0;
        default:
                return -EINVAL;
        }
}

static int build_llcs(const Topology *topo, Snapshot *snap) {
        snap->llcs = calloc(MAX(topo->n_llcs, (size_t) 1), sizeof(LlcSample));
        if (!snap->llcs)
                return -ENOMEM;
        snap->n_llcs = topo->n_llcs;
        for (size_t l = 0; l < topo->n_llcs; l++) {
                LlcSample *ls = &snap->llcs[l];
                ls->id = (unsigned) l;
                ls->cpus = hwloc_bitmap_alloc();
                if (!ls->cpus)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < snap->n_cpus; i++) {
                const CpuSample *c = &snap->cpus[i];
                if (c->llc < 0)
                        continue;
                LlcSample *ls = &snap->llcs[c->llc];
                hwloc_bitmap_set(ls->cpus, c->cpu);
                if (!c->online)
                        continue;
                ls->weight++;
                ls->util += c->util;
                ls->boosted += c->boosted;
        }
        for (size_t l = 0; l < snap->n_llcs; l++) {
                LlcSample *ls = &snap->llcs[l];
                if (ls->weight == 0)
                        continue;
                ls->util /= ls->weight;
                ls->boosted /= ls->weight;
                /* Whether that makes the LLC overloaded is the policy's rule
                 * (policy_llc_overloaded()), not the sampler's. */
                ls->nr_idle_scan = sis_nr_idle_scan(ls->util, ls->weight, SIS_IMBALANCE_PCT);
        }
        return 0;
}

/* steerd's own CPU time is no load to steer by: a tick that pins thousands
 * of threads made their CPU look busy, which released every pin, which the
 * next ticks pinned again (seen with 10,000 sleeping threads). On the live
 * root, what steerd used since the last sample comes off the CPU it runs
 * on now (one thread: close enough). */
static void discount_self(Sampler *s, double *util_raw, uint64_t dt_us) {
        struct timespec ts;
        int cpu;

        if (!s->live || clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) < 0)
                return;
        uint64_t self_ns = (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
        uint64_t used_ns = self_ns - MIN(s->self_ns, self_ns);
        s->self_ns = self_ns;
        cpu = sched_getcpu();
        if (dt_us == 0 || cpu < 0)
                return;
        const TopoCpu *tc = topology_cpu(s->topo, (unsigned) cpu);
        if (!tc)
                return;
        size_t i = (size_t) (tc - s->topo->cpus);
        if (!isnan(util_raw[i]))
                util_raw[i] = MAX(util_raw[i] - (double) used_ns * SCHED_CAPACITY_SCALE /
                                                        ((double) dt_us * NSEC_PER_USEC),
                                  0.0);
}

int sampler_sample(Sampler *s, uint64_t now_us, const SamplerCgroup *cgroups, size_t n_cgroups,
                   Snapshot **ret) {
        const Topology *topo = s->topo;
        _cleanup_(snapshot_freep) Snapshot *snap = NULL;
        _cleanup_(freep) char *text = NULL;
        _cleanup_(freep) double *util_raw = NULL, *run_raw = NULL;
        _cleanup_cpuset_ CpuSet online = NULL;
        ProcStat stat = {};
        ProcSchedstat schedstat = {};
        ThreadTable t = {};
        bool truncated = false;
        int r;

        uint64_t dt_us = s->have_prev && now_us > s->prev_time_us ? now_us - s->prev_time_us : 0;
        double alpha = ewma_alpha(dt_us, s->settings.smoothing_half_life_ms * USEC_PER_MSEC);

        r = read_file(s, "/proc/stat", &text);
        if (r < 0)
                return log_error_errno(r, "Cannot read /proc/stat");
        r = proc_stat_parse(text, DISPLAY(s, "/proc/stat"), &stat, NULL);
        if (r < 0)
                return r;

        snap = calloc(1, sizeof(Snapshot));
        util_raw = calloc(MAX(topo->n_cpus, (size_t) 1), sizeof(double));
        run_raw = calloc(MAX(topo->n_cpus, (size_t) 1), sizeof(double));
        online = hwloc_bitmap_alloc();
        if (!snap || !util_raw || !run_raw || !online) {
                r = -ENOMEM;
                goto fail;
        }
        snap->time_us = now_us;
        snap->period_us = dt_us;
        snap->source = s->source;

        /* A CPU the topology has and /proc/stat has not is offline. */
        for (size_t i = 0; i < topo->n_cpus; i++) {
                const CpuTimes *cur = proc_stat_find(&stat, topo->cpus[i].cpu),
                               *prev = s->have_prev ? proc_stat_find(&s->prev_stat, topo->cpus[i].cpu)
                                                    : NULL;
                util_raw[i] = NAN;
                if (!cur)
                        continue;
                hwloc_bitmap_set(online, topo->cpus[i].cpu);
                double u;
                if (prev && cpu_times_delta_util(prev, cur, s->settings.count_steal, &u) >= 0)
                        util_raw[i] = u;
        }
        discount_self(s, util_raw, dt_us);

        /* /proc/schedstat is one small file; sched/debug (every task of
         * the host) and the threads scan are read only for a policy that
         * uses runnable. */
        bool skip_runnable = !s->runnable_needed && s->source != RUNNABLE_SOURCE_SCHEDSTAT;
        if (skip_runnable)
                snap->source = RUNNABLE_SOURCE_NONE;

        if (s->source == RUNNABLE_SOURCE_THREADS && !skip_runnable) {
                r = scan_all_threads(s, &t, now_us, &truncated);
                if (r < 0)
                        goto fail;
        }
        if (t.n > 1)
                qsort(t.items, t.n, sizeof(ThreadPrev), cmp_thread_prev);
        size_t n_scanned = t.n;

        if (skip_runnable) {
                for (size_t i = 0; i < topo->n_cpus; i++)
                        run_raw[i] = NAN;
                r = 0;
        } else
                r = runnable_raw(s, &stat, &schedstat, &t, now_us, dt_us, util_raw, run_raw);
        if (r < 0 && s->source == RUNNABLE_SOURCE_DEBUGFS) {
                /* debugfs can be unmounted under us: fall back for good. */
                log_warning("The debugfs runnable source failed; using per-thread run delay from now on.");
                s->source = RUNNABLE_SOURCE_THREADS;
                snap->source = s->source;
                r = 0;
        }
        if (r < 0)
                goto fail;
        snap->threads_truncated = truncated;

        snap->cpus = calloc(MAX(topo->n_cpus, (size_t) 1), sizeof(CpuSample));
        if (!snap->cpus) {
                r = -ENOMEM;
                goto fail;
        }
        snap->n_cpus = topo->n_cpus;
        for (size_t i = 0; i < topo->n_cpus; i++) {
                const TopoCpu *tc = &topo->cpus[i];
                CpuState *cs = &s->cpus[i];
                CpuSample *c = &snap->cpus[i];

                *c = (CpuSample){.cpu = tc->cpu,
                                 .llc = tc->llc,
                                 .core = tc->core,
                                 .online = hwloc_bitmap_isset(online, tc->cpu)};
                if (!c->online) {
                        cs->primed = false;
                        continue;
                }
                if (!isnan(util_raw[i])) {
                        double run = isnan(run_raw[i]) ? util_raw[i] : run_raw[i];
                        if (cs->primed) {
                                cs->util = ewma_update(cs->util, util_raw[i], alpha);
                                cs->runnable = ewma_update(cs->runnable, run, alpha);
                        } else {
                                cs->util = util_raw[i];
                                cs->runnable = run;
                                cs->primed = true;
                        }
                }
                c->util = cs->util;
                c->runnable = cs->runnable;
                c->boosted = MIN(MAX(c->util, c->runnable), (double) SCHED_CAPACITY_SCALE);
        }

        r = build_llcs(topo, snap);
        if (r < 0)
                goto fail;
        r = read_psi(s, snap);
        if (r < 0)
                goto fail;

        snap->cgroups = calloc(MAX(n_cgroups, (size_t) 1), sizeof(CgroupSample));
        if (!snap->cgroups) {
                r = -ENOMEM;
                goto fail;
        }
        for (size_t i = 0; i < n_cgroups; i++) {
                CgroupSample *c = &snap->cgroups[snap->n_cgroups++];
                r = sample_cgroup(s, &cgroups[i], &t, n_scanned, now_us, online, c);
                if (r < 0) {
                        /* A cgroup that vanished, or whose files we cannot read, is
                         * left out of this snapshot; the rest goes on. */
                        log_full_errno(vanished(r) ? LOG_DEBUG : LOG_WARNING, r, "Cgroup %s: cannot sample",
                                       cgroups[i].name);
                        snap->n_cgroups--;
                        CgroupSample *dead = &snap->cgroups[snap->n_cgroups];
                        free(dead->path);
                        hwloc_bitmap_free(dead->allowed);
                        hwloc_bitmap_free(dead->cpus);
                        for (size_t j = 0; j < dead->n_threads; j++)
                                hwloc_bitmap_free(dead->threads[j].allowed);
                        free(dead->threads);
                        *dead = (CgroupSample){};
                        if (r == -ENOMEM)
                                goto fail;
                }
        }

        /* Commit: only now do this tick's counters become the previous ones. */
        if (t.n > 1)
                qsort(t.items, t.n, sizeof(ThreadPrev), cmp_thread_prev);
        thread_prevs_free(s, s->threads, s->n_threads);
        s->threads = t.items;
        s->n_threads = t.n;
        t.items = NULL;
        proc_stat_done(&s->prev_stat);
        s->prev_stat = stat;
        proc_schedstat_done(&s->prev_schedstat);
        s->prev_schedstat = schedstat;
        bool first = !s->have_prev;
        s->have_prev = true;
        s->n_samples++;
        s->prev_time_us = now_us;

        if (first)
                return -EAGAIN;
        *ret = TAKE_PTR(snap);
        return 0;

fail:
        /* What this tick's table took over from the previous one is closed:
         * those threads are opened afresh next time. */
        thread_prevs_free(s, t.items, t.n);
        proc_stat_done(&stat);
        proc_schedstat_done(&schedstat);
        return r;
}
