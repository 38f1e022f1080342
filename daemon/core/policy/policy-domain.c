/* SPDX-License-Identifier: MIT */
/* Window domains: where the window policy places windows (policy-internal.h). */

#include "policy-internal.h"

void policy_domains_done(WindowDomains *w) {
        for (size_t i = 0; w->d && i < w->n; i++) {
                if (w->d[i].n_llcs > 1)
                        hwloc_bitmap_free(w->d[i].view.cpus);
                hwloc_bitmap_free(w->d[i].online);
        }
        free(w->d);
        free(w->llc_domain);
        *w = (WindowDomains){};
}

/* The LLC's online cores, counted up to two: 0, 1, or 2 for two or more. */
static void count_cores(const Snapshot *snap, int *first_core, unsigned *n_cores) {
        for (size_t l = 0; l < snap->n_llcs; l++)
                first_core[l] = -1;
        for (size_t i = 0; i < snap->n_cpus; i++) {
                const CpuSample *c = &snap->cpus[i];
                if (!c->online || c->llc < 0 || (size_t) c->llc >= snap->n_llcs || c->core < 0)
                        continue;
                if (first_core[c->llc] < 0) {
                        first_core[c->llc] = c->core;
                        n_cores[c->llc] = 1;
                } else if (c->core != first_core[c->llc])
                        n_cores[c->llc] = 2;
        }
}

/* An LLC of one core, in a known package: a candidate to share a domain. */
static bool one_core(const Snapshot *snap, const unsigned *n_cores, size_t l) {
        return n_cores[l] == 1 && snap->llcs[l].package >= 0 && snap->llcs[l].weight > 0;
}

static int domain_merge(const Snapshot *snap, WindowDomain *d, const unsigned *n_cores, size_t first) {
        _cleanup_cpuset_ CpuSet ids = hwloc_bitmap_alloc();
        double util = 0, boosted = 0;
        unsigned weight = 0;
        char list[CPUSET_STRLEN];

        if (!ids)
                return -ENOMEM;
        d->view.cpus = hwloc_bitmap_alloc();
        if (!d->view.cpus)
                return -ENOMEM;
        for (size_t l = first; l < snap->n_llcs; l++) {
                const LlcSample *x = &snap->llcs[l];
                if (!one_core(snap, n_cores, l) || x->package != snap->llcs[first].package)
                        continue;
                hwloc_bitmap_or(d->view.cpus, d->view.cpus, x->cpus);
                hwloc_bitmap_set(ids, (unsigned) l);
                util += x->util * x->weight;
                boosted += x->boosted * x->weight;
                weight += x->weight;
        }
        d->view.weight = weight;
        d->view.util = util / weight;
        d->view.boosted = boosted / weight;
        d->view.nr_idle_scan = sis_nr_idle_scan(d->view.util, weight, SIS_IMBALANCE_PCT);
        d->view.overloaded = false;
        snprintf(d->label, sizeof(d->label), "llcs %s (package %d)",
                 cpuset_to_string(ids, list, sizeof(list)), snap->llcs[first].package);
        return 0;
}

int policy_domains_build(const Snapshot *snap, WindowDomains *ret) {
        _cleanup_(policy_domains_done) WindowDomains w = {};
        _cleanup_(freep) int *first_core = calloc(MAX(snap->n_llcs, (size_t) 1), sizeof(int));
        _cleanup_(freep) unsigned *n_cores = calloc(MAX(snap->n_llcs, (size_t) 1), sizeof(unsigned));
        _cleanup_(freep) int *pkg_domain = NULL; /* per package: its one-core LLCs' domain, -1: none yet */
        int max_pkg = -1, r;

        w.d = calloc(MAX(snap->n_llcs, (size_t) 1), sizeof(WindowDomain));
        w.llc_domain = calloc(MAX(snap->n_llcs, (size_t) 1), sizeof(int));
        for (size_t l = 0; l < snap->n_llcs; l++)
                max_pkg = MAX(max_pkg, snap->llcs[l].package);
        pkg_domain = malloc(((size_t) max_pkg + 1) * sizeof(int) + 1);
        if (!w.d || !w.llc_domain || !first_core || !n_cores || !pkg_domain)
                return -ENOMEM;
        for (int p = 0; p <= max_pkg; p++)
                pkg_domain[p] = -1;
        count_cores(snap, first_core, n_cores);

        for (size_t l = 0; l < snap->n_llcs; l++) {
                int *joined = one_core(snap, n_cores, l) ? &pkg_domain[snap->llcs[l].package] : NULL;
                if (joined && *joined >= 0) {
                        /* The domain of an earlier one-core LLC of its package. */
                        w.llc_domain[l] = *joined;
                        w.d[*joined].n_llcs++;
                        continue;
                }
                WindowDomain *d = &w.d[w.n];
                *d = (WindowDomain){.id = (int) l, .view = snap->llcs[l], .n_llcs = 1};
                snprintf(d->label, sizeof(d->label), "llc %zu", l);
                w.llc_domain[l] = (int) w.n++;
                if (joined)
                        *joined = w.llc_domain[l];
        }
        for (size_t i = 0; i < w.n; i++) {
                WindowDomain *d = &w.d[i];
                if (d->n_llcs > 1) {
                        r = domain_merge(snap, d, n_cores, (size_t) d->id);
                        if (r < 0)
                                return r;
                }
                d->online = hwloc_bitmap_alloc();
                if (!d->online)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < snap->n_cpus; i++) {
                const CpuSample *c = &snap->cpus[i];
                if (c->online && c->llc >= 0 && (size_t) c->llc < snap->n_llcs)
                        hwloc_bitmap_set(w.d[w.llc_domain[c->llc]].online, c->cpu);
        }
        *ret = w;
        w = (WindowDomains){};
        return 0;
}

const WindowDomain *policy_domain_by_id(const WindowDomains *w, int id) {
        if (id < 0 || !w->llc_domain)
                return NULL;
        for (size_t i = 0; i < w->n; i++)
                if (w->d[i].id == id)
                        return &w->d[i];
        return NULL;
}

int policy_mask_domain(const Snapshot *snap, const WindowDomains *w, hwloc_const_bitmap_t mask) {
        int domain = -1, cpu;

        if (!mask || hwloc_bitmap_iszero(mask))
                return -1;
        hwloc_bitmap_foreach_begin(cpu, mask) {
                const CpuSample *s = snapshot_cpu(snap, (unsigned) cpu);
                if (!s || s->llc < 0 || (size_t) s->llc >= snap->n_llcs)
                        return -1;
                int d = w->d[w->llc_domain[s->llc]].id;
                if (domain >= 0 && d != domain)
                        return -1;
                domain = d;
        }
        hwloc_bitmap_foreach_end();
        return domain;
}
