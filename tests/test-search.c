/* SPDX-License-Identifier: MIT */
/* The placement search (core/trial/search.h): candidates from recorded
 * streams, and the experiments over a model of a cgroup whose progress
 * depends on where it is placed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test-helpers.h"

#include "random.h"
#include "search.h"
#include "snapshot-json.h"

#define SEC 1000000ULL
#define TICK (SEC / 10)

/* ---- candidates ---- */

static void check_candidates(const Search *s, const CgroupSample *cs) {
        assert_int_equal(s->c[0].kind, SEARCH_KIND_POLICY);
        assert_int_equal(s->c[1].kind, SEARCH_KIND_HANDS_OFF);
        assert_true(s->n >= 2 && s->n <= SEARCH_MAX_CANDIDATES);
        for (size_t i = 2; i < s->n; i++) {
                const SearchCandidate *c = &s->c[i];
                assert_true(c->kind == SEARCH_KIND_CORES || c->kind == SEARCH_KIND_LLC);
                assert_non_null(c->cpus);
                assert_false(hwloc_bitmap_iszero(c->cpus));
                assert_true(hwloc_bitmap_isincluded(c->cpus, cs->allowed));
                assert_false(hwloc_bitmap_isequal(c->cpus, cs->allowed));
                for (size_t j = 2; j < i; j++)
                        assert_false(hwloc_bitmap_isequal(c->cpus, s->c[j].cpus));
        }
}

/* Every snapshot of the recorded streams, every cgroup: the candidates keep
 * the invariants (within the cgroup's CPUs, none equal to another or to
 * hands-off); a cgroup busy on more than one core gets its busiest core. */
static void test_candidates_streams(void **unused) {
        static const char *const streams[] = {"synthetic-2llc", "synthetic-1llc", "hb4cg-2cpu",
                                              "phases-2cpu"};
        unsigned started = 0, one_core = 0, llc = 0;

        for (size_t k = 0; k < ELEMENTSOF(streams); k++) {
                _cleanup_(freep) char *cmd = NULL;
                assert_true(asprintf(&cmd, "zcat %s/streams/%s.jsonl.gz", TEST_FIXTURES_DIR, streams[k]) >
                            0);
                FILE *f = popen(cmd, "r");
                assert_non_null(f);
                char *line = NULL;
                size_t size = 0;
                unsigned no = 0;
                while (getline(&line, &size, f) > 0) {
                        _cleanup_(snapshot_freep) Snapshot *snap = NULL;
                        assert_int_equal(snapshot_from_json_string(line, streams[k], ++no, &snap), 0);
                        for (size_t i = 0; i < snap->n_cgroups; i++) {
                                Search s;
                                assert_int_equal(search_init(&s, SEC, 8, 0.02, 0.5, no, 0), 0);
                                int r = search_start(&s, snap, snap->cgroups[i].path, SEC);
                                assert_true(r == 0 || r == -ENODATA);
                                if (r == 0) {
                                        started++;
                                        check_candidates(&s, &snap->cgroups[i]);
                                        for (size_t j = 2; j < s.n; j++) {
                                                one_core += s.c[j].kind == SEARCH_KIND_CORES &&
                                                            hwloc_bitmap_weight(s.c[j].cpus) == 1;
                                                llc += s.c[j].kind == SEARCH_KIND_LLC;
                                        }
                                        assert_int_equal(s.state, SEARCH_STATE_SEARCHING);
                                        assert_true(search_arm(&s) == &s.c[0] ||
                                                    search_arm(&s) == &s.c[s.against]);
                                } else
                                        assert_int_equal(s.state, SEARCH_STATE_WANT);
                                search_done(&s);
                        }
                }
                free(line);
                assert_int_equal(pclose(f), 0);
        }
        print_message("searches started %u, one-core candidates %u, LLC candidates %u\n", started, one_core,
                      llc);
        assert_true(started > 0 && one_core > 0);
}

/* ---- a model of a cgroup: 8 CPUs in 2 LLCs, 4 busy threads on 0, 1, 2, 5 ---- */

