/* SPDX-License-Identifier: MIT */
#include "test-helpers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuset.h"
#include "topology.h"

#define TOPO_DIR TEST_SHARED_DIR "/topologies/"
#define TSV_PATH TOPO_DIR "synthetic-strings.tsv"

typedef struct Expect {
        const char *name; /* XML file below TOPO_DIR, or synthetic-strings.tsv name */
        size_t n_cpus;
        size_t n_llcs;
        unsigned cpus_per_llc;
        unsigned llc_level;
        unsigned smt_width;
        size_t n_cores;
        unsigned n_packages;
        unsigned n_numa;
        unsigned n_kinds;
} Expect;

/* Properties every topology must have, whatever its shape. */
static void check_invariants(const Topology *t) {
        _cleanup_cpuset_ CpuSet seen = hwloc_bitmap_alloc();
        unsigned max_smt = 0;

        assert_non_null(seen);
        assert_non_null(t->source);
        assert_int_equal(t->n_cpus, hwloc_bitmap_weight(t->all));
        assert_true(hwloc_bitmap_isincluded(t->online, t->all));
        assert_false(hwloc_bitmap_iszero(t->online));

        for (size_t i = 0; i < t->n_cpus; i++) {
                const TopoCpu *c = &t->cpus[i];

                if (i > 0)
                        assert_true(t->cpus[i - 1].cpu < c->cpu);
                assert_true(hwloc_bitmap_isset(t->all, c->cpu));
                assert_ptr_equal(topology_cpu(t, c->cpu), c);
                assert_int_equal(c->online, hwloc_bitmap_isset(t->online, c->cpu));
                if (c->online) {
                        assert_in_range(c->core, 0, t->n_cores - 1);
                        assert_in_range(c->llc, 0, t->n_llcs - 1);
                        assert_true(hwloc_bitmap_isset(t->cores[c->core].cpus, c->cpu));
                        assert_true(hwloc_bitmap_isset(t->llcs[c->llc].cpus, c->cpu));
                        assert_int_equal(t->cores[c->core].llc, c->llc);
                        if (t->n_packages > 0)
                                assert_in_range(c->package, 0, t->n_packages - 1);
                        if (t->n_numa > 0)
                                assert_in_range(c->numa, 0, t->n_numa - 1);
                } else {
                        assert_int_equal(c->core, -1);
                        assert_int_equal(c->llc, -1);
                }
                assert_true(c->package >= -1 && c->package < (int) t->n_packages);
                assert_true(c->numa >= -1 && c->numa < (int) t->n_numa);
                if (t->n_kinds == 0)
                        assert_int_equal(c->kind, -1);
                else
                        assert_true(c->kind >= -1 && c->kind < (int) t->n_kinds);
        }

        /* Cores partition the online CPUs, numbered by their lowest CPU. */
        for (size_t i = 0; i < t->n_cores; i++) {
                const TopoCore *k = &t->cores[i];
                int w = hwloc_bitmap_weight(k->cpus);

                assert_true(w > 0);
                assert_false(hwloc_bitmap_intersects(seen, k->cpus));
                assert_true(hwloc_bitmap_or(seen, seen, k->cpus) == 0);
                if (i > 0)
                        assert_true(hwloc_bitmap_first(t->cores[i - 1].cpus) < hwloc_bitmap_first(k->cpus));
                for (int c = hwloc_bitmap_first(k->cpus); c >= 0; c = hwloc_bitmap_next(k->cpus, c))
                        assert_int_equal(topology_cpu(t, (unsigned) c)->core, (int) i);
                max_smt = MAX(max_smt, (unsigned) w);
        }
        assert_true(hwloc_bitmap_isequal(seen, t->online));
        assert_int_equal(t->smt_width, max_smt);

        /* So do LLCs, and each counts the cores pointing at it. */
        hwloc_bitmap_zero(seen);
        for (size_t i = 0; i < t->n_llcs; i++) {
                const TopoLlc *l = &t->llcs[i];
                unsigned n_cores = 0;

                assert_false(hwloc_bitmap_iszero(l->cpus));
                assert_false(hwloc_bitmap_intersects(seen, l->cpus));
                assert_true(hwloc_bitmap_or(seen, seen, l->cpus) == 0);
                if (i > 0)
                        assert_true(hwloc_bitmap_first(t->llcs[i - 1].cpus) < hwloc_bitmap_first(l->cpus));
                for (int c = hwloc_bitmap_first(l->cpus); c >= 0; c = hwloc_bitmap_next(l->cpus, c))
                        assert_int_equal(topology_cpu(t, (unsigned) c)->llc, (int) i);
                for (size_t k = 0; k < t->n_cores; k++)
                        if (t->cores[k].llc == (int) i) {
                                n_cores++;
                                assert_true(hwloc_bitmap_isincluded(t->cores[k].cpus, l->cpus));
                        }
                assert_int_equal(l->n_cores, n_cores);
                if (l->level == 0)
                        assert_int_equal(l->size, 0);
                else
                        assert_true(l->size > 0);
        }
        assert_true(hwloc_bitmap_isequal(seen, t->online));
}

