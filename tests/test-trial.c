/* SPDX-License-Identifier: MIT */
/* Trials: the block schedule, settling, the verdict over a stream with a
 * known effect read through the real counter reader, the record, its
 * interruption and restart, and the store's confinement. */
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>

#include "test-helpers.h"

#include "cgroup-counters.h"
#include "evaluate.h"
#include "trial-store.h"
#include "trial.h"

#define SEC USEC_PER_SEC

static TrialSpec spec(uint64_t duration_s, uint64_t block_s, uint64_t seed) {
        return (TrialSpec){
                .cgroup = (char *) "/app",
                .duration_us = duration_s * SEC,
                .block_us = block_s * SEC,
                .primary = TRIAL_SIGNAL_LATENCY,
                .higher_is_better = false,
                .margin = TRIAL_DEFAULT_MARGIN,
                .seed = seed,
        };
}

static Trial *new_trial(uint64_t duration_s, uint64_t block_s, uint64_t seed) {
        Trial *t = NULL;
        TrialSpec s = spec(duration_s, block_s, seed);
        assert_int_equal(trial_new("20261206T170000Z-1", &s, SEC, 1000 * SEC, 1800000000ULL * SEC, &t, NULL),
                         0);
        return t;
}

/* Readiness first, then pairs of both arms in an order the seed decides:
 * the same seed, the same order; across seeds both orders occur. */
static void test_schedule(void **unused) {
        _cleanup_(trial_freep) Trial *t = new_trial(20 * 30 + 59, 30, 42),
                                     *again = new_trial(20 * 30, 30, 42);
        unsigned steered_first = 0;

        assert_int_equal(t->n_blocks, 20);
        assert_int_equal(trial_pairs_for(20 * 30 * SEC + 59 * SEC, 30 * SEC), 9);
        for (size_t i = 0; i < TRIAL_READINESS_BLOCKS; i++) {
                assert_true(t->blocks[i].readiness);
                assert_int_equal(t->blocks[i].arm, TRIAL_ARM_HANDS_OFF);
        }
        for (size_t i = TRIAL_READINESS_BLOCKS; i < t->n_blocks; i += 2) {
                assert_int_not_equal(t->blocks[i].arm, t->blocks[i + 1].arm);
                assert_false(t->blocks[i].readiness);
                assert_int_equal(t->blocks[i].arm, again->blocks[i].arm);
        }
        for (uint64_t seed = 1; seed <= 50; seed++) {
                _cleanup_(trial_freep) Trial *u = new_trial(10 * 30, 30, seed);
                for (size_t i = TRIAL_READINESS_BLOCKS; i < u->n_blocks; i += 2)
                        steered_first += u->blocks[i].arm == TRIAL_ARM_STEERED;
        }
        /* 200 coin flips: far from 0 and from 200. */
        assert_in_range(steered_first, 60, 140);
        assert_int_equal(trial_arm(t), TRIAL_ARM_HANDS_OFF);
        assert_true(t->blocks[0].started);
        assert_false(t->blocks[1].started);
}

static void test_new_refuses(void **unused) {
        Trial *t = NULL;
        char *error = NULL;
        TrialSpec s = spec(5 * 30, 30, 1);

        /* 5 blocks: readiness and one pair only. */
        assert_int_equal(trial_new("a", &s, SEC, 0, 0, &t, &error), -EINVAL);
        assert_non_null(strstr(error, "at least 180 s"));
        free(error);
        s = spec(600, 1, 1);
        assert_int_equal(trial_new("a", &s, 3 * SEC, 0, 0, &t, &error), -EINVAL);
        assert_non_null(strstr(error, "too short"));
        free(error);
        s = spec(3000, 1, 1);
        assert_int_equal(trial_new("a", &s, SEC, 0, 0, &t, &error), -EINVAL);
        assert_non_null(strstr(error, "too many"));
        free(error);
        s = spec(600, 30, 1);
        s.margin = 1.5;
        assert_int_equal(trial_new("a", &s, SEC, 0, 0, &t, NULL), -EINVAL);
        s.margin = 0.02;
        assert_int_equal(trial_new("../x", &s, SEC, 0, 0, &t, NULL), -EINVAL);
        assert_null(t);
}

/* The discarded part: half a block until a steered block was seen, then
 * the longest settling time seen, the same for both blocks of a pair; a
 * block in which steerd acts after its measured part began is unsettled. */
