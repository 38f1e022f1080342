/* SPDX-License-Identifier: MIT */
#include <math.h>

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
/* A cgroup's effective CPUs file (the first that cgroup_effective_cpus()
 * reads), kept open in *fd; anything else (it has none, a v2 cgroup without
 * the cpuset controller) goes the shared reader's way. */
static int kept_cpus(Sampler *s, const char *dir, bool v2, int *fd, hwloc_const_bitmap_t online,
                     CpuSet *ret) {
        _cleanup_(freep) char *path = NULL, *text = NULL;

        if (asprintf(&path, "%s/%s", dir, v2 ? "cpuset.cpus.effective" : "cpuset.effective_cpus") < 0)
                return -ENOMEM;
        if (sampler_read_kept(s, fd, path, &text) < 0)
                return sampler_cgroup_cpus(s, dir, v2, online, ret);
        size_t n = strlen(text);
        while (n > 0 && strchr(" \t\n", text[n - 1]))
                text[--n] = '\0';
        if (cpuset_parse(text, ret) < 0)
                return log_parse_error(DISPLAY(s, path), 1, "not a CPU list: '%.64s'", text);
        return 0;
}

static int cgroup_cpus(Sampler *s, const SamplerCgroup *sc, CgroupCache *cc, hwloc_const_bitmap_t online,
                       CgroupSample *c) {
        _cleanup_(freep) char *parent = NULL;
        _cleanup_cpuset_ CpuSet parent_cpus = NULL;
        const char *dir = sc->loc->dir;
        int r;

        r = kept_cpus(s, cc->dir, cc->v2, &cc->cpus_fd, online, &c->cpus);
        if (r < 0)
                return r;
        hwloc_bitmap_and(c->cpus, c->cpus, online);

        /* A cgroup's effective CPUs lie within its parent's: only CPUs it
         * had before steerd changed it need the parent's to be clipped (its
         * file kept open meanwhile: four windows' parents opened every tick
         * were 7% of steerd's CPU during hb4cg). */
        if (!sc->original_cpus) {
                closep(&cc->parent_cpus_fd);
                c->allowed = hwloc_bitmap_dup(c->cpus);
                return c->allowed ? 0 : -ENOMEM;
        }
        parent = strdup(dir);
        if (!parent)
                return -ENOMEM;
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent)
                *slash = '\0';
        if (kept_cpus(s, parent, sc->loc->v2, &cc->parent_cpus_fd, online, &parent_cpus) < 0) {
                parent_cpus = hwloc_bitmap_dup(online);
                if (!parent_cpus)
                        return -ENOMEM;
        }
        c->allowed = hwloc_bitmap_dup(sc->original_cpus);
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
static int thread_allowed(Sampler *s, ThreadPrev *tp, pid_t tid, CpuSet *ret) {
        _cleanup_(freep) char *status = NULL;
        char path[96];
        int r;

        if (!tp->fresh && tp->allowed) {
                /* Held with the rest of an idle thread's figures. */
                *ret = sampler_mask_dup(s, tp->allowed);
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
        r = thread_read_status(s, tp, path, &status);
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
        snprintf(path, sizeof(path), "/proc/%d/task/%d/sched", (int) (tp->tgid > 0 ? tp->tgid : tid),
                 (int) tid);
        if (sampler_read_file(s, path, &text) < 0) {
                snprintf(path, sizeof(path), "/proc/%d/task/%d/sched", (int) tid, (int) tid);
                if (tp->tgid <= 0 || tp->tgid == tid || sampler_read_file(s, path, &text) < 0)
                        return;
        }
        if (thread_sched_parse(text, DISPLAY(s, path), &sch, NULL) >= 0) {
                tp->nr_migrations = sch.nr_migrations;
                tp->have_migrations = true;
        }
}

/* The process to open a thread's files under, /proc/TGID/task/TID, where
 * it is known without a read: a first open of /proc/TID of a host whose
 * pids have wrapped prunes the stale dentries of the task that had the pid
 * before (hb4cg: 85% of steerd's samples in d_walk; 17 us against 8 us for
 * the TGID path alone). Else TID, which names any thread. */
static pid_t path_pid(const CgroupCache *cc, pid_t tid) {
        const ThreadPrev *p = thread_cache_find(cc->threads, cc->n_threads, tid);

        if (p && p->tgid > 0)
                return p->tgid;
        if (cc->n_procs == 1)
                return cc->procs[0].tgid;
        return tid;
}

/* The process of a thread that talks, for pairs within one process
 * (policy-pair.c). A cgroup lists tids; a leader is one of its processes,
 * and a thread whose files opened under /proc/TGID/task/ (path_pid()) is
 * that process's, at no cost; any other thread's status is read once in
 * its life, and only once it talks: threads that do not talk never cost a
 * read (hb4cg, four one-process cgroups of 41 threads, read 112 of them
 * before). */
static pid_t thread_tgid(Sampler *s, const CgroupCache *cc, ThreadPrev *tp) {
        _cleanup_(freep) char *status = NULL;
        char path[96];

        if (tp->tgid != 0)
                return MAX(tp->tgid, 0);
        if (cgroup_cache_has_proc(cc, tp->tid))
                return tp->tgid = tp->tid;
        if (s->settings.sticky_pair_wakeups <= 0 || tp->wakeups < s->settings.sticky_pair_wakeups)
                return 0;
        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int) tp->tid, (int) tp->tid);
        if (sampler_read_file(s, path, &status) < 0 ||
            thread_status_parse_tgid(status, DISPLAY(s, path), &tp->tgid, NULL) < 0)
                tp->tgid = -1;
        return MAX(tp->tgid, 0);
}

