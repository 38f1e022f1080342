/* SPDX-License-Identifier: MIT */
/* One JSON line of a --record stream, as `steerd --replay FILE` reads it:
 * snapshot_from_json_string(). A snapshot it accepts must write back
 * (snapshot_to_json_string(), what --record writes) as a line that it
 * accepts again, to the same structure. */
#include <math.h>

#include "fuzz.h"
#include "snapshot-json.h"

/* Figures are written with one decimal (json_double_1()). */
static bool same_figure(double a, double b) {
        return a > 1e12 || fabs(a - b) <= 0.05 + 1e-9 * a;
}

static bool same_set(hwloc_const_bitmap_t a, hwloc_const_bitmap_t b) {
        return (!a && !b) || (a && b && hwloc_bitmap_isequal(a, b));
}

static void check_same(const Snapshot *a, const Snapshot *b) {
        FUZZ_CHECK(a->time_us == b->time_us && a->period_us == b->period_us);
        FUZZ_CHECK(a->source == b->source && a->threads_truncated == b->threads_truncated);
        FUZZ_CHECK(same_figure(a->psi_some_avg10, b->psi_some_avg10));
        FUZZ_CHECK(same_figure(a->psi_full_avg10, b->psi_full_avg10));
        FUZZ_CHECK(a->n_llcs == b->n_llcs && a->n_cpus == b->n_cpus && a->n_cgroups == b->n_cgroups);
        for (size_t i = 0; i < a->n_llcs; i++) {
                const LlcSample *x = &a->llcs[i], *y = &b->llcs[i];
                FUZZ_CHECK(x->id == y->id && x->weight == y->weight && x->nr_idle_scan == y->nr_idle_scan);
                FUZZ_CHECK(x->overloaded == y->overloaded && same_set(x->cpus, y->cpus));
                FUZZ_CHECK(same_figure(x->util, y->util) && same_figure(x->boosted, y->boosted));
        }
        for (size_t i = 0; i < a->n_cpus; i++) {
                const CpuSample *x = &a->cpus[i], *y = &b->cpus[i];
                FUZZ_CHECK(x->cpu == y->cpu && x->llc == y->llc && x->core == y->core);
                FUZZ_CHECK(x->online == y->online && same_figure(x->util, y->util));
                FUZZ_CHECK(same_figure(x->runnable, y->runnable) && same_figure(x->boosted, y->boosted));
                FUZZ_CHECK(snapshot_cpu(a, x->cpu) == x);
        }
        for (size_t i = 0; i < a->n_cgroups; i++) {
                const CgroupSample *x = &a->cgroups[i], *y = &b->cgroups[i];
                FUZZ_CHECK(streq(x->path, y->path) && x->policy == y->policy);
                FUZZ_CHECK(same_set(x->allowed, y->allowed) && same_set(x->cpus, y->cpus));
                FUZZ_CHECK(same_figure(x->pressure_some_avg10, y->pressure_some_avg10));
                FUZZ_CHECK(x->n_threads == y->n_threads);
                for (size_t j = 0; j < x->n_threads; j++) {
                        const ThreadSample *s = &x->threads[j], *t = &y->threads[j];
                        FUZZ_CHECK(s->tid == t->tid && s->starttime == t->starttime && s->cpu == t->cpu);
                        FUZZ_CHECK(same_set(s->allowed, t->allowed));
                        FUZZ_CHECK(same_figure(s->util, t->util) && same_figure(s->wait, t->wait));
                        FUZZ_CHECK(s->run_delay_ns == t->run_delay_ns &&
                                   s->nr_migrations == t->nr_migrations);
                }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(freep) char *text = fuzz_string(data, size), *line = NULL;
        _cleanup_(snapshot_freep) Snapshot *s = NULL, *back = NULL;
        int r;

        r = snapshot_from_json_string(text, "stream.jsonl", 1, &s);
        if (r < 0) {
                FUZZ_CHECK(r == -EBADMSG || r == -ENOMEM);
                FUZZ_CHECK(!s);
                return 0;
        }
        FUZZ_CHECK(s);
        for (size_t i = 0; i < s->n_cpus; i++)
                FUZZ_CHECK(s->cpus[i].llc >= -1 && s->cpus[i].llc < (int) s->n_llcs);

        FUZZ_CHECK(snapshot_to_json_string(s, &line) == 0);
        r = snapshot_from_json_string(line, "written", 1, &back);
        if (r < 0)
                fprintf(stderr, "written back as: %s\n", line);
        FUZZ_CHECK(r == 0);
        check_same(s, back);
        return 0;
}
