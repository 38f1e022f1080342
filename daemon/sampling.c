/* SPDX-License-Identifier: MIT */
#include <time.h>

#include "cgroup-confine.h"
#include "log.h"
#include "policy.h"
#include "sampling.h"

void resolved_cgroups_done(ResolvedCgroups *r) {
        for (size_t i = 0; i < r->n; i++)
                cgroup_location_done(&r->locations[i]);
        free(r->items);
        free(r->locations);
        *r = (ResolvedCgroups){};
}

int resolve_config_cgroups(const RootDir *root, const Config *config, ResolvedCgroups *ret) {
        CgroupMounts mounts = {};
        ResolvedCgroups rc = {};
        int r;

        if (config->n_opt_ins == 0) {
                *ret = rc;
                return 0;
        }
        r = cgroup_mounts_read(root, &mounts);
        if (r < 0)
                return log_error_errno(r, "Cannot read the cgroup mounts");

        rc.items = calloc(config->n_opt_ins, sizeof(SamplerCgroup));
        rc.locations = calloc(config->n_opt_ins, sizeof(CgroupLocation));
        if (!rc.items || !rc.locations) {
                cgroup_mounts_done(&mounts);
                resolved_cgroups_done(&rc);
                return -ENOMEM;
        }
        for (size_t i = 0; i < config->n_opt_ins; i++) {
                const OptInEntry *e = &config->opt_ins[i];
                char why[CGROUP_WHY_MAX];
                r = cgroup_resolve_full(root, &mounts, e->cgroup, &rc.locations[rc.n], why, sizeof(why));
                if (r == CGROUP_NOT_CONFINED) {
                        log_warning("Opted-in cgroup %s: refused: %s; skipping it", e->cgroup, why);
                        continue;
                }
                if (r < 0) {
                        log_warning_errno(
                                r, "Opted-in cgroup %s: not found in any cgroup hierarchy; skipping it",
                                e->cgroup);
                        continue;
                }
                rc.items[rc.n] = (SamplerCgroup){
                        .name = e->cgroup,
                        .loc = &rc.locations[rc.n],
                        .policy = e->policy,
                };
                rc.n++;
        }
        cgroup_mounts_done(&mounts);
        *ret = rc;
        return 0;
}

uint64_t now_monotonic_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

int sample_snapshot(Sampler *s, uint64_t now_us, const SamplerCgroup *cgroups, size_t n_cgroups,
                    Snapshot **ret) {
        Snapshot *snap = NULL;
        int r = sampler_sample(s, now_us, cgroups, n_cgroups, &snap);
        if (r < 0)
                return r;
        policy_mark_overloaded(snap);
        *ret = snap;
        return 0;
}

void sampling_setup_done(SamplingSetup *s) {
        resolved_cgroups_done(&s->cgroups);
        sampler_free(s->sampler);
        topology_free(s->topo);
        rootdir_free(s->root);
        *s = (SamplingSetup){};
}

int sampling_open_root(const char *root, const char *topology, RootDir **ret_root, Topology **ret_topo) {
        _cleanup_(rootdir_freep) RootDir *rd = NULL;
        _cleanup_(topology_freep) Topology *topo = NULL;
        int r;

        r = rootdir_open(root ?: "/", &rd);
        if (r < 0)
                return log_error_errno(r, "Cannot open root directory %s", root ?: "/");
        r = topology_load(rd, topology, &topo);
        if (r < 0)
                return log_error_errno(r, "Cannot load the topology (%s)", topology ?: "live");
        *ret_root = TAKE_PTR(rd);
        *ret_topo = TAKE_PTR(topo);
        return 0;
}

int sampling_setup(const char *root, const char *topology, const Config *config, SamplingSetup *ret) {
        _cleanup_(sampling_setup_done) SamplingSetup s = {};
        int r;

        r = sampling_open_root(root, topology, &s.root, &s.topo);
        if (r < 0)
                return r;
        r = sampler_new(s.root, s.topo, &config->settings, &s.sampler);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the sampler");
        r = resolve_config_cgroups(s.root, config, &s.cgroups);
        if (r < 0)
                return r;
        *ret = s;
        s = (SamplingSetup){};
        return 0;
}