static void check_expect(const Topology *t, const Expect *e) {
        assert_int_equal(t->n_cpus, e->n_cpus);
        assert_true(hwloc_bitmap_isequal(t->online, t->all));
        assert_int_equal(t->n_llcs, e->n_llcs);
        for (size_t i = 0; i < t->n_llcs; i++) {
                assert_int_equal(hwloc_bitmap_weight(t->llcs[i].cpus), e->cpus_per_llc);
                assert_int_equal(t->llcs[i].level, e->llc_level);
        }
        assert_int_equal(t->smt_width, e->smt_width);
        assert_int_equal(t->n_cores, e->n_cores);
        assert_int_equal(t->n_packages, e->n_packages);
        assert_int_equal(t->n_numa, e->n_numa);
        assert_int_equal(t->n_kinds, e->n_kinds);
}

static Topology *load_ok(const RootDir *root, const char *source) {
        Topology *t = NULL;
        int r;

        r = topology_load(root, source, &t);
        if (r < 0)
                fail_msg("topology_load(%s): %s", source ?: "live", strerror(-r));
        assert_non_null(t);
        check_invariants(t);
        return t;
}

static void assert_load_fails(const RootDir *root, const char *source, int expected) {
        Topology sentinel = {}, *t = &sentinel;
        int r;

        r = topology_load(root, source, &t);
        assert_true(r < 0);
        if (expected != 0)
                assert_int_equal(r, expected);
        assert_ptr_equal(t, &sentinel);
}

static bool same_core(const Topology *t, unsigned a, unsigned b) {
        const TopoCpu *x = topology_cpu(t, a), *y = topology_cpu(t, b);

        assert_non_null(x);
        assert_non_null(y);
        return x->core >= 0 && x->core == y->core;
}

static const Expect xml_expect[] = {
        {"hwloc-8em64t-4c2t-desktop.xml", 8, 1, 8, 3, 2, 4, 1, 1, 0},
        /* One NUMA node for two sockets: the XML was recorded that way. */
        {"hwloc-AMD-19h-Zen3-2xEpyc-7763.xml", 128, 16, 8, 3, 1, 128, 2, 1, 0},
        /* Xeon Max, but no HBM node in this XML: one NUMA node. */
        {"hwloc-Intel-SapphireRapids-2xXeonMax9460.xml", 160, 2, 80, 3, 2, 80, 2, 1, 0},
        {"hwloc-Intel-RaptorLake-Corei7-1370P.xml", 20, 1, 20, 3, 2, 14, 1, 1, 2},
        {"hwloc-80intel64-2p2n20c2t-CascadeLake6230-SNC2-2LM.xml", 80, 2, 40, 3, 2, 40, 2, 4, 0},
        {"mpibind-epyc-corona.xml", 96, 16, 6, 3, 2, 48, 2, 8, 0},
        {"mpibind-arm64-ulna.xml", 256, 2, 128, 3, 4, 64, 2, 2, 0},
};

static Topology *load_xml(const char *name) {
        _cleanup_(freep) char *path = NULL;

        assert_true(asprintf(&path, TOPO_DIR "%s", name) > 0);
        return load_ok(NULL, path);
}

static void test_xml_all(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(xml_expect); i++) {
                _cleanup_(topology_freep) Topology *t = load_xml(xml_expect[i].name);

                print_message("%s\n", xml_expect[i].name);
                check_expect(t, &xml_expect[i]);
                assert_non_null(strstr(t->source, xml_expect[i].name));
        }
}

