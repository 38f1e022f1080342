/* SPDX-License-Identifier: MIT */
#pragma once

/* The CPU topology as the policies see it, copied out of hwloc into plain
 * arrays so that the rest of steerd never walks an hwloc tree and a snapshot
 * of it can be kept and compared cheaply when CPUs are hotplugged.
 *
 * A CPU's LLC is its highest-level data or unified cache ancestor
 * (instruction caches never count): L3 where there is one, else L2 even when
 * it is private to one core (Ampere Altra: one LLC per CPU, level 2). A CPU
 * without any such cache ancestor (a topology with no caches at all, e.g. a
 * bare synthetic string) gets its package as the LLC, or the whole machine
 * when there is no package either; such LLCs have level 0 and size 0.
 *
 * CPU ids are OS indexes everywhere and may be sparse or permuted. */

#include <stdbool.h>
#include <stdint.h>

#include "cpuset.h"
#include "rootdir.h"
#include "steerd-macros.h"

typedef struct TopoCpu {
        unsigned cpu; /* OS index */
        int core; /* dense index into Topology.cores, -1 if unknown (e.g. offline CPU absent from the tree)
                   */
        int llc;  /* dense index into Topology.llcs, -1 if unknown */
        int package; /* hwloc logical index, -1 if unknown; offline CPUs are placed by complete_cpuset */
        int numa;    /* hwloc logical NUMA node index (nearest node), -1 if unknown */
        int kind;    /* hwloc cpukind index (0 = least efficient as hwloc orders them), -1 if no kinds */
        bool online; /* in hwloc's topology cpuset (not only in complete_cpuset) */
} TopoCpu;

/* SMT siblings. A PU without a core parent (some synthetic strings) is a
 * core of its own. */
typedef struct TopoCore {
        CpuSet cpus;
        int llc; /* -1 only if its CPUs disagree, which real trees never do */
} TopoCore;

typedef struct TopoLlc {
        CpuSet cpus;    /* online CPUs only */
        unsigned level; /* cache depth: 3 for L3, 2 for L2, 0 if no cache at all */
        uint64_t size;  /* bytes, 0 if unknown */
        unsigned n_cores;
} TopoLlc;

typedef struct Topology {
        TopoCpu *cpus; /* sorted by OS index; every CPU of complete_cpuset */
        size_t n_cpus;
        TopoCore *cores; /* numbered in order of their lowest CPU */
        size_t n_cores;
        TopoLlc *llcs; /* numbered in order of their lowest CPU */
        size_t n_llcs;
        unsigned n_packages, n_numa, n_kinds; /* 0 when the topology has none */
        unsigned smt_width;                   /* max CPUs per core */
        CpuSet all, online;
        char *source; /* "live", "live:<root>", the XML path, or "synthetic:<string>"; for messages */
} Topology;

/* source:
 *   NULL: the live host. When root is not "/" (or NULL), hwloc's Linux
 *     backend reads that directory as its fsroot (HWLOC_FSROOT is set for the
 *     duration of the load only, so this is not thread-safe against other
 *     getenv/setenv users) and hwloc's x86 CPUID backend is disabled, since
 *     the CPU it would query is not the one the tree was recorded on. A root
 *     without a usable /sys CPU topology is an error (-ENOENT or -ENODATA).
 *   a path ending in ".xml", or any existing regular file: hwloc XML.
 *   anything else: an hwloc synthetic string.
 * root is only used for the live host. Disallowed CPUs (cgroup cpusets) are
 * included: the topology describes the hardware, not what we may use.
 * Failures are logged naming the source; -EINVAL for an unparsable XML or
 * synthetic string unless hwloc reported a more precise errno. */
int topology_load(const RootDir *root, const char *source, Topology **ret);
Topology *topology_free(Topology *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Topology *, topology_free);

/* Binary search by OS index; NULL if the CPU is not in complete_cpuset. */
const TopoCpu *topology_cpu(const Topology *t, unsigned cpu);
