/* SPDX-License-Identifier: MIT */
#pragma once

/* Shared by the engine's files; not part of the API.
 *
 * The files, callers above callees (calls only go down this list, so that
 * the checker never depends on the code it checks):
 *
 *   policy.c            one tick: policy_decide(), mode off, the safety
 *                       restores (validate, fixup)
 *   policy-balance.c    moves between LLCs (DESIGN.md 1.3)
 *   policy-window.c     the scan window within an LLC (DESIGN.md 1.1), and the
 *                       consolidation window below overload (DESIGN.md 1.5a)
 *   policy-consolidate.c whether a cgroup below overload hands work among its
 *                       threads and fits in fewer cores than it runs on (asks the
 *                       pairs and groups whether they place it finer)
 *   policy-domain.c     leaf: where windows go: an LLC, or a package's one-core LLCs
 *   policy-sticky.c     prev-CPU pins and their release (DESIGN.md 1.2)
 *   policy-pair.c       a pair of talking threads pinned together, or not at all
 *   policy-guard.c      experiments judged (wait, pressure, progress), reverted (DESIGN.md 1.4)
 *   policy-layers.c     masks of a subject; setting and dropping layers;
 *                       policy_emit(), which runs every action through the checker
 *   policy-check.c      the invariants, per action and per plan
 *   policy-backoff.c    waiting before acting again: guard backoff, departures
 *   policy-unit.c       leaf: a pin's unit and its load, talking threads, a pair's and a
 *                       request/response cgroup's progress
 *   policy-predicates.c leaf: policies enabled, residency, the LLC of a mask, settledness,
 *                       too light for a window, a cgroup's wakeups
 *   policy-state.c      leaf: the state's lifetime, lookups, carry-over by identity
 *   policy-overload.c   leaf: the overload rule (public, policy.h)
 */

#include "log.h"
#include "plan.h"
#include "policy.h"

/* The policies that change masks, own layers and can be backed off; they are
 * the first values of ActionPolicy. */
#define N_LAYER_POLICIES 3

/* One action judged by the guard (DESIGN.md 1.4). */
typedef struct Experiment {
        bool active;
        uint64_t start_us, end_us;
        double before_wait;     /* Σ wait of the affected threads at decision time */
        double before_util;     /* Σ util (CPU received) of the same threads */
        double before_pressure; /* the cgroup's pressure_some_avg10 at decision time */
        bool from_tick;         /* before_* are the last tick's, not means: the load was still changing */
        unsigned n_threads;     /* affected threads at decision time, for the noise floor */
        double sum_wait, sum_util, sum_pressure;
        unsigned n_samples;
        /* A pair pin is judged by its progress too (policy-pair.c): the
         * pair's wakeups per second, before and summed over the trial. */
        bool by_progress;
        double before_progress, sum_progress;
} Experiment;

/* The LLC a balance move took a thread or cgroup out of. A move back to it
 * waits MinResidencyMs * 2^bounces (capped at GuardBackoffMax times), where
 * bounces counts the moves in a row that went back where they came from: load
 * that oscillates between two LLCs gets followed less and less often. */
typedef struct Departure {
        int llc; /* -1 if none */
        uint64_t at_us;
        unsigned bounces;
} Departure;

/* A change steerd holds: the mask it set, and the experiment judging it. */
typedef struct Layer {
        CpuSet mask; /* NULL: not held */
        Experiment exp;
} Layer;

