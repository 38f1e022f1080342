/* SPDX-License-Identifier: MIT */
/* steerctl: main, the command line and the verb table. */

#include <getopt.h>
#include <inttypes.h>
#include <math.h>

#include "output.h"
#include "steerctl.h"
#include "steerd-parse.h"

#ifndef STEERD_VERSION
#define STEERD_VERSION "unknown"
#endif

static void help(void) {
        printf("%1$ssteerctl%2$s [OPTIONS...] COMMAND ...\n\n"
               "Query and control steerd, the daemon that steers the threads of opted-in cgroups\n"
               "by per-LLC (last-level cache) load and contention. Workloads nobody opted in are\n"
               "never touched.\n\n"
               "%1$sCommands:%2$s\n"
               "  status               Show mode, version, sample period, counters and the\n"
               "                       opted-in cgroups with policy, source, CPUs and threads\n"
               "                       (the default command)\n"
               "  mode [MODE]          Show the mode, or switch steerd to MODE (instant, reversible;\n"
               "                       kept across restarts, over the config's Mode=, unless\n"
               "                       PersistRuntime=no)\n"
               "  mode --reset         Drop the mode steerctl set: the config's Mode= applies\n"
               "  opt-in CGROUP        Let steerd steer CGROUP's threads, with --policy (default\n"
               "                       latency); kept across restarts unless PersistRuntime=no\n"
               "  opt-out CGROUP       Stop steering CGROUP and give its CPUs back\n"
               "  list                 List the opted-in cgroups: runtime (opt-in), config ([OptIn]\n"
               "                       in steerd.conf) and xattr (user.steerd.policy on the cgroup)\n"
               "  top                  Per-LLC, per-cgroup and per-CPU load and the last plan,\n"
               "                       refreshed every second until Ctrl-C\n"
               "  monitor              Print steerd's signals as they come, one line each, until\n"
               "                       Ctrl-C: ModeChanged, LLCOverload (an LLC's overloaded flag\n"
               "                       flipped), ActionsApplied (a tick changed CPUs)\n"
               "  explain CGROUP       Why steerd did what it did for CGROUP in its last tick: each\n"
               "                       policy's inputs against its thresholds, the guard's verdicts\n"
               "  reload               Reload steerd's configuration; a bad file is refused\n"
               "                       with file:line and the running configuration stays\n"
               "  trial CGROUP         Measure whether steering helps CGROUP: steerd alternates it\n"
               "                       between steered and hands-off blocks in random order and\n"
               "                       compares them (a ratio with its 95%% interval); a progress\n"
               "                       bar follows it, Ctrl-C leaves it running\n"
               "  trial --stop CGROUP  End CGROUP's trial (its masks given back as after any block)\n"
               "  trial --show ID      Draw a trial's blocks and its verdict\n"
               "  trials               List the kept trials (the last 100) with their verdicts\n\n"
               "%1$sModes:%2$s\n"
               "  off                  Steer nothing; give back every CPU steerd changed\n"
               "  observe              Sample and decide, log the plan, change nothing\n"
               "  latency              All policies: scan windows on overloaded LLCs, prev-CPU\n"
               "                       stickiness, contention-aware balancing between LLCs\n"
               "  balanced             Contention-aware balancing between LLCs only\n\n"
               "%1$sPolicies%2$s (per cgroup; a cgroup's policy narrows the mode):\n"
               "  latency              Windows, stickiness and balancing, as the mode allows\n"
               "  balanced             Balancing only: never a window or a pin\n\n"
               "CGROUP is the cgroup's path under its hierarchy's mount, e.g.\n"
               "/system.slice/app.service (or /bench1 in the cgroup v1 cpuset hierarchy), or its\n"
               "absolute directory, e.g. /sys/fs/cgroup/system.slice/app.service.\n\n"
               "%1$sOptions:%2$s\n"
               "  -h --help            Show this help\n"
               "     --version         Show the version\n"
               "     --json[=MODE]     JSON output for status, mode, list, top and monitor: short\n"
               "                       (one line per document, the default) or pretty\n"
               "     --no-legend       Omit the header line and the \"N cgroups listed.\" legend\n"
               "     --no-pager        Accepted as systemd's tools do; steerctl never pages\n"
               "  -p --policy=POLICY   opt-in: latency (default) or balanced\n"
               "     --evaluate[=auto|no]\n"
               "                       opt-in: keep a light trial running for good and turn\n"
               "                       steering off where it hurts (auto, the default of the\n"
               "                       option), or never (no); without it: the config's Evaluate=\n"
               "     --search[=yes|no]\n"
               "                       opt-in: search the cgroup's placements by experiment and\n"
               "                       keep the one that wins (yes, the default of the option),\n"
               "                       or never (no); without it: the config's Search=\n"
               "     --once            top: print one frame and exit\n"
               "  -n --iterations=N    top: print N frames and exit\n"
               "  -d --delay=SECONDS   top: time between frames (default 1, e.g. 0.5)\n"
               "     --duration=SPAN   trial: how long (default 20min; 30s, 1h, 500ms ...)\n"
               "     --block=SPAN      trial: each block's length (default 30s)\n"
               "     --metric=SPEC     trial: what decides: latency (run-queue delay per time\n"
               "                       slice, the default), slices (per second), pressure\n"
               "                       (cgroup v2 cpu.pressure), or an application's Prometheus\n"
               "                       series, SOURCE#NAME{LABELS}@AGG (docs/TRIALS.md), e.g.\n"
               "                       http://127.0.0.1:9100/metrics#http_request_duration_seconds@p99\n"
               "     --higher-is-better, --lower-is-better\n"
               "                       trial: the metric's direction (a gauge needs one)\n"
               "     --no-wait         trial: start it and return\n\n"
               "%1$sOutput:%2$s\n"
               "  Load figures are on the kernel's capacity scale, 1024 = one CPU fully busy,\n"
               "  followed by the same figure in percent of one CPU. util: CPU time used;\n"
               "  boosted: max(util, runnable), runnable adding run-queue wait; idle-scan: CPUs\n"
               "  the kernel's wakeup scan would visit (SIS_UTIL); an LLC is overloaded when\n"
               "  that is below half its CPUs. Counters: ticks (samples taken), applied (CPU\n"
               "  changes made), kept/reverted (changes the guard kept or undid because waiting\n"
               "  got worse), restored (CPUs given back), failed, adopted (new threads given\n"
               "  their cgroup's steering the moment they appeared).\n"
               "  status --json: {\"mode\", \"version\", \"sample_period_usec\", \"counters\": {...},\n"
               "  \"cgroups\": [{\"name\", \"policy\", \"source\", \"directory\", \"cpus\", \"threads\"}]}\n"
               "  (directory \"\" when the cgroup does not exist now); list --json: the cgroups\n"
               "  array; mode --json: {\"mode\"}; top --json: steerd's Describe document per frame\n"
               "  {\"mode\", \"snapshot\", \"plan\", \"counters\"}; monitor --json: one object per\n"
               "  signal, {\"time_usec\", \"signal\", ...the signal's arguments}.\n\n"
               "%1$sPermissions:%2$s\n"
               "  Reading (status, mode, list, top, monitor, explain, trials, trial --show) is open\n"
               "  to every user. mode MODE, opt-in, opt-out, reload, trial and trial --stop need\n"
               "  root or the polkit action org.steerd1.manage.\n"
               "  steerctl talks to org.steerd1 on the system bus ($DBUS_SYSTEM_BUS_ADDRESS if set).\n\n"
               "%1$sExit status:%2$s\n"
               "  0  success\n"
               "  1  failure: steerd not running, access denied, a bus error, a bad config on reload\n"
               "  2  invalid arguments: unknown command, option, mode or policy; a cgroup path that\n"
               "     is not absolute, contains . or .., or is too long (or that steerd refused)\n"
               "  4  no such cgroup: it does not exist (opt-in) or is not opted in (opt-out)\n\n"
               "%1$sExamples:%2$s\n"
               "  steerctl opt-in /system.slice/app.service       steer app.service (latency)\n"
               "  steerctl opt-in /bench1 --policy balanced        balancing only for /bench1\n"
               "  steerctl mode latency                            start steering\n"
               "  steerctl mode observe                            stop changing CPUs, keep deciding\n"
               "  steerctl list --no-legend                        the opted-in cgroups, for scripts\n"
               "  steerctl status --json | jq .counters\n"
               "  steerctl top --once                              one frame of load figures\n"
               "  steerctl monitor --json                          signals as JSON lines\n",
               ansi(ANSI_HIGHLIGHT), ansi(ANSI_NORMAL));
}