static Snapshot *model_snapshot(void) {
        char buf[8192];
        size_t n = 0;
        n += (size_t) snprintf(buf + n, sizeof(buf) - n,
                               "{\"time_us\": 1000000, \"period_us\": 100000, \"source\": {\"runnable\": "
                               "\"debugfs\", \"threads_truncated\": false}, \"cpus\": [");
        for (int c = 0; c < 8; c++)
                n += (size_t) snprintf(
                        buf + n, sizeof(buf) - n,
                        "%s{\"cpu\": %d, \"llc\": %d, \"core\": %d, \"online\": true, \"util\": "
                        "500, \"runnable\": 500, \"boosted\": 500}",
                        c ? ", " : "", c, c / 4, c);
        n += (size_t) snprintf(
                buf + n, sizeof(buf) - n,
                "], \"llcs\": [{\"id\": 0, \"cpus\": \"0-3\", \"weight\": 4, \"util\": 500, "
                "\"boosted\": 500, \"nr_idle_scan\": 2, \"overloaded\": false}, {\"id\": 1, "
                "\"cpus\": \"4-7\", \"weight\": 4, \"util\": 500, \"boosted\": 500, "
                "\"nr_idle_scan\": 2, \"overloaded\": false}], \"psi\": {\"some_avg10\": 0, "
                "\"full_avg10\": 0}, \"cgroups\": [{\"path\": \"/app\", \"policy\": \"latency\", "
                "\"allowed\": \"0-7\", \"cpus\": \"0-7\", \"pressure_some_avg10\": 0, "
                "\"threads_partial\": false, \"threads\": [");
        static const int cpu[] = {0, 1, 2, 5};
        static const double util[] = {600, 500, 300, 200};
        for (int t = 0; t < 4; t++)
                n += (size_t) snprintf(
                        buf + n, sizeof(buf) - n,
                        "%s{\"tid\": %d, \"starttime\": 1, \"cpu\": %d, \"allowed\": \"0-7\", "
                        "\"util\": %g, \"wait\": 50, \"run_delay_ns\": 0, \"nr_migrations\": 0}",
                        t ? ", " : "", 100 + t, cpu[t], util[t]);
        snprintf(buf + n, sizeof(buf) - n, "]}]}");
        Snapshot *snap = NULL;
        assert_int_equal(snapshot_from_json_string(buf, "model", 1, &snap), 0);
        return snap;
}

/* Spread over two LLCs: the cores that held it, its busiest core, the LLC
 * that held most of it, then the halving in between. */
static void test_candidates_model(void **unused) {
        _cleanup_(snapshot_freep) Snapshot *snap = model_snapshot();
        static const char *const want[] = {"0-2,5", "0", "0-3", "0-1"};
        static const SearchKind kinds[] = {SEARCH_KIND_CORES, SEARCH_KIND_CORES, SEARCH_KIND_LLC,
                                           SEARCH_KIND_CORES};
        Search s;
        char buf[CPUSET_STRLEN];

        assert_int_equal(search_init(&s, SEC, 8, 0.02, 0.5, 1, 0), 0);
        assert_int_equal(search_start(&s, snap, "/app", SEC), 0);
        check_candidates(&s, &snap->cgroups[0]);
        assert_int_equal(s.n, 2 + ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                assert_int_equal(s.c[2 + i].kind, kinds[i]);
                assert_string_equal(cpuset_to_string(s.c[2 + i].cpus, buf, sizeof(buf)), want[i]);
        }
        search_done(&s);
}

/* Progress (slices a second) of each kind of placement, in a phase. */
typedef struct Model {
        double policy, hands_off, one_core, cores, llc;
        double demand;
        unsigned busy;
        double noise; /* sd of the log-normal noise per block */
        uint64_t rng;
        /* Each tick swaps these in: a load and a one-core progress that
         * alternate. */
        bool flip;
        double demand2, one_core2;
} Model;

