/* SPDX-License-Identifier: MIT */
#pragma once

/* The opted-in cgroups of a config, resolved to where they live, as the
 * sampler wants them. Used by --once and --record; the daemon keeps its own
 * live list (config, xattrs, runtime opt-ins). */

#include "config.h"
#include "sampler.h"
#include "topology.h"

typedef struct ResolvedCgroups {
        SamplerCgroup *items;
        CgroupLocation *locations;
        size_t n;
} ResolvedCgroups;

void resolved_cgroups_done(ResolvedCgroups *r);
/* A cgroup that does not exist is reported and left out; not an error. */
int resolve_config_cgroups(const RootDir *root, const Config *config, ResolvedCgroups *ret);

uint64_t now_monotonic_us(void);

/* sampler_sample(), then the LLCs' overloaded flags by the policy's rule
 * (policy_mark_overloaded()): every snapshot steerd shows or records. */
int sample_snapshot(Sampler *s, uint64_t now_us, const SamplerCgroup *cgroups, size_t n_cgroups,
                    Snapshot **ret);

/* What --once and --record sample with. */
typedef struct SamplingSetup {
        RootDir *root;
        Topology *topo;
        Sampler *sampler;
        ResolvedCgroups cgroups;
} SamplingSetup;

/* Open root (NULL: "/") and load the topology (NULL: the host's). */
int sampling_open_root(const char *root, const char *topology, RootDir **ret_root, Topology **ret_topo);
int sampling_setup(const char *root, const char *topology, const Config *config, SamplingSetup *ret);
void sampling_setup_done(SamplingSetup *s);
