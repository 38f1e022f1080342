/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include "bus.h"
#include "log.h"
#include "manager-internal.h"
#include "manager-evaluate.h"
#include "manager-search.h"
#include "manager-trial.h"
#include "sampling.h"
#include "trial-store.h"

/* Everything back, at the stop. Here, not after the loop: sd-bus closes its
 * connection when the loop exits, and the systemd backend needs it. What
 * cannot be given back stays in the state file and the exit status says
 * so: systemctl shows the unit failed, the journal names what was left,
 * and the next start gives it back. */
static int give_back_at_stop(Manager *m) {
        int r;

        m->given_back = true;
        manager_trials_end_all(m, TRIAL_STATE_INTERRUPTED, "steerd stopped");
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

static int optin_by_dir(const Manager *m, const char *dir, const OptIn **ret) {
        for (size_t i = 0; i < m->optins.n; i++)
                if (m->optins.items[i].loc.dir && streq(m->optins.items[i].loc.dir, dir)) {
                        *ret = &m->optins.items[i];
                        return 0;
                }
        return -ENOENT;
}

static void on_fork(pid_t tid, pid_t tgid, pid_t parent_tgid, void *userdata) {
        Manager *m = userdata;
        const OptIn *o;
        const char *dir;

        if (m->mode == MODE_OFF || m->optins.n == 0)
                return;
        /* The membership layer knows the cgroups' processes: no file read
         * for the host's other forks. */
        int r = sampler_member_cgroup(m->sampler, tid, tgid, parent_tgid, &dir);
        if (r == 0 || (r > 0 && optin_by_dir(m, dir, &o) < 0) || (r < 0 && cgroup_of_thread(m, tid, &o) < 0))
                return;
        sampler_member_joined(m->sampler, o->loc.dir, tid, tgid);
        if (!mode_applies(m->mode))
                return;
        if (actuator_adopt_child(m->actuator, o->name, tid) > 0) {
                m->threads_adopted++;
                return;
        }
        if (actuator_adopt_thread(m->actuator, o->name, tid) > 0)
                m->threads_adopted++;
}

void manager_drain_proc_events(Manager *m) {
        if (!m->proc || m->proc_failed)
                return;
        int r = proc_connector_process(m->proc);
        if (r == -ENOBUFS) {
                log_debug("Proc connector overflowed: the task lists are read afresh");
                sampler_members_stale(m->sampler);
        } else if (r < 0) {
                log_warning_errno(r, "Proc connector failed; task lists are read every tick from now on");
                m->proc_failed = true;
                sampler_set_membership_events(m->sampler, false);
        }
}

/* ---- life cycle ---- */

/* Builds the Manager: paths, the runtime state, the root, the topology, the
 * sampler and the policy's state. Reads, never changes, the host: nothing
 * is given back, created or connected before manager_start(). */
int manager_new(const ManagerOptions *o, Config *config, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->config = config;
        m->mode = config->settings.mode;
        if (o->config_path && !(m->config_path = strdup(o->config_path)))
                return -ENOMEM;
        m->runtime_dir = strdup(o->runtime_dir ?: "/run/steerd");
        m->state_dir = strdup(o->state_dir ?: "/var/lib/steerd");
        if (!m->runtime_dir || !m->state_dir ||
            asprintf(&m->ownership_file, "%s/state.json", m->runtime_dir) < 0 ||
            asprintf(&m->runtime_file, "%s/runtime.json", m->state_dir) < 0 ||
            asprintf(&m->trials_dir, "%s/trials", m->state_dir) < 0)
                return -ENOMEM;
        m->topology_live = !o->topology;
        m->keep_open = o->keep_open;
        if (o->affinity_table && !(m->affinity_table_path = strdup(o->affinity_table)))
                return -ENOMEM;
        if (o->tick_stats) {
                m->tick_stats = fopen(o->tick_stats, "ae");
                if (!m->tick_stats)
                        return log_error_errno(negative_errno(), "Cannot open %s", o->tick_stats);
                fputs("# tick mono_us wall_us cpu_us set_cgroup_cpus set_thread_cpus restore window sticky "
                      "balance guard failed dropped rss_kb fds threads owned_threads owned_cgroups\n",
                      m->tick_stats);
        }
        const char *hang = secure_getenv("STEERD_TEST_HANG_FILE");
        if (hang && *hang && !(m->test_hang_file = strdup(hang)))
                return -ENOMEM;

        r = sampling_open_root(o->root, o->topology, &m->root, &m->topo);
        if (r < 0)
                return r;
        r = cgroup_mounts_read(m->root, &m->mounts);
        if (r < 0)
                return log_error_errno(r, "Cannot read the cgroup mounts");
        /* What comes from outside is confined to the mounts just read. */
        r = manager_check_config_rules(m, config, NULL);
        if (r < 0)
                return log_error_errno(r, "Refusing to start: the configuration names cgroups outside the "
                                          "cgroup mounts (see above).");
        if (config->settings.persist_runtime) {
                r = manager_load_runtime(m);
                if (r < 0)
                        return log_error_errno(r, "Cannot read %s", m->runtime_file);
                if (m->runtime.has_mode) {
                        m->mode = m->runtime.mode;
                        m->mode_source = MODE_SOURCE_RUNTIME;
                        m->mode_set_usec = m->runtime.mode_set_usec;
                }
        }
        r = sampler_new(m->root, m->topo, &config->settings, &m->sampler);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the sampler");
        if (m->keep_open)
                sampler_keep_open(m->sampler);
        r = policy_state_new(&m->policy);
        if (r < 0)
                return r;
        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Cannot create the event loop");
        *ret = TAKE_PTR(m);
        return 0;
}

/* The system bus is optional: the systemd backend and the bus API need it;
 * steering works without. On a systemd host the start waits a little for
 * it, so that the first systemd actions do not fail. */
static void manager_start_bus(Manager *m) {
        if (bus_connect(m) < 0 || sd_booted() <= 0)
                return;
        int r = bus_wait_ready(m, 5 * USEC_PER_SEC);
        if (r < 0)
                log_warning_errno(r, "The system bus is not up yet; systemd units are steered once it is");
}

/* Without the connector steerd still works: new threads are found by the
 * next tick's read of the task lists. With it, its events are drained at
 * the start of each tick, not as they come: a host forks hundreds of times
 * a second (measured here: some 190 events a second from other work), and
 * a wakeup per event cost more than everything else of an idle steerd. */
static int manager_start_proc_connector(Manager *m) {
        int r = proc_connector_new(on_fork, m, &m->proc);
        if (r < 0) {
                log_notice("No proc connector (%s): the task lists are read every tick", strerror(-r));
                return 0;
        }
        sampler_set_membership_events(m->sampler, true);
        return 0;
}

static int manager_start_signals(Manager *m) {
        static const struct {
                int signo;
                sd_event_signal_handler_t handler;
                const char *description;
        } table[] = {
                {SIGTERM, on_exit_signal, "sigterm"},
                {SIGINT, on_exit_signal, "sigint"},
                {SIGHUP, on_sighup, "sighup"},
        };
        sigset_t mask;
        int r;

        sigemptyset(&mask);
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                sigaddset(&mask, table[i].signo);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                sd_event_source *s = NULL;
                r = sd_event_add_signal(m->event, &s, table[i].signo, table[i].handler, m);
                if (r < 0)
                        return log_error_errno(r, "Cannot watch SIG%s", sigabbrev_np(table[i].signo));
                (void) sd_event_source_set_description(s, table[i].description);
                /* Floating: the loop owns it, it ends with the loop. */
                r = sd_event_source_set_floating(s, true);
                sd_event_source_unref(s);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int manager_start_timer(Manager *m) {
        uint64_t now;
        int r = sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        if (r < 0)
                return r;
        r = sd_event_add_time(m->event, &m->sample_timer, CLOCK_MONOTONIC, now, 1000, manager_on_tick, m);
        if (r < 0)
                return log_error_errno(r, "Cannot add the sample timer");
        (void) sd_event_source_set_description(m->sample_timer, "sample-timer");
        return 0;
}

static int make_state_dir(const char *dir) {
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

/* Everything that touches the host or the bus, in this order: the state
 * directory, the actuator, the bus, what a predecessor left (given back
 * first), then the event sources. Any failure ends the start. */
int manager_start(Manager *m) {
        uint64_t now;
        int r;

        r = make_state_dir(m->runtime_dir);
        if (r < 0)
                return log_error_errno(r, "Cannot create %s", m->runtime_dir);
        (void) sd_event_set_watchdog(m->event, true);
        r = actuator_new(m->root, m->ownership_file, NULL, &m->actuator);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the actuator");
        if (m->affinity_table_path) {
                if (rootdir_is_host(m->root))
                        return log_error_errno(-EINVAL,
                                               "--affinity-table is for a simulated host, not this one's root");
                r = affinity_table_open(m->root, m->affinity_table_path, &m->affinity);
                if (r < 0)
                        return log_error_errno(r, "Cannot open the affinity table %s", m->affinity_table_path);
                actuator_set_affinity_table(m->actuator, m->affinity);
        }
        manager_start_bus(m);
        /* A predecessor that was killed left its masks: give them back first.
         * What needs a bus that is not up yet is kept and tried again as
         * soon as it is. */
        (void) actuator_take_over(m->actuator);
        /* A trial whose record still says running was cut short by a kill
         * or a crash: its masks were given back above, the record says so. */
        r = trial_store_interrupt_running(m->trials_dir, "steerd did not stop cleanly (killed or crashed)");
        if (r > 0)
                log_notice("%d trial%s cut short by the last stop marked interrupted in %s", r, r == 1 ? "" : "s",
                           m->trials_dir);
        manager_trials_load_latest(m);

        if ((r = manager_start_proc_connector(m)) < 0 || (r = manager_start_signals(m)) < 0 ||
            (r = manager_start_timer(m)) < 0)
                return r;
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        return manager_refresh_optins(m, now, true);
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        /* Reached without a stop signal (a failed start, the loop failing):
         * still, nothing steerd set outlives it unrecorded. */
        if (m->actuator && !m->given_back)
                (void) give_back_at_stop(m);
        m->actuator = actuator_free(m->actuator);
        m->affinity = affinity_table_free(m->affinity);
        free(m->affinity_table_path);
        if (m->tick_stats)
                fclose(m->tick_stats);
        sd_event_source_unref(m->sample_timer);
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
        optin_scan_done(&m->scan);
        cgroup_mounts_done(&m->mounts);
        config_free(m->config);
        free(m->config_path);
        free(m->runtime_dir);
        free(m->ownership_file);
        free(m->state_dir);
        free(m->runtime_file);
        manager_trials_free(m);
        manager_evaluations_free(m);
        manager_searches_free(m);
        free(m->trials_dir);
        topology_free(m->topo);
        hwloc_bitmap_free(m->online_seen);
        free(m->test_hang_file);
        rootdir_free(m->root);
        free(m);
        return NULL;
}

int manager_run(Manager *m) {
        char origin[512];
        log_struct(LOG_INFO, STEERD_MESSAGE_STARTED,
                   "steerd %s started: mode %s, set by %s; %zu CPUs in %zu LLCs, sampling every %llu ms, "
                   "runnable from %s",
                   STEERD_VERSION, mode_to_string(m->mode), manager_mode_origin(m, origin, sizeof(origin)),
                   m->topo->n_cpus, m->topo->n_llcs,
                   (unsigned long long) m->config->settings.sample_period_ms,
                   runnable_source_to_string(sampler_source(m->sampler)));
        (void) sd_notify(false, "READY=1");
        int r = sd_event_loop(m->event);
        if (r < 0 && !m->given_back)
                (void) give_back_at_stop(m); /* the loop failed: the bus may still be up */
        return r;
}
