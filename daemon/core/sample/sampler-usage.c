/* SPDX-License-Identifier: MIT */
/* The cgroup layer: a cgroup's CPU use, one small file per tick, so that a
 * quiet cgroup costs no per-thread read. */

#include "ewma.h"
#include "proc-cgroup.h"
#include "proc-thread.h"
#include "sampler-internal.h"

/* The cgroup's own accounting: v2 cpu.stat (always there), v1
 * cpuacct.usage where cpuacct is mounted with cpuset. -ENOENT: none. */
static int usage_own(Sampler *s, CgroupCache *cc, uint64_t *ret_ns) {
        _cleanup_(freep) char *path = NULL, *text = NULL;
        int r;

        if (cc->no_own && !cc->v2)
                return -ENOENT;
        if (asprintf(&path, "%s/%s", cc->dir, cc->v2 ? "cpu.stat" : "cpuacct.usage") < 0)
                return -ENOMEM;
        r = sampler_read_kept(s, &cc->usage_fd, path, &text);
        if (r == -ENOENT)
                cc->no_own = true;
        if (r < 0)
                return r;
        r = cc->v2 ? cgroup_cpu_stat_parse(text, DISPLAY(s, path), ret_ns)
                   : cpuacct_usage_parse(text, DISPLAY(s, path), ret_ns);
        return r < 0 ? -ENOENT : 0;
}

/* One process's CPU time: its rate since its last reading. -errno: it is
 * gone or its file unreadable. */
static int proc_read(Sampler *s, ProcUsage *p, uint64_t now_us) {
        _cleanup_(freep) char *text = NULL;
        char path[64];
        ThreadStat st;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int) p->tgid);
        if (sampler_read_kept(s, &p->fd, path, &text) < 0 ||
            thread_stat_parse(text, DISPLAY(s, path), &st, NULL) < 0) {
                p->have = p->have_rate = false;
                return -ENOENT;
        }
        uint64_t ticks = st.utime + st.stime;
        if (p->have && ticks >= p->ticks) {
                if (now_us <= p->read_us)
                        return 0; /* read twice at one instant */
                double tick_ns = (double) NSEC_PER_SEC / (double) MAX(s->clock_ticks, 1L);
                double ns = (double) (ticks - p->ticks) * tick_ns;
                p->rate = ns / ((double) (now_us - p->read_us) * NSEC_PER_USEC);
                p->have_rate = true;
        } else
                p->have_rate = false; /* a new process (or a reused id): it only primes */
        p->ticks = ticks;
        p->read_us = now_us;
        p->have = true;
        return 0;
}

bool usage_sliced(const CgroupCache *cc) {
        /* usage_interval > 1: in the quiet back-off (sample_cgroup). */
        return cc->by_procs && cc->usage_interval > 1 && cc->n_procs > SAMPLER_USAGE_SLICE_MIN;
}

/* Without it: the sum of its processes' rates (/proc/<tgid>/stat sums all
 * threads of a process, in clock ticks), each as of its last reading. All
 * of them are read, or a slice that goes round them every
 * SAMPLER_IDLE_MAX_TICKS calls, and every process that has no rate yet. A
 * process new to the list only primes; one that exited drops out.
 * -ENOENT: none could be read; -EAGAIN: none has a rate yet. */
static int usage_procs(Sampler *s, CgroupCache *cc, uint64_t now_us, bool sliced, double *ret_rate) {
        size_t n = cc->n_procs, slice = n, n_read = 0, n_rated = 0;
        double rate = 0;

        if (n == 0)
                return -ENOENT;
        if (sliced)
                slice = MIN(n, (n + SAMPLER_IDLE_MAX_TICKS - 1) / SAMPLER_IDLE_MAX_TICKS);
        size_t first = cc->procs_next % n;
        for (size_t k = 0; k < n; k++) {
                size_t i = (first + k) % n;
                ProcUsage *p = &cc->procs[i];

                if ((k < slice || !p->have_rate) && proc_read(s, p, now_us) >= 0)
                        n_read++;
                if (p->have_rate) {
                        rate += p->rate;
                        n_rated++;
                }
        }
        cc->procs_next = (first + slice) % n;
        /* None read and none known (cgroup.procs unreadable, or every
         * process gone): the cgroup's use is unknown, never taken as quiet. */
        if (n_rated == 0)
                return n_read == 0 ? -ENOENT : -EAGAIN;
        *ret_rate = rate;
        return 0;
}

int usage_sample(Sampler *s, CgroupCache *cc, uint64_t now_us, bool sliced) {
        uint64_t ns = 0;
        double raw;
        int r;

        now_us = sampler_read_time_us(s, now_us);
        r = usage_own(s, cc, &ns);
        if (r == -ENOMEM)
                return r;
        if (r == -ENOENT && cc->v2)
                return r; /* cpu.stat is in every v2 cgroup: this one is gone */
        cc->by_procs = r < 0;
        if (r >= 0) {
                uint64_t delta_ns = cc->have_usage && ns >= cc->usage_ns ? ns - cc->usage_ns : 0;
                bool primed = cc->have_usage && ns >= cc->usage_ns;

                cc->usage_ns = ns;
                cc->have_usage = true;
                if (!primed) {
                        cc->usage_us = now_us;
                        return 0;
                }
                uint64_t dt_us = now_us > cc->usage_us ? now_us - cc->usage_us : 0;
                if (dt_us == 0)
                        return 0;
                raw = (double) delta_ns * SCHED_CAPACITY_SCALE / ((double) dt_us * NSEC_PER_USEC);
        } else {
                double rate = 0;

                r = usage_procs(s, cc, now_us, sliced, &rate);
                if (r == -ENOENT) {
                        cc->have_usage = cc->usage_primed = false;
                        return 0;
                }
                if (r < 0)
                        return 0; /* -EAGAIN: no process has a rate yet */
                raw = rate * SCHED_CAPACITY_SCALE;
                if (!cc->usage_primed) {
                        cc->usage = cc->usage_raw = raw;
                        cc->usage_us = now_us;
                        cc->usage_primed = true;
                        return 0;
                }
        }

        uint64_t dt_us = now_us > cc->usage_us ? now_us - cc->usage_us : 0;
        cc->usage_us = now_us;
        if (dt_us == 0)
                return 0;
        double alpha = ewma_alpha(dt_us, s->settings.smoothing_half_life_ms * USEC_PER_MSEC);
        cc->usage = cc->usage_primed ? ewma_update(cc->usage, raw, alpha) : raw;
        cc->usage_raw = raw;
        cc->usage_primed = true;
        return 0;
}
