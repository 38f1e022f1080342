/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include "bus.h"
#include "log.h"
#include "manager.h"
#include "metrics.h"
#include "snapshot-json.h"
#include "sampling.h"

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata);

static bool mode_applies(Mode m) {
        return m == MODE_LATENCY || m == MODE_BALANCED;
}

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

/* ---- opt-ins ---- */

int manager_refresh_optins(Manager *m, uint64_t now_us, bool rescan_xattrs) {
        OptInSet next = {};
        int r;

        if (rescan_xattrs) {
                OptInEntry *x = NULL;
                size_t n = 0;
                r = optin_scan_xattrs(m->root, &m->mounts, 16, &x, &n);
                if (r < 0)
                        log_warning_errno(r, "Cannot scan the cgroup trees for %s", STEERD_XATTR);
                else {
                        optin_entries_free(m->xattr_optins, m->n_xattr_optins);
                        m->xattr_optins = x;
                        m->n_xattr_optins = n;
                }
                m->xattr_scanned_us = now_us;
        }

        r = optin_set_build(m->root, &m->mounts, m->runtime.opt_ins, m->runtime.n_opt_ins,
                            m->config->opt_ins, m->config->n_opt_ins, m->xattr_optins, m->n_xattr_optins,
                            &next);
        if (r < 0)
                return log_error_errno(r, "Cannot resolve the opted-in cgroups");
        /* steerctl opt-out of a cgroup the config or an xattr names wins. */
        for (size_t i = 0; i < next.n;) {
                if (!runtime_state_opted_out(&m->runtime, next.items[i].name)) {
                        i++;
                        continue;
                }
                free(next.items[i].name);
                cgroup_location_done(&next.items[i].loc);
                memmove(&next.items[i], &next.items[i + 1], (next.n - i - 1) * sizeof(OptIn));
                next.n--;
        }

        /* Give back what left the set, or whose policy or place changed. */
        for (size_t i = 0; i < m->optins.n; i++) {
                const OptIn *old = &m->optins.items[i], *new = optin_set_find(&next, old->name);
                if (new &&new->policy == old->policy && !!new->loc.dir == !!old->loc.dir &&
                    (!new->loc.dir || streq(new->loc.dir, old->loc.dir)))
                        continue;
                if (m->actuator)
                        (void) actuator_release_cgroup(m->actuator, old->name);
                log_info("Cgroup %s: %s", old->name,
                         new ? "changed; its CPUs were given back" : "opted out; its CPUs were given back");
        }
        for (size_t i = 0; i < next.n; i++) {
                const OptIn *n = &next.items[i], *old = optin_set_find(&m->optins, n->name);
                if (!old || !!old->loc.dir != !!n->loc.dir) {
                        if (n->loc.dir)
                                log_info("Cgroup %s (%s): opted in with policy %s (%s)", n->name, n->loc.dir,
                                         cgroup_policy_to_string(n->policy),
                                         optin_source_to_string(n->source));
                        else
                                log_warning("Cgroup %s: opted in (%s) but it does not exist; it is steered "
                                            "once it appears",
                                            n->name, optin_source_to_string(n->source));
                }
        }
        optin_set_done(&m->optins);
        m->optins = next;
        return 0;
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
        r = policy_state_new(&fresh);
        if (r < 0) {
                sampler_free(sampler);
                return r;
        }
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

static int tick(Manager *m, uint64_t now_us) {
        _cleanup_(snapshot_freep) Snapshot *snap = NULL;
        _cleanup_(plan_freep) Plan *plan = NULL;
        _cleanup_(freep) SamplerCgroup *cgs = NULL;
        _cleanup_(freep) const char **names = NULL;
        _cleanup_(freep) CgroupLocation *locs = NULL;
        size_t n = 0;
        int r;

        retry_give_backs(m, now_us);
        if (m->mode == MODE_OFF)
                return 0; /* nothing is sampled: off costs nothing */

        if (now_us - m->xattr_scanned_us >= XATTR_RESCAN_USEC)
                (void) manager_refresh_optins(m, now_us, true);

        cgs = calloc(m->optins.n + 1, sizeof(SamplerCgroup));
        names = calloc(m->optins.n + 1, sizeof(char *));
        locs = calloc(m->optins.n + 1, sizeof(CgroupLocation));
        if (!cgs || !names || !locs)
                return -ENOMEM;
        for (size_t i = 0; i < m->optins.n; i++) {
                const OptIn *o = &m->optins.items[i];
                if (!o->loc.dir)
                        continue;
                cgs[n] = (SamplerCgroup){
                        .name = o->name,
                        .loc = &o->loc,
                        .policy = o->policy,
                        .original_cpus = actuator_cgroup_original(m->actuator, o->name),
                };
                names[n] = o->name;
                locs[n] = o->loc;
                n++;
        }

        /* Runnable only feeds balancing between LLCs: one LLC has nothing to
         * balance, and no opted-in cgroup nothing to move (observe still
         * shows it). Where runnable comes from sched/debug, a list of every
         * task of the host, that read is most of an idle steerd's cost. */
        sampler_set_runnable_needed(m->sampler, m->topo->n_llcs >= 2 && (n > 0 || m->mode == MODE_OBSERVE));
        r = sample_snapshot(m->sampler, now_us, cgs, n, &snap);
        if (r == -EAGAIN)
                return 0;
        if (r < 0)
                return log_warning_errno(r, "Sample failed; this tick is skipped");
        m->ticks++;
        if (cpus_came_or_went(m, snap))
                return refresh_topology(m);

        r = actuator_set_cgroups(m->actuator, names, locs, n);
        if (r < 0)
                return log_error_errno(r, "Cannot update the actuator's cgroups");
        if (mode_applies(m->mode)) {
                _cleanup_(actuator_report_done) ActuatorReport rep = {};
                r = actuator_check_ownership(m->actuator, snap, &rep);
                if (r < 0)
                        log_warning_errno(r, "Ownership check failed");
                forget_let_go(m, &rep);
        }

        Settings settings = effective_settings(m);
        r = policy_decide(snap, &settings, m->policy, now_us, &plan);
        if (r < 0)
                return log_error_errno(r, "The policy engine failed; nothing is applied this tick");

        if (m->mode == MODE_OBSERVE)
                log_plan(plan, false);
        else if (mode_applies(m->mode) && plan->n_actions > 0) {
                _cleanup_(actuator_report_done) ActuatorReport rep = {};
                r = actuator_apply(m->actuator, snap, plan, &rep);
                if (r < 0)
                        log_warning_errno(r, "Applying the plan failed");
                sampler_reread_threads(m->sampler);
                /* The actuator logs each action as it takes effect. */
                m->actions_failed += rep.failed;
                forget_let_go(m, &rep);
        }

        bus_emit_tick(m, m->last_snapshot, snap, mode_applies(m->mode) ? plan : NULL);
        snapshot_free(m->last_snapshot);
        m->last_snapshot = TAKE_PTR(snap);
        plan_free(m->last_plan);
        m->last_plan = TAKE_PTR(plan);

        const Settings *st = &m->config->settings;
        if (st->metrics_file[0] &&
            now_us - m->metrics_written_us >= st->metrics_interval_ms * USEC_PER_MSEC) {
                ManagerCounters mc;
                manager_counters(m, &mc);
                MetricsCounters c = {
                        .ticks = mc.ticks,
                        .applied = mc.applied,
                        .kept = mc.kept,
                        .reverted = mc.reverted,
                        .restored = mc.restored,
                        .failed = mc.failed,
                        .adopted = mc.adopted,
                        .opted_in_cgroups = m->optins.n,
                        .mode = mode_to_string(m->mode),
                };
                r = metrics_write(st->metrics_file, m->last_snapshot, &c);
                if (r < 0 && m->metrics_written_us == 0)
                        log_warning_errno(r, "Cannot write the metrics file %s", st->metrics_file);
                m->metrics_written_us = now_us;
        }

        if (m->ticks % 50 == 1) {
                PolicyCounters c;
                size_t nt, nc;
                policy_state_counters(m->policy, &c);
                actuator_counts(m->actuator, &nt, &nc);
                (void) sd_notifyf(
                        false,
                        "STATUS=Mode %s; %zu cgroups opted in; owning %zu threads, %zu cgroups; actions "
                        "applied %llu, kept %llu, reverted %llu",
                        mode_to_string(m->mode), m->optins.n, nt, nc, (unsigned long long) c.applied,
                        (unsigned long long) c.kept, (unsigned long long) c.reverted);
        }
        return 0;
}

static int arm_timer(Manager *m, uint64_t next) {
        int r = sd_event_source_set_time(m->sample_timer, next);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(m->sample_timer, SD_EVENT_ON);
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        uint64_t period = m->config->settings.sample_period_ms * USEC_PER_MSEC;

        if (m->test_hang_file && access(m->test_hang_file, F_OK) == 0) {
                /* The guest check's fault switch: a loop that hangs stops
                 * pinging the watchdog, and systemd must kill it. */
                log_warning("%s exists (STEERD_TEST_HANG_FILE): hanging the event loop", m->test_hang_file);
                for (;;)
                        pause();
        }
        (void) tick(m, usec);
        /* Keep the cadence: the next tick is due a period after this one was,
         * unless we fell behind by more than a period. */
        uint64_t now;
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        uint64_t next = usec + period;
        if (next <= now)
                next = now + period;
        return arm_timer(m, next);
}

/* ---- mode, reload ---- */

int manager_set_mode(Manager *m, Mode mode) {
        if (mode < 0 || mode >= _MODE_MAX)
                return -EINVAL;
        if (mode == m->mode)
                return 0;
        Mode old = m->mode;
        m->mode = mode;
        if (mode_applies(old) && !mode_applies(mode)) {
                /* Nothing applied may outlive the mode that applied it. */
                (void) actuator_release_all(m->actuator);
                sampler_reread_threads(m->sampler);
        }
        if (mode_applies(old) != mode_applies(mode) || mode == MODE_OFF) {
                /* The engine's idea of what is applied is void now: start afresh. */
                PolicyState *fresh = NULL;
                if (policy_state_new(&fresh) >= 0) {
                        policy_state_free(m->policy);
                        m->policy = fresh;
                }
        }
        log_struct(LOG_NOTICE, STEERD_MESSAGE_CONFIG, "Mode %s -> %s", mode_to_string(old),
                   mode_to_string(mode));
        bus_emit_mode_changed(m);
        return 1;
}

static void save_runtime(Manager *m) {
        if (!m->config->settings.persist_runtime)
                return;
        if (mkdir(m->state_dir, 0755) < 0 && errno != EEXIST) {
                log_warning_errno(errno, "Cannot create %s; runtime changes will not survive a restart",
                                  m->state_dir);
                return;
        }
        (void) runtime_state_save(&m->runtime, m->runtime_file);
}

int manager_set_mode_runtime(Manager *m, Mode mode) {
        int r = manager_set_mode(m, mode);
        if (r < 0)
                return r;
        m->runtime.has_mode = true;
        m->runtime.mode = mode;
        save_runtime(m);
        return 0;
}

int manager_opt_in(Manager *m, const char *cgroup, CgroupPolicy policy) {
        CgroupLocation loc = {};
        uint64_t now;
        int r;

        r = cgroup_resolve(m->root, &m->mounts, cgroup, &loc);
        if (r < 0)
                return r;
        cgroup_location_done(&loc);
        r = runtime_state_opt_in(&m->runtime, cgroup, policy);
        if (r < 0)
                return r;
        save_runtime(m);
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        return manager_refresh_optins(m, now, false);
}

int manager_opt_out(Manager *m, const char *cgroup) {
        uint64_t now;
        int r;

        if (!optin_set_find(&m->optins, cgroup))
                return -ENOENT;
        r = runtime_state_opt_out(&m->runtime, cgroup);
        if (r < 0)
                return r;
        save_runtime(m);
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        return manager_refresh_optins(m, now, false);
}

void manager_counters(const Manager *m, ManagerCounters *ret) {
        PolicyCounters c;
        policy_state_counters(m->policy, &c);
        *ret = (ManagerCounters){
                .ticks = m->ticks,
                .applied = c.applied,
                .kept = c.kept,
                .reverted = c.reverted,
                .restored = c.restored,
                .failed = m->actions_failed,
                .adopted = m->threads_adopted,
        };
}

int manager_describe_json(const Manager *m, char **ret) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object(),
                                                *counters = json_object_new_object();
        ManagerCounters c;
        int r;

        if (!o || !counters)
                return -ENOMEM;
        json_object_object_add(o, "mode", json_object_new_string(mode_to_string(m->mode)));
        if (m->last_snapshot) {
                json_object *snap = NULL;
                r = snapshot_to_json(m->last_snapshot, &snap);
                if (r < 0)
                        return r;
                json_object_object_add(o, "snapshot", snap);
        } else
                json_object_object_add(o, "snapshot", NULL);
        json_object *plan = NULL;
        if (m->last_plan) {
                _cleanup_(freep) char *text = NULL;
                r = plan_to_json(m->last_plan, (unsigned) m->ticks, &text);
                if (r < 0)
                        return r;
                json_object *po = json_tokener_parse(text), *actions;
                if (po && json_object_object_get_ex(po, "actions", &actions))
                        plan = json_object_get(actions);
                json_object_put(po);
        }
        json_object_object_add(o, "plan", plan ?: json_object_new_array());
        manager_counters(m, &c);
        json_object_object_add(counters, "ticks", json_object_new_uint64(c.ticks));
        json_object_object_add(counters, "applied", json_object_new_uint64(c.applied));
        json_object_object_add(counters, "kept", json_object_new_uint64(c.kept));
        json_object_object_add(counters, "reverted", json_object_new_uint64(c.reverted));
        json_object_object_add(counters, "restored", json_object_new_uint64(c.restored));
        json_object_object_add(counters, "failed", json_object_new_uint64(c.failed));
        json_object_object_add(counters, "adopted", json_object_new_uint64(c.adopted));
        json_object_object_add(o, "counters", TAKE_PTR(counters));

        const char *t =
                json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        char *d = t ? strdup(t) : NULL;
        if (!d)
                return -ENOMEM;
        *ret = d;
        return 0;
}

