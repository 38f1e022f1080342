/* SPDX-License-Identifier: MIT */
#pragma once

/* Placement search (docs/POLICY.md, "Placement search"): what a person with
 * taskset does, pin, measure, keep what wins, run as experiments on one
 * opted-in cgroup.
 *
 * Candidates (search_candidates()): steerd's policy as it is (the
 * reference, always candidate 0), the kernel default (hands-off), the
 * cgroup's threads on the fewest cores that held it at the last look (as
 * many as held a share of it, halved down to one core), and the one LLC that
 * held most of it. At most SEARCH_MAX_CANDIDATES, every placement within the
 * CPUs the cgroup may use, none equal to another.
 *
 * Experiments: pairs of blocks, the policy's and one candidate's, in a
 * random order; each block's second half is measured (the first settles),
 * by the cgroup's progress: time slices a second, higher is better. A pair
 * gives ln(candidate / policy). The noise of a pair is pooled over every
 * candidate's pairs (their deviations from their own means), so that a
 * candidate's first block can be judged: one losing beyond HarmPercent with
 * confidence is dropped after that block. A candidate is done when the
 * verdict (stats_verdict()) is not "can't tell" after two pairs, or after
 * SEARCH_MAX_PAIRS. The winner is the candidate whose interval lies above 1
 * with the highest lower bound (the gain that is surest), else the policy.
 *
 * Holding: the winner is placed; every `duty` blocks one pair (winner and
 * policy) re-checks it; a winner whose last pairs say it now loses beyond
 * HarmPercent loses its claim and the search starts again.
 *
 * Phases: the load of each block of one placement (steerd's policy while
 * searching, the winner while holding: a placement moves the load itself)
 * (demand in CPUs, run plus wait, and the busy threads; cgroup-counters.h)
 * is compared with the phase's: a change beyond `phase_change`
 * (GuardPercent) in two such blocks in a row is a new phase, and the
 * winner's claim ends. One block of steerd's policy then measures the new
 * phase's key (demand and busy threads, on a log scale: every key is
 * measured under the policy, since a placement moves the load); what won in
 * a phase is kept under its key, the last SEARCH_MEMORY of them: a phase
 * that returns is placed from memory after that one block and re-checked at
 * the duty, a new one is searched afresh.
 *
 * Nothing flaps: the placement changes only at a block's end, and a block is
 * at least three sample periods (SearchBlockMs=).
 *
 * Pure: the manager reads the counters, gives the figures in with the time,
 * and places what search_arm() names. */

#include <stdbool.h>
#include <stdint.h>

#include "cpuset.h"
#include "snapshot.h"
#include "stats.h"

#define SEARCH_MAX_CANDIDATES 6
/* Pairs of one candidate in one search, and the re-check's ring. */
#define SEARCH_MAX_PAIRS 6
#define SEARCH_MEMORY 8
/* A cgroup that uses less than this (capacity scale) has nothing to place. */
#define SEARCH_MIN_USE 256.0
/* Blocks in a row whose load differs before a phase is new. */
#define SEARCH_PHASE_BLOCKS 2
#define SEARCH_NOISE_DF 30

typedef enum SearchKind {
        SEARCH_KIND_POLICY,    /* "policy": steerd's rules as they are */
        SEARCH_KIND_HANDS_OFF, /* "hands-off": the kernel default, nothing held */
        SEARCH_KIND_CORES,     /* "cores": the busiest cores that held it */
        SEARCH_KIND_LLC,       /* "llc": the LLC that held most of it */
        _SEARCH_KIND_MAX,
        _SEARCH_KIND_INVALID = -EINVAL,
} SearchKind;

const char *search_kind_to_string(SearchKind k) _pure_;
SearchKind search_kind_from_string(const char *s) _pure_;

typedef enum SearchState {
        SEARCH_STATE_WANT,      /* the policy in force until candidates are given */
        SEARCH_STATE_SEARCHING, /* pairs of blocks over the candidates */
        SEARCH_STATE_HOLDING,   /* the winner placed, re-checked at the duty */
        _SEARCH_STATE_MAX,
        _SEARCH_STATE_INVALID = -EINVAL,
} SearchState;

const char *search_state_to_string(SearchState s) _pure_;

