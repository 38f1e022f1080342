/* SPDX-License-Identifier: MIT */
#include "affinity.h"
#include "lines.h"
#include "log.h"
#include "proc-pressure.h"
#include "proc-thread.h"
#include "sampler-internal.h"

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

/* c->cpus, and c->allowed: what the cgroup may use, i.e. what it had before
 * steerd changed it (or what it has now), within its parent's effective
 * CPUs. */
static int cgroup_cpus(Sampler *s, const SamplerCgroup *sc, hwloc_const_bitmap_t online, CgroupSample *c) {
        _cleanup_(freep) char *parent = NULL;
        _cleanup_cpuset_ CpuSet parent_cpus = NULL;
        const char *dir = sc->loc->dir;
        int r;

        r = sampler_cgroup_cpus(s, dir, sc->loc->v2, online, &c->cpus);
        if (r < 0)
                return r;
        hwloc_bitmap_and(c->cpus, c->cpus, online);

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
        return 0;
}

/* cgroup v2's cpu.pressure; none (0) where it cannot be read. */
static int cgroup_pressure(Sampler *s, const SamplerCgroup *sc, CgroupSample *c) {
        _cleanup_(freep) char *path = NULL, *text = NULL;
        Psi psi;

        if (!sc->loc->v2)
                return 0;
        if (asprintf(&path, "%s/cpu.pressure", sc->loc->dir) < 0)
                return -ENOMEM;
        if (sampler_read_file(s, path, &text) >= 0 && psi_parse(text, DISPLAY(s, path), &psi, NULL) >= 0)
                c->pressure_some_avg10 = psi.some_avg10;
        return 0;
}

/* The thread's affinity into *ret: 1, 0 if it vanished or its status is
 * malformed (logged), or -errno. */
static int thread_allowed(Sampler *s, const ThreadPrev *tp, pid_t tid, CpuSet *ret) {
        _cleanup_(freep) char *status = NULL;
        char path[96];
        int r;

        if (!tp->fresh && tp->allowed) {
                /* Held with the rest of an idle thread's figures. */
                *ret = hwloc_bitmap_dup(tp->allowed);
                return *ret ? 1 : -ENOMEM;
        }
        if (s->live) {
                /* One syscall instead of formatting and parsing status. */
                r = thread_get_affinity(tid, ret);
                if (r < 0)
                        return r == -ESRCH ? 0 : r;
                return 1;
        }
        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int) tid, (int) tid);
        r = sampler_read_file(s, path, &status);
        if (r < 0)
                return sampler_vanished(r) ? 0 : r;
        if (thread_status_parse_cpus_allowed(status, DISPLAY(s, path), ret, NULL) < 0)
                return 0;
        return 1;
}

/* /proc/<tid>/sched only feeds nr_migrations: read every
 * SAMPLER_SCHED_FILE_EVERY samples, and once for a thread new to us. */
static void thread_migrations(Sampler *s, ThreadPrev *tp, pid_t tid) {
        _cleanup_(freep) char *text = NULL;
        char path[96];
        ThreadSched sch;

        if (!tp->fresh || (s->n_samples % SAMPLER_SCHED_FILE_EVERY != 0 && tp->have_migrations))
                return;
        snprintf(path, sizeof(path), "/proc/%d/task/%d/sched", (int) tid, (int) tid);
        if (sampler_read_file(s, path, &text) < 0)
                return;
        if (thread_sched_parse(text, DISPLAY(s, path), &sch, NULL) >= 0) {
                tp->nr_migrations = sch.nr_migrations;
                tp->have_migrations = true;
        }
}

/* A thread of the cgroup into c->threads (taken from this tick's scan if it
 * was read there); one that vanished is left out. */
static int cgroup_add_thread(Sampler *s, ThreadTable *t, size_t n_scanned, pid_t tid, uint64_t now_us,
                             CgroupSample *c) {
        ThreadPrev *tp;
        int r;

        tp = thread_cache_find(t->items, n_scanned, tid);
        if (!tp) {
                r = thread_cache_sample(s, t, tid, tid, now_us, &tp);
                if (r < 0 || !tp)
                        return r;
        }

        ThreadSample ts = {
                .tid = tp->tid,
                .starttime = tp->starttime,
                .cpu = tp->processor,
                .util = tp->util,
                .wait = tp->wait,
                .run_delay_ns = tp->run_delay_ns,
        };
        r = thread_allowed(s, tp, tid, &ts.allowed);
        if (r <= 0)
                return r;
        if (!tp->allowed || !hwloc_bitmap_isequal(tp->allowed, ts.allowed)) {
                hwloc_bitmap_free(tp->allowed);
                tp->allowed = hwloc_bitmap_dup(ts.allowed);
                if (!tp->allowed) {
                        hwloc_bitmap_free(ts.allowed);
                        return -ENOMEM;
                }
        }
        thread_migrations(s, tp, tid);
        ts.nr_migrations = tp->nr_migrations;
        c->threads[c->n_threads++] = ts;
        return 0;
}

