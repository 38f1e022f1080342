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

/* Without it: the CPU time its processes got since their last reading
 * (/proc/<tgid>/stat sums all threads of a process, in clock ticks). A
 * process new to the list only primes; one that exited drops out. */
static int usage_procs(Sampler *s, CgroupCache *cc, uint64_t *ret_delta_ns) {
        uint64_t ticks = 0;
        size_t n_read = 0;
        char path[64];

        for (size_t i = 0; i < cc->n_procs; i++) {
                _cleanup_(freep) char *text = NULL;
                ProcUsage *p = &cc->procs[i];
                ThreadStat st;

                snprintf(path, sizeof(path), "/proc/%d/stat", (int) p->tgid);
                if (sampler_read_kept(s, &p->fd, path, &text) < 0 ||
                    thread_stat_parse(text, DISPLAY(s, path), &st, NULL) < 0) {
                        p->have = false;
                        continue;
                }
                uint64_t now = st.utime + st.stime;
                n_read++;
                if (p->have && now >= p->ticks)
                        ticks += now - p->ticks;
                p->ticks = now;
                p->have = true;
        }
        /* None to read (cgroup.procs unreadable, or every process gone):
         * the cgroup's use is unknown, never taken as quiet. */
        if (n_read == 0)
                return -ENOENT;
        *ret_delta_ns = ticks * (NSEC_PER_SEC / (uint64_t) MAX(s->clock_ticks, 1L));
        return 0;
}

int usage_sample(Sampler *s, CgroupCache *cc, uint64_t now_us) {
        uint64_t ns = 0, delta_ns = 0;
        bool own;
        int r;

        now_us = sampler_read_time_us(s, now_us);
        r = usage_own(s, cc, &ns);
        if (r == -ENOMEM)
                return r;
        if (r == -ENOENT && cc->v2)
                return r; /* cpu.stat is in every v2 cgroup: this one is gone */
        own = r >= 0;
        if (own) {
                delta_ns = cc->have_usage && ns >= cc->usage_ns ? ns - cc->usage_ns : 0;
                bool primed = cc->have_usage && ns >= cc->usage_ns;
                cc->usage_ns = ns;
                cc->have_usage = true;
                if (!primed) {
                        cc->usage_us = now_us;
                        return 0;
                }
        } else {
                if (usage_procs(s, cc, &delta_ns) < 0) {
                        cc->have_usage = cc->usage_primed = false;
                        return 0;
                }
                if (!cc->have_usage) {
                        cc->have_usage = true;
                        cc->usage_us = now_us;
                        return 0;
                }
        }

        uint64_t dt_us = now_us > cc->usage_us ? now_us - cc->usage_us : 0;
        cc->usage_us = now_us;
        if (dt_us == 0)
                return 0;
        double raw = (double) delta_ns * SCHED_CAPACITY_SCALE / ((double) dt_us * NSEC_PER_USEC);
        double alpha = ewma_alpha(dt_us, s->settings.smoothing_half_life_ms * USEC_PER_MSEC);
        cc->usage = cc->usage_primed ? ewma_update(cc->usage, raw, alpha) : raw;
        cc->usage_primed = true;
        return 0;
}
