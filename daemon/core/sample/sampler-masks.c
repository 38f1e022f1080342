/* SPDX-License-Identifier: MIT */
#include "sampler-internal.h"

CpuSet sampler_mask_dup(Sampler *s, hwloc_const_bitmap_t src) {
        if (s->n_mask_pool == 0)
                return hwloc_bitmap_dup(src);
        CpuSet m = s->mask_pool[--s->n_mask_pool];
        if (hwloc_bitmap_copy(m, src) < 0) {
                hwloc_bitmap_free(m);
                return NULL;
        }
        return m;
}

static void pool_drain(Sampler *s) {
        for (size_t i = 0; i < s->n_mask_pool; i++)
                hwloc_bitmap_free(s->mask_pool[i]);
        s->n_mask_pool = 0;
}

void sampler_masks_done(Sampler *s) {
        pool_drain(s);
        free(s->mask_pool);
        s->mask_pool = NULL;
        s->alloc_mask_pool = 0;
}

void sampler_snapshot_recycle(Sampler *s, Snapshot *snap) {
        if (!snap)
                return;
        /* What the last sample did not take is more than a sample needs. */
        pool_drain(s);
        for (size_t i = 0; i < snap->n_cgroups; i++) {
                CgroupSample *c = &snap->cgroups[i];
                size_t room = s->alloc_mask_pool - s->n_mask_pool;
                if (room < c->n_threads) {
                        size_t n = MAX(s->alloc_mask_pool * 2, s->n_mask_pool + c->n_threads);
                        CpuSet *p = realloc(s->mask_pool, n * sizeof(CpuSet));
                        if (!p)
                                break; /* freed below, as ever */
                        s->mask_pool = p;
                        s->alloc_mask_pool = n;
                }
                for (size_t j = 0; j < c->n_threads; j++)
                        if (c->threads[j].allowed) {
                                s->mask_pool[s->n_mask_pool++] = c->threads[j].allowed;
                                c->threads[j].allowed = NULL;
                        }
        }
        snapshot_free(snap);
}
