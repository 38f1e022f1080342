/* SPDX-License-Identifier: MIT */
#include <sys/resource.h>

#include "log.h"
#include "sampler-internal.h"

/* Keep two descriptors per thread while a quarter of the soft limit allows
 * (the daemon raises it to the hard limit at start). Not more: a cgroup
 * without cpuacct keeps a process's stat open per process, outside this
 * budget, and half for the threads plus 10,000 processes would reach a
 * hard limit of 20,000 (this project's test machine) and fail the bus's or
 * the state file's opens. systemd's default hard limit (524,288) reaches
 * the cap before either. */
static void set_max_kept_fds(Sampler *s) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) >= 0)
                s->max_kept_fds = rl.rlim_cur == RLIM_INFINITY
                                          ? SAMPLER_MAX_KEPT_FDS
                                          : MIN((size_t) rl.rlim_cur / 4, SAMPLER_MAX_KEPT_FDS);
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
        s->source = runnable_probe_source(root);
        s->live = streq(root->path, "/");
        s->keep_open = s->live;
        s->runnable_needed = true;
        s->wake_wanted = true;
        s->stat_fd = s->psi_fd = -EBADF;
        s->clock_ticks = sysconf(_SC_CLK_TCK);
        if (s->clock_ticks <= 0)
                s->clock_ticks = 100;
        if (s->live)
                set_max_kept_fds(s);
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
        sampler_masks_done(s);
        for (size_t i = 0; i < s->n_cgroups; i++)
                cgroup_cache_done(s, &s->cgroups[i]);
        free(s->cgroups);
        closep(&s->stat_fd);
        closep(&s->psi_fd);
        sampler_wake_done(s);
        free(s);
        return NULL;
}

void sampler_keep_open(Sampler *s) {
        if (s->keep_open)
                return;
        s->keep_open = true;
        set_max_kept_fds(s);
}

void sampler_set_settings(Sampler *s, const Settings *settings) {
        s->settings = *settings;
        s->wake_off = false; /* a reload tries again (tracefs mounted since, say) */
}

void sampler_reread_threads(Sampler *s) {
        for (size_t i = 0; i < s->n_threads; i++)
                s->threads[i].skip = 0;
        for (size_t i = 0; i < s->n_cgroups; i++)
                for (size_t k = 0; k < s->cgroups[i].n_threads; k++)
                        s->cgroups[i].threads[k].skip = 0;
}

void sampler_reread(Sampler *s, const char *dir, pid_t tid) {
        for (size_t i = 0; i < s->n_cgroups; i++) {
                CgroupCache *cc = &s->cgroups[i];
                if (!streq(cc->dir, dir))
                        continue;
                cc->usage_skip = 0;
                if (tid != 0) {
                        ThreadPrev *p = thread_cache_find(cc->threads, cc->n_threads, tid);
                        if (p)
                                p->skip = 0;
                        continue;
                }
                for (size_t k = 0; k < cc->n_threads; k++)
                        cc->threads[k].skip = 0;
        }
        /* The THREADS source's scan shares a thread's figures with its cgroup. */
        if (tid != 0) {
                ThreadPrev *p = thread_cache_find(s->threads, s->n_threads, tid);
                if (p)
                        p->skip = 0;
                return;
        }
        for (size_t k = 0; k < s->n_threads; k++)
                s->threads[k].skip = 0;
}

void sampler_set_runnable_needed(Sampler *s, bool needed) {
        s->runnable_needed = needed;
}

RunnableSource sampler_source(const Sampler *s) {
        return s->source;
}

/* Only now do this tick's counters become the previous ones; the sampler
 * takes over what t, stat and schedstat hold. */
static void sampler_commit(Sampler *s, ThreadTable *t, ProcStat *stat, ProcSchedstat *schedstat,
                           uint64_t now_us) {
        thread_table_sort(t);
        thread_prevs_free(s, s->threads, s->n_threads);
        s->threads = TAKE_PTR(t->items);
        s->n_threads = t->n;
        proc_stat_done(&s->prev_stat);
        s->prev_stat = *stat;
        *stat = (ProcStat){};
        proc_schedstat_done(&s->prev_schedstat);
        s->prev_schedstat = *schedstat;
        *schedstat = (ProcSchedstat){};
        s->have_prev = true;
        s->n_samples++;
        s->prev_time_us = now_us;
}

/* The kernel's cache-aware scheduling: probed at the first sample and every
 * SAMPLER_KERNEL_CACHE_PROBE_US (a knob can be turned at run time); a
 * change is said once. */
static void kernel_cache_sample(Sampler *s, uint64_t now_us, Snapshot *snap) {
        if (!s->kernel_cache_probed || now_us - s->kernel_cache_probed_us >= SAMPLER_KERNEL_CACHE_PROBE_US) {
                KernelCacheAware k;
                kernel_cache_aware_probe(s->root, &k);
                if (!s->kernel_cache_probed || k.present != s->kernel_cache.present ||
                    k.enabled != s->kernel_cache.enabled) {
                        snprintf(s->kernel_cache_status, sizeof(s->kernel_cache_status), "%s: %s",
                                 k.enabled   ? "on"
                                 : k.present ? "off"
                                             : "absent",
                                 k.how);
                        if (k.present)
                                log_info("Kernel cache-aware scheduling %s (%s)%s", k.enabled ? "on" : "off",
                                         k.how,
                                         k.enabled ? ": no windows or wake groups for a cgroup of one "
                                                     "process, whose threads the kernel keeps together"
                                                   : "");
                }
                s->kernel_cache = k;
                s->kernel_cache_probed = true;
                s->kernel_cache_probed_us = now_us;
        }
        snap->kernel_cache_aware = s->kernel_cache.enabled;
}

const char *sampler_kernel_cache_status(const Sampler *s) {
        return s && s->kernel_cache_probed ? s->kernel_cache_status : "unknown: not sampled yet";
}

int sampler_sample(Sampler *s, uint64_t now_us, const SamplerCgroup *cgroups, size_t n_cgroups,
                   Snapshot **ret) {
        const Topology *topo = s->topo;
        _cleanup_(snapshot_freep) Snapshot *snap = NULL;
        _cleanup_(freep) double *util_raw = NULL, *run_raw = NULL;
        _cleanup_cpuset_ CpuSet online = NULL;
        ProcStat stat = {};
        ProcSchedstat schedstat = {};
        ThreadTable t = {};
        int r;

        uint64_t dt_us = s->have_prev && now_us > s->prev_time_us ? now_us - s->prev_time_us : 0;
        s->all_quiet = false; /* until the cgroups say otherwise */

        r = cpu_read_stat(s, &stat);
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

        cpu_util_raw(s, &stat, dt_us, util_raw, online);
        r = runnable_sample(s, &t, now_us, dt_us, util_raw, run_raw, &schedstat, &snap->source,
                            &snap->threads_truncated);
        if (r < 0)
                goto fail;
        size_t n_scanned = t.n; /* sorted; the cgroups keep their threads themselves */

        r = cpu_samples_build(s, online, util_raw, run_raw, dt_us, snap);
        if (r >= 0)
                r = llc_samples_build(topo, snap);
        if (r >= 0)
                r = cpu_read_psi(s, snap);
        if (r >= 0)
                r = cgroups_sample(s, cgroups, n_cgroups, &t, n_scanned, now_us, online, snap);
        if (r >= 0 && s->have_prev)
                r = sampler_wake_sample(s, now_us, snap);
        kernel_cache_sample(s, now_us, snap);
        if (r < 0)
                goto fail;

        bool first = !s->have_prev;
        sampler_commit(s, &t, &stat, &schedstat, now_us);
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
