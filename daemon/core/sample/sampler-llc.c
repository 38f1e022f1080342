/* SPDX-License-Identifier: MIT */
#include "sampler-internal.h"

int llc_samples_build(const Topology *topo, Snapshot *snap) {
        snap->llcs = calloc(MAX(topo->n_llcs, (size_t) 1), sizeof(LlcSample));
        if (!snap->llcs)
                return -ENOMEM;
        snap->n_llcs = topo->n_llcs;
        for (size_t l = 0; l < topo->n_llcs; l++) {
                LlcSample *ls = &snap->llcs[l];
                ls->id = (unsigned) l;
                ls->package = -1;
                ls->cpus = hwloc_bitmap_alloc();
                if (!ls->cpus)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < snap->n_cpus; i++) {
                const CpuSample *c = &snap->cpus[i];
                if (c->llc < 0)
                        continue;
                LlcSample *ls = &snap->llcs[c->llc];
                hwloc_bitmap_set(ls->cpus, c->cpu);
                if (ls->package < 0)
                        ls->package = topo->cpus[i].package;
                if (!c->online)
                        continue;
                ls->weight++;
                ls->util += c->util;
                ls->boosted += c->boosted;
        }
        for (size_t l = 0; l < snap->n_llcs; l++) {
                LlcSample *ls = &snap->llcs[l];
                if (ls->weight == 0)
                        continue;
                ls->util /= ls->weight;
                ls->boosted /= ls->weight;
                /* Whether that makes the LLC overloaded is the policy's rule
                 * (policy_llc_overloaded()), not the sampler's. */
                ls->nr_idle_scan = sis_nr_idle_scan(ls->util, ls->weight, SIS_IMBALANCE_PCT);
        }
        return 0;
}
