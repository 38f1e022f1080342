/* SPDX-License-Identifier: MIT */
#pragma once

/* The kernel's process events connector (CN_IDX_PROC) through libnl: a new
 * thread in an opted-in cgroup is steered the moment it exists, not a tick
 * later. Needs CAP_NET_ADMIN; without it the daemon falls back to the next
 * tick's sample. */

#include <sys/types.h>

#include "steerd-macros.h"

typedef struct ProcConnector ProcConnector;

/* Called for every fork/clone: tid is the new task, tgid its process. */
typedef void (*proc_fork_cb)(pid_t tid, pid_t tgid, void *userdata);

int proc_connector_new(proc_fork_cb cb, void *userdata, ProcConnector **ret);
ProcConnector *proc_connector_free(ProcConnector *pc);
DEFINE_TRIVIAL_CLEANUP_FUNC(ProcConnector *, proc_connector_free);

/* For the event loop: poll it for EPOLLIN, then call process. */
int proc_connector_fd(const ProcConnector *pc);
/* Drain what is queued. -ENOBUFS when the kernel dropped events (the socket
 * overflowed): the caller refreshes every cgroup on its next tick. */
int proc_connector_process(ProcConnector *pc);
