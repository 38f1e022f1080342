/* SPDX-License-Identifier: MIT */
#include <sched.h>
#include <sys/resource.h>

#include "log.h"
#include "manager.h"
#include "steerd.h"

/* The sampler keeps two /proc descriptors open per opted-in thread; the
 * soft limit services get (1024) would cap that at a few hundred. sd-event
 * uses epoll, so a high limit costs nothing (systemd's own advice). */
static void bump_nofile_limit(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_full_errno(LOG_DEBUG, errno, "Cannot raise the soft limit of open files");
}

/* SCHED_BATCH: steerd's wakeups never preempt a running task, so its tick
 * waits for the end of a slice instead of landing in the wakeup latency of
 * the very latency-sensitive threads it steers (measured: cyclictest p99
 * 10% worse beside steerd observe on a saturated 2-CPU machine). It keeps
 * its fair share: a loaded host delays a tick by a slice, not more. */
static void become_batch(void) {
        struct sched_param p = {};

        if (sched_setscheduler(0, SCHED_BATCH, &p) < 0)
                log_full_errno(LOG_DEBUG, errno, "Cannot switch to SCHED_BATCH");
}

int run_daemon(const Args *args, Config *config) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        if (geteuid() != 0)
                log_warning("Not running as root: threads of other users cannot be steered.");
        bump_nofile_limit();
        become_batch();
        ManagerOptions o = {
                .config_path = args->config,
                .root = args->root,
                .topology = args->topology,
                .runtime_dir = args->runtime_dir,
                .state_dir = args->state_dir,
                .affinity_table = args->affinity_table,
                .tick_stats = args->tick_stats,
                .keep_open = args->keep_open,
        };
        r = manager_new(&o, config, &m);
        if (r < 0)
                return r;
        r = manager_start(m);
        if (r < 0)
                return r;
        r = manager_run(m);
        if (r < 0 && r == m->exit_error)
                return r; /* the stop could not give everything back: said already */
        if (r < 0)
                return log_error_errno(r, "The event loop ended on an error");
        return 0;
}
