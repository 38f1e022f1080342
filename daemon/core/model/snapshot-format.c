/* SPDX-License-Identifier: MIT */
#include "snapshot-format.h"

static double pct(double v) {
        return v * 100.0 / SCHED_CAPACITY_SCALE;
}

int snapshot_format_text(const Snapshot *s, const char *topology_source, FILE *f) {
        char buf[CPUSET_STRLEN];
        unsigned online = 0;

        for (size_t i = 0; i < s->n_cpus; i++)
                online += s->cpus[i].online;

        fprintf(f, "Topology: %s: %zu CPUs (%u online), %zu LLCs\n",
                topology_source ? topology_source : "live", s->n_cpus, online, s->n_llcs);
        fprintf(f, "Interval: %.1f ms; runnable from: %s%s\n", s->period_us / 1000.0,
                runnable_source_to_string(s->source),
                s->threads_truncated ? " (thread scan truncated)" : "");
        fprintf(f, "CPU pressure: some avg10 %.2f%%, full avg10 %.2f%%\n\n", s->psi_some_avg10,
                s->psi_full_avg10);

        fprintf(f, "%-4s %-16s %6s %14s %14s %12s %10s\n", "LLC", "CPUS", "WEIGHT", "UTIL", "BOOSTED",
                "NR_IDLE_SCAN", "OVERLOADED");
        for (size_t i = 0; i < s->n_llcs; i++) {
                const LlcSample *l = &s->llcs[i];
                fprintf(f, "%-4u %-16s %6u %7.0f %5.1f%% %7.0f %5.1f%% %12u %10s\n", l->id,
                        cpuset_to_string(l->cpus, buf, sizeof(buf)), l->weight, l->util, pct(l->util),
                        l->boosted, pct(l->boosted), l->nr_idle_scan, l->overloaded ? "yes" : "no");
        }

        fprintf(f, "\n%-5s %4s %5s %6s %14s %14s %14s\n", "CPU", "LLC", "CORE", "ONLINE", "UTIL", "RUNNABLE",
                "BOOSTED");
        for (size_t i = 0; i < s->n_cpus; i++) {
                const CpuSample *c = &s->cpus[i];
                if (!c->online) {
                        fprintf(f, "%-5u %4d %5d %6s %14s %14s %14s\n", c->cpu, c->llc, c->core, "no", "-",
                                "-", "-");
                        continue;
                }
                fprintf(f, "%-5u %4d %5d %6s %7.0f %5.1f%% %7.0f %5.1f%% %7.0f %5.1f%%\n", c->cpu, c->llc,
                        c->core, "yes", c->util, pct(c->util), c->runnable, pct(c->runnable), c->boosted,
                        pct(c->boosted));
        }

        for (size_t i = 0; i < s->n_cgroups; i++) {
                const CgroupSample *c = &s->cgroups[i];
                char buf2[CPUSET_STRLEN];
                fprintf(f, "\nCgroup %s (policy %s): CPUs %s of %s, %zu threads, pressure some avg10 %.2f%%",
                        c->path, cgroup_policy_to_string(c->policy),
                        cpuset_to_string(c->cpus, buf, sizeof(buf)),
                        cpuset_to_string(c->allowed, buf2, sizeof(buf2)), c->n_members,
                        c->pressure_some_avg10);
                if (c->usage >= 0)
                        fprintf(f, ", usage %.0f (%.1f%%)", c->usage, pct(c->usage));
                if (c->threads_partial)
                        fprintf(f, "; quiet: %zu held thread%s read", c->n_threads,
                                c->n_threads == 1 ? "" : "s");
                fputc('\n', f);
                if (c->n_threads == 0)
                        continue;
                fprintf(f, "  %-8s %4s %-16s %14s %14s %12s\n", "TID", "CPU", "ALLOWED", "UTIL", "WAIT",
                        "MIGRATIONS");
                for (size_t j = 0; j < c->n_threads; j++) {
                        const ThreadSample *t = &c->threads[j];
                        fprintf(f, "  %-8d %4d %-16s %7.0f %5.1f%% %7.0f %5.1f%% %12llu\n", (int) t->tid,
                                t->cpu, cpuset_to_string(t->allowed, buf, sizeof(buf)), t->util,
                                pct(t->util), t->wait, pct(t->wait), (unsigned long long) t->nr_migrations);
                }
        }
        return ferror(f) ? -EIO : 0;
}
