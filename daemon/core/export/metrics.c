/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <inttypes.h>

#include "log.h"
#include "metrics.h"

/* A label value: backslash, double quote and newline escaped. */
static void label_value(FILE *f, const char *s) {
        for (; s && *s; s++) {
                if (*s == '\\' || *s == '"')
                        fputc('\\', f);
                if (*s == '\n') {
                        fputs("\\n", f);
                        continue;
                }
                fputc(*s, f);
        }
}

/* Trials, per cgroup: label values escaped as the format wants. */
static void render_trials(FILE *f, const MetricsCounters *c) {
        static const struct {
                const char *name, *help;
                size_t field; /* 0 ratio, 1 low, 2 high */
        } trial_families[] = {
                {"steerd_trial_effect_ratio",
                 "The cgroup's latest trial: steered / hands-off of its primary signal (below 1 for a "
                 "latency "
                 "that dropped, above 1 for a rate that rose).",
                 0},
                {"steerd_trial_effect_ratio_ci_low",
                 "The 95% interval's low end of steerd_trial_effect_ratio.", 1},
                {"steerd_trial_effect_ratio_ci_high",
                 "The 95% interval's high end of steerd_trial_effect_ratio.", 2},
        };
        for (size_t k = 0; k < ELEMENTSOF(trial_families); k++) {
                fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", trial_families[k].name, trial_families[k].help,
                        trial_families[k].name);
                for (size_t i = 0; i < c->n_trials; i++) {
                        const MetricsTrial *t = &c->trials[i];
                        if (!t->has_estimate)
                                continue;
                        double v = trial_families[k].field == 0   ? t->ratio
                                   : trial_families[k].field == 1 ? t->ci_low
                                                                  : t->ci_high;
                        fprintf(f, "%s{cgroup=\"", trial_families[k].name);
                        label_value(f, t->cgroup);
                        fprintf(f, "\"} %.6g\n", v);
                }
        }
        fprintf(f,
                "# HELP steerd_trial_verdict The cgroup's latest trial's verdict (1 for the one it says); "
                "running: 1 while it runs.\n# TYPE steerd_trial_verdict gauge\n");
        for (size_t i = 0; i < c->n_trials; i++) {
                const MetricsTrial *t = &c->trials[i];
                fprintf(f, "steerd_trial_verdict{cgroup=\"");
                label_value(f, t->cgroup);
                fprintf(f, "\",verdict=\"%s\",running=\"%s\"} 1\n",
                        streq(t->verdict, "can't tell") ? "cant_tell" : t->verdict,
                        t->running ? "yes" : "no");
        }
}

/* Per opted-in cgroup. A label per cgroup is a series per cgroup in every
 * Prometheus that scrapes the host: past cgroups_limit the rest are summed
 * under METRICS_CGROUP_OTHER, and steerd_cgroups_aggregated says how many. */
