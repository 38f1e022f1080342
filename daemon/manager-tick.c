/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "bus.h"
#include "log.h"
#include "manager-internal.h"
#include "metrics.h"
#include "manager-evaluate.h"
#include "manager-search.h"
#include "manager-trial.h"
#include "sampling.h"
#include "tids.h"

static void log_plan(const Plan *plan, bool applied) {
        char buf[CPUSET_STRLEN];
        unsigned pin = 0, release = 0;

        for (size_t i = 0; i < plan->n_actions; i++) {
                const Action *a = &plan->actions[i];
                bool sticky = a->policy == ACTION_POLICY_STICKY;
                log_struct(sticky ? LOG_DEBUG : LOG_INFO, STEERD_MESSAGE_ACTION,
                           "%s%s %s %s%s%.0d -> CPUs %s: %s", applied ? "" : "[observe] ",
                           action_policy_to_string(a->policy), action_kind_to_string(a->kind), a->cgroup,
                           a->tid ? " tid " : "", (int) a->tid, cpuset_to_string(a->cpus, buf, sizeof(buf)),
                           a->reason ? a->reason : "");
                /* As the actuator does: stickiness summed per cgroup. */
                if (sticky && a->kind == ACTION_RESTORE)
                        release++;
                else if (sticky)
                        pin++;
                bool last = i + 1 == plan->n_actions || !streq(plan->actions[i + 1].cgroup, a->cgroup);
                if (last && pin + release > 0) {
                        log_struct(LOG_INFO, STEERD_MESSAGE_ACTION,
                                   "%scgroup %s: sticky would pin %u thread%s, give %u back (each thread at "
                                   "debug level)",
                                   applied ? "" : "[observe] ", a->cgroup, pin, pin == 1 ? "" : "s",
                                   release);
                        pin = release = 0;
                }
        }
}

static void forget_let_go(Manager *m, const ActuatorReport *rep) {
        for (size_t i = 0; i < rep->n_let_go; i++)
                (void) policy_state_let_go(m->policy, rep->let_go[i].cgroup, rep->let_go[i].tid,
                                           rep->let_go[i].starttime);
}

static Settings effective_settings(const Manager *m) {
        Settings s = m->config->settings;
        s.mode = m->mode;
        return s;
}

/* ---- the tick ---- */

/* Failed give-backs are kept (actuator.h); they are tried again every few
 * seconds, backing off to a minute while they keep failing, and at once
 * when the bus comes back. Outside latency/balanced nothing may stay held;
 * inside, what failed before (a predecessor's leftovers too) and what
 * belongs to no opted-in cgroup. */
#define RETRY_MIN_USEC (5 * USEC_PER_SEC)
#define RETRY_MAX_USEC (60 * USEC_PER_SEC)

static void retry_give_backs(Manager *m, uint64_t now_us) {
        size_t nt, nc;

        actuator_counts(m->actuator, &nt, &nc);
        if (nt + nc == 0 || (!m->retry_now && now_us < m->retry_at_us))
                return;
        m->retry_now = false;
        int r = actuator_retry(m->actuator, !mode_applies(m->mode));
        if (r < 0) {
                m->retry_interval_us = CLAMP(m->retry_interval_us * 2, RETRY_MIN_USEC, RETRY_MAX_USEC);
                m->retry_at_us = now_us + m->retry_interval_us;
                return;
        }
        m->retry_interval_us = 0;
        m->retry_at_us = now_us + RETRY_MIN_USEC;
}

/* CPU hotplug: the set of online CPUs (from /proc/stat, every tick) differs
 * from the one the topology was loaded for. Only the host's own topology is
 * reloaded; an XML or synthetic one describes another machine. */
static bool cpus_came_or_went(Manager *m, const Snapshot *snap) {
        _cleanup_cpuset_ CpuSet now = NULL;

        if (!m->topology_live || snapshot_online_cpus(snap, &now) < 0)
                return false;
        if (!m->online_seen) {
                m->online_seen = TAKE_PTR(now);
                return false;
        }
        if (hwloc_bitmap_isequal(now, m->online_seen))
                return false;
        char was[CPUSET_STRLEN], is[CPUSET_STRLEN];
        log_struct(LOG_NOTICE, STEERD_MESSAGE_CONFIG,
                   "Topology changed: CPUs %s online (were %s); giving back what steerd holds and reloading "
                   "the topology",
                   cpuset_to_string(now, is, sizeof(is)),
                   cpuset_to_string(m->online_seen, was, sizeof(was)));
        hwloc_bitmap_free(m->online_seen);
        m->online_seen = TAKE_PTR(now);
        return true;
}