int manager_reload(Manager *m, char **ret_error) {
        Config *c = NULL;
        int r;

        r = config_load_full(m->config_path ?: STEERD_DEFAULT_CONFIG,
                             !m->config_path || streq(m->config_path, STEERD_DEFAULT_CONFIG), &c, ret_error);
        if (r < 0) {
                log_struct(LOG_ERR, STEERD_MESSAGE_CONFIG,
                           "Reload: %s is invalid (see above); the running configuration stays",
                           m->config_path ?: STEERD_DEFAULT_CONFIG);
                return r;
        }
        Mode old_config_mode = m->config->settings.mode;
        config_free(m->config);
        m->config = c;
        sampler_set_settings(m->sampler, &c->settings);
        if (c->settings.mode != old_config_mode) {
                /* The operator edited Mode= in the file: that is the latest word. */
                m->runtime.has_mode = false;
                save_runtime(m);
                (void) manager_set_mode(m, c->settings.mode);
        }
        uint64_t now;
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        (void) manager_refresh_optins(m, now, true);
        log_struct(LOG_NOTICE, STEERD_MESSAGE_CONFIG, "Reloaded %s",
                   m->config_path ?: STEERD_DEFAULT_CONFIG);
        return 0;
}

/* ---- events ---- */

/* Everything back, at the stop. Here, not after the loop: sd-bus closes its
 * connection when the loop exits, and the systemd backend needs it. What
 * cannot be given back stays in the state file and the exit status says
 * so: systemctl shows the unit failed, the journal names what was left,
 * and the next start gives it back. */