static void test_settling(void **unused) {
        _cleanup_(trial_freep) Trial *t = new_trial(8 * 10, 10, 7);
        uint64_t now = 1000 * SEC;
        TrialValues v = {.has[TRIAL_SIGNAL_LATENCY] = true, .v[TRIAL_SIGNAL_LATENCY] = 5};
        int next;

        /* Readiness: the give-back at its first tick, quiet after it. */
        for (size_t blk = 0; blk < TRIAL_READINESS_BLOCKS; blk++) {
                for (unsigned i = 1; i < 5; i++)
                        assert_int_equal(trial_tick(t, now + i * SEC, i == 1), TRIAL_STEP_NONE);
                assert_int_equal(trial_tick(t, now + 5 * SEC, false), TRIAL_STEP_MEASURE);
                assert_true(t->blocks[blk].settled);
                assert_int_equal(t->blocks[blk].quiet_us - t->blocks[blk].start_us, 4 * SEC);
                assert_int_equal(trial_tick(t, now + 10 * SEC, false), TRIAL_STEP_END);
                assert_int_equal(trial_end_block(t, now + 10 * SEC, &v, &next), 0);
                now += 10 * SEC;
        }
        /* The first pair: no steered block seen yet, half a block; steerd
         * acts at 6 s in the steered one: unsettled. */
        for (size_t blk = 2; blk < 4; blk++) {
                bool steered = t->blocks[blk].arm == TRIAL_ARM_STEERED;
                assert_int_equal(t->blocks[blk].discard_us, 5 * SEC);
                for (unsigned i = 1; i < 5; i++)
                        assert_int_equal(trial_tick(t, now + i * SEC, steered && i == 2), TRIAL_STEP_NONE);
                assert_int_equal(trial_tick(t, now + 5 * SEC, false), TRIAL_STEP_MEASURE);
                assert_int_equal(trial_tick(t, now + 6 * SEC, steered), TRIAL_STEP_NONE);
                assert_int_equal(t->blocks[blk].settled, !steered);
                assert_int_equal(trial_tick(t, now + 10 * SEC, false), TRIAL_STEP_END);
                assert_int_equal(trial_end_block(t, now + 10 * SEC, &v, &next), 0);
                now += 10 * SEC;
        }
        /* The steered block never had 3 quiet ticks after its last action:
         * it settled not at all, the next pair discards the most there is. */
        assert_int_equal(t->settle_seen_us, 10 * SEC);
        assert_int_equal(t->blocks[4].discard_us, 5 * SEC); /* at most half a block */
        for (unsigned i = 1; i < 5; i++)
                assert_int_equal(trial_tick(t, now + i * SEC, false), TRIAL_STEP_NONE);
        assert_int_equal(trial_tick(t, now + 5 * SEC, false), TRIAL_STEP_MEASURE);
        assert_int_equal(trial_end_block(t, now + 10 * SEC, &v, &next), 0);
        assert_int_equal(t->blocks[5].discard_us, t->blocks[4].discard_us);
        /* A block that was not measured cannot end. */
        assert_int_equal(trial_end_block(t, now + 10 * SEC, &v, &next), -EBUSY);
        assert_true(fabs(trial_progress(t, now + 10 * SEC) - 50.0 / 80) < 1e-9);
}

/* A tick stamped before the trial's start (the timer was due before the bus
 * call that started it) is no time into the first block: it measures nothing
 * yet, and the first block still discards half of itself. */
static void test_tick_before_start(void **unused) {
        _cleanup_(trial_freep) Trial *t = new_trial(8 * 10, 10, 7);
        uint64_t start = 1000 * SEC;

        assert_int_equal(trial_tick(t, start - SEC / 10, false), TRIAL_STEP_NONE);
        assert_false(t->blocks[0].measuring);
        assert_int_equal(trial_tick(t, start + 4 * SEC, false), TRIAL_STEP_NONE);
        assert_int_equal(trial_tick(t, start + 5 * SEC, false), TRIAL_STEP_MEASURE);
        assert_int_equal(t->blocks[0].measure_us - t->blocks[0].start_us, 5 * SEC);
}

/* Short settling: the discard follows what was seen. */
static void test_settling_short(void **unused) {
        _cleanup_(trial_freep) Trial *t = new_trial(8 * 10, 10, 9);
        uint64_t now = 1000 * SEC;
        TrialValues v = {.has[TRIAL_SIGNAL_LATENCY] = true, .v[TRIAL_SIGNAL_LATENCY] = 5};
        int next;

        for (size_t blk = 0; blk < 4; blk++) {
                for (unsigned i = 1; i <= 10; i++) {
                        TrialStep st = trial_tick(t, now + i * SEC, i == 1);
                        if (st == TRIAL_STEP_END)
                                assert_int_equal(trial_end_block(t, now + i * SEC, &v, &next), 0);
                }
                now += 10 * SEC;
        }
        /* Quiet 3 ticks after the action at 1 s: 4 s. */
        assert_int_equal(t->settle_seen_us, 4 * SEC);
        assert_int_equal(t->blocks[4].discard_us, 4 * SEC);
}

