/* SPDX-License-Identifier: MIT */
#pragma once

/* The org.steerd1.Manager object: no policy logic here, only argument
 * checks, privilege checks and calls into the manager. */

#include "manager.h"
#include "trial.h"

/* At most this many method calls wait for polkit at once; more are refused. */
#define BUS_MAX_PENDING_AUTHS 64

/* Connect to the system bus (watch-bind: a bus that is not up yet, or that
 * restarts, is waited for without blocking), publish the object, ask for the
 * name asynchronously, attach to the event loop. A lost connection is
 * replaced by a new one a second later, with the object and the name. */
int bus_connect(Manager *m);
/* Close the connection (at the end, or before a new one). */
void bus_drop(Manager *m);
/* At the start, on a host where systemd runs: wait (at most timeout_us)
 * until the connection is up, so that the first give-backs and windows of
 * the systemd backend do not fail on a bus that is a few ms away. */
int bus_wait_ready(Manager *m, uint64_t timeout_us);
void bus_pending_auths_free(Manager *m);
void bus_emit_mode_changed(Manager *m);
/* Mode, ModeSource, ModeSetUSec, ConfigMode changed (PropertiesChanged only). */
void bus_emit_mode_properties(Manager *m);
/* After a tick: LLCOverload for each LLC whose overloaded flag flipped
 * against prev (NULL: none flipped yet), ActionsApplied when plan applied. */
void bus_emit_tick(Manager *m, const Snapshot *prev, const Snapshot *cur, const Plan *applied);
/* TrialProgress: a trial started, ended a block, or ended. */
void bus_emit_trial_progress(Manager *m, const Trial *t);
/* Evaluate=auto turned a cgroup's steering off (it hurt) or on again. */
void bus_emit_steering_evaluated(Manager *m, const char *cgroup, bool steering, const char *why);