/* The thread's sample into c->threads; 0 too if it vanished meanwhile. */
static int thread_to_sample(Sampler *s, const CgroupCache *cc, ThreadPrev *tp, CgroupSample *c) {
        ThreadSample ts = {
                .tid = tp->tid,
                .tgid = thread_tgid(s, cc, tp),
                .starttime = tp->starttime,
                .cpu = tp->processor,
                .util = tp->util,
                .wait = tp->wait,
                .run_delay_ns = tp->run_delay_ns,
                .wakeups = tp->wakeups,
        };
        ts.allowed_held = !tp->fresh && tp->allowed;
        int r = thread_allowed(s, tp, tp->tid, &ts.allowed);
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
        thread_migrations(s, tp, tp->tid);
        ts.nr_migrations = tp->nr_migrations;
        c->threads[c->n_threads++] = ts;
        return 0;
}

/* How many ticks apart its busy threads are read (SAMPLER_TURN_THREADS):
 * 1 where every member is read (--once), in a small cgroup, and at the tick
 * its use moved, when every member is read at once. */
static unsigned cgroup_turns(const Sampler *s, CgroupCache *cc) {
        /* The last interval's use, not the smoothed: a phase that ends is
         * one change, where the smoothed use decays over a dozen ticks and
         * each tick of the decay moved it by more than the limit (on the
         * simulated host, 8 busy cgroups a tick read whole for that). */
        double before = cc->turns_usage, now = cc->usage_primed ? cc->usage_raw : -1;
        unsigned turns = (unsigned) MIN((cc->n_tids + SAMPLER_TURN_THREADS - 1) / SAMPLER_TURN_THREADS,
                                        (size_t) SAMPLER_TURN_MAX);

        cc->turns_usage = now;
        if (s->full || turns <= 1 || now < 0)
                return 1;
        if (before < 0 ||
            fabs(now - before) * 100 >
                    SAMPLER_TURN_CHANGE_PERCENT * MAX(before, (double) SCHED_CAPACITY_SCALE / 4)) {
                for (size_t k = 0; k < cc->n_threads; k++)
                        cc->threads[k].skip = 0;
                return 1;
        }
        return turns;
}

/* Every member, read through the idle back-off and in turns (or taken from
 * this tick's scan), into a table that replaces the cache's. A member that
 * vanished leaves the membership. */
