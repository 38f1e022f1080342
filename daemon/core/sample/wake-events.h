/* SPDX-License-Identifier: MIT */
#pragma once

/* Which thread wakes which: the sched:sched_waking tracepoint, sampled
 * through perf_event_open, one event per CPU. sched_waking (not
 * sched_wakeup) runs in the waker's context on every kernel, so the
 * sample's tid is the waker and the tracepoint's pid field the wakee. An
 * open event costs every wakeup of the host a few hundred nanoseconds
 * (the tracepoint's probe builds its record whether or not a sample is
 * taken), so the events are opened only for an observation and closed
 * after it (docs/DECISIONS.md, "Who wakes whom"). */

#include <stdint.h>
#include <sys/types.h>

#include "cpuset.h"
#include "rootdir.h"

typedef struct WakeEvents WakeEvents;

/* One sample: waker (the task running at sched_waking) and wakee. */
typedef void (*wake_event_cb)(pid_t waker, pid_t wakee, void *userdata);

/* Opens a sampled event (every period-th wakeup) on each CPU of cpus.
 * The tracepoint is looked up under the root's tracefs
 * (/sys/kernel/tracing, else /sys/kernel/debug/tracing); events are opened
 * only where the root is the host. On failure nothing stays open and
 * *ret_why (static or in why_buf) says what was missing: -ENOENT no
 * tracefs or tracepoint, -EBADMSG its format has no pid field, -EPERM or
 * -EACCES not allowed, -EOPNOTSUPP not the host's root. */
int wake_events_open(const RootDir *root, hwloc_const_bitmap_t cpus, unsigned period, WakeEvents **ret,
                     char *why_buf, size_t why_size);
WakeEvents *wake_events_close(WakeEvents *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(WakeEvents *, wake_events_close);

/* Hands every sample recorded since the last drain to cb; *ret_lost counts
 * the samples the kernel dropped because a buffer was full (harmless: this
 * is a sample of the wakeups already). */
int wake_events_drain(WakeEvents *w, wake_event_cb cb, void *userdata, uint64_t *ret_lost);
unsigned wake_events_period(const WakeEvents *w);

/* What to do about a refused open, for kernel.perf_event_paranoid =
 * paranoid: a sentence into buf. */
void wake_events_denied_hint(int paranoid, char *buf, size_t size);

/* Parses a tracepoint format file: the offset of its field name, of its
 * "pid" field. */
int wake_events_parse_field(const char *text, const char *name, unsigned *ret_offset);
int wake_events_parse_format(const char *text, unsigned *ret_offset);