static void test_xml_siblings(void **state) {
        _cleanup_(topology_freep) Topology *desktop = load_xml("hwloc-8em64t-4c2t-desktop.xml");
        _cleanup_(topology_freep) Topology *spr = load_xml("hwloc-Intel-SapphireRapids-2xXeonMax9460.xml");
        _cleanup_(topology_freep) Topology *corona = load_xml("mpibind-epyc-corona.xml");
        _cleanup_(topology_freep) Topology *ulna = load_xml("mpibind-arm64-ulna.xml");
        _cleanup_cpuset_ CpuSet expect = NULL;

        /* Sibling numbering differs per machine: always by OS index. */
        assert_true(same_core(desktop, 0, 4));
        assert_false(same_core(desktop, 0, 1));
        assert_int_equal(desktop->llcs[0].size, 8192 * 1024);
        assert_true(same_core(spr, 0, 80));
        assert_true(same_core(spr, 79, 159));
        assert_int_not_equal(topology_cpu(spr, 0)->llc, topology_cpu(spr, 40)->llc);
        assert_true(same_core(corona, 0, 48));

        assert_int_equal(cpuset_parse("0-2,48-50", &expect), 0);
        assert_true(hwloc_bitmap_isequal(corona->llcs[topology_cpu(corona, 0)->llc].cpus, expect));
        hwloc_bitmap_free(TAKE_PTR(expect));
        assert_int_equal(cpuset_parse("0,32,64,96", &expect), 0);
        assert_true(hwloc_bitmap_isequal(ulna->cores[topology_cpu(ulna, 0)->core].cpus, expect));
        assert_int_equal(ulna->cores[topology_cpu(ulna, 0)->core].llc, topology_cpu(ulna, 0)->llc);
}

static void test_xml_cascadelake_snc(void **state) {
        _cleanup_(topology_freep) Topology *t =
                load_xml("hwloc-80intel64-2p2n20c2t-CascadeLake6230-SNC2-2LM.xml");
        const TopoLlc *l;
        int numa_a = -1, numa_b = -1;

        /* NUMA nodes sit behind memory-side caches (2LM) and SNC puts two
         * of them inside one L3. */
        assert_true(same_core(t, 0, 40));
        assert_int_equal(topology_cpu(t, 0)->numa, topology_cpu(t, 4)->numa);
        l = &t->llcs[topology_cpu(t, 0)->llc];
        for (int c = hwloc_bitmap_first(l->cpus); c >= 0; c = hwloc_bitmap_next(l->cpus, c)) {
                int n = topology_cpu(t, (unsigned) c)->numa;

                assert_true(n >= 0);
                if (numa_a < 0 || n == numa_a)
                        numa_a = n;
                else if (numa_b < 0 || n == numa_b)
                        numa_b = n;
                else
                        fail_msg("more than two NUMA nodes in one L3");
        }
        assert_true(numa_a >= 0 && numa_b >= 0);
        for (size_t i = 0; i < t->n_cpus; i++)
                assert_int_equal(t->cpus[i].package == topology_cpu(t, 0)->package,
                                 t->cpus[i].llc == topology_cpu(t, 0)->llc);
}

static void test_xml_raptorlake_kinds(void **state) {
        _cleanup_(topology_freep) Topology *t = load_xml("hwloc-Intel-RaptorLake-Corei7-1370P.xml");

        /* 6 P cores (SMT2, CPUs 0-11) rank above 8 E cores (12-19). */
        assert_int_equal(t->n_kinds, 2);
        for (size_t i = 0; i < t->n_cpus; i++) {
                const TopoCpu *c = &t->cpus[i];
                int w = hwloc_bitmap_weight(t->cores[c->core].cpus);

                assert_int_equal(c->kind, c->cpu < 12 ? 1 : 0);
                assert_int_equal(w, c->cpu < 12 ? 2 : 1);
        }
        assert_true(same_core(t, 0, 1));
        assert_false(same_core(t, 12, 13));
}

/* The synthetic part of a synthetic-strings.tsv line: anything from the first
 * " |" on is a shell pipeline for hwloc's command line tools. */
static char *tsv_synthetic(const char *name) {
        _cleanup_(fclosep) FILE *f = fopen(TSV_PATH, "re");
        _cleanup_(freep) char *line = NULL;
        size_t size = 0;

        assert_non_null(f);
        while (getline(&line, &size, f) >= 0) {
                char *tab = strchr(line, '\t'), *bar, *s;
                size_t n;

                if (!tab)
                        continue;
                *tab = '\0';
                if (!streq(line, name))
                        continue;
                s = tab + 1;
                bar = strstr(s, " |");
                if (bar)
                        *bar = '\0';
                n = strlen(s);
                while (n > 0 && strchr(" \t\r\n", s[n - 1]))
                        s[--n] = '\0';
                s = strdup(s);
                assert_non_null(s);
                return s;
        }
        fail_msg("%s not in " TSV_PATH, name);
        return NULL;
}

static Topology *load_tsv(const char *name) {
        _cleanup_(freep) char *s = tsv_synthetic(name);
        Topology *t = load_ok(NULL, s);

        assert_true(startswith_literal(t->source, "synthetic:"));
        return t;
}