typedef struct ThreadState {
        pid_t tid;
        uint64_t starttime;
        CpuSet orig;       /* affinity before steerd's first change; kept while a layer is held */
        CpuSet own;        /* the thread's own affinity, as last seen unnarrowed by a cgroup layer */
        Layer home;        /* balance: moved to another LLC */
        Layer pin;         /* sticky: narrowed to its previous core */
        bool moved;        /* moved_us is valid */
        uint64_t moved_us; /* the last set_* that could move it (residency) */
        Departure left;    /* its last balance move */
        uint64_t home_idle_since_us; /* its home held and itself idle at every look since; 0: not */
        unsigned streak;             /* sticky: consecutive quiet ticks on streak_unit */
        int streak_unit;             /* core index (or CPU with StickyScope=cpu) of the streak */
        int pin_unit;                /* the unit whose util releases the pin */
        bool pin_unit_cpu;           /* pin_unit is a CPU, not a core */
        /* A pair pin: the partner pinned with it (0: pinned alone, or not a
         * pair). On the lower tid of a candidate pair: the partner it was
         * seen with and for how many ticks in a row. */
        pid_t pair_tid;
        uint64_t pair_starttime;
        pid_t pair_seen_tid;
        unsigned pair_streak;
        /* A group pin (policy-group.c): the group's lead (lowest tid; the
         * lead's own tid on the lead), 0: none. */
        pid_t group_lead;
        uint64_t group_lead_starttime;
        /* The last tick who wakes whom put it in a group (0: never). Its
         * group owns it for GROUP_MEMORY_US after that, whatever one tick's
         * figures say: stickiness does not pin it alone meanwhile. */
        uint64_t grouped_us;
        /* On a group's lead: the capacity of the cores its group outgrew
         * last, and when. Its next placement within GROUP_OUTGROWN_US holds
         * more than that (a ring at 994 of one core was let go, placed on
         * one core again, let go again: five changes in four seconds). */
        /* On a group's member: the last tick who wakes whom saw it in the
         * group it is pinned with. A tick that does not see that group
         * lets it go only GROUP_MEMORY_US after it. */
        uint64_t group_seen_us;
        /* Since when a reason from one tick's figures (it stopped talking,
         * its group outgrew its cores) has held at every look; 0: none. */
        uint64_t group_release_since_us;
        double group_outgrown_cap;
        uint64_t group_outgrown_us;
        /* When stickiness last let the thread go: it is not pinned alone
         * again within STICKY_REPIN_HOLD_US. */
        uint64_t sticky_released_us;

        /* Valid during one policy_decide() only. */
        const ThreadSample *sample;
        bool acted;
} ThreadState;

/* The guard's last verdict on a cgroup-wide change of a policy, for
 * policy_explain(). */
typedef struct Verdict {
        enum { VERDICT_NONE, VERDICT_KEPT, VERDICT_REVERTED } outcome;
        bool by_pressure; /* reverted for pressure, not wait */
        uint64_t at_us;
        double before; /* wait (or pressure) before */
        double after;  /* wait per CPU received after, scaled to the before-util (or pressure) */
        double limit;  /* what after had to stay within */
} Verdict;

typedef struct Backoff {
        unsigned level;    /* reverts in a row */
        uint64_t until_us; /* no new set_* of this policy for this cgroup before */
} Backoff;

/* What the window policy's last decision found for a cgroup, for
 * policy_explain(): the first gate it failed, or that it was a candidate. */
typedef enum WindowGate {
        WINDOW_GATE_UNSEEN,     /* not decided (mode off, not in the snapshot) */
        WINDOW_GATE_ACTED,      /* another policy changed it this tick */
        WINDOW_GATE_DISABLED,   /* its policy or the mode has no windows */
        WINDOW_GATE_BACKED_OFF, /* the guard reverted one: backing off */
        WINDOW_GATE_NO_DEMAND,  /* its threads used no CPU */
        WINDOW_GATE_SMALL_LLC,  /* the LLC is smaller than MinLLCCPUs */
        WINDOW_GATE_CALM,       /* the LLC is calm: windows widen back */
        WINDOW_GATE_NOT_OVERLOADED,
        WINDOW_GATE_BALANCE_HOMES,  /* balance moved some of its threads */
        WINDOW_GATE_TOO_LIGHT,      /* less than a quarter of a CPU of work */
        WINDOW_GATE_SPREAD,         /* under half of its work in its home LLC */
        WINDOW_GATE_NOT_HERE,       /* none of its CPUs in its home LLC */
        WINDOW_GATE_HELD,           /* it holds a window there */
        WINDOW_GATE_CANDIDATE,      /* it may get one: placed if the plan says so */
        WINDOW_GATE_CONSOLIDATE,    /* below overload, it may get a consolidation window */
        WINDOW_GATE_KERNEL_CACHE,   /* one process, whose threads the kernel's cache-aware scheduling keeps
                                       together */
        WINDOW_GATE_TALKERS_PINNED, /* every busy thread of it is pinned with its pair or group */
        _WINDOW_GATE_MAX,
} WindowGate;

/* Why a cgroup below overload gets a consolidation window, or why not
 * (policy-consolidate.c), for the window policy and policy_explain(). */