static void render_cgroups(FILE *f, const MetricsCounters *c) {
        static const struct {
                const char *name, *type, *help;
        } fam[] = {
                {"steerd_cgroup_actions_total", "counter",
                 "Changes steerd made to the cgroup's or its threads' CPUs (windows, pins, moves)."},
                {"steerd_cgroup_reverts_total", "counter",
                 "Of those, the ones the guard judged worse and undid."},
                {"steerd_cgroup_givebacks_total", "counter",
                 "Masks given back for another reason than the guard (calm, idle, opt-out, mode)."},
                {"steerd_cgroup_window_cpus", "gauge", "CPUs of the cgroup's scan window now (0: none)."},
                {"steerd_cgroup_pinned_threads", "gauge",
                 "The cgroup's threads on a mask of steerd's now (pinned where they last ran, or moved)."},
                {"steerd_cgroup_steering", "gauge",
                 "1 while steerd steers the cgroup; 0 in a trial's hands-off block or where Evaluate=auto "
                 "turned steering off."},
        };
        size_t own = MIN(c->n_cgroups, (size_t) c->cgroups_limit);
        MetricsCgroup other = {.cgroup = METRICS_CGROUP_OTHER};
        uint64_t other_steered = 0; /* a count: MetricsCgroup.steering is one cgroup's yes or no */

        for (size_t i = own; i < c->n_cgroups; i++) {
                const MetricsCgroup *g = &c->cgroups[i];
                other.actions += g->actions;
                other.reverts += g->reverts;
                other.givebacks += g->givebacks;
                other.window_cpus += g->window_cpus;
                other.pinned_threads += g->pinned_threads;
                other_steered += g->steering ? 1 : 0;
        }
        for (size_t k = 0; k < ELEMENTSOF(fam); k++) {
                fprintf(f, "# HELP %s %s%s\n# TYPE %s %s\n", fam[k].name, fam[k].help,
                        k == ELEMENTSOF(fam) - 1 ? " For cgroup=\"" METRICS_CGROUP_OTHER "\": how many are."
                                                 : "",
                        fam[k].name, fam[k].type);
                for (size_t i = 0; i <= own; i++) {
                        const MetricsCgroup *g = i < own ? &c->cgroups[i] : &other;
                        uint64_t v;
                        if (i == own && own == c->n_cgroups)
                                break;
                        switch (k) {
                        case 0:
                                v = g->actions;
                                break;
                        case 1:
                                v = g->reverts;
                                break;
                        case 2:
                                v = g->givebacks;
                                break;
                        case 3:
                                v = g->window_cpus;
                                break;
                        case 4:
                                v = g->pinned_threads;
                                break;
                        default:
                                v = i < own ? (g->steering ? 1 : 0) : other_steered;
                                break;
                        }
                        fprintf(f, "%s{cgroup=\"", fam[k].name);
                        label_value(f, g->cgroup);
                        fprintf(f, "\"} %" PRIu64 "\n", v);
                }
        }
        fprintf(f,
                "# HELP steerd_cgroups_aggregated Opted-in cgroups beyond MetricsCgroups, summed under "
                "cgroup=\"" METRICS_CGROUP_OTHER "\".\n# TYPE steerd_cgroups_aggregated gauge\n"
                "steerd_cgroups_aggregated %zu\n",
                c->n_cgroups - own);
}

/* steerd itself: what it costs, whether it is stuck. */
static void render_self(FILE *f, const MetricsCounters *c) {
        fprintf(f,
                "# HELP steerd_givebacks_failed_total Give-backs that failed (the bus down, the kernel "
                "refused), each attempt; the record is kept and tried again.\n"
                "# TYPE steerd_givebacks_failed_total counter\nsteerd_givebacks_failed_total %" PRIu64 "\n"
                "# HELP steerd_givebacks_pending Cgroups whose give-back failed and waits for a retry now.\n"
                "# TYPE steerd_givebacks_pending gauge\nsteerd_givebacks_pending %zu\n",
                c->givebacks_failed, c->givebacks_pending);
        if (c->cpu_seconds >= 0)
                fprintf(f,
                        "# HELP steerd_cpu_seconds_total CPU time steerd itself used, user and system.\n"
                        "# TYPE steerd_cpu_seconds_total counter\nsteerd_cpu_seconds_total %.6f\n",
                        c->cpu_seconds);
        if (c->rss_bytes > 0)
                fprintf(f,
                        "# HELP steerd_resident_memory_bytes steerd's resident memory.\n"
                        "# TYPE steerd_resident_memory_bytes gauge\nsteerd_resident_memory_bytes %" PRIu64
                        "\n",
                        c->rss_bytes);
        if (c->write_time > 0)
                fprintf(f,
                        "# HELP steerd_last_write_timestamp_seconds When steerd wrote this file (a file "
                        "that stops changing is a steerd that stopped).\n"
                        "# TYPE steerd_last_write_timestamp_seconds gauge\n"
                        "steerd_last_write_timestamp_seconds %.3f\n",
                        c->write_time);
}