/* ---- a stream with a known effect, through the counter reader ---- */

typedef struct Sim {
        char *root;
        RootDir *rd;
        CgroupLocation loc;
        uint64_t delay[3], pcount[3], pressure_us;
        uint64_t rng;
} Sim;

static const pid_t sim_tids[3] = {4101, 4102, 4107};

static double sim_noise(Sim *s) {
        /* A uniform number in [-1, 1) from a fixed LCG: the same stream every run. */
        s->rng = s->rng * 6364136223846793005ULL + 1442695040888963407ULL;
        return (double) (s->rng >> 11) / (double) (1ULL << 53) * 2 - 1;
}

static void sim_write(Sim *s) {
        char path[128], text[128];
        for (size_t i = 0; i < 3; i++) {
                snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", sim_tids[i], sim_tids[i]);
                snprintf(text, sizeof(text), "%llu %llu %llu\n", 1000ULL * s->pcount[i],
                         (unsigned long long) s->delay[i], (unsigned long long) s->pcount[i]);
                test_write_file(s->root, path, text);
        }
        snprintf(text, sizeof(text),
                 "some avg10=1.00 avg60=1.00 avg300=1.00 total=%llu\nfull avg10=0.00 avg60=0.00 avg300=0.00 "
                 "total=0\n",
                 (unsigned long long) s->pressure_us);
        test_write_file(s->root, "/sys/fs/cgroup/app/cpu.pressure", text);
}

static void sim_setup(Sim *s, uint64_t seed) {
        *s = (Sim){.root = test_mkdtemp(), .rng = seed};
        test_write_file(s->root, "/sys/fs/cgroup/app/cgroup.threads", "4101\n4102\nnot-a-tid\n4107\n4999\n");
        sim_write(s);
        assert_int_equal(rootdir_open(s->root, &s->rd), 0);
        s->loc = (CgroupLocation){.dir = (char *) "/sys/fs/cgroup/app", .v2 = true};
}

static void sim_done(Sim *s) {
        rootdir_free(s->rd);
        test_rm_rf(s->root);
        free(s->root);
}

/* One second of the workload: 1000 slices a thread; run-queue delay per
 * slice 50 µs times the arm's effect, with +-5% noise per second. */
static void sim_second(Sim *s, bool steered, double effect) {
        double f = (steered ? effect : 1.0) * (1 + 0.05 * sim_noise(s));
        for (size_t i = 0; i < 3; i++) {
                s->pcount[i] += 1000;
                s->delay[i] += (uint64_t) (1000 * 50000 * f);
        }
        s->pressure_us += (uint64_t) (200000 * f);
        sim_write(s);
}

/* Runs a whole trial the way the manager does, one tick a second. */
static Trial *run_stream(double effect, uint64_t seed) {
        Trial *t = new_trial(12 * 10, 10, seed);
        CgroupCounters first = {};
        Sim s;
        uint64_t now = 1000 * SEC;
        bool switched = true;

        sim_setup(&s, seed);
        while (t->state == TRIAL_STATE_RUNNING) {
                now += SEC;
                sim_second(&s, trial_arm(t) == TRIAL_ARM_STEERED, effect);
                TrialStep step = trial_tick(t, now, switched);
                switched = false;
                if (step == TRIAL_STEP_MEASURE) {
                        cgroup_counters_done(&first);
                        assert_int_equal(cgroup_counters_read(s.rd, &s.loc, now, &first), 0);
                        assert_int_equal(first.n, 3); /* 4999 has no files: skipped */
                } else if (step == TRIAL_STEP_END) {
                        CgroupCounters last = {};
                        TrialValues v;
                        int next;
                        assert_int_equal(cgroup_counters_read(s.rd, &s.loc, now, &last), 0);
                        assert_int_equal(cgroup_counters_values(&first, &last, &v), 0);
                        cgroup_counters_done(&last);
                        assert_true(v.has[TRIAL_SIGNAL_LATENCY] && v.has[TRIAL_SIGNAL_SLICES] &&
                                    v.has[TRIAL_SIGNAL_PRESSURE]);
                        assert_in_range((unsigned) lround(v.v[TRIAL_SIGNAL_SLICES]), 3000, 3000);
                        assert_int_equal(trial_end_block(t, now, &v, &next), 0);
                        switched = next >= 0;
                }
        }
        cgroup_counters_done(&first);
        sim_done(&s);
        return t;
}