typedef enum ConsolidateGate {
        CONSOLIDATE_UNSEEN,     /* not looked at (overloaded, or another gate first) */
        CONSOLIDATE_OFF,        /* Consolidate=no */
        CONSOLIDATE_PINNED,     /* threads of it hold pins (a pair's, a group's): placed finer */
        CONSOLIDATE_PAIR,       /* two busy threads, or pairs among them: pinned, not windowed */
        CONSOLIDATE_GROUPS,     /* groups that talk among themselves: placed apart, not windowed */
        CONSOLIDATE_NO_HANDOFF, /* too few wakeups, or long runs: its threads do not hand work on */
        CONSOLIDATE_WAITS,      /* its threads wait for CPU already: no room to squeeze */
        CONSOLIDATE_FITS_NOT,   /* its demand needs every core it runs on */
        CONSOLIDATE_CANDIDATE,  /* hands work and fits in fewer cores */
        CONSOLIDATE_HELD,       /* holds a consolidation window and still hands work */
        _CONSOLIDATE_MAX,
} ConsolidateGate;

typedef struct ConsolidateLook {
        ConsolidateGate gate;
        double wakeups;    /* Σ wakeups per second of its threads */
        double run_us;     /* CPU per wakeup, microseconds */
        double wait_share; /* Σ wait / Σ util */
        unsigned busy;     /* threads with at least CONSOLIDATE_BUSY_UTIL */
        unsigned spread;   /* cores of the domain its busy threads last ran on */
        unsigned need;     /* cores its demand needs (policy_consolidate_demand_cpus()) */
} ConsolidateLook;

typedef struct CgroupState {
        char *path;
        CpuSet orig;  /* the cgroup's CPUs before steerd's first change; kept while a layer is held */
        Layer home;   /* balance: the whole cgroup moved to another LLC */
        Layer window; /* the scan window, on top of home */
        int window_llc;
        bool window_consolidated;       /* the window was placed below overload (consolidation) */
        uint64_t window_since_us;       /* when the window held now was set (from none) */
        ConsolidateLook consolidate;    /* the last look below overload, for policy_explain() */
        uint64_t window_short_since_us; /* overloaded and the window too small since; 0: it is not */
        uint64_t window_long_since_us;  /* the window bigger than its demand needs since; 0: it is not */
        uint64_t window_calm_since_us;  /* its LLC calm at every look since; 0: it is not */
        Departure left;                 /* its last whole-cgroup balance move */
        uint64_t home_idle_since_us;    /* its home held and itself idle at every look since; 0: not */
        PolicyCounters counters;        /* its share of the state's counters, since it was first held */
        Backoff backoff[N_LAYER_POLICIES];
        Verdict verdict[N_LAYER_POLICIES];
        /* Σ wait and Σ util of its threads averaged over about the last
         * GuardWindowMs: a window's "before" (DESIGN.md 1.4: "the same
         * figures before the change"), not one tick's, which is as noisy
         * as a tick and often caught mid ramp-up. */
        double recent_wait, recent_util;
        bool recent_primed;
        /* The window policy's last look at it (policy_explain()). */
        WindowGate window_gate;
        int window_gate_llc;        /* the LLC it was judged in, -1: none */
        double window_gate_demand;  /* Σ util of its threads */
        double window_gate_in_home; /* of which on that LLC */
        ThreadState *threads;       /* sorted by (tid, starttime) */
        size_t n_threads;

        /* Valid during one policy_decide() only. */
        const CgroupSample *sample;
        size_t index;            /* in the snapshot */
        ThreadState **by_sample; /* per sample thread, NULL for a duplicate identity */
        bool acted;
} CgroupState;

struct PolicyState {
        CgroupState *cgroups; /* sorted by path */
        size_t n_cgroups;
        PolicyCounters counters;
};

/* Where the window policy places windows: an LLC, or, where LLCs hold one
 * core each (a VM that shows an L3 per vCPU, Ampere Altra's private L2s),
 * all such LLCs of one package together. A one-core LLC has no wakeup scan
 * to bound and no core to share within it, yet the threads of a group
 * still gain from sharing a core (measured on a 2-vCPU VM with an L3 per
 * vCPU: four hackbench groups pinned two per CPU, 0.947 of the kernel's
 * time, docs/DECISIONS.md). An LLC of two or more cores is a domain of its
 * own, however small (MinLLCCPUs decides about it). */
