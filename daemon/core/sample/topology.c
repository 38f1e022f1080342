/* SPDX-License-Identifier: MIT */
#include <sys/stat.h>

#include "log.h"
#include "topology.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(hwloc_topology_t, hwloc_topology_destroy);

/* hwloc reports failures as -1 with errno, but not every path sets errno;
 * the callers clear errno first so that a stale value is not blamed. */
static int hwloc_errno(void) {
        return errno > 0 ? -errno : -EINVAL;
}

/* The hwloc tree is private to topology_load() and destroyed right after, so
 * its per-object userdata is free to map an object to our dense index. */
static int obj_index(hwloc_obj_t o) {
        return o->userdata ? (int) ((uintptr_t) o->userdata - 1) : -1;
}

static void obj_set_index(hwloc_obj_t o, size_t i) {
        o->userdata = (void *) (uintptr_t) (i + 1);
}

Topology *topology_free(Topology *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_cores; i++)
                hwloc_bitmap_free(t->cores[i].cpus);
        for (size_t i = 0; i < t->n_llcs; i++)
                hwloc_bitmap_free(t->llcs[i].cpus);
        free(t->cpus);
        free(t->cores);
        free(t->llcs);
        hwloc_bitmap_free(t->all);
        hwloc_bitmap_free(t->online);
        free(t->source);
        free(t);
        return NULL;
}

const TopoCpu *topology_cpu(const Topology *t, unsigned cpu) {
        size_t lo = 0, hi;

        if (!t)
                return NULL;
        hi = t->n_cpus;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (t->cpus[mid].cpu == cpu)
                        return &t->cpus[mid];
                if (t->cpus[mid].cpu < cpu)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* Highest cache depth wins rather than the topmost cache, so that an odd
 * tree with an L2 above an L3 still picks the L3. Without any data or
 * unified cache the package stands in, then the machine. */
static hwloc_obj_t pu_llc(hwloc_topology_t topo, hwloc_obj_t pu) {
        hwloc_obj_t best = NULL;

        for (hwloc_obj_t o = pu->parent; o; o = o->parent)
                if (hwloc_obj_type_is_dcache(o->type) &&
                    (!best || o->attr->cache.depth >= best->attr->cache.depth))
                        best = o;
        if (best)
                return best;

        best = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, pu);
        return best ?: hwloc_get_root_obj(topo);
}

/* NUMA nodes hang off the tree as memory children, possibly behind
 * memory-side caches (Cascade Lake 2LM); the nearest ancestor carrying one is
 * where the CPU's local memory is. */
static int pu_numa(hwloc_obj_t pu) {
        for (hwloc_obj_t o = pu; o; o = o->parent)
                for (hwloc_obj_t m = o->memory_first_child; m; m = m->memory_first_child)
                        if (m->type == HWLOC_OBJ_NUMANODE)
                                return (int) m->logical_index;
        return -1;
}

/* Offline CPUs have no PU object, but the Linux backend keeps them in the
 * complete_cpuset of the objects they belong to. */
static int index_by_complete_cpuset(hwloc_topology_t topo, hwloc_obj_type_t type, unsigned cpu) {
        for (hwloc_obj_t o = NULL; (o = hwloc_get_next_obj_by_type(topo, type, o));)
                if (o->complete_cpuset && hwloc_bitmap_isset(o->complete_cpuset, cpu))
                        return (int) o->logical_index;
        return -1;
}

static int place_online_cpu(Topology *t, hwloc_topology_t topo, TopoCpu *c, hwloc_obj_t pu) {
        hwloc_obj_t llc_obj, core_obj, pkg;
        int l, k;

        llc_obj = pu_llc(topo, pu);
        l = obj_index(llc_obj);
        if (l < 0) {
                TopoLlc *x = &t->llcs[t->n_llcs];

                x->cpus = hwloc_bitmap_alloc();
                if (!x->cpus)
                        return -ENOMEM;
                if (hwloc_obj_type_is_dcache(llc_obj->type)) {
                        x->level = llc_obj->attr->cache.depth;
                        x->size = llc_obj->attr->cache.size;
                }
                obj_set_index(llc_obj, t->n_llcs);
                l = (int) t->n_llcs++;
        }
        if (hwloc_bitmap_set(t->llcs[l].cpus, c->cpu) < 0)
                return -ENOMEM;
        c->llc = l;

        core_obj = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, pu) ?: pu;
        k = obj_index(core_obj);
        if (k < 0) {
                TopoCore *x = &t->cores[t->n_cores];

                x->cpus = hwloc_bitmap_alloc();
                if (!x->cpus)
                        return -ENOMEM;
                x->llc = l;
                t->llcs[l].n_cores++;
                obj_set_index(core_obj, t->n_cores);
                k = (int) t->n_cores++;
        } else if (t->cores[k].llc != l)
                t->cores[k].llc = -1;
        if (hwloc_bitmap_set(t->cores[k].cpus, c->cpu) < 0)
                return -ENOMEM;
        c->core = k;

        pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, pu);
        c->package = pkg ? (int) pkg->logical_index : -1;
        c->numa = pu_numa(pu);
        return 0;
}