static const Expect tsv_expect[] = {
        {"epyc9654-2s-nps1-smt2", 384, 24, 16, 3, 2, 192, 2, 2, 0},
        {"epyc9654-2s-nps1-smtoff", 192, 24, 8, 3, 1, 192, 2, 2, 0},
        {"power9-2s-44c-smt4", 176, 22, 8, 3, 4, 44, 2, 2, 0},
        {"xeon8260-2s-snc-off", 96, 2, 48, 3, 2, 48, 2, 2, 0},
        {"xeon8260-2s-snc2", 96, 2, 48, 3, 2, 48, 2, 4, 0},
        /* No L3: every CPU's private L2 is its LLC. */
        {"altra-q80-2s-160", 160, 160, 1, 2, 1, 160, 2, 2, 0},
        {"intel-desktop-4c8t", 8, 1, 8, 3, 2, 4, 1, 1, 0},
        {"xeon-spr-2s-56c-one-l3", 224, 2, 112, 3, 2, 112, 2, 2, 0},
        {"kunpeng920-2s-128", 128, 4, 32, 3, 1, 128, 2, 4, 0},
        {"sparc-t5-2s-smt8", 256, 2, 128, 3, 8, 32, 2, 2, 0},
        {"sparc-m7-1s-smt8", 256, 8, 32, 3, 8, 32, 1, 1, 0},
        {"alderlake-i9-12900k-8p8e", 80, 1, 80, 3, 2, 40, 1, 1, 0},
};

static void test_synthetic_all(void **state) {
        _cleanup_(fclosep) FILE *f = fopen(TSV_PATH, "re");
        _cleanup_(freep) char *line = NULL;
        size_t size = 0, n_lines = 0;

        for (size_t i = 0; i < ELEMENTSOF(tsv_expect); i++) {
                _cleanup_(topology_freep) Topology *t = load_tsv(tsv_expect[i].name);

                print_message("%s\n", tsv_expect[i].name);
                check_expect(t, &tsv_expect[i]);
        }

        /* Lines added to the tsv later must load too. */
        assert_non_null(f);
        while (getline(&line, &size, f) >= 0) {
                char *tab = strchr(line, '\t');

                if (!tab)
                        continue;
                *tab = '\0';
                _cleanup_(topology_freep) Topology *t = load_tsv(line);
                assert_non_null(t);
                n_lines++;
        }
        assert_true(n_lines >= ELEMENTSOF(tsv_expect));
}

static void test_synthetic_power9(void **state) {
        _cleanup_(topology_freep) Topology *t = load_tsv("power9-2s-44c-smt4");

        for (size_t i = 0; i < t->n_llcs; i++) {
                assert_int_equal(t->llcs[i].n_cores, 2);
                assert_int_equal(t->llcs[i].size, 10 * 1024 * 1024);
        }
        for (size_t i = 0; i < t->n_cores; i++)
                assert_int_equal(hwloc_bitmap_weight(t->cores[i].cpus), 4);
}

static void test_synthetic_altra(void **state) {
        _cleanup_(topology_freep) Topology *t = load_tsv("altra-q80-2s-160");

        for (size_t i = 0; i < t->n_llcs; i++) {
                assert_int_equal(t->llcs[i].level, 2);
                assert_int_equal(t->llcs[i].size, 1024 * 1024);
                assert_int_equal(t->llcs[i].n_cores, 1);
        }
        assert_int_equal(topology_cpu(t, 0)->package, 0);
        assert_int_equal(topology_cpu(t, 159)->package, 1);
}

static void test_synthetic_alderlake_sparse(void **state) {
        _cleanup_(freep) char *s = tsv_synthetic("alderlake-i9-12900k-8p8e");
        _cleanup_(topology_freep) Topology *t = load_ok(NULL, s);
        const char *p = strstr(s, "indexes=");
        unsigned idx[80], n = 0;

        /* Each core's two PUs come in order in the indexes list. */
        assert_non_null(p);
        p += strlen("indexes=");
        while (*p && *p != ')') {
                char *end;

                assert_true(n < ELEMENTSOF(idx));
                idx[n++] = (unsigned) strtoul(p, &end, 10);
                assert_ptr_not_equal(end, p);
                p = *end == ',' ? end + 1 : end;
        }
        assert_int_equal(n, 80);
        for (unsigned i = 0; i < n; i += 2) {
                const TopoCpu *c = topology_cpu(t, idx[i]);

                assert_non_null(c);
                assert_true(same_core(t, idx[i], idx[i + 1]));
                assert_int_equal(hwloc_bitmap_weight(t->cores[c->core].cpus), 2);
        }

        assert_non_null(topology_cpu(t, 24));
        assert_true(same_core(t, 24, 25));
        assert_true(same_core(t, 0, 1));
        assert_true(same_core(t, 16, 72));
        assert_false(same_core(t, 1, 2));
        assert_null(topology_cpu(t, 80));
        /* Dense core numbering follows the lowest CPU, not hwloc's order. */
        assert_int_equal(topology_cpu(t, 0)->core, 0);
        assert_int_equal(topology_cpu(t, 2)->core, 1);
}

