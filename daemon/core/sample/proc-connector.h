/* SPDX-License-Identifier: MIT */
#pragma once

/* The kernel's process events connector (CN_IDX_PROC) through libnl: a new
 * thread in an opted-in cgroup is steered the moment it exists, not a tick
 * later. Needs CAP_NET_ADMIN; without it the daemon falls back to the next
 * tick's sample. */

#include <sys/types.h>

#include "steerd-macros.h"

typedef struct ProcConnector ProcConnector;

/* Called for every fork/clone: tid is the new task, tgid its process,
 * parent_tgid the process that forked it (for a new thread: its process's
 * parent, as the kernel reports it). */
typedef void (*proc_fork_cb)(pid_t tid, pid_t tgid, pid_t parent_tgid, void *userdata);

int proc_connector_new(proc_fork_cb cb, void *userdata, ProcConnector **ret);
ProcConnector *proc_connector_free(ProcConnector *pc);
DEFINE_TRIVIAL_CLEANUP_FUNC(ProcConnector *, proc_connector_free);

/* On Linux 6.6 and later the kernel is asked for fork events only (a host
 * exits and execs as often as it forks); older kernels send every event,
 * the others are skipped here.
 *
 * For the event loop: poll it for EPOLLIN, then call process; or drain it
 * once per tick (the socket buffer holds some 40,000 events). */
int proc_connector_fd(const ProcConnector *pc);
/* Drain what is queued. -ENOBUFS when the kernel dropped events (the socket
 * overflowed): the caller refreshes every cgroup on its next tick. */
int proc_connector_process(ProcConnector *pc);