static int threads_all(Sampler *s, const SamplerCgroup *sc, CgroupCache *cc, ThreadTable *scan,
                       size_t n_scanned, uint64_t now_us, CgroupSample *c) {
        ThreadTable nt = {};
        size_t kept = 0;
        unsigned turns = cgroup_turns(s, cc);
        int r = 0;

        c->threads = calloc(cc->n_tids + 1, sizeof(ThreadSample));
        if (!c->threads)
                return -ENOMEM;
        for (size_t i = 0; i < cc->n_tids; i++) {
                pid_t tid = cc->tids[i];
                ThreadPrev *tp = thread_cache_find(scan->items, n_scanned, tid);
                if (!tp) {
                        /* What steerd holds is checked every tick. */
                        bool held = pid_array_has(sc->held, sc->n_held, tid);
                        r = thread_cache_sample(s, cc->threads, cc->n_threads, &nt, path_pid(cc, tid), tid,
                                                now_us, held ? 1 : turns, &tp);
                        if (r < 0)
                                break;
                }
                if (!tp)
                        continue;
                cc->tids[kept++] = tid;
                r = thread_to_sample(s, cc, tp, c);
                if (r < 0)
                        break;
        }
        if (r < 0) {
                /* What the new table took over is closed: opened afresh next time. */
                thread_prevs_free(s, nt.items, nt.n);
                cc->members_valid = false;
                return r;
        }
        cc->n_tids = kept;
        /* Pushed in tid order: the new table is sorted. */
        thread_prevs_free(s, cc->threads, cc->n_threads);
        cc->threads = TAKE_PTR(nt.items);
        cc->n_threads = nt.n;
        return 0;
}

/* A thread just read replaces its entry in the cache (whose descriptors
 * and mask it took over or closed), or joins it. */
static ThreadPrev *cache_put(Sampler *s, CgroupCache *cc, ThreadPrev *n) {
        ThreadPrev *old = thread_cache_find(cc->threads, cc->n_threads, n->tid);
        if (old) {
                thread_prev_done(s, old);
                *old = *n;
                return old;
        }
        ThreadPrev *p = realloc(cc->threads, (cc->n_threads + 1) * sizeof(ThreadPrev));
        if (!p)
                return NULL;
        cc->threads = p;
        size_t i = 0;
        while (i < cc->n_threads && cc->threads[i].tid < n->tid)
                i++;
        memmove(cc->threads + i + 1, cc->threads + i, (cc->n_threads - i) * sizeof(ThreadPrev));
        cc->threads[i] = *n;
        cc->n_threads++;
        return &cc->threads[i];
}

/* A quiet cgroup's threads that steerd holds nothing on are not read
 * while it stays quiet: while descriptors are scarce they give theirs up
 * to the busy threads, which otherwise open their files afresh at every
 * read. On the simulated host, after a few phases every cgroup had been
 * busy once, its 50 threads held 150 descriptors each, and the busy
 * threads of the phase found the budget spent: about 1,700 opens and as
 * many closes a tick. A cgroup that wakes opens its threads' files once. */
static void quiet_release_fds(Sampler *s, const SamplerCgroup *sc, CgroupCache *cc) {
        if (cc->fds_released || s->n_kept_fds * 2 <= s->max_kept_fds)
                return;
        for (size_t i = 0; i < cc->n_threads; i++)
                if (!pid_array_has(sc->held, sc->n_held, cc->threads[i].tid))
                        thread_prev_close(s, &cc->threads[i]);
        cc->fds_released = true;
}

/* A quiet cgroup: only the members steerd holds a mask on are read; every
 * other entry of the cache stays as it is. */