int metrics_render(const Snapshot *s, const MetricsCounters *c, char **ret) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return -ENOMEM;

        fputs("# HELP steerd_llc_util Mean utilisation per online CPU of the LLC (1024 = one busy CPU).\n"
              "# TYPE steerd_llc_util gauge\n",
              f);
        for (size_t i = 0; s && i < s->n_llcs; i++)
                fprintf(f, "steerd_llc_util{llc=\"%u\"} %.1f\n", s->llcs[i].id, s->llcs[i].util);
        fputs("# HELP steerd_llc_boosted Mean min(max(util, runnable), 1024) per online CPU of the LLC.\n"
              "# TYPE steerd_llc_boosted gauge\n",
              f);
        for (size_t i = 0; s && i < s->n_llcs; i++)
                fprintf(f, "steerd_llc_boosted{llc=\"%u\"} %.1f\n", s->llcs[i].id, s->llcs[i].boosted);
        fputs("# HELP steerd_llc_nr_idle_scan CPUs the kernel's SIS_UTIL wakeup scan would visit.\n"
              "# TYPE steerd_llc_nr_idle_scan gauge\n",
              f);
        for (size_t i = 0; s && i < s->n_llcs; i++)
                fprintf(f, "steerd_llc_nr_idle_scan{llc=\"%u\"} %u\n", s->llcs[i].id,
                        s->llcs[i].nr_idle_scan);
        fputs("# HELP steerd_llc_weight Online CPUs of the LLC.\n# TYPE steerd_llc_weight gauge\n", f);
        for (size_t i = 0; s && i < s->n_llcs; i++)
                fprintf(f, "steerd_llc_weight{llc=\"%u\"} %u\n", s->llcs[i].id, s->llcs[i].weight);
        fputs("# HELP steerd_llc_overloaded 1 when the LLC is overloaded (nr_idle_scan < weight/2).\n"
              "# TYPE steerd_llc_overloaded gauge\n",
              f);
        for (size_t i = 0; s && i < s->n_llcs; i++)
                fprintf(f, "steerd_llc_overloaded{llc=\"%u\"} %d\n", s->llcs[i].id,
                        s->llcs[i].overloaded ? 1 : 0);
        if (s)
                fprintf(f,
                        "# HELP steerd_cpu_pressure_some_avg10 /proc/pressure/cpu some avg10, percent.\n"
                        "# TYPE steerd_cpu_pressure_some_avg10 gauge\nsteerd_cpu_pressure_some_avg10 %.2f\n",
                        s->psi_some_avg10);

        const struct {
                const char *name, *help;
                uint64_t v;
        } counters[] = {
                {"steerd_ticks_total", "Samples taken.", c->ticks},
                {"steerd_actions_applied_total", "Actions applied.", c->applied},
                {"steerd_actions_kept_total", "Actions the guard judged not worse.", c->kept},
                {"steerd_actions_reverted_total", "Actions the guard reverted.", c->reverted},
                {"steerd_actions_restored_total", "Masks given back (opt-out, mode change, release).",
                 c->restored},
                {"steerd_actions_failed_total", "Actions that could not be applied.", c->failed},
                {"steerd_threads_adopted_total", "New threads steered at once through the proc connector.",
                 c->adopted},
                {"steerd_actions_dropped_total",
                 "Actions the policy engine decided and its checker refused (a bug when not 0).",
                 c->dropped},
        };
        for (size_t i = 0; i < ELEMENTSOF(counters); i++)
                fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", counters[i].name,
                        counters[i].help, counters[i].name, counters[i].name, counters[i].v);
        fprintf(f,
                "# HELP steerd_opted_in_cgroups Opted-in cgroups.\n# TYPE steerd_opted_in_cgroups gauge\n"
                "steerd_opted_in_cgroups %" PRIu64 "\n",
                c->opted_in_cgroups);
        fprintf(f,
                "# HELP steerd_mode The mode steerd is in.\n# TYPE steerd_mode "
                "gauge\nsteerd_mode{mode=\"%s\"} 1\n",
                c->mode ? c->mode : "unknown");

        render_trials(f, c);
        render_cgroups(f, c);
        render_self(f, c);

        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}

int metrics_write(const char *path, const Snapshot *s, const MetricsCounters *c) {
        _cleanup_(freep) char *text = NULL, *tmp = NULL;
        int r;

        r = metrics_render(s, c, &text);
        if (r < 0)
                return r;
        /* node_exporter ignores files not ending in .prom: the temporary one is
         * invisible to it even in the same directory. */
        if (asprintf(&tmp, "%s.%d.tmp", path, (int) getpid()) < 0)
                return -ENOMEM;
        _cleanup_(closep) int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return negative_errno();
        size_t len = strlen(text);
        if (write(fd, text, len) != (ssize_t) len) {
                r = negative_errno();
                (void) unlink(tmp);
                return r;
        }
        if (rename(tmp, path) < 0) {
                r = negative_errno();
                (void) unlink(tmp);
                return r;
        }
        return 0;
}
