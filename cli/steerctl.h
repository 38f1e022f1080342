/* SPDX-License-Identifier: MIT */
#pragma once

/* steerctl: the command line client of steerd's bus API (include/steerd-bus.h). */

#include <stdbool.h>
#include <stdint.h>

/* Exit codes, as systemctl uses them: 0 success, 1 any failure (bus errors,
 * access denied, steerd not running), and: */
#define EXIT_USAGE 2          /* invalid arguments: options, verb, mode, policy, cgroup path */
#define EXIT_NO_SUCH_CGROUP 4 /* org.steerd1.Error.NoSuchCgroup, like systemctl's "unit not found" */

typedef enum JsonMode {
        JSON_OFF,
        JSON_SHORT,  /* one line per document */
        JSON_PRETTY, /* indented */
} JsonMode;

/* The parsed command line: the only state steerctl keeps outside functions. */
typedef struct Args {
        JsonMode json;
        bool legend;          /* header and legend lines of tables (--no-legend clears) */
        bool no_pager;        /* accepted for systemd compatibility; steerctl never pages */
        const char *policy;   /* opt-in --policy, NULL: latency */
        const char *evaluate; /* opt-in --evaluate: auto | no; NULL: the config's Evaluate= */
        const char *search;   /* opt-in --search: yes | no; NULL: the config's Search= */
        uint64_t iterations;  /* top: frames to print, 0 = until interrupted */
        uint64_t delay_usec;  /* top: time between frames */
        bool top_options_set; /* --once, --iterations or --delay was given */
        bool reset;           /* mode --reset: drop steerctl's saved mode */
        /* trial */
        uint64_t trial_duration_usec, trial_block_usec; /* 0: steerd's defaults */
        const char *trial_metric;
        int trial_direction; /* 1 --higher-is-better, -1 --lower-is-better, 0 the signal's own */
        bool trial_stop, trial_show, trial_no_wait;
        bool trial_options_set; /* any of the above */
} Args;

#define TOP_DELAY_DEFAULT_USEC USEC_PER_SEC

/* Verbs: return a negative errno on failure (exit status 1; the message is
 * already printed), or the exit status (0, EXIT_USAGE, EXIT_NO_SUCH_CGROUP). */
int verb_status(int argc, char *argv[], const Args *args);
int verb_list(int argc, char *argv[], const Args *args);
int verb_mode(int argc, char *argv[], const Args *args);
int verb_opt_in(int argc, char *argv[], const Args *args);
int verb_opt_out(int argc, char *argv[], const Args *args);
int verb_reload(int argc, char *argv[], const Args *args);
int verb_top(int argc, char *argv[], const Args *args);
int verb_monitor(int argc, char *argv[], const Args *args);
int verb_explain(int argc, char *argv[], const Args *args);
int verb_trial(int argc, char *argv[], const Args *args);
int verb_trials(int argc, char *argv[], const Args *args);