typedef struct Verb {
        const char *name;
        unsigned min_args, max_args; /* arguments after the verb */
        int (*run)(int argc, char *argv[], const Args *args);
} Verb;

static const Verb verbs[] = {
        {"status", 0, 0, verb_status},   {"mode", 0, 1, verb_mode},     {"opt-in", 1, 1, verb_opt_in},
        {"opt-out", 1, 1, verb_opt_out}, {"list", 0, 0, verb_list},     {"top", 0, 0, verb_top},
        {"monitor", 0, 0, verb_monitor}, {"reload", 0, 0, verb_reload}, {"explain", 1, 1, verb_explain},
        {"trial", 1, 1, verb_trial},     {"trials", 0, 0, verb_trials},
};

/* "20min", "30s", "1h", "500ms", "1.5min"; a bare number is seconds. */
static int parse_timespan(const char *s, const char *what, uint64_t *ret) {
        static const struct {
                const char *suffix;
                double usec;
        } units[] = {
                {"ms", 1e3}, {"s", 1e6}, {"sec", 1e6}, {"m", 60e6}, {"min", 60e6}, {"h", 3600e6}, {"", 1e6},
        };
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno == 0 && end != s && isfinite(v) && v > 0)
                for (size_t i = 0; i < ELEMENTSOF(units); i++)
                        if (streq(end, units[i].suffix) && v * units[i].usec < 7 * 24 * 3600e6) {
                                *ret = (uint64_t) llround(v * units[i].usec);
                                return 0;
                        }
        return log_error_errno(
                EINVAL, "%s: '%s' is not a time span such as 20min, 30s, 1h or 500ms (at most a week).",
                what, s);
}

