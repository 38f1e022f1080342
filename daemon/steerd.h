/* SPDX-License-Identifier: MIT */
#pragma once

/* What the command line asked for; each run mode lives in its own file. */

#include "config.h"

typedef struct Args {
        const char *root;
        const char *topology;
        const char *config;
        const char *record;
        const char *replay;
        const char *runtime_dir; /* daemon: default /run/steerd */
        const char *state_dir;   /* daemon: default /var/lib/steerd */
        const char *affinity_table; /* daemon on a simulated host (--root): thread masks via this table */
        const char *tick_stats;     /* daemon: a line of figures per tick (benchmarks) */
        uint64_t interval_ms;    /* --once: 0 = default 1000 */
        uint64_t ticks;          /* --record: stop after this many snapshots, 0 = until SIGINT/SIGTERM */
        bool once, json, foreground;
        bool keep_open; /* daemon on a simulated host: its files are rewritten in place */
} Args;

int run_once(const Args *args, const Config *config);
int run_record(const Args *args, const Config *config);
int run_replay(const Args *args, const Config *config);
/* Takes ownership of config. */
int run_daemon(const Args *args, Config *config);