static int give_back_at_stop(Manager *m) {
        int r;

        m->given_back = true;
        r = actuator_release_all(m->actuator);
        if (r >= 0)
                return 0;
        char what[1024];
        (void) actuator_kept_description(m->actuator, what, sizeof(what));
        log_struct_errno(LOG_ERR, r, STEERD_MESSAGE_RESTORE,
                         "Could not give back everything at the stop: %s left as steerd set it, recorded in "
                         "%s for the next start to give back",
                         what, m->ownership_file);
        return r;
}

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        log_info("Received SIG%s: giving back every CPU mask, then exiting",
                 sigabbrev_np((int) si->ssi_signo));
        (void) sd_notify(false, "STOPPING=1");
        m->exit_error = give_back_at_stop(m);
        return sd_event_exit(m->event, m->exit_error);
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        (void) sd_notify(false, "RELOADING=1");
        (void) manager_reload(m, NULL);
        (void) sd_notify(false, "READY=1");
        return 0;
}

static int cgroup_of_thread(const Manager *m, pid_t tid, const OptIn **ret) {
        char path[64];
        _cleanup_(freep) char *text = NULL;

        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) tid);
        if (rootdir_read_file(m->root, path, &text, NULL) < 0)
                return -ESRCH;
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                /* "0::/path" (v2) or "3:cpuset:/path" (v1, controllers may be comma-joined). */
                char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                if (!c2)
                        continue;
                const char *mount = NULL;
                if (c2 == c1 + 1)
                        mount = m->mounts.v2;
                else {
                        *c2 = '\0';
                        for (char *t = c1 + 1; t && !mount;) {
                                char *comma = strchr(t, ',');
                                if (comma)
                                        *comma = '\0';
                                if (streq(t, "cpuset"))
                                        mount = m->mounts.v1_cpuset;
                                t = comma ? comma + 1 : NULL;
                        }
                }
                if (!mount)
                        continue;
                char dir[4096];
                snprintf(dir, sizeof(dir), "%s%s", mount, streq(c2 + 1, "/") ? "" : c2 + 1);
                for (size_t i = 0; i < m->optins.n; i++)
                        if (m->optins.items[i].loc.dir && streq(m->optins.items[i].loc.dir, dir)) {
                                *ret = &m->optins.items[i];
                                return 0;
                        }
        }
        return -ENOENT;
}