static int parse_uint(const char *s, const char *what, uint64_t lo, uint64_t hi, uint64_t *ret) {
        if (safe_atou64_range(s, lo, hi, ret) < 0)
                return log_error_errno(EINVAL,
                                       "%s: '%s' is not a number between %" PRIu64 " and %" PRIu64 ".", what,
                                       s, lo, hi);
        return 0;
}

static int parse_delay(const char *s, uint64_t *ret) {
        double v;
        char *end;

        errno = 0;
        v = strtod(s, &end);
        if (errno != 0 || end == s || *end || !isfinite(v) || v < 0.1 || v > 3600)
                return log_error_errno(EINVAL,
                                       "--delay: '%s' is not a number of seconds between 0.1 and 3600.", s);
        *ret = (uint64_t) (v * USEC_PER_SEC);
        return 0;
}

/* Returns 0 to exit with success (--help, --version), > 0 to go on, < 0 on error. */
static int parse_argv(int argc, char *argv[], Args *args) {
        enum {
                ARG_VERSION = 0x100,
                ARG_JSON,
                ARG_NO_LEGEND,
                ARG_NO_PAGER,
                ARG_ONCE,
                ARG_RESET,
                ARG_DURATION,
                ARG_BLOCK,
                ARG_METRIC,
                ARG_HIGHER,
                ARG_LOWER,
                ARG_STOP,
                ARG_SHOW,
                ARG_NO_WAIT,
                ARG_EVALUATE,
                ARG_SEARCH,
        };
        static const struct option options[] = {
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, ARG_VERSION},
                {"json", optional_argument, NULL, ARG_JSON},
                {"no-legend", no_argument, NULL, ARG_NO_LEGEND},
                {"no-pager", no_argument, NULL, ARG_NO_PAGER},
                {"policy", required_argument, NULL, 'p'},
                {"once", no_argument, NULL, ARG_ONCE},
                {"reset", no_argument, NULL, ARG_RESET},
                {"iterations", required_argument, NULL, 'n'},
                {"delay", required_argument, NULL, 'd'},
                {"duration", required_argument, NULL, ARG_DURATION},
                {"block", required_argument, NULL, ARG_BLOCK},
                {"metric", required_argument, NULL, ARG_METRIC},
                {"higher-is-better", no_argument, NULL, ARG_HIGHER},
                {"lower-is-better", no_argument, NULL, ARG_LOWER},
                {"stop", no_argument, NULL, ARG_STOP},
                {"show", no_argument, NULL, ARG_SHOW},
                {"no-wait", no_argument, NULL, ARG_NO_WAIT},
                {"evaluate", optional_argument, NULL, ARG_EVALUATE},
                {"search", optional_argument, NULL, ARG_SEARCH},
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "hp:n:d:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("steerctl %s\n", STEERD_VERSION);
                        return 0;
                case ARG_JSON:
                        if (!optarg || streq(optarg, "short"))
                                args->json = JSON_SHORT;
                        else if (streq(optarg, "pretty"))
                                args->json = JSON_PRETTY;
                        else if (streq(optarg, "off"))
                                args->json = JSON_OFF;
                        else
                                return log_error_errno(
                                        EINVAL, "--json: unknown mode '%s' (short, pretty or off).", optarg);
                        break;
                case ARG_NO_LEGEND:
                        args->legend = false;
                        break;
                case ARG_NO_PAGER:
                        args->no_pager = true;
                        break;
                case 'p':
                        args->policy = optarg;
                        break;
                case ARG_ONCE:
                        args->iterations = 1;
                        args->top_options_set = true;
                        break;
                case ARG_RESET:
                        args->reset = true;
                        break;
                case 'n':
                        if (parse_uint(optarg, "--iterations", 1, UINT32_MAX, &args->iterations) < 0)
                                return -EINVAL;
                        args->top_options_set = true;
                        break;
                case 'd':
                        if (parse_delay(optarg, &args->delay_usec) < 0)
                                return -EINVAL;
                        args->top_options_set = true;
                        break;
                case ARG_DURATION:
                        if (parse_timespan(optarg, "--duration", &args->trial_duration_usec) < 0)
                                return -EINVAL;
                        args->trial_options_set = true;
                        break;
                case ARG_BLOCK:
                        if (parse_timespan(optarg, "--block", &args->trial_block_usec) < 0)
                                return -EINVAL;
                        args->trial_options_set = true;
                        break;
                case ARG_METRIC:
                        args->trial_metric = optarg;
                        args->trial_options_set = true;
                        break;
                case ARG_HIGHER:
                case ARG_LOWER:
                        if (args->trial_direction != 0)
                                return log_error_errno(
                                        EINVAL, "Give one of --higher-is-better and --lower-is-better.");
                        args->trial_direction = c == ARG_HIGHER ? 1 : -1;
                        args->trial_options_set = true;
                        break;
                case ARG_STOP:
                        args->trial_stop = true;
                        args->trial_options_set = true;
                        break;
                case ARG_SHOW:
                        args->trial_show = true;
                        args->trial_options_set = true;
                        break;
                case ARG_EVALUATE:
                        args->evaluate = optarg ?: "auto";
                        if (!streq(args->evaluate, "auto") && !streq(args->evaluate, "no"))
                                return log_error_errno(EINVAL, "--evaluate: '%s' is neither auto nor no.",
                                                       args->evaluate);
                        break;
                case ARG_SEARCH:
                        args->search = optarg ?: "yes";
                        if (!streq(args->search, "yes") && !streq(args->search, "no"))
                                return log_error_errno(EINVAL, "--search: '%s' is neither yes nor no.",
                                                       args->search);
                        break;
                case ARG_NO_WAIT:
                        args->trial_no_wait = true;
                        args->trial_options_set = true;
                        break;
                default: /* '?': getopt said what was wrong */
                        return -EINVAL;
                }
        return 1;
}

