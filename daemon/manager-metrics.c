/* SPDX-License-Identifier: MIT */
/* The metrics file (docs/METRICS.md): what the manager knows, rendered by
 * metrics.c every MetricsIntervalMs. */
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "manager-evaluate.h"
#include "manager-internal.h"
#include "manager-trial.h"
#include "metrics.h"

/* steerd's own CPU time and resident memory. Its own process, never the
 * host's: read from the real /proc/self, not through the root directory (a
 * fixture root has no steerd in it). */
static void self_cost(double *ret_cpu_seconds, uint64_t *ret_rss_bytes) {
        struct rusage ru;
        unsigned long size, resident;

        *ret_cpu_seconds = -1;
        *ret_rss_bytes = 0;
        if (getrusage(RUSAGE_SELF, &ru) == 0)
                *ret_cpu_seconds = (double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec / 1e6 +
                                   (double) ru.ru_stime.tv_sec + (double) ru.ru_stime.tv_usec / 1e6;
        _cleanup_(fclosep) FILE *f = fopen("/proc/self/statm", "re");
        if (f && fscanf(f, "%lu %lu", &size, &resident) == 2)
                *ret_rss_bytes = (uint64_t) resident * (uint64_t) sysconf(_SC_PAGESIZE);
}

/* Each opted-in cgroup as the engine holds it, in the opt-ins' order (by name). */
static int cgroup_metrics(const Manager *m, MetricsCgroup **ret) {
        _cleanup_(freep) MetricsCgroup *g = calloc(MAX(m->optins.n, (size_t) 1), sizeof(MetricsCgroup));

        if (!g)
                return -ENOMEM;
        for (size_t i = 0; i < m->optins.n; i++) {
                const char *name = m->optins.items[i].name;
                PolicyCgroupFigures fig = {};
                (void) policy_state_cgroup_figures(m->policy, name, &fig);
                g[i] = (MetricsCgroup){
                        .cgroup = name,
                        .actions = fig.counters.applied,
                        .reverts = fig.counters.reverted,
                        .givebacks = fig.counters.restored,
                        .window_cpus = fig.window_cpus,
                        .pinned_threads = fig.held_threads,
                        .steering = !manager_trial_hands_off(m, name) &&
                                    !manager_evaluation_hands_off(m, name) &&
                                    !manager_evaluation_steering_off(m, name),
                };
        }
        *ret = TAKE_PTR(g);
        return 0;
}

void manager_write_metrics(Manager *m, uint64_t now_us) {
        const Settings *st = &m->config->settings;
        ManagerCounters mc;
        _cleanup_(freep) MetricsTrial *trials = NULL;
        _cleanup_(freep) MetricsCgroup *cgroups = NULL;
        size_t n_trials = 0;

        if (!st->metrics_file[0] || now_us - m->metrics_written_us < st->metrics_interval_ms * USEC_PER_MSEC)
                return;
        manager_counters(m, &mc);
        (void) manager_trial_metrics(m, &trials, &n_trials);
        if (cgroup_metrics(m, &cgroups) < 0)
                cgroups = NULL;
        MetricsCounters c = {
                .ticks = mc.ticks,
                .applied = mc.applied,
                .kept = mc.kept,
                .reverted = mc.reverted,
                .restored = mc.restored,
                .failed = mc.failed,
                .adopted = mc.adopted,
                .dropped = mc.dropped,
                .opted_in_cgroups = m->optins.n,
                .mode = mode_to_string(m->mode),
                .trials = trials,
                .n_trials = n_trials,
                .cgroups = cgroups,
                .n_cgroups = cgroups ? m->optins.n : 0,
                .cgroups_limit = st->metrics_cgroups,
        };
        actuator_giveback_counts(m->actuator, &c.givebacks_failed, &c.givebacks_pending);
        self_cost(&c.cpu_seconds, &c.rss_bytes);
        c.write_time = (double) now_realtime_usec() / (double) USEC_PER_SEC;
        int r = metrics_write(st->metrics_file, m->last_snapshot, &c);
        if (r < 0 && m->metrics_written_us == 0)
                log_warning_errno(r, "Cannot write the metrics file %s", st->metrics_file);
        m->metrics_written_us = now_us;
}
