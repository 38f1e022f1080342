/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <sched.h>
#include <time.h>

#include "ewma.h"
#include "log.h"
#include "proc-pressure.h"
#include "sampler-internal.h"

int cpu_read_stat(Sampler *s, ProcStat *ret) {
        _cleanup_(freep) char *text = NULL;
        int r;

        r = sampler_read_kept(s, &s->stat_fd, "/proc/stat", &text);
        if (r < 0)
                return log_error_errno(r, "Cannot read /proc/stat");
        return proc_stat_parse(text, DISPLAY(s, "/proc/stat"), ret, NULL);
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

void cpu_util_raw(Sampler *s, const ProcStat *stat, uint64_t dt_us, double *util_raw, CpuSet online) {
        const Topology *topo = s->topo;

        /* A CPU the topology has and /proc/stat has not is offline. */
        for (size_t i = 0; i < topo->n_cpus; i++) {
                const CpuTimes *cur = proc_stat_find(stat, topo->cpus[i].cpu),
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
}

int cpu_samples_build(Sampler *s, hwloc_const_bitmap_t online, const double *util_raw, const double *run_raw,
                      uint64_t dt_us, Snapshot *snap) {
        const Topology *topo = s->topo;
        double alpha = ewma_alpha(dt_us, s->settings.smoothing_half_life_ms * USEC_PER_MSEC);

        snap->cpus = calloc(MAX(topo->n_cpus, (size_t) 1), sizeof(CpuSample));
        if (!snap->cpus)
                return -ENOMEM;
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
        return 0;
}

int cpu_read_psi(Sampler *s, Snapshot *snap) {
        _cleanup_(freep) char *text = NULL;
        Psi psi;
        int r;

        r = sampler_read_kept(s, &s->psi_fd, "/proc/pressure/cpu", &text);
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