static void test_stream_helps(void **unused) {
        _cleanup_(trial_freep) Trial *t = run_stream(0.8, 11);
        TrialVerdict v;
        RatioEstimate e;

        assert_int_equal(t->state, TRIAL_STATE_DONE);
        assert_int_equal(trial_verdict(t, &v), 0);
        assert_int_equal(v.verdict, STATS_VERDICT_BETTER);
        assert_int_equal(v.pairs, 5);
        assert_true(v.e.ci_low <= 0.8 && 0.8 <= v.e.ci_high);
        assert_non_null(strstr(v.text, "helps by "));
        /* Pressure moved with it; slices did not (the same work either way). */
        assert_int_equal(trial_estimate(t, TRIAL_SIGNAL_PRESSURE, &e, NULL), 0);
        assert_true(e.ci_high < 1);
        assert_int_equal(trial_estimate(t, TRIAL_SIGNAL_SLICES, &e, NULL), 0);
        assert_true(fabs(e.ratio - 1) < 1e-9);
        assert_true(trial_progress(t, 0) == 1);
}

static void test_stream_hurts(void **unused) {
        _cleanup_(trial_freep) Trial *t = run_stream(1.25, 12);
        TrialVerdict v;

        assert_int_equal(trial_verdict(t, &v), 0);
        assert_int_equal(v.verdict, STATS_VERDICT_WORSE);
        assert_true(v.e.ci_low <= 1.25 && 1.25 <= v.e.ci_high);
        assert_non_null(strstr(v.text, "hurts by "));
}

/* No effect: never "helps" or "hurts", over many seeds (the noise here is
 * far below the margin, so each says "no difference"). */
static void test_stream_null(void **unused) {
        for (uint64_t seed = 100; seed < 110; seed++) {
                _cleanup_(trial_freep) Trial *t = run_stream(1.0, seed);
                TrialVerdict v;
                assert_int_equal(trial_verdict(t, &v), 0);
                assert_true(v.verdict == STATS_VERDICT_SAME || v.verdict == STATS_VERDICT_CANT_TELL);
        }
}

/* Sets a whole trial's figures by hand: the readiness blocks' latency,
 * then each pair's hands-off latency and its steered one at ratio x. */
static void set_blocks(Trial *t, double ready0, double ready1, const double *ho, const double *x) {
        for (size_t i = 0; i < t->n_blocks; i++) {
                TrialBlock *b = &t->blocks[i];
                double v = i == 0 ? ready0 : i == 1 ? ready1 : ho[(i - TRIAL_READINESS_BLOCKS) / 2];
                if (b->arm == TRIAL_ARM_STEERED)
                        v *= x[(i - TRIAL_READINESS_BLOCKS) / 2];
                b->ended = true;
                b->values = (TrialValues){};
                b->values.has[TRIAL_SIGNAL_LATENCY] = true;
                b->values.v[TRIAL_SIGNAL_LATENCY] = v;
        }
}

/* Two pairs that happen to agree, on a host whose hands-off blocks differ
 * by 75% (an A/A trial of trials.sh said "hurts by 75% [55%, 98%]"): the
 * readiness blocks' difference is pooled into the noise, and the verdict
 * is can't tell. The same pairs after readiness blocks that agree keep
 * their verdict: a real effect is not hidden. */
static void test_readiness_pooled(void **unused) {
        _cleanup_(trial_freep) Trial *t = new_trial(6 * 2, 2, 7);
        static const double ho[] = {35.4, 50.3}, x[] = {1.766, 1.732};
        TrialVerdict v;
        RatioEstimate alone;

        assert_int_equal(t->n_blocks, 6);
        set_blocks(t, 79.9, 45.7, ho, x);
        assert_int_equal(trial_verdict(t, &v), 0);
        assert_int_equal(v.pairs, 2);
        assert_int_equal(v.verdict, STATS_VERDICT_CANT_TELL);
        assert_true(v.e.ci_low < 1 && v.e.ci_high > 3);
        /* The pairs alone claim far more. */
        double logs[] = {log(x[0]), log(x[1])};
        assert_int_equal(stats_log_ratios(logs, 2, &alone), 0);
        assert_true(alone.ci_low > 1.4);

        set_blocks(t, 45.0, 45.5, ho, x);
        assert_int_equal(trial_verdict(t, &v), 0);
        assert_int_equal(v.verdict, STATS_VERDICT_WORSE);
        assert_true(v.e.ci_low > 1.02 && v.e.ci_low <= 1.75 && 1.75 <= v.e.ci_high);
}