/* What the tsv's shell pipeline does, done with the hwloc API and fed back
 * through XML: the real 8P+8E part with its CPU kinds. */
static void test_synthetic_alderlake_kinds(void **state) {
        _cleanup_(freep) char *s = tsv_synthetic("alderlake-i9-12900k-8p8e");
        _cleanup_(freep) char *xml = NULL;
        _cleanup_(topology_freep) Topology *t = NULL;
        _cleanup_cpuset_ CpuSet keep = NULL, p = NULL, e = NULL;
        char *dir = test_mkdtemp();
        hwloc_topology_t h;
        struct hwloc_info_s intel_core = {(char *) "CoreType", (char *) "IntelCore"};
        struct hwloc_info_s intel_atom = {(char *) "CoreType", (char *) "IntelAtom"};

        assert_int_equal(cpuset_parse("0-23", &keep), 0);
        assert_int_equal(cpuset_parse("0-15", &p), 0);
        assert_int_equal(cpuset_parse("16-23", &e), 0);
        assert_int_equal(hwloc_topology_init(&h), 0);
        assert_int_equal(hwloc_topology_set_synthetic(h, s), 0);
        assert_int_equal(hwloc_topology_load(h), 0);
        assert_int_equal(hwloc_topology_restrict(h, keep, 0), 0);
        assert_int_equal(hwloc_cpukinds_register(h, p, 1, 1, &intel_core, 0), 0);
        assert_int_equal(hwloc_cpukinds_register(h, e, 0, 1, &intel_atom, 0), 0);
        assert_true(asprintf(&xml, "%s/alderlake.xml", dir) > 0);
        assert_int_equal(hwloc_topology_export_xml(h, xml, 0), 0);
        hwloc_topology_destroy(h);

        t = load_ok(NULL, xml);
        test_rm_rf(dir);
        free(dir);

        assert_int_equal(t->n_cpus, 24);
        assert_int_equal(t->n_cores, 16);
        assert_int_equal(t->n_llcs, 1);
        assert_int_equal(t->smt_width, 2);
        assert_int_equal(t->n_kinds, 2);
        for (size_t i = 0; i < t->n_cpus; i++) {
                const TopoCpu *c = &t->cpus[i];

                assert_int_equal(c->kind, c->cpu < 16 ? 1 : 0);
                assert_int_equal(hwloc_bitmap_weight(t->cores[c->core].cpus), c->cpu < 16 ? 2 : 1);
        }
        assert_true(same_core(t, 14, 15));
}

static void test_synthetic_no_caches(void **state) {
        _cleanup_(topology_freep) Topology *t = load_ok(NULL, "pack:2 core:2 pu:2");
        _cleanup_(topology_freep) Topology *flat = load_ok(NULL, "pu:3");

        /* No cache at all: one LLC per package, level 0. */
        assert_int_equal(t->n_llcs, 2);
        assert_int_equal(t->n_cores, 4);
        assert_int_equal(t->smt_width, 2);
        for (size_t i = 0; i < t->n_llcs; i++) {
                assert_int_equal(t->llcs[i].level, 0);
                assert_int_equal(hwloc_bitmap_weight(t->llcs[i].cpus), 4);
                assert_int_equal(t->llcs[i].n_cores, 2);
        }

        /* Neither cores nor packages: every PU is a core, the machine the LLC. */
        assert_int_equal(flat->n_cpus, 3);
        assert_int_equal(flat->n_cores, 3);
        assert_int_equal(flat->smt_width, 1);
        assert_int_equal(flat->n_llcs, 1);
        assert_int_equal(flat->n_packages, 0);
        assert_int_equal(topology_cpu(flat, 0)->package, -1);
        assert_int_equal(flat->llcs[0].level, 0);
}

/* CPUs 0,1,4,5 online in two SMT2 cores, CPU 8 offline: only in the
 * complete_cpuset, as hwloc records hot-unplugged CPUs. */