/* One line of a task list: a thread id and nothing else. */
static int parse_tid(const char *p, const char *eol, pid_t *ret) {
        char *end;

        errno = 0;
        long tid = strtol(p, &end, 10);
        if (errno || end == p || end != eol || tid <= 0 || tid > INT32_MAX)
                return -EINVAL;
        *ret = (pid_t) tid;
        return 0;
}

/* The threads listed in the cgroup's task list (path, contents list). */
static int cgroup_threads(Sampler *s, const char *path, const char *list, ThreadTable *t, size_t n_scanned,
                          uint64_t now_us, CgroupSample *c) {
        unsigned lineno = 0;
        int r;

        /* Count the lines for one allocation. */
        size_t n_lines = 0;
        for (const char *p = list; *p; p++)
                n_lines += *p == '\n';
        c->threads = calloc(n_lines + 1, sizeof(ThreadSample));
        if (!c->threads)
                return -ENOMEM;

        FOREACH_LINE(p, eol, list) {
                pid_t tid;

                /* Empty lines are skipped and, as strtok_r() did, not counted. */
                if (p == eol)
                        continue;
                lineno++;
                if (parse_tid(p, eol, &tid) < 0) {
                        log_parse_error(DISPLAY(s, path), lineno, "'%.*s' is not a thread id",
                                        (int) (eol - p), p);
                        continue;
                }
                r = cgroup_add_thread(s, t, n_scanned, tid, now_us, c);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int sample_cgroup(Sampler *s, const SamplerCgroup *sc, ThreadTable *t, size_t n_scanned,
                         uint64_t now_us, hwloc_const_bitmap_t online, CgroupSample *c) {
        _cleanup_(freep) char *path = NULL, *list = NULL;
        int r;

        c->path = strdup(sc->name);
        if (!c->path)
                return -ENOMEM;
        c->policy = sc->policy;

        if (asprintf(&path, "%s/%s", sc->loc->dir, sc->loc->v2 ? "cgroup.threads" : "tasks") < 0)
                return -ENOMEM;
        r = sampler_read_file(s, path, &list);
        if (r < 0)
                return r; /* -ENOENT: the cgroup is gone */

        r = cgroup_cpus(s, sc, online, c);
        if (r < 0)
                return r;
        r = cgroup_pressure(s, sc, c);
        if (r < 0)
                return r;
        return cgroup_threads(s, path, list, t, n_scanned, now_us, c);
}

static void cgroup_sample_done(CgroupSample *c) {
        free(c->path);
        hwloc_bitmap_free(c->allowed);
        hwloc_bitmap_free(c->cpus);
        for (size_t j = 0; j < c->n_threads; j++)
                hwloc_bitmap_free(c->threads[j].allowed);
        free(c->threads);
        *c = (CgroupSample){};
}

int cgroups_sample(Sampler *s, const SamplerCgroup *cgroups, size_t n_cgroups, ThreadTable *t,
                   size_t n_scanned, uint64_t now_us, hwloc_const_bitmap_t online, Snapshot *snap) {
        snap->cgroups = calloc(MAX(n_cgroups, (size_t) 1), sizeof(CgroupSample));
        if (!snap->cgroups)
                return -ENOMEM;
        for (size_t i = 0; i < n_cgroups; i++) {
                CgroupSample *c = &snap->cgroups[snap->n_cgroups++];
                int r = sample_cgroup(s, &cgroups[i], t, n_scanned, now_us, online, c);
                if (r >= 0)
                        continue;
                /* A cgroup that vanished, or whose files we cannot read, is
                 * left out of this snapshot; the rest goes on. */
                log_full_errno(sampler_vanished(r) ? LOG_DEBUG : LOG_WARNING, r, "Cgroup %s: cannot sample",
                               cgroups[i].name);
                snap->n_cgroups--;
                cgroup_sample_done(c);
                if (r == -ENOMEM)
                        return r;
        }
        return 0;
}