static double gauss(uint64_t *rng) {
        double u1 = ((double) (splitmix64(rng) >> 11) + 0.5) / 9007199254740992.0;
        double u2 = ((double) (splitmix64(rng) >> 11) + 0.5) / 9007199254740992.0;
        return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

static double progress(Model *m, const SearchCandidate *c) {
        double base = m->policy;
        switch (c->kind) {
        case SEARCH_KIND_POLICY:
                base = m->policy;
                break;
        case SEARCH_KIND_HANDS_OFF:
                base = m->hands_off;
                break;
        case SEARCH_KIND_CORES:
                base = hwloc_bitmap_weight(c->cpus) == 1 ? m->one_core : m->cores;
                break;
        case SEARCH_KIND_LLC:
                base = m->llc;
                break;
        default:
                fail();
        }
        return base * exp(m->noise * gauss(&m->rng));
}

typedef struct Run {
        unsigned events[8];
        unsigned changes; /* placements changed */
        unsigned max_changes_10s;
        unsigned blocks;
} Run;

/* Ticks the search for `secs` seconds from *now; candidates are given from
 * the model's snapshot whenever the search waits for them. */
static void run(Search *s, Model *m, uint64_t *now, unsigned secs, Run *ret) {
        _cleanup_(snapshot_freep) Snapshot *snap = model_snapshot();
        uint64_t change_at[4096];
        unsigned n_changes = 0;
        const SearchCandidate *was = search_arm(s);
        SearchKind was_kind = was->kind;
        int was_w = was->cpus ? hwloc_bitmap_weight(was->cpus) : 0;

        for (uint64_t end = *now + secs * SEC; *now < end; *now += TICK) {
                if (m->flip) {
                        double d = m->demand, o = m->one_core;
                        m->demand = m->demand2;
                        m->one_core = m->one_core2;
                        m->demand2 = d;
                        m->one_core2 = o;
                }
                bool started = s->state == SEARCH_STATE_WANT && search_start(s, snap, "/app", *now) >= 0;
                SearchStep st = search_tick(s, *now);
                if (st == SEARCH_STEP_END) {
                        /* The counters of a block hold the mean of a load that
                         * alternates tick by tick. */
                        SearchBlock b = {.has_progress = true,
                                         .progress = progress(m, search_arm(s)),
                                         .has_load = true,
                                         .demand = m->flip ? (m->demand + m->demand2) / 2 : m->demand,
                                         .busy = m->busy};
                        SearchEvent ev;
                        assert_int_equal(search_end_block(s, *now, &b, &ev), 0);
                        ret->events[ev]++;
                        ret->blocks++;
                        if (m->flip) { /* the progress from block to block too */
                                double o = m->one_core;
                                m->one_core = m->one_core2;
                                m->one_core2 = o;
                        }
                }
                const SearchCandidate *a = search_arm(s);
                int w = a->cpus ? hwloc_bitmap_weight(a->cpus) : 0;
                if (a->kind != was_kind || w != was_w) {
                        /* Only at a block's end, or as a search starts its first block. */
                        assert_true(st == SEARCH_STEP_END || started);
                        change_at[n_changes++ % 4096] = *now;
                        ret->changes++;
                        unsigned in10 = 0;
                        for (unsigned i = 0; i < MIN(n_changes, 4096u); i++)
                                in10 += change_at[i] + 10 * SEC > *now;
                        ret->max_changes_10s = MAX(ret->max_changes_10s, in10);
                }
                was_kind = a->kind;
                was_w = w;
        }
}

static Model group_on_one_core(uint64_t seed) {
        return (Model){.policy = 1000,
                       .hands_off = 950,
                       .one_core = 1300,
                       .cores = 1050,
                       .llc = 1000,
                       .demand = 2.0,
                       .busy = 4,
                       .noise = 0.03,
                       .rng = seed};
}

/* A group that runs faster on one core is found and kept there: the search
 * ends with the one-core candidate, the re-checks keep it for minutes. */
static void test_group_wins_one_core(void **unused) {
        for (uint64_t seed = 1; seed <= 20; seed++) {
                Search s;
                Model m = group_on_one_core(seed);
                Run r = {};
                uint64_t now = 0;
                assert_int_equal(search_init(&s, SEC, 8, 0.02, 0.5, seed, now), 0);
                run(&s, &m, &now, 120, &r);
                assert_int_equal(s.state, SEARCH_STATE_HOLDING);
                const SearchCandidate *w = &s.c[s.winner];
                assert_int_equal(w->kind, SEARCH_KIND_CORES);
                assert_int_equal(hwloc_bitmap_weight(w->cpus), 1);
                assert_true(hwloc_bitmap_isset(w->cpus, 0)); /* its busiest core */
                print_message("seed %llu: %s %.3f [%.3f, %.3f] after %zu pairs\n", (unsigned long long) seed,
                              w->label, w->estimate.ratio, w->estimate.ci_low, w->estimate.ci_high,
                              w->n_logs);
                assert_true(w->estimate.ci_low > 1.1 && w->estimate.ci_high < 1.6);
                assert_int_equal(r.events[SEARCH_EVENT_WON], 1);
                uint64_t since = s.winner_since_us;
                /* Ten more minutes: held, re-checked, never lost. */
                run(&s, &m, &now, 600, &r);
                assert_int_equal(s.state, SEARCH_STATE_HOLDING);
                assert_int_equal(s.winner_since_us, since);
                assert_int_equal(r.events[SEARCH_EVENT_LOST_CLAIM], 0);
                assert_true(s.c[s.winner].n_logs >= 5);
                search_done(&s);
        }
}

/* Once the noise is known (an earlier search), a candidate that loses by
 * far more than HarmPercent is dropped after its first block. */
static void test_loser_dropped_in_one_block(void **unused) {
        Search s;
        Model m = group_on_one_core(7);
        Run r = {};
        uint64_t now = 0;

        assert_int_equal(search_init(&s, SEC, 8, 0.02, 0.5, 7, now), 0);
        run(&s, &m, &now, 120, &r);
        assert_int_equal(s.state, SEARCH_STATE_HOLDING);
        assert_true(s.noise_df >= 2);
        /* A new phase: the same threads, twice the demand; hands-off now
         * halves the progress. */
        m.demand = 4.5;
        m.busy = 8;
        m.hands_off = 500;
        Run r2 = {};
        while (s.state != SEARCH_STATE_SEARCHING)
                run(&s, &m, &now, 1, &r2);
        assert_int_equal(r2.events[SEARCH_EVENT_PHASE], 1);
        while (s.state == SEARCH_STATE_SEARCHING && !s.c[1].dropped)
                run(&s, &m, &now, 1, &r2);
        assert_true(s.c[1].dropped);
        assert_int_equal(s.c[1].blocks, 1);
        assert_int_equal(s.c[1].n_logs, 1);
        assert_true(s.c[1].losing_us <= s.block_us);
        search_done(&s);
}

/* A phase that returns is placed from memory at once. */
static void test_phase_from_memory(void **unused) {
        Search s;
        Model a = group_on_one_core(11);
        /* Phase B: eight busy threads; the LLC wins. */
        Model b = {.policy = 1000,
                   .hands_off = 1000,
                   .one_core = 600,
                   .cores = 900,
                   .llc = 1250,
                   .demand = 6.0,
                   .busy = 8,
                   .noise = 0.03,
                   .rng = 12};
        Run r = {};
        uint64_t now = 0;

        assert_int_equal(search_init(&s, SEC, 8, 0.02, 0.5, 11, now), 0);
        run(&s, &a, &now, 120, &r);
        assert_int_equal(s.state, SEARCH_STATE_HOLDING);
        assert_int_equal(hwloc_bitmap_weight(s.c[s.winner].cpus), 1);
        run(&s, &b, &now, 180, &r);
        assert_int_equal(s.state, SEARCH_STATE_HOLDING);
        assert_int_equal(s.c[s.winner].kind, SEARCH_KIND_LLC);
        assert_int_equal(s.searches, 2);

        /* A returns: seen in SEARCH_PHASE_BLOCKS blocks, looked up in one block of
         * the policy, placed on one core from memory: no search. */
        Run r3 = {};
        run(&s, &a, &now, (unsigned) SEARCH_PHASE_BLOCKS + 2, &r3);
        assert_int_equal(r3.events[SEARCH_EVENT_PHASE], 1);
        assert_int_equal(r3.events[SEARCH_EVENT_FROM_MEMORY], 1);
        assert_true(s.from_memory);
        assert_int_equal(s.state, SEARCH_STATE_HOLDING);
        assert_int_equal(s.c[s.winner].kind, SEARCH_KIND_CORES);
        assert_int_equal(hwloc_bitmap_weight(s.c[s.winner].cpus), 1);
        assert_int_equal(s.searches, 2);
        /* And B again, from memory too. */
        run(&s, &b, &now, (unsigned) SEARCH_PHASE_BLOCKS + 2, &r3);
        assert_int_equal(r3.events[SEARCH_EVENT_FROM_MEMORY], 2);
        assert_int_equal(s.c[s.winner].kind, SEARCH_KIND_LLC);
        assert_int_equal(s.searches, 2);
        search_done(&s);
}

/* A winner that starts losing (the load changed in a way the phase does not
 * show) loses its claim at a re-check, and the search starts again. */
static void test_recheck_loses_claim(void **unused) {
        Search s;
        Model m = group_on_one_core(21);
        Run r = {};
        uint64_t now = 0;

        assert_int_equal(search_init(&s, SEC, 4, 0.02, 0.5, 21, now), 0);
        run(&s, &m, &now, 120, &r);
        assert_int_equal(hwloc_bitmap_weight(s.c[s.winner].cpus), 1);
        m.one_core = 700;
        Run r2 = {};
        run(&s, &m, &now, 120, &r2);
        assert_true(r2.events[SEARCH_EVENT_LOST_CLAIM] >= 1);
        /* Searched again: one core is no longer the winner. */
        assert_false(s.state == SEARCH_STATE_HOLDING && s.c[s.winner].cpus &&
                     hwloc_bitmap_weight(s.c[s.winner].cpus) == 1);
        search_done(&s);
}

/* 1,000 ticks whose load alternates tick by tick (by 75%, beyond the phase
 * threshold) and a candidate that wins and loses by turns, block by block:
 * the placement changes only at a block's end, never twice in 10 s, and no
 * phase is seen in a load that only alternates. */
static void test_no_flap_alternating(void **unused) {
        for (uint64_t seed = 1; seed <= 10; seed++) {
                Search s;
                Model m = group_on_one_core(seed);
                Run r = {};
                uint64_t now = 0;

                m.flip = true;
                m.demand2 = 3.5;
                m.one_core2 = 700;
                assert_int_equal(search_init(&s, 5 * SEC, 8, 0.02, 0.5, seed, now), 0);
                run(&s, &m, &now, 100, &r);                    /* 1,000 ticks */
                assert_true(r.blocks >= 18 && r.blocks <= 19); /* the search starts half a block in */
                assert_true(r.changes >= 2);
                assert_true(r.max_changes_10s <= 2);
                assert_int_equal(r.events[SEARCH_EVENT_PHASE] + r.events[SEARCH_EVENT_FROM_MEMORY], 0);
                search_done(&s);
        }
}

static void test_invalid(void **unused) {
        Search s;
        SearchEvent ev;
        _cleanup_(snapshot_freep) Snapshot *snap = model_snapshot();

        assert_int_equal(search_init(&s, 0, 8, 0.02, 0.5, 1, 0), -EINVAL);
        assert_int_equal(search_init(&s, SEC, 1, 0.02, 0.5, 1, 0), -EINVAL);
        assert_int_equal(search_init(&s, SEC, 8, 0, 0.5, 1, 0), -EINVAL);
        assert_int_equal(search_init(&s, SEC, 8, 0.02, NAN, 1, 0), -EINVAL);
        assert_int_equal(search_init(&s, SEC, 8, 0.02, 0.5, 1, 0), 0);
        assert_int_equal(search_end_block(&s, 0, NULL, &ev), -EBUSY);
        /* Half a block of the policy first. */
        assert_int_equal(search_start(&s, snap, "/app", SEC / 4), -EAGAIN);
        assert_int_equal(search_start(&s, snap, "/nope", SEC / 2), -ENOENT);
        assert_int_equal(search_start(&s, snap, "/app", SEC / 2), 0);
        assert_int_equal(search_start(&s, snap, "/app", SEC / 2), -EBUSY);
        /* A block without figures counts for nothing. */
        assert_int_equal(search_tick(&s, SEC), SEARCH_STEP_MEASURE);
        assert_int_equal(search_tick(&s, 3 * SEC / 2), SEARCH_STEP_END);
        assert_int_equal(search_end_block(&s, 3 * SEC / 2, NULL, &ev), 0);
        assert_int_equal(search_tick(&s, 2 * SEC), SEARCH_STEP_MEASURE);
        assert_int_equal(search_end_block(&s, 5 * SEC / 2, NULL, &ev), 0);
        assert_int_equal(s.c[s.against].n_logs, 0);
        assert_string_equal(search_kind_to_string(SEARCH_KIND_LLC), "llc");
        assert_int_equal(search_kind_from_string("cores"), SEARCH_KIND_CORES);
        search_done(&s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_candidates_streams),
                cmocka_unit_test(test_candidates_model),
                cmocka_unit_test(test_group_wins_one_core),
                cmocka_unit_test(test_loser_dropped_in_one_block),
                cmocka_unit_test(test_phase_from_memory),
                cmocka_unit_test(test_recheck_loses_claim),
                cmocka_unit_test(test_no_flap_alternating),
                cmocka_unit_test(test_invalid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
