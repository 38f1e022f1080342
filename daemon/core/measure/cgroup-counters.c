/* SPDX-License-Identifier: MIT */
#include "cgroup-counters.h"
#include "lines.h"
#include "proc-pressure.h"
#include "proc-thread.h"

void cgroup_counters_done(CgroupCounters *c) {
        free(c->threads);
        *c = (CgroupCounters){};
}

static int cmp_counter(const void *a, const void *b) {
        pid_t x = ((const ThreadCounter *) a)->tid, y = ((const ThreadCounter *) b)->tid;
        return (x > y) - (x < y);
}

int cgroup_counters_read(const RootDir *root, const CgroupLocation *loc, uint64_t now_us,
                         CgroupCounters *ret) {
        _cleanup_(freep) char *path = NULL, *list = NULL, *psi_text = NULL;
        _cleanup_(freep) ThreadCounter *threads = NULL;
        size_t n_lines = 0, n = 0;
        int r;

        if (asprintf(&path, "%s/%s", loc->dir, loc->v2 ? "cgroup.threads" : "tasks") < 0)
                return -ENOMEM;
        r = rootdir_read_file(root, path, &list, NULL);
        if (r < 0)
                return r;
        for (const char *p = list; *p; p++)
                n_lines += *p == '\n';
        threads = calloc(n_lines + 1, sizeof(ThreadCounter));
        if (!threads)
                return -ENOMEM;
        FOREACH_LINE(p, eol, list) {
                char buf[64], *end;
                size_t len = (size_t) (eol - p);
                if (len == 0 || len >= sizeof(buf))
                        continue;
                memcpy(buf, p, len);
                buf[len] = 0;
                errno = 0;
                long tid = strtol(buf, &end, 10);
                if (errno != 0 || *end || tid <= 0 || tid > INT32_MAX)
                        continue;
                _cleanup_(freep) char *ss_path = NULL, *ss = NULL;
                ThreadSchedstat st;
                if (asprintf(&ss_path, "/proc/%ld/task/%ld/schedstat", tid, tid) < 0)
                        return -ENOMEM;
                if (rootdir_read_file(root, ss_path, &ss, NULL) < 0 ||
                    thread_schedstat_parse(ss, ss_path, &st, NULL) < 0)
                        continue; /* it exited, or schedstat is off: it counts for nothing */
                threads[n++] = (ThreadCounter){
                        .tid = (pid_t) tid,
                        .run_ns = st.sum_exec_runtime_ns,
                        .run_delay_ns = st.run_delay_ns,
                        .pcount = st.pcount,
                };
        }
        qsort(threads, n, sizeof(ThreadCounter), cmp_counter);

        CgroupCounters c = {.at_us = now_us, .n = n};
        free(path);
        path = NULL;
        Psi psi;
        if (loc->v2 && asprintf(&path, "%s/cpu.pressure", loc->dir) >= 0 &&
            rootdir_read_file(root, path, &psi_text, NULL) >= 0 &&
            psi_parse(psi_text, path, &psi, NULL) >= 0) {
                c.has_pressure = true;
                c.pressure_some_us = psi.some_total;
        }
        c.threads = TAKE_PTR(threads);
        *ret = c;
        return 0;
}

static const ThreadCounter *find(const CgroupCounters *c, pid_t tid) {
        ThreadCounter key = {.tid = tid};
        return c->n ? bsearch(&key, c->threads, c->n, sizeof(ThreadCounter), cmp_counter) : NULL;
}

int cgroup_counters_values(const CgroupCounters *a, const CgroupCounters *b, TrialValues *ret) {
        TrialValues v = {};
        uint64_t delay = 0, slices = 0;

        if (b->at_us <= a->at_us)
                return -EINVAL;
        double dt = (double) (b->at_us - a->at_us) / 1e6;
        for (size_t i = 0; i < b->n; i++) {
                const ThreadCounter *now = &b->threads[i], *then = find(a, now->tid);
                /* Counters that went back belong to a new thread of the same id. */
                if (then && now->pcount >= then->pcount && now->run_delay_ns >= then->run_delay_ns) {
                        delay += now->run_delay_ns - then->run_delay_ns;
                        slices += now->pcount - then->pcount;
                } else {
                        delay += now->run_delay_ns;
                        slices += now->pcount;
                }
        }
        if (slices > 0) {
                v.has[TRIAL_SIGNAL_LATENCY] = delay > 0;
                v.v[TRIAL_SIGNAL_LATENCY] = (double) delay / (double) slices / 1e3;
                v.has[TRIAL_SIGNAL_SLICES] = true;
                v.v[TRIAL_SIGNAL_SLICES] = (double) slices / dt;
        }
        if (a->has_pressure && b->has_pressure && b->pressure_some_us > a->pressure_some_us) {
                v.has[TRIAL_SIGNAL_PRESSURE] = true;
                v.v[TRIAL_SIGNAL_PRESSURE] =
                        (double) (b->pressure_some_us - a->pressure_some_us) / (dt * 1e6) * 100;
        }
        *ret = v;
        return 0;
}

int cgroup_counters_load(const CgroupCounters *a, const CgroupCounters *b, double *ret_demand,
                         unsigned *ret_busy) {
        uint64_t ns = 0;
        unsigned busy = 0;

        if (!a || !b || !ret_demand || !ret_busy || b->at_us <= a->at_us)
                return -EINVAL;
        uint64_t dt_ns = (b->at_us - a->at_us) * NSEC_PER_USEC;
        for (size_t i = 0; i < b->n; i++) {
                const ThreadCounter *now = &b->threads[i], *then = find(a, now->tid);
                bool same = then && now->run_ns >= then->run_ns && now->run_delay_ns >= then->run_delay_ns;
                uint64_t run = same ? now->run_ns - then->run_ns : now->run_ns;
                uint64_t wait = same ? now->run_delay_ns - then->run_delay_ns : now->run_delay_ns;
                ns += run + wait;
                busy += run * 100 >= dt_ns;
        }
        *ret_demand = (double) ns / (double) dt_ns;
        *ret_busy = busy;
        return 0;
}
