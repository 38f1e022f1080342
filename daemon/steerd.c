/* SPDX-License-Identifier: MIT */
#include <getopt.h>
#include <inttypes.h>

#include "log.h"
#include "steerd-parse.h"
#include "steerd.h"
#include "topology.h"

static void help(void) {
        printf("steerd [OPTIONS...]\n\n"
               "Steers the threads of opted-in cgroups by per-LLC load and contention.\n\n"
               "  -h --help               Show this help\n"
               "     --version            Show the version\n"
               "     --once               Take two samples INTERVAL apart, print the snapshot, exit\n"
               "     --interval MS        Interval of --once (default 1000)\n"
               "     --json               JSON output (--once, --replay)\n"
               "     --root DIR           Read /proc and /sys below DIR (default /)\n"
               "     --topology X         hwloc XML file or synthetic string instead of the live topology\n"
               "     --config FILE        Config file (default " STEERD_DEFAULT_CONFIG ")\n"
               "     --record FILE        Write one snapshot per tick to FILE as JSON lines ('-' = stdout)\n"
               "     --ticks N            Stop --record after N snapshots\n"
               "     --replay FILE        Run the policy engine over a recorded stream, print each plan\n"
               "     --foreground         Run the daemon in the foreground (it never forks; logs go to the\n"
               "                          terminal, or to the journal under systemd)\n"
               "     --runtime-dir DIR    Where ownership is kept for restore after a crash (default "
               "/run/steerd)\n"
               "     --state-dir DIR      Where steerctl's changes persist (default /var/lib/steerd)\n"
               "     --affinity-table FILE  With --root (a simulated host, tests/sim): set thread masks\n"
               "                          in the root's /proc and log each request to FILE\n"
               "     --tick-stats FILE    Append a line of figures per tick to FILE (benchmarks)\n"
               "     --keep-open          With --root (a simulated host that rewrites its files in place,\n"
               "                          as /proc does): keep its files open as on the live root\n\n"
               "Without --once, --record or --replay, steerd runs as the daemon.\n");
}

static int parse_u64(const char *s, const char *what, uint64_t lo, uint64_t hi, uint64_t *ret) {
        if (safe_atou64_range(s, lo, hi, ret) < 0)
                return log_error("%s: '%s' is not a number in [%" PRIu64 ", %" PRIu64 "]", what, s, lo, hi),
                       -EINVAL;
        return 0;
}

static int parse_argv(int argc, char *argv[], Args *args) {
        enum {
                ARG_VERSION = 0x100,
                ARG_ONCE,
                ARG_INTERVAL,
                ARG_JSON,
                ARG_ROOT,
                ARG_TOPOLOGY,
                ARG_CONFIG,
                ARG_RECORD,
                ARG_TICKS,
                ARG_REPLAY,
                ARG_FOREGROUND,
                ARG_STATE_DIR,
                ARG_RUNTIME_DIR,
                ARG_AFFINITY_TABLE,
                ARG_TICK_STATS,
                ARG_KEEP_OPEN,
        };
        static const struct option options[] = {
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, ARG_VERSION},
                {"once", no_argument, NULL, ARG_ONCE},
                {"interval", required_argument, NULL, ARG_INTERVAL},
                {"json", no_argument, NULL, ARG_JSON},
                {"root", required_argument, NULL, ARG_ROOT},
                {"topology", required_argument, NULL, ARG_TOPOLOGY},
                {"config", required_argument, NULL, ARG_CONFIG},
                {"record", required_argument, NULL, ARG_RECORD},
                {"ticks", required_argument, NULL, ARG_TICKS},
                {"replay", required_argument, NULL, ARG_REPLAY},
                {"foreground", no_argument, NULL, ARG_FOREGROUND},
                {"state-dir", required_argument, NULL, ARG_STATE_DIR},
                {"runtime-dir", required_argument, NULL, ARG_RUNTIME_DIR},
                {"affinity-table", required_argument, NULL, ARG_AFFINITY_TABLE},
                {"tick-stats", required_argument, NULL, ARG_TICK_STATS},
                {"keep-open", no_argument, NULL, ARG_KEEP_OPEN},
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("steerd %s\n", STEERD_VERSION);
                        return 0;
                case ARG_ONCE:
                        args->once = true;
                        break;
                case ARG_INTERVAL:
                        if (parse_u64(optarg, "--interval", 1, 3600 * 1000, &args->interval_ms) < 0)
                                return -EINVAL;
                        break;
                case ARG_JSON:
                        args->json = true;
                        break;
                case ARG_ROOT:
                        args->root = optarg;
                        break;
                case ARG_TOPOLOGY:
                        args->topology = optarg;
                        break;
                case ARG_CONFIG:
                        args->config = optarg;
                        break;
                case ARG_RECORD:
                        args->record = optarg;
                        break;
                case ARG_TICKS:
                        if (parse_u64(optarg, "--ticks", 1, UINT64_MAX, &args->ticks) < 0)
                                return -EINVAL;
                        break;
                case ARG_REPLAY:
                        args->replay = optarg;
                        break;
                case ARG_FOREGROUND:
                        args->foreground = true;
                        break;
                case ARG_STATE_DIR:
                        args->state_dir = optarg;
                        break;
                case ARG_RUNTIME_DIR:
                        args->runtime_dir = optarg;
                        break;
                case ARG_AFFINITY_TABLE:
                        args->affinity_table = optarg;
                        break;
                case ARG_TICK_STATS:
                        args->tick_stats = optarg;
                        break;
                case ARG_KEEP_OPEN:
                        args->keep_open = true;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        return -EINVAL;
                }

        if (optind < argc)
                return log_error("Unexpected argument '%s' (see --help)", argv[optind]), -EINVAL;
        if (args->once + !!args->record + !!args->replay > 1)
                return log_error("--once, --record and --replay are mutually exclusive"), -EINVAL;
        if (args->affinity_table && (!args->root || args->once || args->record || args->replay))
                return log_error("--affinity-table is for the daemon on a simulated host: it needs --root"),
                       -EINVAL;
        if (args->keep_open && (!args->root || args->once || args->record || args->replay))
                return log_error("--keep-open is for the daemon on a simulated host: it needs --root"),
                       -EINVAL;
        return 1;
}

int main(int argc, char *argv[]) {
        _cleanup_(config_freep) Config *config = NULL;
        Args args = {};
        int r;

        r = parse_argv(argc, argv, &args);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;

        /* The default config may be absent (a fresh checkout, --once on a
         * laptop); one named on the command line must exist. */
        r = config_load(args.config ?: STEERD_DEFAULT_CONFIG, !args.config, &config);
        if (r < 0)
                return log_error("Refusing to start: the configuration is invalid."), EXIT_FAILURE;

        if (args.once)
                r = run_once(&args, config);
        else if (args.record)
                r = run_record(&args, config);
        else if (args.replay)
                r = run_replay(&args, config);
        else
                r = run_daemon(&args, TAKE_PTR(config));

        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