typedef struct WindowDomain {
        int id;         /* its first LLC's index: what CgroupState.window_llc holds */
        LlcSample view; /* the LLC's figures, or the merged LLCs' (view.cpus then owned) */
        unsigned n_llcs;
        CpuSet online;  /* its online CPUs */
        char label[48]; /* "llc 3", or "llcs 0-1 (package 0)" for reasons */
} WindowDomain;

typedef struct WindowDomains {
        WindowDomain *d;
        size_t n;
        int *llc_domain; /* per LLC of the snapshot: its domain's index in d */
} WindowDomains;

/* policy-domain.c */
int policy_domains_build(const Snapshot *snap, WindowDomains *ret);
void policy_domains_done(WindowDomains *w);
/* The domain whose id is id (an LLC index), NULL if none. */
const WindowDomain *policy_domain_by_id(const WindowDomains *w, int id);
/* The id of the one domain a mask lies in, else -1. */
int policy_mask_domain(const Snapshot *snap, const WindowDomains *w, hwloc_const_bitmap_t mask);

/* One tick's working set. */
typedef struct PolicyCtx {
        const Snapshot *snap;
        const Settings *settings;
        PolicyState *state;
        uint64_t now_us;
        Plan *plan;
        CpuSet online;
        CgroupState **by_sample; /* per snapshot cgroup, NULL for a duplicate path */

        /* Per core index of the snapshot: its online CPUs, their summed util,
         * and its LLC (-1 when it has no online CPU). */
        CpuSet *llc_cpus; /* per LLC: its online CPUs, by the CPUs' own llc index */
        size_t n_cores;
        CpuSet *core_cpus;
        double *core_util;
        int *core_llc;
        WindowDomains domains;
} PolicyCtx;

/* The window domain (its index in ctx->domains) of a core, -1 if none. */
static inline int policy_core_domain(const PolicyCtx *ctx, int core) {
        int llc = core >= 0 && (size_t) core < ctx->n_cores ? ctx->core_llc[core] : -1;
        return llc >= 0 ? ctx->domains.llc_domain[llc] : -1;
}

/* The LLC's index in the snapshot (what CpuSample.llc refers to). */
static inline int policy_llc_index(const PolicyCtx *ctx, const LlcSample *l) {
        return (int) (l - ctx->snap->llcs);
}

/* policy-state.c */
void policy_layer_done(Layer *l);
void policy_state_clear(PolicyState *s);
int policy_dup_mask(hwloc_const_bitmap_t m, CpuSet *ret);
bool policy_thread_holds(const ThreadState *t);
bool policy_cgroup_holds(const CgroupState *c);
/* Carries the state over to the snapshot's cgroups and threads, by path and
 * by (tid, starttime), and fills the tick's lookups. */
int policy_state_sync(PolicyCtx *ctx);
const CgroupState *policy_state_find_cgroup(const PolicyState *s, const char *path);
const ThreadState *policy_cgroup_state_find_thread(const CgroupState *c, pid_t tid, uint64_t starttime);
/* The thread's own affinity. The kernel narrows a thread's affinity to its
 * cpuset, so while steerd holds the cgroup's CPUs the sampled mask may be our
 * own window or move seen through the thread: when it lies within the CPUs
 * steerd set for the cgroup, the mask seen before is kept. Shared by the
 * engine (at the start of a tick) and the checker (from the state before). */
hwloc_const_bitmap_t policy_thread_own_mask(const CgroupState *cs, const ThreadState *t,
                                            const ThreadSample *ts);

/* policy-unit.c */
/* The CPUs a thread would be pinned to and the streak's unit (core index, or
 * the CPU with StickyScope=cpu); NULL when its last CPU is unusable. */
hwloc_const_bitmap_t policy_sticky_unit(const PolicyCtx *ctx, const ThreadSample *ts, CpuSet scratch,
                                        int *ret_unit);
/* The unit a held pin was decided on (the whole core, even when the
 * thread's own mask narrowed the pin further). */
hwloc_const_bitmap_t policy_pin_unit(const PolicyCtx *ctx, const ThreadState *t, CpuSet scratch);
/* The unit's util without the thread's own share (and its partner's, if
 * any), and its capacity. */
void policy_sticky_unit_load(const PolicyCtx *ctx, hwloc_const_bitmap_t unit, const ThreadSample *ts,
                             const ThreadSample *partner, double *ret_others, double *ret_capacity);