static int threads_held(Sampler *s, const SamplerCgroup *sc, CgroupCache *cc, uint64_t now_us,
                        CgroupSample *c) {
        int r;

        c->threads_partial = true;
        c->threads = calloc(sc->n_held + 1, sizeof(ThreadSample));
        if (!c->threads)
                return -ENOMEM;
        for (size_t i = 0; i < sc->n_held; i++) {
                ThreadTable one = {};
                ThreadPrev *tp;

                if (!pid_array_has(cc->tids, cc->n_tids, sc->held[i]))
                        continue;
                r = thread_cache_sample(s, cc->threads, cc->n_threads, &one, path_pid(cc, sc->held[i]),
                                        sc->held[i], now_us, /* turns= */ 1, &tp);
                if (r < 0 || !tp) {
                        thread_prevs_free(s, one.items, one.n);
                        if (r < 0)
                                return r;
                        continue;
                }
                tp = cache_put(s, cc, &one.items[0]);
                if (!tp) {
                        thread_prevs_free(s, one.items, one.n);
                        return -ENOMEM;
                }
                free(one.items);
                r = thread_to_sample(s, cc, tp, c);
                if (r < 0)
                        return r;
        }
        return 0;
}

static double quiet_limit(const CgroupCache *cc) {
        return SCHED_CAPACITY_SCALE *
               (SAMPLER_QUIET_PERCENT + SAMPLER_QUIET_THREAD_PERCENT * (double) cc->n_tids) / 100.0;
}

/* Whether no decision can use the cgroup's threads this tick (sampler.h):
 * it has a usage figure, steerd holds none of its CPUs (a cgroup-wide
 * change is applied and checked through every thread), and its use is
 * under the quiet limit: smoothed, or each of the last
 * SAMPLER_QUIET_RAW_READS reads' own intervals. */
static bool cgroup_quiet(const Sampler *s, const SamplerCgroup *sc, const CgroupCache *cc) {
        if (s->full || !cc->usage_primed || sc->original_cpus)
                return false;
        return cc->usage < quiet_limit(cc) || cc->raw_low >= SAMPLER_QUIET_RAW_READS;
}

static bool cache_is(const CgroupCache *cc, const SamplerCgroup *sc) {
        return cc->v2 == sc->loc->v2 && streq(cc->dir, sc->loc->dir);
}

/* hint: where the cgroup was last tick (the opted-in list keeps its order
 * from tick to tick): looked at first, as a search of every cache for every
 * cgroup was 200 x 200 string compares a tick on the simulated host. */
static CgroupCache *cache_get(Sampler *s, const SamplerCgroup *sc, size_t hint) {
        if (hint < s->n_cgroups && cache_is(&s->cgroups[hint], sc))
                return &s->cgroups[hint];
        for (size_t i = 0; i < s->n_cgroups; i++)
                if (cache_is(&s->cgroups[i], sc))
                        return &s->cgroups[i];
        CgroupCache *p = realloc(s->cgroups, (s->n_cgroups + 1) * sizeof(CgroupCache));
        if (!p)
                return NULL;
        s->cgroups = p;
        CgroupCache *cc = &s->cgroups[s->n_cgroups];
        *cc = (CgroupCache){.dir = strdup(sc->loc->dir),
                            .v2 = sc->loc->v2,
                            .usage_fd = -EBADF,
                            .cpus_fd = -EBADF,
                            .parent_cpus_fd = -EBADF,
                            .turns_usage = -1};
        if (!cc->dir)
                return NULL;
        s->n_cgroups++;
        return cc;
}

void cgroup_cache_done(Sampler *s, CgroupCache *cc) {
        thread_prevs_free(s, cc->threads, cc->n_threads);
        closep(&cc->usage_fd);
        closep(&cc->cpus_fd);
        closep(&cc->parent_cpus_fd);
        for (size_t i = 0; i < cc->n_procs; i++)
                closep(&cc->procs[i].fd);
        free(cc->tids);
        free(cc->procs);
        free(cc->dir);
        *cc = (CgroupCache){};
}

