/* SPDX-License-Identifier: MIT */
#pragma once

/* The bus API of steerd (DESIGN.md 4), shared by the daemon and steerctl.
 *
 * Object /org/steerd1, interface org.steerd1.Manager, on the system bus as
 * org.steerd1.
 *
 * Properties (read-only, everyone):
 *   Mode              s   off | observe | latency | balanced  (emits PropertiesChanged)
 *   ModeSource        s   config (the config's Mode=, or its default) | runtime (SetMode; saved
 *                         in /var/lib/steerd/runtime.json when PersistRuntime=yes, and then it
 *                         overrides the config at the next start)
 *   ModeSetUSec       t   runtime: when SetMode set it (CLOCK_REALTIME usec; 0 if unknown); config: 0
 *   ConfigMode        s   what the config's Mode= says (what ResetMode returns to)
 *   SamplePeriodUSec  t
 *   Version           s
 *   Counters          a{st}  ticks, applied, kept, reverted, restored, failed, adopted, dropped
 *                            (dropped: actions the engine's checker refused; 0 unless a bug)
 *   WakeSampling      s   who wakes whom (sched_waking through perf_event_open): off (WakeGroups=no),
 *                         idle (no cgroup needs it), observing, held (the last observation holds),
 *                         or "unavailable: <why and what to do>" (tried again at Reload)
 *   KernelCacheAware  s   the kernel's own cache-aware scheduling (CONFIG_SCHED_CACHE): "on: HOW"
 *                         (steerd then opens no window and places no wake group for a cgroup of
 *                         one process), "off: HOW" (built in, turned off), "absent: HOW"
 *
 * Methods:
 *   SetMode(s mode)                      root or polkit org.steerd1.manage
 *   ResetMode() -> b dropped             root or polkit; drops the saved SetMode: the config's
 *                                        Mode= applies (dropped false: there was none)
 *   OptIn(s cgroup, s policy)            root or polkit; policy latency | balanced; cgroup is a
 *                                        path, a glob (/machine.slice/x-*.scope: cgroups that
 *                                        appear later are taken in at the next rescan) or a
 *                                        systemd unit name (nginx.service); a path outside the
 *                                        cgroup mounts (/proc/..., a symbolic link, a bind
 *                                        mount) is InvalidArgument, and so is a new rule beyond
 *                                        STEERD_RUNTIME_RULES_MAX
 *   OptInEx(s cgroup, s policy, s evaluate)
 *                                        OptIn with the opt-in's own Evaluate=: auto (a light trial
 *                                        for good, steering off where it hurts), no, or "" (the
 *                                        config's Evaluate=)
 *   OptInWithOptions(s cgroup, s policy, a{ss} options)
 *                                        OptIn with options: "evaluate" (auto, no, "") and
 *                                        "search" (yes, no, "": the config's Search=, the
 *                                        placement search for this opt-in); an unknown key or
 *                                        value is InvalidArgument and nothing changes
 *   OptOut(s cgroup)                     root or polkit; gives the cgroup's CPUs back; a glob or
 *                                        unit name opts that rule out (also the config's); at
 *                                        most STEERD_RUNTIME_RULES_MAX opt-outs are kept
 *   ListCgroups() -> a(sssssu)           everyone: name, policy, source (runtime|config|xattr),
 *                                        directory ("" if it does not exist), current CPUs, threads
 *   ListCgroupsEx() -> a(sssssus)        the same, and the rule that brought each in: the path
 *                                        itself, the glob, the unit name, or user.steerd.policy
 *   Describe() -> s                      everyone: JSON {"mode", "snapshot": <DESIGN.md 6 snapshot>,
 *                                        "plan": [<actions with reasons>], "counters": {...}}
 *   Explain(s cgroup) -> a(ss)           everyone: why the last tick did what it did for an
 *                                        opted-in cgroup (its name or directory): (topic, text)
 *                                        lines; topics cgroup, window, guard, balance, sticky, plan,
 *                                        each text the inputs against the thresholds, e.g.
 *                                        "no window: LLC 0 util 41% < 60% overloaded threshold ..."
 *                                        NoSuchCgroup when it is not opted in
 *   Reload()                             root or polkit; a bad config keeps the running one and
 *                                        fails with InvalidArgument naming file:line
 *   StartTrial(s cgroup, t duration_usec, t block_usec, s metric, s direction) -> s id
 *                                        root or polkit: a trial of an opted-in cgroup (docs/TRIALS.md):
 *                                        0 = the default (20 min, 30 s blocks); metric "" (latency),
 *                                        latency | slices | pressure, or SOURCE#SERIES[@AGG];
 *                                        direction "" (the signal's own), higher, lower.
 *                                        NoSuchCgroup when not opted in; InvalidArgument with the
 *                                        reason otherwise (one trial per cgroup, mode off/observe,
 *                                        a metric that cannot be read now, a duration too short)
 *   StopTrial(s cgroup) -> s id          root or polkit; NoSuchTrial when none runs
 *   ListTrials() -> a(sssssddddss)       everyone: the kept records (the last 100), oldest first:
 *                                        id, cgroup, state (running|done|stopped|interrupted|failed),
 *                                        arm (steered|hands-off; "" once ended), verdict (better|
 *                                        worse|same|can't tell), progress 0..1, ratio steered/hands-off,
 *                                        its 95% interval low, high (NaN: no estimate yet), the
 *                                        verdict for people ("helps by 12% [8%, 16%]"), "" (reserved)
 *   GetTrial(s id) -> s json             everyone: a record (an id, or the cgroup of a running
 *                                        trial) with its blocks; NoSuchTrial
 *
 * Signals:
 *   ModeChanged(s mode)
 *   LLCOverload(u llc, b overloaded, d util)   when an LLC's overloaded flag flips
 *   ActionsApplied(u count, s plan_json)       after a tick that applied actions
 *   TrialProgress((sssssddddss) trial)         a trial started, ended a block or ended
 *   SteeringEvaluated(s cgroup, b steering, s why)
 *                                              Evaluate=auto turned a cgroup's steering off (it
 *                                              hurt beyond HarmPercent=) or on again (the back-off)
 *
 * Property Trials a(sssssddddss): the running trials, as ListTrials.
 *
 * Errors carry a message a person understands. */

#define STEERD_BUS_NAME "org.steerd1"
#define STEERD_BUS_PATH "/org/steerd1"
#define STEERD_BUS_INTERFACE "org.steerd1.Manager"
#define STEERD_POLKIT_ACTION "org.steerd1.manage"

#define STEERD_ERROR_NO_SUCH_CGROUP "org.steerd1.Error.NoSuchCgroup"
#define STEERD_ERROR_INVALID_ARGUMENT "org.steerd1.Error.InvalidArgument"
#define STEERD_ERROR_ACCESS_DENIED "org.steerd1.Error.AccessDenied"
#define STEERD_ERROR_NO_SUCH_TRIAL "org.steerd1.Error.NoSuchTrial"

/* Longest cgroup path a bus caller may pass. */
#define STEERD_BUS_PATH_MAX 4096
/* Most runtime opt-ins (OptIn rules) steerd keeps, and most runtime opt-outs:
 * one more is refused with InvalidArgument (runtime.json with more is
 * malformed). */
#define STEERD_RUNTIME_RULES_MAX 1024