static void test_verdict_text(void **unused) {
        _cleanup_(trial_freep) Trial *t = new_trial(6 * 10, 10, 3);
        TrialVerdict v;
        const double steered[] = {90, 130}, hands_off[] = {100, 100};

        assert_int_equal(trial_verdict(t, &v), 0);
        assert_int_equal(v.verdict, STATS_VERDICT_CANT_TELL);
        assert_string_equal(v.text, "can't tell yet: 0 pairs of blocks measured, 2 needed");
        for (size_t i = 0; i < t->n_blocks; i++) {
                TrialBlock *b = &t->blocks[i];
                double x = b->readiness                  ? 100
                           : b->arm == TRIAL_ARM_STEERED ? steered[(i - 2) / 2]
                                                         : hands_off[(i - 2) / 2];
                *b = (TrialBlock){
                        .arm = b->arm,
                        .readiness = b->readiness,
                        .started = true,
                        .measuring = true,
                        .ended = true,
                        .values = {.has[TRIAL_SIGNAL_LATENCY] = true, .v[TRIAL_SIGNAL_LATENCY] = x}};
        }
        t->current = t->n_blocks;
        t->state = TRIAL_STATE_DONE;
        assert_int_equal(trial_verdict(t, &v), 0);
        assert_int_equal(v.verdict, STATS_VERDICT_CANT_TELL);
        assert_non_null(strstr(v.text, "can't tell: the blocks vary by +-"));
        assert_true(v.more_blocks > 0);
        double noise;
        assert_int_equal(trial_readiness_noise(t, &noise), 0);
        assert_true(noise == 0);
}

/* The record: written, read back the same, the verdict recomputed; a stop
 * or kill mid-trial reads back "interrupted" after a restart. */
static void test_record_round_trip(void **unused) {
        _cleanup_(trial_freep) Trial *t = run_stream(0.8, 21), *back = NULL;
        _cleanup_(freep) char *a = NULL, *b = NULL;

        assert_int_equal(trial_to_json(t, &a), 0);
        assert_int_equal(trial_from_json(a, &back), 0);
        assert_int_equal(trial_to_json(back, &b), 0);
        assert_string_equal(a, b);
        assert_non_null(strstr(a, "\"verdict\":\"better\"") ?: strstr(a, "\"verdict\": \"better\""));

        const char *bad[] = {
                "",
                "[]",
                "{}",
                "{\"id\":\"../x\"}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                Trial *x = NULL;
                assert_int_equal(trial_from_json(bad[i], &x), -EBADMSG);
                assert_null(x);
        }
        /* A record whose blocks break the schedule's shape. */
        _cleanup_(freep) char *broken = strdup(a);
        char *arm = strstr(broken, "\"hands-off\"");
        assert_non_null(arm);
        memcpy(arm, "\"steered\"  ", 11);
        Trial *x = NULL;
        assert_int_equal(trial_from_json(broken, &x), -EBADMSG);
}

static void test_store_interrupt_restart(void **unused) {
        _cleanup_(freep) char *dir = test_mkdtemp();
        _cleanup_(trial_freep) Trial *t = new_trial(12 * 10, 10, 5), *back = NULL;
        uint64_t now = 1000 * SEC;
        int next;

        /* Two blocks in, then "killed": the file still says running. */
        for (int blk = 0; blk < 2; blk++) {
                now += 5 * SEC;
                assert_int_equal(trial_tick(t, now, false), TRIAL_STEP_MEASURE);
                now += 5 * SEC;
                assert_int_equal(trial_tick(t, now, false), TRIAL_STEP_END);
                TrialValues v = {.has[TRIAL_SIGNAL_LATENCY] = true, .v[TRIAL_SIGNAL_LATENCY] = 40 + blk};
                assert_int_equal(trial_end_block(t, now, &v, &next), 0);
        }
        assert_int_equal(trial_store_save(dir, t), 0);
        /* A stray file and a link are not records. */
        test_write_file(dir, "notes.txt", "hello");
        test_write_file(dir, "x.json", "{}");
        char link[512];
        snprintf(link, sizeof(link), "%s/zz.json", dir);
        assert_int_equal(symlink("/etc/passwd", link), 0);

        assert_int_equal(trial_store_interrupt_running(dir, "steerd did not stop cleanly"), 1);
        assert_int_equal(trial_store_load(dir, t->id, &back), 0);
        assert_int_equal(back->state, TRIAL_STATE_INTERRUPTED);
        assert_string_equal(back->end_reason, "steerd did not stop cleanly");
        assert_int_equal(back->current, 2);
        double noise;
        assert_int_equal(trial_readiness_noise(back, &noise), 0);
        assert_true(fabs(noise - log(41.0 / 40)) < 1e-12);
        /* Nothing runs any more: a second start changes nothing. */
        assert_int_equal(trial_store_interrupt_running(dir, "again"), 0);

        Trial *x = NULL;
        assert_int_equal(trial_store_load(dir, "../etc/passwd", &x), -EINVAL);
        assert_int_equal(trial_store_load(dir, "zz", &x), -EBADMSG);
        assert_int_equal(trial_store_load(dir, "nope", &x), -ENOENT);

        /* Prune keeps the newest. */
        for (unsigned i = 0; i < 5; i++) {
                _cleanup_(trial_freep) Trial *u = new_trial(6 * 10, 10, i);
                char id[64];
                assert_int_equal(trial_make_id(1900000000ULL * SEC + i, i, id, sizeof(id)), 0);
                free(u->id);
                u->id = strdup(id);
                assert_int_equal(trial_store_save(dir, u), 0);
        }
        Trial **list = NULL;
        size_t n = 0;
        assert_int_equal(trial_store_list(dir, &list, &n), 0);
        assert_int_equal(n, 6);
        trial_list_free(list, n);
        assert_int_equal(trial_store_prune(dir, 2), 4);
        assert_int_equal(trial_store_list(dir, &list, &n), 0);
        assert_int_equal(n, 2);
        char stray[512];
        snprintf(stray, sizeof(stray), "%s/x.json", dir);
        assert_int_equal(access(stray, F_OK), 0);
        assert_string_equal(list[1]->id, "20300317T174640Z-4");
        trial_list_free(list, n);
        test_rm_rf(dir);
}

