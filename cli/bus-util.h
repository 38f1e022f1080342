/* SPDX-License-Identifier: MIT */
#pragma once

/* steerctl's side of the bus API: connecting, calling org.steerd1.Manager,
 * turning its errors into messages and exit codes, reading its properties
 * and ListCgroups. <systemd/sd-bus.h> already declares the _cleanup_ helpers
 * (sd_bus_flush_close_unrefp, sd_bus_message_unrefp, sd_bus_slot_unrefp, and
 * sd_event_unrefp in <systemd/sd-event.h>). */

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "steerd-bus.h"
#include "steerd-macros.h"

#include "steerctl.h"

/* The system bus ($DBUS_SYSTEM_BUS_ADDRESS is honoured). On failure prints
 * "Failed to connect to the system bus: ..." and returns a negative errno. */
int bus_connect(sd_bus **ret);

/* Call a method of org.steerd1.Manager on /org/steerd1 (sd_bus_call_method). */
int bus_call(sd_bus *bus, const char *member, sd_bus_error *ret_error, sd_bus_message **ret_reply,
             const char *types, ...);

/* Print "<what>: <reason>" to stderr for a failed call (what is formatted
 * from fmt) and return what the verb should return: EXIT_NO_SUCH_CGROUP for
 * org.steerd1.Error.NoSuchCgroup, EXIT_USAGE for org.steerd1.Error.InvalidArgument
 * when invalid_is_usage (the caller's argument was refused), else a negative errno. */
int log_bus_error(int r, const sd_bus_error *error, bool invalid_is_usage, const char *fmt, ...)
        _printf_(4, 5);

typedef struct Counter {
        char *name;
        uint64_t value;
} Counter;

typedef struct ManagerInfo {
        char *mode;
        char *mode_source;      /* config | runtime; NULL from an older daemon */
        uint64_t mode_set_usec; /* runtime: CLOCK_REALTIME when steerctl set it, 0 if unknown */
        char *config_mode;      /* the config's Mode= */
        char *version;
        char *wake_sampling; /* NULL from an older daemon */
        char *kernel_cache;  /* KernelCacheAware; NULL from an older daemon */
        uint64_t sample_period_usec;
        Counter *counters; /* in the daemon's order */
        size_t n_counters;
} ManagerInfo;

void manager_info_done(ManagerInfo *i);
/* All properties of org.steerd1.Manager in one GetAll call. Logs on failure;
 * returns what log_bus_error() returns. */
int bus_get_manager_info(sd_bus *bus, ManagerInfo *ret);

typedef struct CgroupInfo {
        char *name;
        char *policy;
        char *source;    /* runtime | config | xattr */
        char *directory; /* "" if the cgroup does not exist (now) */
        char *cpus;      /* cpulist, "" if unknown */
        uint32_t threads;
        char *rule; /* what brought it in: the path itself, a glob, a unit name, or the xattr */
} CgroupInfo;

void cgroup_infos_free(CgroupInfo *c, size_t n);
/* ListCgroups(). Logs on failure; returns what log_bus_error() returns. */
int bus_list_cgroups(sd_bus *bus, CgroupInfo **ret, size_t *ret_n);

/* A new sd-event loop that SIGINT and SIGTERM end with exit code 0. */
int event_new_exit_on_signals(sd_event **ret);