static int sample_cgroup(Sampler *s, const SamplerCgroup *sc, size_t hint, ThreadTable *t, size_t n_scanned,
                         uint64_t now_us, hwloc_const_bitmap_t online, CgroupSample *c, bool *ret_quiet) {
        CgroupCache *cc;
        int r;

        *ret_quiet = false;
        c->path = strdup(sc->name);
        if (!c->path)
                return -ENOMEM;
        c->policy = sc->policy;
        cc = cache_get(s, sc, hint);
        if (!cc)
                return -ENOMEM;
        cc->seen = true;

        r = members_refresh(s, cc);
        if (r < 0)
                return r; /* -ENOENT: the cgroup is gone */
        r = cgroup_cpus(s, sc, cc, online, c);
        if (r < 0)
                return r;
        r = cgroup_pressure(s, sc, c);
        if (r < 0)
                return r;
        bool sliced = usage_sliced(cc);
        bool usage_due = !(cc->usage_skip > 0 && !s->host_idle && !sliced);
        r = usage_due ? usage_sample(s, cc, now_us, sliced) : 0;
        if (r < 0)
                return r;
        if (usage_due && cc->usage_primed)
                cc->raw_low = cc->usage_raw < quiet_limit(cc) ? cc->raw_low + 1 : 0;
        c->usage = cc->usage_primed ? cc->usage : -1;
        /* A quiet cgroup's use is read less often, as an idle thread's is:
         * every 2, 4, then SAMPLER_IDLE_MAX_TICKS ticks; one that wakes up
         * is seen within that many. Not while only its last reads were
         * quiet (its smoothed use is not): a load that pauses is seen at
         * the next tick when it comes back. */
        cc->quiet = cgroup_quiet(s, sc, cc);
        bool smoothed_quiet = cc->quiet && cc->usage < quiet_limit(cc);
        if (cc->quiet) {
                if (!smoothed_quiet) {
                        cc->usage_interval = 1;
                        cc->usage_skip = 0;
                } else if (cc->usage_skip == 0) {
                        cc->usage_interval = MIN(MAX(cc->usage_interval, 1u) * 2, SAMPLER_IDLE_MAX_TICKS);
                        cc->usage_skip = cc->usage_interval - 1;
                } else
                        cc->usage_skip--;
                quiet_release_fds(s, sc, cc);
                r = threads_held(s, sc, cc, now_us, c);
        } else {
                cc->fds_released = false;
                cc->usage_interval = 1;
                cc->usage_skip = 0;
                r = threads_all(s, sc, cc, t, n_scanned, now_us, c);
        }
        c->n_members = cc->n_tids;
        c->n_processes = cc->n_procs;
        /* Empty (a workload is about to be moved in: no event says so) or
         * changing: its members are read every sample, and so is the host. */
        cc->quiet = cc->quiet && cc->n_tids > 0 && s->n_samples - cc->procs_changed >= SAMPLER_MEMBERS_FRESH;
        /* The host's ticks slow down only once the smoothed use says quiet:
         * a load that pauses for a few ticks is not read thread by thread
         * meanwhile, but is seen within a tick when it comes back. */
        *ret_quiet = cc->quiet && smoothed_quiet;
        return r;
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
        bool quiet = !s->full;
        for (size_t i = 0; i < s->n_cgroups; i++)
                s->cgroups[i].seen = false;
        for (size_t i = 0; i < n_cgroups; i++) {
                CgroupSample *c = &snap->cgroups[snap->n_cgroups++];
                bool q;
                int r = sample_cgroup(s, &cgroups[i], i, t, n_scanned, now_us, online, c, &q);
                if (r >= 0) {
                        quiet = quiet && q;
                        continue;
                }
                quiet = false;
                /* A cgroup that vanished, or whose files we cannot read, is
                 * left out of this snapshot; the rest goes on. */
                log_full_errno(sampler_vanished(r) ? LOG_DEBUG : LOG_WARNING, r, "Cgroup %s: cannot sample",
                               cgroups[i].name);
                snap->n_cgroups--;
                cgroup_sample_done(c);
                if (r == -ENOMEM)
                        return r;
        }
        /* A cgroup no longer opted in (or gone) is forgotten with its threads. */
        size_t k = 0;
        for (size_t i = 0; i < s->n_cgroups; i++) {
                if (s->cgroups[i].seen)
                        s->cgroups[k++] = s->cgroups[i];
                else
                        cgroup_cache_done(s, &s->cgroups[i]);
        }
        s->n_cgroups = k;
        s->all_quiet = quiet;
        return 0;
}