/* Counters: a thread that restarted its counters (a new thread of the same
 * id) counts what it has; nothing ran is no figure at all. */
static void test_counter_values(void **unused) {
        ThreadCounter a1[] = {{.tid = 1, .run_ns = 1000000000, .run_delay_ns = 1000, .pcount = 10},
                              {.tid = 2, .run_ns = 0, .run_delay_ns = 5000, .pcount = 100}},
                      b1[] = {{.tid = 1, .run_ns = 2000000000, .run_delay_ns = 3000, .pcount = 30},
                              {.tid = 2, .run_ns = 10000000, .run_delay_ns = 100, .pcount = 10},
                              {.tid = 3, .run_ns = 1000, .run_delay_ns = 900, .pcount = 5}};
        CgroupCounters a = {.at_us = SEC, .threads = a1, .n = 2},
                       b = {.at_us = 3 * SEC, .threads = b1, .n = 3};
        TrialValues v;

        assert_int_equal(cgroup_counters_values(&a, &b, &v), 0);
        /* delays 2000 + 100 + 900 over slices 20 + 10 + 5 */
        assert_true(fabs(v.v[TRIAL_SIGNAL_LATENCY] - 3000.0 / 35 / 1e3) < 1e-12);
        assert_true(fabs(v.v[TRIAL_SIGNAL_SLICES] - 35.0 / 2) < 1e-12);
        assert_false(v.has[TRIAL_SIGNAL_PRESSURE]);
        /* The load: run + wait over 2 s (thread 2 restarted: all it has);
         * busy: thread 1 alone ran 1% of the time or more. */
        double demand;
        unsigned busy;
        assert_int_equal(cgroup_counters_load(&a, &b, &demand, &busy), 0);
        assert_true(fabs(demand - (1e9 + 2000 + 1e7 + 100 + 1000 + 900) / 2e9) < 1e-12);
        assert_int_equal(busy, 1);
        assert_int_equal(cgroup_counters_load(&b, &a, &demand, &busy), -EINVAL);
        CgroupCounters quiet = {.at_us = 4 * SEC, .threads = b1, .n = 3};
        assert_int_equal(cgroup_counters_values(&b, &quiet, &v), 0);
        assert_false(v.has[TRIAL_SIGNAL_LATENCY] || v.has[TRIAL_SIGNAL_SLICES]);
        assert_int_equal(cgroup_counters_values(&b, &a, &v), -EINVAL);

        RootDir *rd = NULL;
        _cleanup_(freep) char *root = test_mkdtemp();
        CgroupLocation loc = {.dir = (char *) "/sys/fs/cgroup/gone", .v2 = true};
        CgroupCounters c;
        assert_int_equal(rootdir_open(root, &rd), 0);
        assert_int_equal(cgroup_counters_read(rd, &loc, SEC, &c), -ENOENT);
        rootdir_free(rd);
        test_rm_rf(root);
}

/* ---- Evaluate=auto ---- */

/* Runs cycles of an evaluation: latency 50 x effect in the measured steered
 * block, 50 in the hands-off one, +-3% noise. Returns the cycles it took to
 * turn steering off (0: never within max_cycles). */