/* The longest run per wakeup of a thread that talks, in microseconds. */
#define PAIR_MAX_RUN_US 500.0
/* A thread that talks: scheduled in at least StickyPairWakeups times a
 * second, for short runs. It is pinned with its partner or not at all. */
bool policy_thread_talks(const Settings *st, const ThreadSample *ts);
/* The same against StickyPairWakeups x factor: a held pin changes on the
 * far side of PAIR_HYSTERESIS, so that a thread woken about as often as the
 * threshold (a 1 ms timer at 1000) is not pinned and released by turns. */
#define PAIR_HYSTERESIS 0.75
bool policy_thread_talks_at(const Settings *st, const ThreadSample *ts, double factor);
/* The partner a pair pin holds with this thread, if it is sampled this tick. */
const ThreadState *policy_pair_partner(const CgroupState *c, const ThreadState *t);
/* The pair's wakeups per second, the guard's progress signal. */
double policy_pair_progress(const CgroupState *c, const ThreadState *t);
/* A request/response cgroup (issue 13): its work is a few threads that talk
 * (a client and its server: tbench), at most this many, with most of its
 * CPU. A window on it is judged by its progress, the Σ wakeups per second
 * of its threads (one per request and reply), as a pair pin is: a window
 * under which its switches fell by GuardPercent lost throughput, whatever
 * its wait did (measured: tbench at 0.588x of the kernel's, context
 * switches halved, wait per CPU received not risen). A mesh of many
 * talkers (hackbench, perf bench messaging) is judged by wait per CPU
 * received: its switches fall under a window that makes it faster. */
#define WINDOW_PROGRESS_MAX_TALKERS 4
/* Its progress, or < 0 when the cgroup is not request/response. */
double policy_cgroup_progress(const Settings *st, const CgroupSample *cg);
/* Σ util of a cgroup's threads: the CPU they received. */
double policy_cgroup_util(const CgroupSample *cg);
/* Σ wakeups per second of a cgroup's threads (unknown counts as 0). */
double policy_cgroup_wakeups(const CgroupSample *cg);

/* policy-group.c */
/* Threads of a cgroup that talk among themselves (who wakes whom). */
typedef struct ThreadGroup {
        ThreadState **members; /* sorted by tid: members[0] is the lead */
        size_t n;
        double util, wakeups; /* Σ of its members */
} ThreadGroup;
/* The groups of two or more talkers of a cgroup, by who wakes whom; none
 * where the snapshot has no partners. */
int policy_groups_find(const PolicyCtx *ctx, const CgroupState *c, ThreadGroup **ret, size_t *ret_n);
void policy_groups_free(ThreadGroup *g, size_t n);
/* Whether the cgroup's groups are placed apart (policy-group-place.c): two
 * or more, one of them of three or more. */
int policy_groups_apart(const PolicyCtx *ctx, const CgroupState *c, bool *ret);
/* Whether the snapshot says who wakes whom in this cgroup. */
bool policy_cgroup_has_partners(const CgroupState *c);
/* The members of the cgroup's groups (pairs included), sorted by address
 * for policy_grouped(): stickiness leaves them to their group. NULL and 0
 * where the cgroup has none. Each member is marked seen grouped now
 * (ThreadState.grouped_us). */
int policy_grouped_threads(const PolicyCtx *ctx, const CgroupState *c, ThreadState ***ret, size_t *ret_n);
bool policy_grouped(ThreadState *const *set, size_t n, const ThreadState *t);
/* Who wakes whom holds a thread for its group this long after it was last
 * seen in one: an observation's result is held SAMPLER_WAKE_HOLD_US (10 s)
 * and its figures move from tick to tick, so a group seen on one tick and
 * not on the next is the same group. Without it, a ring of three threads
 * under TCG was pinned alone by stickiness on the ticks its group was not
 * seen and given back on the ticks it was, for 40 s (issue 30). */
#define GROUP_MEMORY_US (15 * USEC_PER_SEC)
/* A group pin goes for what one tick's figures say (it stopped talking, the
 * group outgrew its cores) only once that has held at every look for this
 * long: under load a ring's wakeups and util swing from tick to tick, and a
 * single reading let a ring go and placed it again within half a second,
 * several times in a guest run (issue 30). Its lead gone lets it go at once. */