static const char sparse_xml[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
        "<topology version=\"2.0\">\n"
        " <object type=\"Machine\" os_index=\"0\" cpuset=\"0x00000033\" complete_cpuset=\"0x00000133\""
        " allowed_cpuset=\"0x00000033\" nodeset=\"0x1\" complete_nodeset=\"0x1\" allowed_nodeset=\"0x1\" "
        "gp_index=\"1\">\n"
        "  <object type=\"Package\" os_index=\"0\" cpuset=\"0x00000033\" complete_cpuset=\"0x00000133\""
        " nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"2\">\n"
        "   <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x00000033\" complete_cpuset=\"0x00000133\""
        " nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"3\" local_memory=\"1073741824\"/>\n"
        "   <object type=\"L3Cache\" cpuset=\"0x00000033\" complete_cpuset=\"0x00000033\" nodeset=\"0x1\""
        " complete_nodeset=\"0x1\" gp_index=\"4\" cache_size=\"8388608\" depth=\"3\" cache_linesize=\"64\""
        " cache_associativity=\"16\" cache_type=\"0\">\n"
        "    <object type=\"Core\" os_index=\"0\" cpuset=\"0x00000003\" complete_cpuset=\"0x00000003\""
        " nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"5\">\n"
        "     <object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\""
        " nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"6\"/>\n"
        "     <object type=\"PU\" os_index=\"1\" cpuset=\"0x00000002\" complete_cpuset=\"0x00000002\""
        " nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"7\"/>\n"
        "    </object>\n"
        "    <object type=\"Core\" os_index=\"2\" cpuset=\"0x00000030\" complete_cpuset=\"0x00000030\""
        " nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"8\">\n"
        "     <object type=\"PU\" os_index=\"4\" cpuset=\"0x00000010\" complete_cpuset=\"0x00000010\""
        " nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"9\"/>\n"
        "     <object type=\"PU\" os_index=\"5\" cpuset=\"0x00000020\" complete_cpuset=\"0x00000020\""
        " nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"10\"/>\n"
        "    </object>\n"
        "   </object>\n"
        "  </object>\n"
        " </object>\n"
        "</topology>\n";

static void test_sparse_offline_lookup(void **state) {
        char *dir = test_mkdtemp();
        _cleanup_(freep) char *path = NULL, *noext = NULL;
        _cleanup_(topology_freep) Topology *t = NULL, *t2 = NULL;
        const TopoCpu *c;

        _cleanup_(freep) char *disallowed = strdup(sparse_xml);
        char *a;

        /* As if our cgroup did not allow CPU 5: it is still hardware. */
        assert_non_null(disallowed);
        a = strstr(disallowed, "allowed_cpuset=\"0x00000033\"");
        assert_non_null(a);
        memcpy(a, "allowed_cpuset=\"0x00000013\"", strlen("allowed_cpuset=\"0x00000013\""));

        test_write_file(dir, "sparse.xml", sparse_xml);
        test_write_file(dir, "sparse-topology", disallowed);
        assert_true(asprintf(&path, "%s/sparse.xml", dir) > 0);
        assert_true(asprintf(&noext, "%s/sparse-topology", dir) > 0);
        t = load_ok(NULL, path);
        /* An existing file is XML whatever its name. */
        t2 = load_ok(NULL, noext);
        test_rm_rf(dir);
        free(dir);

        assert_int_equal(t->n_cpus, 5);
        assert_int_equal(t2->n_cpus, 5);
        assert_true(hwloc_bitmap_isequal(t->online, t2->online));
        assert_true(same_core(t2, 4, 5));
        assert_int_equal(hwloc_bitmap_weight(t->online), 4);
        assert_int_equal(t->n_cores, 2);
        assert_int_equal(t->n_llcs, 1);
        assert_int_equal(t->smt_width, 2);

        assert_null(topology_cpu(t, 2));
        assert_null(topology_cpu(t, 3));
        assert_null(topology_cpu(t, 6));
        assert_null(topology_cpu(t, 9));
        assert_null(topology_cpu(t, 100000));
        assert_null(topology_cpu(NULL, 0));

        c = topology_cpu(t, 4);
        assert_non_null(c);
        assert_int_equal(c->cpu, 4);
        assert_true(c->online);
        assert_int_equal(c->core, 1);
        assert_true(same_core(t, 4, 5));
        assert_false(same_core(t, 1, 4));

        c = topology_cpu(t, 8);
        assert_non_null(c);
        assert_false(c->online);
        assert_int_equal(c->core, -1);
        assert_int_equal(c->llc, -1);
        assert_int_equal(c->package, 0);
        assert_int_equal(c->numa, 0);
        assert_int_equal(c->kind, -1);
}

static void test_bad_sources(void **state) {
        _cleanup_(freep) char *raw = NULL;
        char *dir = test_mkdtemp(), *bad = NULL;
        _cleanup_(fclosep) FILE *f = fopen(TSV_PATH, "re");
        _cleanup_(freep) char *line = NULL;
        size_t size = 0;

        assert_load_fails(NULL, "pack:2 bogus:3", -EINVAL);
        assert_load_fails(NULL, "pack:0", 0);
        assert_load_fails(NULL, "", 0);
        assert_load_fails(NULL, "/nonexistent/topology.xml", 0);

        test_write_file(dir, "garbage.xml", "this is not XML\n");
        assert_true(asprintf(&bad, "%s/garbage.xml", dir) > 0);
        assert_load_fails(NULL, bad, 0);
        free(bad);
        test_write_file(dir, "truncated.xml",
                        "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object type=\"Machine\"");
        assert_true(asprintf(&bad, "%s/truncated.xml", dir) > 0);
        assert_load_fails(NULL, bad, 0);
        free(bad);
        test_rm_rf(dir);
        free(dir);

        /* The alderlake line as a whole is a shell pipeline, not a string hwloc takes. */
        assert_non_null(f);
        while (getline(&line, &size, f) >= 0)
                if (startswith_literal(line, "alderlake-")) {
                        raw = strdup(strchr(line, '\t') + 1);
                        break;
                }
        assert_non_null(raw);
        raw[strcspn(raw, "\n")] = '\0';
        assert_load_fails(NULL, raw, -EINVAL);

        assert_int_equal(topology_load(NULL, "pu:2", NULL), -EINVAL);
}

static void test_fsroot_without_sys(void **state) {
        _cleanup_(rootdir_freep) RootDir *root = NULL;
        char *dir = test_mkdtemp();

        test_write_file(dir, "proc/stat", "cpu  1 2 3 4 5 6 7 0 0 0\n");
        assert_int_equal(rootdir_open(dir, &root), 0);
        assert_load_fails(root, NULL, -ENOENT);

        /* /sys/devices/system/cpu present but empty: hwloc's Linux backend
         * gives up and would fall back to counting the host's CPUs. */
        test_write_file(dir, "sys/devices/system/cpu/online", "0-1\n");
        assert_load_fails(root, NULL, -ENODATA);
        assert_null(getenv("HWLOC_FSROOT"));

        test_rm_rf(dir);
        free(dir);
}

static void write_cpu_file(const char *dir, unsigned cpu, const char *file, const char *contents) {
        char p[256];

        snprintf(p, sizeof(p), "sys/devices/system/cpu/cpu%u/%s", cpu, file);
        test_write_file(dir, p, contents);
}

/* The files hwloc 2.9's Linux backend needs: it wants the mask files, not
 * only the *_list ones. */
static void write_cpu(const char *dir, unsigned cpu, const char *core_mask, const char *pkg_mask) {
        static const struct {
                const char *index, *level, *type, *size;
                bool shared;
        } caches[] = {
                {"index0", "1\n", "Data\n", "32K\n", false},
                {"index2", "2\n", "Unified\n", "1024K\n", false},
                {"index3", "3\n", "Unified\n", "8192K\n", true},
        };
        char p[128];

        write_cpu_file(dir, cpu, "online", "1\n");
        write_cpu_file(dir, cpu, "topology/physical_package_id", "0\n");
        write_cpu_file(dir, cpu, "topology/core_id", cpu < 2 ? "0\n" : "1\n");
        write_cpu_file(dir, cpu, "topology/thread_siblings", core_mask);
        write_cpu_file(dir, cpu, "topology/core_cpus", core_mask);
        write_cpu_file(dir, cpu, "topology/core_siblings", pkg_mask);
        write_cpu_file(dir, cpu, "topology/package_cpus", pkg_mask);
        for (size_t i = 0; i < ELEMENTSOF(caches); i++) {
                snprintf(p, sizeof(p), "cache/%s/level", caches[i].index);
                write_cpu_file(dir, cpu, p, caches[i].level);
                snprintf(p, sizeof(p), "cache/%s/type", caches[i].index);
                write_cpu_file(dir, cpu, p, caches[i].type);
                snprintf(p, sizeof(p), "cache/%s/size", caches[i].index);
                write_cpu_file(dir, cpu, p, caches[i].size);
                snprintf(p, sizeof(p), "cache/%s/shared_cpu_map", caches[i].index);
                write_cpu_file(dir, cpu, p, caches[i].shared ? pkg_mask : core_mask);
        }
}

/* A recorded /sys of a 4-CPU box with CPU 3 hot-unplugged. */
static void test_fsroot_fixture(void **state) {
        _cleanup_(rootdir_freep) RootDir *root = NULL;
        _cleanup_(topology_freep) Topology *t = NULL;
        char *dir = test_mkdtemp();
        const TopoCpu *c;

        test_write_file(dir, "sys/devices/system/cpu/possible", "0-3\n");
        test_write_file(dir, "sys/devices/system/cpu/present", "0-3\n");
        test_write_file(dir, "sys/devices/system/cpu/online", "0-2\n");
        test_write_file(dir, "sys/devices/system/cpu/offline", "3\n");
        test_write_file(dir, "sys/devices/system/cpu/cpu3/online", "0\n");
        write_cpu(dir, 0, "3\n", "7\n");
        write_cpu(dir, 1, "3\n", "7\n");
        write_cpu(dir, 2, "4\n", "7\n");

        assert_int_equal(setenv("HWLOC_FSROOT", "/steerd-test-sentinel", 1), 0);
        assert_int_equal(rootdir_open(dir, &root), 0);
        t = load_ok(root, NULL);
        assert_string_equal(getenv("HWLOC_FSROOT"), "/steerd-test-sentinel");
        assert_int_equal(unsetenv("HWLOC_FSROOT"), 0);
        test_rm_rf(dir);
        free(dir);

        assert_true(startswith_literal(t->source, "live:"));
        assert_int_equal(t->n_cpus, 4);
        assert_int_equal(hwloc_bitmap_weight(t->online), 3);
        assert_int_equal(t->n_cores, 2);
        assert_int_equal(t->smt_width, 2);
        assert_int_equal(t->n_llcs, 1);
        /* The fixture's caches and no CPU kinds: nothing from the CPUID of
         * the CPU running the test leaked in. */
        assert_int_equal(t->n_kinds, 0);
        assert_int_equal(t->llcs[0].level, 3);
        assert_int_equal(t->llcs[0].size, 8192 * 1024);
        assert_true(same_core(t, 0, 1));
        assert_false(same_core(t, 1, 2));

        c = topology_cpu(t, 3);
        assert_non_null(c);
        assert_false(c->online);
        assert_int_equal(c->core, -1);
        assert_int_equal(c->llc, -1);
}

/* The highest data/unified cache level sysfs reports for a CPU: an
 * independent opinion on its LLC. NULL if sysfs has no cache info. */
static CpuSet sysfs_llc(const RootDir *root, unsigned cpu) {
        CpuSet best = NULL;
        long best_level = -1;

        for (unsigned i = 0; i < 16; i++) {
                _cleanup_(freep) char *type = NULL, *level = NULL, *list = NULL;
                char p[128];
                CpuSet set = NULL;
                long l;

#define READ(file, var)                                                                                     \
        (snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%u/cache/index%u/" file, cpu, i),               \
         rootdir_read_file(root, p, &(var), NULL) >= 0)
                if (!READ("type", type) || !READ("level", level) || !READ("shared_cpu_list", list))
                        continue;
#undef READ
                if (startswith_literal(type, "Instruction"))
                        continue;
                l = strtol(level, NULL, 10);
                if (l <= best_level || cpuset_parse(list, &set) < 0)
                        continue;
                hwloc_bitmap_free(best);
                best = set;
                best_level = l;
        }
        return best;
}

static void test_live(void **state) {
        _cleanup_(rootdir_freep) RootDir *root = NULL;
        _cleanup_(topology_freep) Topology *t = NULL;
        _cleanup_(freep) char *online = NULL;
        _cleanup_cpuset_ CpuSet online_set = NULL, llc = NULL;
        unsigned first;
        int r;

        assert_int_equal(rootdir_open("/", &root), 0);
        r = topology_load(root, NULL, &t);
        if (r < 0) {
                print_message("hwloc cannot load this host's topology: %s\n", strerror(-r));
                skip();
        }
        check_invariants(t);
        assert_string_equal(t->source, "live");
        assert_true(t->n_llcs >= 1);
        assert_true(t->smt_width >= 1);
        print_message("live: %zu CPUs, %zu cores, %zu LLCs (L%u), SMT%u\n", t->n_cpus, t->n_cores, t->n_llcs,
                      t->llcs[0].level, t->smt_width);

        if (rootdir_read_file(root, "/sys/devices/system/cpu/online", &online, NULL) >= 0) {
                assert_int_equal(cpuset_parse(online, &online_set), 0);
                assert_true(hwloc_bitmap_isequal(online_set, t->online));
        }

        first = (unsigned) hwloc_bitmap_first(t->online);
        llc = sysfs_llc(root, first);
        if (llc) {
                hwloc_bitmap_and(llc, llc, t->online);
                assert_true(hwloc_bitmap_isequal(llc, t->llcs[topology_cpu(t, first)->llc].cpus));
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_xml_all),
                cmocka_unit_test(test_xml_siblings),
                cmocka_unit_test(test_xml_cascadelake_snc),
                cmocka_unit_test(test_xml_raptorlake_kinds),
                cmocka_unit_test(test_synthetic_all),
                cmocka_unit_test(test_synthetic_power9),
                cmocka_unit_test(test_synthetic_altra),
                cmocka_unit_test(test_synthetic_alderlake_sparse),
                cmocka_unit_test(test_synthetic_alderlake_kinds),
                cmocka_unit_test(test_synthetic_no_caches),
                cmocka_unit_test(test_sparse_offline_lookup),
                cmocka_unit_test(test_bad_sources),
                cmocka_unit_test(test_fsroot_without_sys),
                cmocka_unit_test(test_fsroot_fixture),
                cmocka_unit_test(test_live),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