typedef struct SearchCandidate {
        SearchKind kind;
        CpuSet cpus; /* cores, llc: the CPUs the cgroup is given; NULL otherwise */
        char label[96];
        double logs[SEARCH_MAX_PAIRS]; /* ln(candidate / policy) of slices a second, a ring */
        size_t n_logs, next_log;
        bool dropped;
        bool has_estimate;
        RatioEstimate estimate;
        StatsVerdict verdict;
        unsigned blocks;    /* blocks run */
        uint64_t losing_us; /* time its blocks made less progress than the policy's of their pair */
} SearchCandidate;

typedef struct SearchMemory {
        bool used;
        uint64_t key;
        SearchKind kind;
        CpuSet cpus;
        char label[96];
        uint64_t at_us;
} SearchMemory;

typedef struct SearchBlock {
        bool has_progress;
        double progress; /* slices a second over the block's measured half */
        bool has_load;
        double demand; /* CPUs: run plus run-queue wait */
        unsigned busy; /* threads that ran */
} SearchBlock;

typedef struct Search {
        uint64_t block_us;
        unsigned duty;
        double harm, phase_change;
        uint64_t rng;

        SearchState state;
        SearchCandidate c[SEARCH_MAX_CANDIDATES];
        size_t n;

        /* The pair in progress: the policy's block and candidate `against`'s. */
        size_t against;
        unsigned pos; /* 0, 1: the block of the pair; HOLDING: 0 while holding */
        bool policy_first;
        bool in_pair;       /* HOLDING: a re-check pair runs */
        unsigned hold_left; /* HOLDING: winner blocks before the next re-check */
        uint64_t block_start_us;
        bool measuring;
        bool has_value[2]; /* [0]: the policy's block, [1]: the candidate's */
        double value[2];

        size_t winner; /* 0: the policy */
        uint64_t winner_since_us;
        bool from_memory;
        /* The noise of a pair learned in earlier searches and re-checks
         * (squared deviations and their degrees of freedom, at most
         * SEARCH_NOISE_DF): a later search judges a first block by it. */
        double noise_ss;
        unsigned noise_df;
        unsigned searches;     /* searches started */
        uint64_t losing_us;    /* summed over every search */
        uint64_t searching_us; /* time spent searching */

        bool has_phase;
        double phase_demand;
        unsigned phase_busy;
        unsigned phase_changed_blocks;
        unsigned phases; /* phase changes seen */
        bool lookup;     /* WANT: the next block of the policy looks the phase up in memory */
        SearchMemory memory[SEARCH_MEMORY];
} Search;

typedef enum SearchStep {
        SEARCH_STEP_NONE,
        SEARCH_STEP_MEASURE, /* the block's measured half starts: read the counters */
        SEARCH_STEP_END,     /* the block ended: search_end_block() with its figures */
} SearchStep;

typedef enum SearchEvent {
        SEARCH_EVENT_NONE,
        SEARCH_EVENT_DROPPED,     /* a candidate lost beyond harm and was dropped */
        SEARCH_EVENT_WON,         /* the search ended: c[winner] holds */
        SEARCH_EVENT_LOST_CLAIM,  /* the re-check says the winner loses now: searching afresh */
        SEARCH_EVENT_PHASE,       /* a new phase: searching afresh (WANT) */
        SEARCH_EVENT_FROM_MEMORY, /* a new phase known from memory: placed after one block */
} SearchEvent;

/* -EINVAL for a block of 0, duty < 2, harm or phase_change not in (0, 1]. */
int search_init(Search *s, uint64_t block_us, unsigned duty, double harm, double phase_change, uint64_t seed,
                uint64_t now_us);
void search_done(Search *s);

/* The candidates for the cgroup `path` of the snapshot, written into
 * s->c[1..] (c[0] is the policy), and the search starts (SEARCHING).
 * -EBUSY unless it waits for them (WANT); -EAGAIN while steerd's policy has
 * not run the cgroup for half a block yet, or a new phase is still looked up
 * in memory (its first block of the policy); -ENOENT when the snapshot does
 * not hold the cgroup; -ENODATA when it uses less than SEARCH_MIN_USE (or
 * only some of its threads were read). */
int search_start(Search *s, const Snapshot *snap, const char *path, uint64_t now_us);

/* The candidate in force. */
const SearchCandidate *search_arm(const Search *s) _pure_;
SearchStep search_tick(Search *s, uint64_t now_us);
/* The block in force ended, with its figures (NULL: none). */
int search_end_block(Search *s, uint64_t now_us, const SearchBlock *b, SearchEvent *ret_event);
/* The key of a load: demand and busy threads on a log scale. */
uint64_t search_phase_key(double demand, unsigned busy);