static int dispatch_verb(int argc, char *argv[], const Args *args) {
        static char *default_argv[] = {(char *) "status", NULL};
        const Verb *verb = NULL;
        unsigned n_args;

        if (argc <= 0) {
                argc = 1;
                argv = default_argv;
        }
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(argv[0], verbs[i].name)) {
                        verb = &verbs[i];
                        break;
                }
        if (!verb)
                return log_error("Unknown command '%s'. See 'steerctl --help'.", argv[0]), EXIT_USAGE;

        n_args = (unsigned) argc - 1;
        if (n_args < verb->min_args)
                return log_error("Too few arguments for '%s'. See 'steerctl --help'.", verb->name),
                       EXIT_USAGE;
        if (n_args > verb->max_args)
                return log_error("Too many arguments for '%s'. See 'steerctl --help'.", verb->name),
                       EXIT_USAGE;

        /* Options that only one verb takes are refused elsewhere, so that a
         * misplaced one is not silently ignored. */
        if (args->policy && !streq(verb->name, "opt-in"))
                return log_error("--policy is only valid with opt-in."), EXIT_USAGE;
        if (args->evaluate && !streq(verb->name, "opt-in"))
                return log_error("--evaluate is only valid with opt-in."), EXIT_USAGE;
        if (args->search && !streq(verb->name, "opt-in"))
                return log_error("--search is only valid with opt-in."), EXIT_USAGE;
        if (args->reset && !streq(verb->name, "mode"))
                return log_error("--reset is only valid with mode."), EXIT_USAGE;
        if (args->reset && argc > 1)
                return log_error("mode --reset takes no MODE: it goes back to the config's Mode=."),
                       EXIT_USAGE;
        if (args->top_options_set && !streq(verb->name, "top"))
                return log_error("--once, --iterations and --delay are only valid with top."), EXIT_USAGE;

        if (args->trial_options_set && !streq(verb->name, "trial"))
                return log_error("--duration, --block, --metric, --higher-is-better, --lower-is-better, "
                                 "--stop, "
                                 "--show and --no-wait are only valid with trial."),
                       EXIT_USAGE;
        if (args->trial_stop + args->trial_show > 1 ||
            ((args->trial_stop || args->trial_show) &&
             (args->trial_duration_usec || args->trial_block_usec || args->trial_metric ||
              args->trial_direction || args->trial_no_wait)))
                return log_error("trial --stop CGROUP and trial --show ID take no other trial option."),
                       EXIT_USAGE;

        return verb->run(argc, argv, args);
}

int main(int argc, char *argv[]) {
        Args args = {
                .legend = true,
                .delay_usec = TOP_DELAY_DEFAULT_USEC,
        };
        int r;

        r = parse_argv(argc, argv, &args);
        if (r < 0)
                return EXIT_USAGE;
        if (r == 0)
                return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;

        r = dispatch_verb(argc - optind, argv + optind, &args);
        return r < 0 ? EXIT_FAILURE : r;
}
