/* SPDX-License-Identifier: MIT */
#include "policy.h"

bool policy_llc_overloaded(const LlcSample *l) {
        return l->nr_idle_scan * 2 < l->weight;
}

void policy_mark_overloaded(Snapshot *snap) {
        for (size_t i = 0; i < snap->n_llcs; i++)
                snap->llcs[i].overloaded = policy_llc_overloaded(&snap->llcs[i]);
}