static int topology_fill(Topology *t, hwloc_topology_t topo) {
        _cleanup_(freep) hwloc_obj_t *pus = NULL;
        _cleanup_cpuset_ CpuSet one = NULL;
        int n_all, n_pus, n_kinds, r;

        t->all = hwloc_bitmap_dup(hwloc_topology_get_complete_cpuset(topo));
        t->online = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(topo));
        one = hwloc_bitmap_alloc();
        if (!t->all || !t->online || !one)
                return -ENOMEM;

        n_all = hwloc_bitmap_weight(t->all);
        n_pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
        if (n_all <= 0 || n_pus <= 0)
                return -ENODATA;

        t->cpus = calloc((size_t) n_all, sizeof(*t->cpus));
        pus = calloc((size_t) n_all, sizeof(*pus));
        /* At most one core and one LLC per PU. */
        t->cores = calloc((size_t) n_pus, sizeof(*t->cores));
        t->llcs = calloc((size_t) n_pus, sizeof(*t->llcs));
        if (!t->cpus || !pus || !t->cores || !t->llcs)
                return -ENOMEM;

        for (int i = hwloc_bitmap_first(t->all); i >= 0; i = hwloc_bitmap_next(t->all, i))
                t->cpus[t->n_cpus++] = (TopoCpu){
                        .cpu = (unsigned) i,
                        .core = -1,
                        .llc = -1,
                        .package = -1,
                        .numa = -1,
                        .kind = -1,
                        .online = hwloc_bitmap_isset(t->online, (unsigned) i),
                };

        for (hwloc_obj_t pu = NULL; (pu = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PU, pu));) {
                const TopoCpu *c = topology_cpu(t, pu->os_index);

                if (c)
                        pus[c - t->cpus] = pu;
        }

        n_kinds = hwloc_cpukinds_get_nr(topo, 0);
        t->n_kinds = n_kinds > 0 ? (unsigned) n_kinds : 0;

        /* Walking CPUs in OS order numbers cores and LLCs by their lowest CPU,
         * independent of how hwloc happened to order its tree. */
        for (size_t i = 0; i < t->n_cpus; i++) {
                TopoCpu *c = &t->cpus[i];

                if (pus[i]) {
                        r = place_online_cpu(t, topo, c, pus[i]);
                        if (r < 0)
                                return r;
                } else {
                        c->package = index_by_complete_cpuset(topo, HWLOC_OBJ_PACKAGE, c->cpu);
                        c->numa = index_by_complete_cpuset(topo, HWLOC_OBJ_NUMANODE, c->cpu);
                }

                if (t->n_kinds > 0) {
                        int k;

                        if (hwloc_bitmap_only(one, c->cpu) < 0)
                                return -ENOMEM;
                        k = hwloc_cpukinds_get_by_cpuset(topo, one, 0);
                        c->kind = k >= 0 ? k : -1;
                }
        }

        for (size_t i = 0; i < t->n_cores; i++)
                t->smt_width = MAX(t->smt_width, (unsigned) hwloc_bitmap_weight(t->cores[i].cpus));

        t->n_packages = (unsigned) MAX(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE), 0);
        t->n_numa = (unsigned) MAX(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE), 0);
        return 0;
}

static bool source_is_xml(const char *source) {
        size_t n = strlen(source);
        struct stat st;

        if (n >= 4 && streq(source + n - 4, ".xml"))
                return true;
        return stat(source, &st) >= 0 && S_ISREG(st.st_mode);
}