#define GROUP_RELEASE_PERSIST_US (1 * USEC_PER_SEC)
#define GROUP_OUTGROWN_US (60 * USEC_PER_SEC)
/* A window on an LLC that calmed down is given back only once it has been
 * held this long: confined, a cgroup runs less and its LLC looks calm
 * because of the window itself (the guest check's rings: windowed, given
 * back as calm, windowed again every 1 to 3 s for a minute). Harm is the
 * guard's to undo, at once; calm is no harm. */
#define WINDOW_CALM_HOLD_US (10 * USEC_PER_SEC)
/* ... and once the LLC has looked calm at every look for this long: under
 * load an LLC's mean util swings by half from one tick to the next (the
 * guest check's rings: util 742, 363, 650 on three ticks in a row), and one
 * calm look gave the window back to open it again 3 s later (a CI run,
 * twice in 15 s). */
#define WINDOW_CALM_PERSIST_US (3 * USEC_PER_SEC)
/* A held window shrinks only when its demand has wanted fewer CPUs at every
 * look for this long. Growth stays quick (a window too small is harm, one
 * too big costs little): a demand around a size's boundary (the rings:
 * 1564 to 2033, +25%, 2 or 3 CPUs) otherwise shrank and grew the window
 * every 1 to 4 s, each time moving every thread of the cgroup. */
#define WINDOW_SHRINK_HOLD_US (5 * USEC_PER_SEC)
/* A thread stickiness let go (its core got busy, it waited, it talks) is
 * not pinned alone again for this long: pinning moves the load that made
 * its core busy, the core looks idle again three ticks later, and the
 * thread was pinned and let go by turns (the guest check's rings inside a
 * consolidation window of two CPUs: 3 threads pinned, given back, pinned,
 * for 46 s). The release itself is never held back. */
#define STICKY_REPIN_HOLD_US (10 * USEC_PER_SEC)
bool policy_grouped_recently(const PolicyCtx *ctx, const ThreadState *t);
/* Σ wait and Σ util of the group's pinned members: the guard judges a
 * group on its lead by the group's wait per CPU received. Not by its
 * progress, as a pair: a mesh placed together wakes less often and does
 * more (hackbench's context switches fell to 0.34-0.49x under the
 * placements that made it faster). */
void policy_group_load(const CgroupState *c, const ThreadState *lead, double *ret_wait, double *ret_util);

/* policy-group-place.c */
int policy_group_pin(PolicyCtx *ctx, unsigned budget, unsigned *ret_pins);
int policy_group_release(PolicyCtx *ctx);

/* policy-predicates.c */
/* Which policies a cgroup gets under the mode: a cgroup's policy narrows the
 * mode (DESIGN.md 4), observe decides as latency. */
bool policy_enabled(const Settings *settings, CgroupPolicy cgroup_policy, ActionPolicy policy);
uint64_t policy_residency_us(const Settings *settings);
bool policy_thread_resident(const PolicyCtx *ctx, const ThreadState *t);
/* Every thread of the cgroup may move (MinResidencyMs). */
bool policy_cgroup_threads_resident(const PolicyCtx *ctx, const CgroupState *c);
/* LLC of a mask when all of it lies in one LLC, else -1. */
int policy_mask_llc(const Snapshot *snap, hwloc_const_bitmap_t mask);

/* policy-backoff.c */
/* How long a policy backs off after one more undo in a row: GuardWindowMs *
 * 2^n, at most GuardBackoffMax times. */
uint64_t policy_backoff_us(const Settings *st, const Backoff *b);
/* One more undo in a row: the policy backs off for off_us from now. */
void policy_back_off(CgroupState *c, ActionPolicy p, uint64_t now_us, uint64_t off_us);
bool policy_backed_off(const CgroupState *c, ActionPolicy p, uint64_t now_us);
/* Whether a move to target now would go back too soon; and recording a move. */
bool policy_departure_blocks(const Departure *d, const Settings *settings, uint64_t now_us, int target);
void policy_departure_record(Departure *d, const Settings *settings, uint64_t now_us, int from, int to);

/* policy-check.c */
/* The per-action invariant check shared by the engine and policy_check_plan():
 * prefix is the plan before the action. 0 ok, 1 violation (reason set),
 * negative errno on failure. */