static unsigned run_evaluation_slices(Evaluation *e, double effect, double slices, unsigned max_cycles,
                                      uint64_t *now, uint64_t *rng) {
        for (unsigned cycle = 1; cycle <= max_cycles; cycle++)
                for (unsigned blk = 0, len = e->cycle; blk < len; blk++) {
                        bool off = evaluate_hands_off(e), measured = evaluate_measured(e);
                        assert_int_equal(off, blk == e->off_pos);
                        *now += e->block_us / 2;
                        assert_int_equal(evaluate_tick(e, *now),
                                         measured ? EVALUATE_STEP_MEASURE : EVALUATE_STEP_NONE);
                        *now += e->block_us / 2;
                        assert_int_equal(evaluate_tick(e, *now), EVALUATE_STEP_END);
                        *rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
                        double noise = 1 + 0.03 * ((double) (*rng >> 11) / (double) (1ULL << 53) * 2 - 1);
                        TrialValues v = {.has[TRIAL_SIGNAL_LATENCY] = true,
                                         .v[TRIAL_SIGNAL_LATENCY] = 50 * (off ? 1 : effect) * noise,
                                         .has[TRIAL_SIGNAL_SLICES] = true,
                                         .v[TRIAL_SIGNAL_SLICES] = 1000 * (off ? 1 : slices) * noise};
                        bool turned_off;
                        assert_int_equal(evaluate_end_block(e, *now, measured ? &v : NULL, &turned_off), 0);
                        if (turned_off) {
                                assert_int_equal(blk, len - 1); /* only at a cycle's end */
                                return cycle;
                        }
                }
        return 0;
}

/* Slices a second the same in both arms. */
static unsigned run_evaluation(Evaluation *e, double effect, unsigned max_cycles, uint64_t *now,
                               uint64_t *rng) {
        return run_evaluation_slices(e, effect, 1.0, max_cycles, now, rng);
}

static void test_evaluate_schedule(void **unused) {
        Evaluation e;
        unsigned at[8] = {};

        assert_int_equal(evaluate_init(&e, 1, SEC, 0.02, 3600 * SEC, 1, 0), -EINVAL);
        assert_int_equal(evaluate_init(&e, 8, 0, 0.02, 3600 * SEC, 1, 0), -EINVAL);
        assert_int_equal(evaluate_init(&e, 8, SEC, 0, 3600 * SEC, 1, 0), -EINVAL);
        unsigned fast_first[2] = {};
        for (uint64_t seed = 0; seed < 400; seed++) {
                uint64_t now = 0, rng = seed;
                /* A harm margin no noise reaches: the schedule alone. */
                assert_int_equal(evaluate_init(&e, 8, 10 * SEC, 0.5, 3600 * SEC, seed, 0), 0);
                /* The fast start: two blocks a cycle, either first. */
                assert_int_equal(e.cycle, 2);
                assert_true(e.off_pos + e.pair_pos == 1);
                fast_first[e.off_pos]++;
                assert_int_equal(run_evaluation(&e, 1.0, EVALUATE_MIN_PAIRS, &now, &rng), 0);
                assert_int_equal(e.n_logs, EVALUATE_MIN_PAIRS);
                assert_int_equal(now, EVALUATE_MIN_PAIRS * 2 * 10 * SEC);
                assert_int_equal(e.cycle, 8);
                assert_in_range(e.off_pos, 1, 7);
                assert_in_range(e.pair_pos, 0, 7);
                assert_true(e.pair_pos + 1 == e.off_pos || e.pair_pos == e.off_pos + 1);
                at[e.off_pos]++;
        }
        assert_true(fast_first[0] > 150 && fast_first[1] > 150);
        /* Never first, every other place taken. */
        assert_int_equal(at[0], 0);
        for (unsigned i = 1; i < 8; i++)
                assert_true(at[i] > 20);
}

/* Harm well beyond HarmPercent turns steering off after the fewest pairs;
 * the cgroup is hands-off until the back-off is over, then steered and
 * judged afresh. */