/* Every window and pin was placed on the old topology: give them back, load
 * the new one, and let the engine decide afresh (the next tick). What the
 * kernel did meanwhile (an offline CPU leaves every mask by itself) is
 * within what steerd gives back. */
static int refresh_topology(Manager *m) {
        _cleanup_(topology_freep) Topology *topo = NULL;
        Sampler *sampler = NULL;
        PolicyState *fresh = NULL;
        int r;

        (void) actuator_release_all(m->actuator);
        r = topology_load(m->root, NULL, &topo);
        if (r < 0)
                return log_error_errno(r, "Cannot reload the topology; keeping the old one");
        r = sampler_new(m->root, topo, &m->config->settings, &sampler);
        if (r < 0)
                return log_error_errno(
                        r, "Cannot set up the sampler for the new topology; keeping the old one");
        if (m->keep_open)
                sampler_keep_open(sampler);
        r = policy_state_new(&fresh);
        if (r < 0) {
                sampler_free(sampler);
                return r;
        }
        sampler_set_membership_events(sampler, m->proc && !m->proc_failed);
        sampler_free(m->sampler);
        m->sampler = sampler;
        policy_state_free(m->policy);
        m->policy = fresh;
        topology_free(m->topo);
        m->topo = TAKE_PTR(topo);
        log_struct(LOG_NOTICE, STEERD_MESSAGE_CONFIG, "Topology reloaded: %zu CPUs (%s online) in %zu LLCs",
                   m->topo->n_cpus,
                   cpuset_to_string(m->topo->online, (char[CPUSET_STRLEN]){}, CPUSET_STRLEN),
                   m->topo->n_llcs);
        return 0;
}

/* The opted-in cgroups that exist now, as the sampler and the actuator want
 * them (borrowed from m->optins: valid until the next refresh). */
typedef struct TickCgroups {
        SamplerCgroup *cgs;
        const char **names;
        CgroupLocation *locs;
        pid_t **held; /* per cgroup: what cgs[i].held points to */
        size_t n;
        /* names and locs: the n sampled, then the cgroups only the
         * actuator sees (a placement search's blocks off the policy). */
        size_t n_names;
} TickCgroups;

static void tick_cgroups_done(TickCgroups *t) {
        for (size_t i = 0; t->held && i < t->n; i++)
                free(t->held[i]);
        free(t->held);
        free(t->cgs);
        free(t->names);
        free(t->locs);
        *t = (TickCgroups){};
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return (x > y) - (x < y);
}

/* The threads of a cgroup that steerd holds a mask on, as the engine sees
 * them (pins, moves: observe mode too) and as the actuator owns them (what
 * it changed, inherited pins): read even while the cgroup is quiet. */