static bool loaded_by_linux_backend(hwloc_topology_t topo) {
        hwloc_obj_t root = hwloc_get_root_obj(topo);

        for (unsigned i = 0; i < root->infos_count; i++)
                if (streq(root->infos[i].name, "Backend") && streq(root->infos[i].value, "Linux"))
                        return true;
        return false;
}

/* hwloc takes the fsroot only from the environment. */
static int load_fsroot(hwloc_topology_t topo, const RootDir *root) {
        _cleanup_(freep) char *old = NULL;
        const char *e;
        int r = 0;

        r = rootdir_access(root, "/sys/devices/system/cpu", F_OK);
        if (r < 0)
                return log_error_errno(r,
                                       "%s has no /sys/devices/system/cpu, cannot discover its CPU topology",
                                       root->path);

        /* The x86 backend would merge the CPUID of the CPU we run on into a
         * tree that may have been recorded elsewhere. Builds without it
         * reject the name, which is fine. */
        (void) hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");

        e = getenv("HWLOC_FSROOT");
        if (e) {
                old = strdup(e);
                if (!old)
                        return -ENOMEM;
        }
        if (setenv("HWLOC_FSROOT", root->path, 1) < 0)
                return negative_errno();

        errno = 0;
        if (hwloc_topology_load(topo) < 0)
                r = hwloc_errno();

        if (old)
                (void) setenv("HWLOC_FSROOT", old, 1);
        else
                (void) unsetenv("HWLOC_FSROOT");

        if (r < 0)
                return log_error_errno(r, "Failed to load the CPU topology below %s", root->path);

        /* When the Linux backend gives up on an incomplete /sys, hwloc falls
         * back to counting the host's CPUs: not the tree we were asked for. */
        if (!loaded_by_linux_backend(topo)) {
                log_error("%s/sys/devices/system/cpu holds no usable CPU topology", root->path);
                return -ENODATA;
        }
        return 0;
}

int topology_load(const RootDir *root, const char *source, Topology **ret) {
        _cleanup_(hwloc_topology_destroyp) hwloc_topology_t topo = NULL;
        _cleanup_(topology_freep) Topology *t = NULL;
        int r;

        if (!ret)
                return -EINVAL;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        if (hwloc_topology_init(&topo) < 0)
                return -ENOMEM;
        /* Describe the hardware, not the cgroup cpuset we happen to run in. */
        if (hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) < 0)
                return negative_errno();

        if (!source) {
                bool host = !root || streq(root->path, "/");

                if (host)
                        t->source = strdup("live");
                else if (asprintf(&t->source, "live:%s", root->path) < 0)
                        t->source = NULL;
                if (!t->source)
                        return -ENOMEM;

                if (host) {
                        errno = 0;
                        if (hwloc_topology_load(topo) < 0)
                                return log_error_errno(hwloc_errno(),
                                                       "Failed to load the live CPU topology");
                } else {
                        r = load_fsroot(topo, root);
                        if (r < 0)
                                return r;
                }
        } else {
                if (source_is_xml(source)) {
                        t->source = strdup(source);
                        if (!t->source)
                                return -ENOMEM;
                        errno = 0;
                        if (hwloc_topology_set_xml(topo, source) < 0)
                                return log_error_errno(hwloc_errno(), "Failed to read topology XML %s",
                                                       source);
                } else {
                        if (asprintf(&t->source, "synthetic:%s", source) < 0) {
                                t->source = NULL;
                                return -ENOMEM;
                        }
                        errno = 0;
                        if (hwloc_topology_set_synthetic(topo, source) < 0)
                                return log_error_errno(hwloc_errno(),
                                                       "Invalid hwloc synthetic topology \"%s\"", source);
                }

                errno = 0;
                if (hwloc_topology_load(topo) < 0)
                        return log_error_errno(hwloc_errno(), "Failed to load CPU topology from %s",
                                               t->source);
        }

        r = topology_fill(t, topo);
        if (r < 0)
                return log_error_errno(r, "Failed to read CPU topology from %s", t->source);

        log_debug(
                "CPU topology from %s: %zu CPUs, %zu cores, %zu LLCs, %u packages, %u NUMA nodes, %u kinds",
                t->source, t->n_cpus, t->n_cores, t->n_llcs, t->n_packages, t->n_numa, t->n_kinds);

        *ret = TAKE_PTR(t);
        return 0;
}