/* online: the snapshot's online CPUs when the caller has them (NULL: computed
 * here; a tick of sticky pins checks thousands of actions). */
int policy_check_action(const Snapshot *snap, const Settings *settings, const PolicyState *state,
                        const Plan *prefix, const Action *a, hwloc_const_bitmap_t online, uint64_t now_us,
                        char **ret_reason);

/* policy-layers.c */
/* Masks. "base" is what the subject had before steerd (recorded, or as
 * sampled while steerd holds nothing); "effective" is what it has now as far
 * as the engine knows (top layer, else base). Borrowed pointers. */
hwloc_const_bitmap_t policy_cgroup_base(const CgroupState *c);
hwloc_const_bitmap_t policy_cgroup_below_window(const CgroupState *c);
hwloc_const_bitmap_t policy_cgroup_effective(const CgroupState *c);
hwloc_const_bitmap_t policy_thread_base(const ThreadState *t);
hwloc_const_bitmap_t policy_thread_below_pin(const ThreadState *t);
hwloc_const_bitmap_t policy_thread_effective(const ThreadState *t);
bool policy_cgroup_holds_thread_homes(const CgroupState *c);
/* Σ util of the online CPUs of a mask. */
double policy_mask_util(const PolicyCtx *ctx, hwloc_const_bitmap_t mask);

/* The restore mask: target ∩ cgroup allowed ∩ online, or when that is empty
 * (hotplug took every CPU of it) the cgroup's allowed ∩ online, the kernel's
 * own fallback. */
int policy_restore_mask(const Snapshot *snap, hwloc_const_bitmap_t online, const CgroupSample *cg,
                        hwloc_const_bitmap_t target, CpuSet *ret);

/* Emits an action after checking it against the invariants; 1 if emitted, 0
 * if dropped (logged and counted), negative errno on failure. Counts
 * applied/restored/dropped and marks the subject as acted on; the caller
 * updates the layers. */
int policy_emit(PolicyCtx *ctx, ActionKind kind, ActionPolicy policy, CgroupState *c, ThreadState *t,
                hwloc_const_bitmap_t cpus, const char *fmt, ...) _printf_(7, 8);

/* Set a layer (emits set_*; records orig on the first change, opens or extends
 * the layer's experiment, marks residency when the change can move threads). */
int policy_cgroup_set_layer(PolicyCtx *ctx, CgroupState *c, ActionPolicy policy, hwloc_const_bitmap_t cpus,
                            const char *reason);
int policy_thread_set_layer(PolicyCtx *ctx, CgroupState *c, ThreadState *t, ActionPolicy policy,
                            hwloc_const_bitmap_t cpus, const char *reason);

/* Drop layers (emits restore). keep_home: drop only the window (cgroup) or the
 * pin (thread) and restore the balance layer's mask; else restore the mask
 * from before steerd's first change. */
int policy_cgroup_restore(PolicyCtx *ctx, CgroupState *c, bool keep_home, ActionPolicy policy,
                          const char *reason);
int policy_thread_restore(PolicyCtx *ctx, CgroupState *c, ThreadState *t, bool keep_home,
                          ActionPolicy policy, const char *reason);

void policy_experiment_open(PolicyCtx *ctx, Experiment *e, const CgroupState *c, const ThreadState *t);

/* policy-predicates.c (the guard and the layers ask it) */
/* A cgroup's CPU use is settled when this tick's is within this share of its
 * mean over about the last GuardWindowMs. A change on settled load is judged
 * against those means; one on load that is still changing (a phase
 * starting) against the last tick's own figures, since the means mix in the
 * load before the change (measured, when the means were used: every window
 * placed in the first second of the four-cgroup hackbench was reverted,
 * util 40-70 before, 400-500 after). */
#define POLICY_SETTLE_PERCENT 25
bool policy_cgroup_settled(const PolicyCtx *ctx, const CgroupState *c);

/* The window's thresholds (policy-window.c; policy_demand_too_light() is in
 * policy-predicates.c): the demand under which a cgroup gets no window, in
 * percent of one CPU. */
#define WINDOW_MIN_DEMAND_PERCENT 25
/* A held window whose cgroup's demand fell under this (percent of one CPU)
 * is given back at once: an idle group lets its CPUs go. Half the threshold
 * of a new window, so that a group near it does not flap. */