static void test_evaluate_harm(void **unused) {
        Evaluation e;
        uint64_t now = 0, rng = 5;

        assert_int_equal(evaluate_init(&e, 8, 10 * SEC, 0.02, 3600 * SEC, 42, now), 0);
        assert_int_equal(run_evaluation(&e, 1.25, 50, &now, &rng), EVALUATE_MIN_PAIRS);
        /* In the fast start: 4 pairs of blocks, not 4 cycles of 8. */
        assert_int_equal(now, EVALUATE_MIN_PAIRS * 2 * 10 * SEC);
        assert_true(e.off && e.has_estimate && e.estimate.ci_low > 1.02);
        assert_true(evaluate_hands_off(&e));
        assert_false(evaluate_measured(&e));
        assert_int_equal(evaluate_tick(&e, now + 3599 * SEC), EVALUATE_STEP_NONE);
        assert_true(evaluate_hands_off(&e));
        bool turned_off;
        assert_int_equal(evaluate_end_block(&e, now, NULL, &turned_off), -ESTALE);
        assert_int_equal(evaluate_tick(&e, now + 3600 * SEC), EVALUATE_STEP_RETRY);
        assert_false(e.off);
        assert_int_equal(e.n_logs, 0);
        assert_int_equal(e.times_off, 1);
        assert_int_equal(e.cycle, 2); /* judged afresh, fast again */
        now += 3600 * SEC;
        /* The load changed: steering helps now, and stays on. */
        assert_int_equal(run_evaluation(&e, 0.8, 40, &now, &rng), 0);
        assert_true(e.has_estimate && e.estimate.ci_high < 1);
        assert_int_equal(e.n_logs, EVALUATE_WINDOW_PAIRS);
}

/* Blocks that cannot be measured (no thread ran) end the fast start
 * after EVALUATE_FAST_CYCLES all the same: not half hands-off for good. */
static void test_evaluate_fast_start_bounded(void **unused) {
        Evaluation e;
        uint64_t now = 0;
        bool turned_off;

        assert_int_equal(evaluate_init(&e, 8, 10 * SEC, 0.02, 3600 * SEC, 3, now), 0);
        for (unsigned cycle = 0; cycle < EVALUATE_FAST_CYCLES; cycle++) {
                assert_int_equal(e.cycle, 2);
                for (unsigned blk = 0; blk < 2; blk++) {
                        now += 10 * SEC;
                        (void) evaluate_tick(&e, now);
                        assert_int_equal(evaluate_end_block(&e, now, NULL, &turned_off), 0);
                        assert_false(turned_off);
                }
        }
        assert_int_equal(e.n_logs, 0);
        assert_int_equal(e.cycle, 8);
}

/* A pair pinned together: its latency per slice doubles (the ends wait
 * for each other's hand-over) while its slices a second rise by a third
 * (trials.sh's power row): not harm, steering stays on. The same latency
 * with slices that did not rise is harm. */
static void test_evaluate_progress_keeps(void **unused) {
        Evaluation e;
        uint64_t now = 0, rng = 11;

        assert_int_equal(evaluate_init(&e, 8, 10 * SEC, 0.02, 3600 * SEC, 5, now), 0);
        assert_int_equal(run_evaluation_slices(&e, 2.0, 1.35, 40, &now, &rng), 0);
        assert_false(e.off);
        assert_true(e.has_estimate && e.estimate.ci_low > 1.5);
        assert_int_equal(evaluate_init(&e, 8, 10 * SEC, 0.02, 3600 * SEC, 5, now), 0);
        assert_int_equal(run_evaluation_slices(&e, 2.0, 1.0, 40, &now, &rng), EVALUATE_MIN_PAIRS);
        assert_true(e.off);
}

/* No effect, or harm within the margin: steering stays on. */
static void test_evaluate_no_harm(void **unused) {
        Evaluation e;
        uint64_t now = 0, rng = 9;

        assert_int_equal(evaluate_init(&e, 4, 10 * SEC, 0.02, 3600 * SEC, 7, now), 0);
        assert_int_equal(run_evaluation(&e, 1.0, 60, &now, &rng), 0);
        assert_int_equal(evaluate_init(&e, 4, 10 * SEC, 0.05, 3600 * SEC, 8, now), 0);
        assert_int_equal(run_evaluation(&e, 1.02, 60, &now, &rng), 0);
        assert_false(e.off);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_schedule),
                cmocka_unit_test(test_new_refuses),
                cmocka_unit_test(test_settling),
                cmocka_unit_test(test_tick_before_start),
                cmocka_unit_test(test_settling_short),
                cmocka_unit_test(test_stream_helps),
                cmocka_unit_test(test_stream_hurts),
                cmocka_unit_test(test_stream_null),
                cmocka_unit_test(test_verdict_text),
                cmocka_unit_test(test_readiness_pooled),
                cmocka_unit_test(test_record_round_trip),
                cmocka_unit_test(test_store_interrupt_restart),
                cmocka_unit_test(test_counter_values),
                cmocka_unit_test(test_evaluate_schedule),
                cmocka_unit_test(test_evaluate_harm),
                cmocka_unit_test(test_evaluate_no_harm),
                cmocka_unit_test(test_evaluate_fast_start_bounded),
                cmocka_unit_test(test_evaluate_progress_keeps),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