static int held_tids(const Manager *m, const ActOwned *owned, size_t n_owned, const char *cgroup, pid_t **ret,
                     size_t *ret_n) {
        _cleanup_(freep) pid_t *tids = NULL;
        size_t n = 0, alloc = 0, lo = 0, hi = n_owned;
        int r;

        r = policy_state_held_tids(m->policy, cgroup, &tids, &n, &alloc);
        if (r < 0)
                return r;
        /* The first of the cgroup's entries in owned (sorted by name). */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (strcmp(owned[mid].cgroup, cgroup) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        for (size_t i = lo; i < n_owned && streq(owned[i].cgroup, cgroup); i++) {
                r = tids_append(&tids, &n, &alloc, owned[i].tid);
                if (r < 0)
                        return r;
        }
        if (n > 1)
                qsort(tids, n, sizeof(pid_t), cmp_pid);
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
                if (k == 0 || tids[k - 1] != tids[i])
                        tids[k++] = tids[i];
        *ret = TAKE_PTR(tids);
        *ret_n = k;
        return 0;
}

static int tick_cgroups(const Manager *m, TickCgroups *ret) {
        _cleanup_(tick_cgroups_done) TickCgroups t = {
                .cgs = calloc(m->optins.n + 1, sizeof(SamplerCgroup)),
                .names = calloc(m->optins.n + 1, sizeof(char *)),
                .locs = calloc(m->optins.n + 1, sizeof(CgroupLocation)),
                .held = calloc(m->optins.n + 1, sizeof(pid_t *)),
        };

        _cleanup_(freep) ActOwned *owned = NULL;
        size_t n_owned = 0;

        if (!t.cgs || !t.names || !t.locs || !t.held)
                return -ENOMEM;
        if (actuator_owned_by_cgroup(m->actuator, &owned, &n_owned) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < m->optins.n; i++) {
                const OptIn *o = &m->optins.items[i];
                /* A trial's hands-off block: as if opted out, its masks given
                 * back. A placement search's block other than the policy's:
                 * the engine forgets it, the search holds what it holds. */
                if (!o->loc.dir || manager_trial_hands_off(m, o->name) ||
                    manager_evaluation_hands_off(m, o->name) || manager_search_excluded(m, o->name))
                        continue;
                t.cgs[t.n] = (SamplerCgroup){
                        .name = o->name,
                        .loc = &o->loc,
                        .policy = o->policy,
                        .original_cpus = actuator_cgroup_original(m->actuator, o->name),
                };
                t.names[t.n] = o->name;
                t.locs[t.n] = o->loc;
                int r = held_tids(m, owned, n_owned, o->name, &t.held[t.n], &t.cgs[t.n].n_held);
                t.cgs[t.n].held = t.held[t.n];
                t.n++;
                if (r < 0)
                        return r;
        }
        t.n_names = t.n;
        for (size_t i = 0; i < m->optins.n; i++) {
                const OptIn *o = &m->optins.items[i];
                if (o->loc.dir && !manager_trial_hands_off(m, o->name) && manager_search_excluded(m, o->name) &&
                    manager_search_places(m, o->name)) {
                        t.names[t.n_names] = o->name;
                        t.locs[t.n_names++] = o->loc;
                }
        }
        *ret = t;
        t = (TickCgroups){};
        return 0;
}

static void check_ownership(Manager *m, const Snapshot *snap) {
        _cleanup_(actuator_report_done) ActuatorReport rep = {};
        int r = actuator_check_ownership(m->actuator, snap, &rep);
        if (r < 0)
                log_warning_errno(r, "Ownership check failed");
        forget_let_go(m, &rep);
}

static void apply_plan(Manager *m, const Snapshot *snap, const Plan *plan) {
        _cleanup_(actuator_report_done) ActuatorReport rep = {};
        int r = actuator_apply(m->actuator, snap, plan, &rep);
        if (r < 0)
                log_warning_errno(r, "Applying the plan failed");
        /* What steerd changed is read afresh next tick, the rest keeps its
         * back-off: a held mask must never look like someone else's change. */
        for (size_t i = 0; i < plan->n_actions; i++) {
                const Action *a = &plan->actions[i];
                for (size_t k = 0; k < m->optins.n; k++)
                        if (m->optins.items[k].loc.dir && streq(m->optins.items[k].name, a->cgroup))
                                sampler_reread(m->sampler, m->optins.items[k].loc.dir, a->tid);
        }
        /* The actuator logs each action as it takes effect. */
        m->actions_failed += rep.failed;
        forget_let_go(m, &rep);
}

static void notify_status(const Manager *m) {
        PolicyCounters c;
        size_t nt, nc;

        policy_state_counters(m->policy, &c);
        actuator_counts(m->actuator, &nt, &nc);
        (void) sd_notifyf(false,
                          "STATUS=Mode %s; %zu cgroups opted in; owning %zu threads, %zu cgroups; actions "
                          "applied %llu, kept %llu, reverted %llu",
                          mode_to_string(m->mode), m->optins.n, nt, nc, (unsigned long long) c.applied,
                          (unsigned long long) c.kept, (unsigned long long) c.reverted);
}

/* Whether the next tick may wait (DECISIONS.md, "An idle steerd"): every
 * opted-in cgroup is quiet with settled members (none at all, too), and
 * neither the engine nor the actuator holds anything, so no decision can
 * come of the host's figures until a cgroup wakes up, which its own use,
 * read at every tick, shows at the next. Hotplug and new rule matches are
 * then seen up to SAMPLER_IDLE_MAX_TICKS periods later. */
static bool idle(const Manager *m) {
        size_t nt, nc;

        actuator_counts(m->actuator, &nt, &nc);
        return nt + nc == 0 && sampler_all_quiet(m->sampler) && !policy_state_holds(m->policy) &&
               !manager_trials_running(m) && m->n_evals == 0; /* trials' blocks keep time */
}

static int tick(Manager *m, uint64_t now_us) {
        _cleanup_(snapshot_freep) Snapshot *snap = NULL;
        _cleanup_(plan_freep) Plan *plan = NULL;
        _cleanup_(tick_cgroups_done) TickCgroups t = {};
        unsigned periods = m->idle_periods;
        int r;

        m->idle_periods = 1; /* unless this tick ends idle */
        retry_give_backs(m, now_us);
        if (m->mode == MODE_OFF)
                return 0; /* nothing is sampled: off costs nothing */

        if (now_us - m->xattr_scanned_us >= m->config->settings.rescan_interval_ms * USEC_PER_MSEC)
                (void) manager_refresh_optins(m, now_us, true);
        manager_drain_proc_events(m);
        r = tick_cgroups(m, &t);
        if (r < 0)
                return r;

        /* Runnable only feeds balancing between LLCs: one LLC has nothing to
         * balance, and no opted-in cgroup nothing to move (observe still
         * shows it). Where runnable comes from sched/debug, a list of every
         * task of the host, that read is most of an idle steerd's cost. */
        sampler_set_runnable_needed(m->sampler,
                                    m->topo->n_llcs >= 2 && (t.n > 0 || m->mode == MODE_OBSERVE));
        sampler_set_wake_wanted(m->sampler, m->mode == MODE_LATENCY || m->mode == MODE_OBSERVE);
        sampler_set_host_idle(m->sampler, periods > 1);
        r = sample_snapshot(m->sampler, now_us, t.cgs, t.n, &snap);
        if (r == -EAGAIN)
                return 0;
        if (r < 0)
                return log_warning_errno(r, "Sample failed; this tick is skipped");
        m->ticks++;
        if (cpus_came_or_went(m, snap))
                return refresh_topology(m);

        r = actuator_set_cgroups(m->actuator, t.names, t.locs, t.n_names);
        if (r < 0)
                return log_error_errno(r, "Cannot update the actuator's cgroups");
        if (mode_applies(m->mode))
                check_ownership(m, snap);

        Settings settings = effective_settings(m);
        r = policy_decide(snap, &settings, m->policy, now_us, &plan);
        if (r < 0)
                return log_error_errno(r, "The policy engine failed; nothing is applied this tick");
        if (m->mode == MODE_OBSERVE)
                log_plan(plan, false);
        else if (mode_applies(m->mode) && plan->n_actions > 0) {
                apply_plan(m, snap, plan);
                for (size_t i = 0; i < plan->n_actions; i++) {
                        const Action *a = &plan->actions[i];
                        if (a->kind >= 0 && a->kind < _ACTION_KIND_MAX)
                                m->tick_kinds[a->kind]++;
                        if (a->policy >= 0 && a->policy < _ACTION_POLICY_MAX)
                                m->tick_policies[a->policy]++;
                }
        }

        manager_trials_tick(m, now_us, mode_applies(m->mode) ? plan : NULL);
        manager_evaluations_tick(m, now_us);
        manager_searches_tick(m, now_us, mode_applies(m->mode) ? snap : NULL);
        bus_emit_tick(m, m->last_snapshot, snap, mode_applies(m->mode) ? plan : NULL);
        sampler_snapshot_recycle(m->sampler, m->last_snapshot);
        m->last_snapshot = TAKE_PTR(snap);
        plan_free(m->last_plan);
        m->last_plan = TAKE_PTR(plan);

        manager_write_metrics(m, now_us);
        if (m->ticks % 50 == 1)
                notify_status(m);
        if (idle(m))
                m->idle_periods = MIN(MAX(periods, 1u) * 2, SAMPLER_IDLE_MAX_TICKS);
        return 0;
}

static int arm_timer(Manager *m, uint64_t next) {
        int r = sd_event_source_set_time(m->sample_timer, next);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(m->sample_timer, SD_EVENT_ON);
}

void manager_sample_soon(Manager *m) {
        uint64_t now, at;

        if (m->idle_periods <= 1)
                return;
        m->idle_periods = 1;
        if (!m->sample_timer || sd_event_now(m->event, CLOCK_MONOTONIC, &now) < 0 ||
            sd_event_source_get_time(m->sample_timer, &at) < 0)
                return;
        if (at > now)
                (void) arm_timer(m, now);
}

static uint64_t clock_usec(clockid_t id) {
        struct timespec ts;
        return clock_gettime(id, &ts) < 0
                       ? 0
                       : (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

#define TICK_STATS_FDS_EVERY 50u

/* One line per tick for the benchmarks (--tick-stats): the tick's wall and
 * CPU time, its plan by kind, and steerd's memory and descriptors, read
 * after the tick so that they cost the tick nothing. */
static void write_tick_stats(Manager *m, uint64_t mono, uint64_t wall, uint64_t cpu) {
        PolicyCounters c;
        unsigned long size = 0, resident = 0;
        unsigned fds = 0;
        size_t owned_threads = 0, owned_cgroups = 0;

        policy_state_counters(m->policy, &c);
        actuator_counts(m->actuator, &owned_threads, &owned_cgroups);
        /* The threads of this tick's snapshot: those read (every member of a
         * busy cgroup, only the held ones of a quiet one). */
        size_t threads = 0;
        for (size_t i = 0; m->last_snapshot && i < m->last_snapshot->n_cgroups; i++)
                threads += m->last_snapshot->cgroups[i].n_threads;
        _cleanup_(fclosep) FILE *f = fopen("/proc/self/statm", "re");
        if (!f || fscanf(f, "%lu %lu", &size, &resident) != 2)
                resident = 0;
        /* Counted every TICK_STATS_FDS_EVERY ticks: a readdir of /proc/self/fd
         * costs a lookup per descriptor, and with 10,000 thread files kept
         * open it took more of steerd's CPU than the ticks it measured (perf
         * on the simulated host: half the samples, outside the ticks). A
         * trend is what the figure is for. */
        if (m->ticks % TICK_STATS_FDS_EVERY == 1 || m->tick_fds == 0) {
                _cleanup_(closedirp) DIR *d = opendir("/proc/self/fd");
                for (struct dirent *de; d && (de = readdir(d));)
                        fds += de->d_name[0] != '.';
                m->tick_fds = fds ? fds - 1 : 0;
        }
        fprintf(m->tick_stats,
                "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %u %u %u %u %u %u %u %" PRIu64 " %" PRIu64
                " %lu %u %zu %zu %zu\n",
                m->ticks, mono, wall, cpu, m->tick_kinds[ACTION_SET_CGROUP_CPUS],
                m->tick_kinds[ACTION_SET_THREAD_CPUS], m->tick_kinds[ACTION_RESTORE],
                m->tick_policies[ACTION_POLICY_WINDOW], m->tick_policies[ACTION_POLICY_STICKY],
                m->tick_policies[ACTION_POLICY_BALANCE], m->tick_policies[ACTION_POLICY_GUARD],
                m->actions_failed, c.dropped, resident * (unsigned long) (sysconf(_SC_PAGESIZE) / 1024),
                m->tick_fds, threads, owned_threads, owned_cgroups);
        fflush(m->tick_stats);
}

int manager_on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        uint64_t period = m->config->settings.sample_period_ms * USEC_PER_MSEC;
        /* The tick's time is the loop's wake-up time, as every bus call's is,
         * not the timer's due time, which can lie before a bus call handled
         * earlier: a trial or a scan stamped then must not be in the future. */
        uint64_t woke = usec;
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &woke);

        if (m->test_hang_file && access(m->test_hang_file, F_OK) == 0) {
                /* The guest check's fault switch: a loop that hangs stops
                 * pinging the watchdog, and systemd must kill it. */
                log_warning("%s exists (STEERD_TEST_HANG_FILE): hanging the event loop", m->test_hang_file);
                for (;;)
                        pause();
        }
        if (m->tick_stats) {
                uint64_t w0 = clock_usec(CLOCK_MONOTONIC), c0 = clock_usec(CLOCK_PROCESS_CPUTIME_ID);
                memset(m->tick_kinds, 0, sizeof(m->tick_kinds));
                memset(m->tick_policies, 0, sizeof(m->tick_policies));
                (void) tick(m, MAX(woke, usec));
                uint64_t w1 = clock_usec(CLOCK_MONOTONIC), c1 = clock_usec(CLOCK_PROCESS_CPUTIME_ID);
                write_tick_stats(m, w0, w1 - w0, c1 - c0);
        } else
                (void) tick(m, MAX(woke, usec));
        /* Keep the cadence: the next tick is due a period (idle: a few)
         * after this one was, unless we fell behind by more than a period. */
        uint64_t now;
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        uint64_t next = usec + period * MAX(m->idle_periods, 1u);
        if (next <= now)
                next = now + period;
        return arm_timer(m, next);
}