#define WINDOW_IDLE_DEMAND_PERCENT 12.5
bool policy_demand_too_light(double demand);
/* The kernel's cache-aware scheduling is on and the cgroup holds one
 * process: the kernel keeps its threads in one LLC itself, so steerd opens
 * no window and places no wake group there (docs/DECISIONS.md). */
bool policy_kernel_keeps_together(const PolicyCtx *ctx, const CgroupState *c);
/* The share of an overloaded LLC a window needs is rounded up from this many
 * CPUs over a whole number. */
#define WINDOW_SHARE_SLACK 0.15

/* policy-consolidate.c: a consolidation window (DESIGN.md 1.5a) is for a
 * cgroup whose threads hand work to each other: at least this many wakeups
 * a second in all, ... */
#define CONSOLIDATE_MIN_WAKEUPS 1000.0
/* ... for runs of at most PAIR_MAX_RUN_US per wakeup on average, with
 * run-queue wait at most this share of the CPU they receive. A hand-over
 * waits (the wakee for the waker to block): measured across two CPUs, a
 * ping-pong waited 12% of its runtime, token rings of three and four
 * threads 21% and 45%; perf bench messaging, whose 40 threads need the
 * CPUs they have, 1,600% ... */
#define CONSOLIDATE_MAX_WAIT_SHARE 0.75
/* ... counting the threads busy with at least this much of a CPU
 * (capacity scale: 1%); a held window lets go when its wakeups fall under
 * half the minimum or its runs grow past twice the maximum. */
#define CONSOLIDATE_BUSY_UTIL 10.24
/* A held consolidation window grows by a core when its threads wait at
 * least as long as they run: more of them runnable at once than it has
 * CPUs (a hand-over alone waits far less: the wakee waits only for the
 * waker to block). */
#define CONSOLIDATE_GROW_WAIT_SHARE 1.0
/* A new consolidation window fills at most this share of its CPUs with its
 * demand and what else runs there (the ring above: 840 and the noise of
 * the host on one CPU). */
#define CONSOLIDATE_MAX_FILL 0.9
/* Looks at a cgroup of the window domain dom_index (in ctx->domains) with
 * demand (Σ util); held: it holds a consolidation window there. */
int policy_consolidate_look(const PolicyCtx *ctx, const CgroupState *c, int dom_index, double demand,
                            bool held, ConsolidateLook *ret);
/* CPUs a consolidation window of a cgroup needs: its demand, rounded up. */
unsigned policy_consolidate_demand_cpus(double demand);

/* The policies, in the order policy_decide() runs them. */
int policy_guard(PolicyCtx *ctx);
int policy_sticky_release(PolicyCtx *ctx);
int policy_pair_release(PolicyCtx *ctx);
/* Pins pairs within the tick's pin budget; *ret_pins: the pins it used. */
int policy_pair_pin(PolicyCtx *ctx, unsigned budget, unsigned *ret_pins);
/* Whether the cgroup has a pair to pin (policy-pair.c). */
int policy_pairs_found(const PolicyCtx *ctx, const CgroupState *c, bool *ret);
/* A balance move is for the load that was there: a cgroup (or thread) that
 * has stayed idle, its demand under WINDOW_IDLE_DEMAND_PERCENT of one CPU,
 * at every look for BALANCE_IDLE_RELEASE_US is given its CPUs back, with
 * no back-off (nothing was wrong with the move). Kept, every cgroup a
 * phase ever moved stayed confined to one LLC for good: on the simulated
 * 1,024-CPU host 97 of 200 cgroups after three minutes, each read in full
 * every tick since a held cgroup is never quiet, and steerd's tick grew
 * fourfold (issue 33). */
#define BALANCE_IDLE_RELEASE_US (2 * USEC_PER_SEC)
/* ... and a move is only made for twice that demand: a thread moved at the
 * idle line is released as idle at its next quiet spell, a move and a
 * give-back for nothing (the guest check saw a 50%-duty thread moved at
 * demand 128, the line itself, and given back 2 s later at 23). */
#define BALANCE_MIN_MOVE_DEMAND_PERCENT (2 * WINDOW_IDLE_DEMAND_PERCENT)
int policy_balance_release(PolicyCtx *ctx);
int policy_balance(PolicyCtx *ctx);
int policy_window(PolicyCtx *ctx);
int policy_sticky_pin(PolicyCtx *ctx);