static void on_fork(pid_t tid, pid_t tgid, void *userdata) {
        Manager *m = userdata;
        const OptIn *o;

        if (!mode_applies(m->mode) || m->optins.n == 0)
                return;
        if (cgroup_of_thread(m, tid, &o) < 0)
                return;
        if (actuator_adopt_child(m->actuator, o->name, tid) > 0) {
                m->threads_adopted++;
                return;
        }
        if (actuator_adopt_thread(m->actuator, o->name, tid) > 0)
                m->threads_adopted++;
}

static int on_proc_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        int r = proc_connector_process(m->proc);
        if (r == -ENOBUFS)
                log_debug("Proc connector overflowed: new threads are picked up on the next tick");
        else if (r < 0) {
                log_warning_errno(
                        r, "Proc connector failed; new threads are picked up on the next tick from now on");
                sd_event_source_set_enabled(s, SD_EVENT_OFF);
        }
        return 0;
}

/* ---- life cycle ---- */

static int make_state_dir(const char *dir) {
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

int manager_new(const Args *args, Config *config, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->config = config;
        m->mode = config->settings.mode;
        if (args->config && !(m->config_path = strdup(args->config)))
                return -ENOMEM;
        m->runtime_dir = strdup(args->runtime_dir ?: "/run/steerd");
        m->state_dir = strdup(args->state_dir ?: "/var/lib/steerd");
        if (!m->runtime_dir || !m->state_dir ||
            asprintf(&m->ownership_file, "%s/state.json", m->runtime_dir) < 0 ||
            asprintf(&m->runtime_file, "%s/runtime.json", m->state_dir) < 0)
                return -ENOMEM;
        if (config->settings.persist_runtime) {
                (void) runtime_state_load(m->runtime_file, &m->runtime);
                if (m->runtime.has_mode)
                        m->mode = m->runtime.mode;
        }

        r = open_root_and_topology(args, &m->root, &m->topo);
        if (r < 0)
                return r;
        r = make_state_dir(m->runtime_dir);
        if (r < 0)
                return log_error_errno(r, "Cannot create %s", m->runtime_dir);
        r = cgroup_mounts_read(m->root, &m->mounts);
        if (r < 0)
                return log_error_errno(r, "Cannot read the cgroup mounts");

        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Cannot create the event loop");
        (void) sd_event_set_watchdog(m->event, true);

        r = actuator_new(m->root, m->ownership_file, NULL, &m->actuator);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the actuator");
        /* The system bus is optional: the systemd backend and the bus API
         * need it; steering works without. */
        if (bus_connect(m) >= 0 && sd_booted() > 0) {
                r = bus_wait_ready(m, 5 * USEC_PER_SEC);
                if (r < 0)
                        log_warning_errno(
                                r, "The system bus is not up yet; systemd units are steered once it is");
        }

        /* A predecessor that was killed left its masks: give them back first.
         * What needs a bus that is not up yet is kept and tried again as
         * soon as it is. */
        (void) actuator_take_over(m->actuator);

        r = sampler_new(m->root, m->topo, &config->settings, &m->sampler);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the sampler");
        r = policy_state_new(&m->policy);
        if (r < 0)
                return r;

        r = proc_connector_new(on_fork, m, &m->proc);
        if (r < 0)
                log_notice("No proc connector (%s): new threads are picked up on the next tick",
                           strerror(-r));
        else {
                r = sd_event_add_io(m->event, &m->proc_source, proc_connector_fd(m->proc), EPOLLIN,
                                    on_proc_event, m);
                if (r < 0)
                        return r;
        }

        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        if ((r = sd_event_add_signal(m->event, NULL, SIGTERM, on_exit_signal, m)) < 0 ||
            (r = sd_event_add_signal(m->event, NULL, SIGINT, on_exit_signal, m)) < 0 ||
            (r = sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m)) < 0)
                return log_error_errno(r, "Cannot watch signals");

        uint64_t now;
        r = sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        if (r < 0)
                return r;
        r = sd_event_add_time(m->event, &m->sample_timer, CLOCK_MONOTONIC, now, 1000, on_tick, m);
        if (r < 0)
                return log_error_errno(r, "Cannot add the sample timer");

        r = manager_refresh_optins(m, now, true);
        if (r < 0)
                return r;

        m->topology_live = !args->topology;
        const char *hang = secure_getenv("STEERD_TEST_HANG_FILE");
        if (hang && *hang && !(m->test_hang_file = strdup(hang)))
                return -ENOMEM;

        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        /* Reached without a stop signal (a failed start, the loop failing):
         * still, nothing steerd set outlives it unrecorded. */
        if (m->actuator && !m->given_back)
                (void) give_back_at_stop(m);
        m->actuator = actuator_free(m->actuator);
        sd_event_source_unref(m->sample_timer);
        sd_event_source_unref(m->proc_source);
        sd_event_source_unref(m->bus_reconnect);
        proc_connector_free(m->proc);
        bus_drop(m);
        sd_event_unref(m->event);
        policy_state_free(m->policy);
        sampler_free(m->sampler);
        snapshot_free(m->last_snapshot);
        plan_free(m->last_plan);
        optin_set_done(&m->optins);
        runtime_state_done(&m->runtime);
        optin_entries_free(m->xattr_optins, m->n_xattr_optins);
        cgroup_mounts_done(&m->mounts);
        config_free(m->config);
        free(m->config_path);
        free(m->runtime_dir);
        free(m->ownership_file);
        free(m->state_dir);
        free(m->runtime_file);
        topology_free(m->topo);
        hwloc_bitmap_free(m->online_seen);
        free(m->test_hang_file);
        rootdir_free(m->root);
        free(m);
        return NULL;
}

int manager_run(Manager *m) {
        log_struct(
                LOG_INFO, STEERD_MESSAGE_STARTED,
                "steerd %s started: mode %s, %zu CPUs in %zu LLCs, sampling every %llu ms, runnable from %s",
                STEERD_VERSION, mode_to_string(m->mode), m->topo->n_cpus, m->topo->n_llcs,
                (unsigned long long) m->config->settings.sample_period_ms,
                runnable_source_to_string(sampler_source(m->sampler)));
        (void) sd_notify(false, "READY=1");
        int r = sd_event_loop(m->event);
        if (r < 0 && !m->given_back)
                (void) give_back_at_stop(m); /* the loop failed: the bus may still be up */
        return r;
}
