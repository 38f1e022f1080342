/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <float.h>
#include <ini.h>
#include <math.h>
#include <stddef.h>
#include <sys/stat.h>

#include "config.h"
#include "log.h"

typedef enum KeyType {
        KEY_UINT,
        KEY_U64,
        KEY_DOUBLE,   /* plain number */
        KEY_PERCENT,  /* "25" or "25%": stored as the number of percent */
        KEY_FRACTION, /* "25%" or "0.25": stored as a fraction */
        KEY_BOOL,
        KEY_MODE,
        KEY_STICKY_SCOPE,
        KEY_PATH,     /* an absolute path or empty, into a char[4096] */
        KEY_MSEC,     /* milliseconds, or a time span ("100ms", "1s"), into a uint64_t */
        KEY_EVALUATE, /* auto | no, into a bool */
} KeyType;

typedef struct KeyDef {
        const char *section, *name;
        KeyType type;
        size_t offset;
        double min, max;
} KeyDef;

#define K(sec, key, t, field, lo, hi)                                                                       \
        { sec, key, t, offsetof(Settings, field), lo, hi }
static const KeyDef key_table[] = {
        K("Manager", "Mode", KEY_MODE, mode, 0, 0),
        K("Manager", "SamplePeriodMs", KEY_MSEC, sample_period_ms, 10, 60000),
        K("Manager", "SmoothingHalfLifeMs", KEY_MSEC, smoothing_half_life_ms, 0, 600000),
        K("Manager", "CountSteal", KEY_BOOL, count_steal, 0, 0),
        K("Manager", "MaxScanThreads", KEY_UINT, max_scan_threads, 1, 10000000),
        K("Manager", "RunnableIntervalMs", KEY_MSEC, runnable_interval_ms, 0, 60000),
        K("Manager", "PersistRuntime", KEY_BOOL, persist_runtime, 0, 0),
        K("Manager", "MetricsFile", KEY_PATH, metrics_file, 0, 0),
        K("Manager", "MetricsIntervalMs", KEY_MSEC, metrics_interval_ms, 100, 3600000),
        K("Manager", "MetricsCgroups", KEY_UINT, metrics_cgroups, 0, 100000),
        K("Manager", "RescanIntervalMs", KEY_MSEC, rescan_interval_ms, 100, 3600000),
        K("Manager", "Evaluate", KEY_EVALUATE, evaluate, 0, 0),
        K("Manager", "HarmPercent", KEY_DOUBLE, harm_percent, 0.1, 50),
        K("Manager", "EvaluateDuty", KEY_UINT, evaluate_duty, 2, 64),
        K("Manager", "EvaluateBlockMs", KEY_MSEC, evaluate_block_ms, 1000, 3600000),
        K("Manager", "EvaluateRetryMs", KEY_MSEC, evaluate_retry_ms, 60000, 7 * 86400000.0),
        K("Manager", "Search", KEY_BOOL, search, 0, 0),
        K("Manager", "SearchBlockMs", KEY_MSEC, search_block_ms, 1000, 3600000),
        K("Manager", "SearchDuty", KEY_UINT, search_duty, 2, 64),
        K("Policy", "MinWindowCores", KEY_UINT, min_window_cores, 1, 65536),
        K("Policy", "WindowHeadroom", KEY_FRACTION, window_headroom, 0, 10),
        K("Policy", "MinLLCCPUs", KEY_UINT, min_llc_cpus, 1, 65536),
        K("Policy", "StickyIdlePercent", KEY_PERCENT, sticky_idle_percent, 0, 100),
        K("Policy", "StickyTicks", KEY_UINT, sticky_ticks, 1, 100000),
        K("Policy", "StickyReleasePercent", KEY_PERCENT, sticky_release_percent, 0, 100),
        K("Policy", "StickyMaxWaitPercent", KEY_PERCENT, sticky_max_wait_percent, 0, 100),
        K("Policy", "StickyScope", KEY_STICKY_SCOPE, sticky_scope, 0, 0),
        K("Policy", "StickyMinWakeups", KEY_DOUBLE, sticky_min_wakeups, 0, 1000000),
        K("Policy", "StickyMaxPinsPerTick", KEY_UINT, sticky_max_pins, 1, 1000000),
        K("Policy", "StickyPairWakeups", KEY_DOUBLE, sticky_pair_wakeups, 0, 10000000),
        K("Policy", "StickyPairIdlePercent", KEY_DOUBLE, sticky_pair_idle_percent, 0, 100),
        K("Policy", "WakeGroups", KEY_BOOL, wake_groups, 0, 0),
        K("Policy", "Consolidate", KEY_BOOL, consolidate, 0, 0),
        K("Policy", "ImbalancePercent", KEY_UINT, imbalance_percent, 100, 1000),
        K("Policy", "MaxMovesPerTick", KEY_UINT, max_moves_per_tick, 0, 100000),
        K("Policy", "MinResidencyMs", KEY_MSEC, min_residency_ms, 0, 86400000),
        K("Policy", "GuardWindowMs", KEY_MSEC, guard_window_ms, 0, 86400000),
        K("Policy", "GuardPercent", KEY_PERCENT, guard_percent, 0, 1000),
        K("Policy", "WindowWidenScanPercent", KEY_PERCENT, window_widen_scan_percent, 50, 100),
        K("Policy", "BalanceMinWait", KEY_DOUBLE, balance_min_wait, 0, 1024),
        K("Policy", "GuardWaitFloor", KEY_DOUBLE, guard_wait_floor, 0, 1024),
        K("Policy", "GuardPressureFloor", KEY_DOUBLE, guard_pressure_floor, 0, 100),
        K("Policy", "GuardBackoffMax", KEY_UINT, guard_backoff_max, 1, 1 << 20),
};
#undef K

typedef struct ParseState {
        Config *config;
        const char *file;
        unsigned line;    /* of the line inih handed us last */
        int error;        /* first error */
        char *error_text; /* every error as "file:line: reason; ..." */
        unsigned n_errors;
        unsigned syntax_errors; /* lines inih cannot take, found by reader() */
        FILE *f;
} ParseState;

/* At most this many errors of one file are kept for the caller's message
 * (every one is logged). */
#define MAX_ERRORS_IN_TEXT 16

/* log_parse_error() that also keeps the message for the caller: every bad
 * line, not only the first, so that one reload shows the operator all of
 * them ("file:line: reason; file:line: reason"). */
_printf_(3, 4) static int parse_error(ParseState *ps, unsigned line, const char *fmt, ...) {
        char reason[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(reason, sizeof(reason), fmt, ap);
        va_end(ap);
        if (ps->n_errors++ < MAX_ERRORS_IN_TEXT) {
                char *t = NULL;
                if (asprintf(&t, "%s%s%s:%u: %s", ps->error_text ?: "", ps->error_text ? "; " : "", ps->file,
                             line, reason) >= 0) {
                        free(ps->error_text);
                        ps->error_text = t;
                }
        }
        return log_parse_error(ps->file, line, "%s", reason);
}

/* A time span as systemd's units take them ("100ms", "1s", "1min 30s",
 * "2h"), or a plain number of milliseconds. */
static int parse_timespan_ms(const char *v, double *ret) {
        static const struct {
                const char *suffix;
                double ms;
        } units[] = {
                {"usec", 1e-3},     {"us", 1e-3},      {"msec", 1},     {"ms", 1},
                {"seconds", 1000},  {"second", 1000},  {"sec", 1000},   {"s", 1000},
                {"minutes", 60000}, {"minute", 60000}, {"min", 60000},  {"m", 60000},
                {"hours", 3600000}, {"hour", 3600000}, {"hr", 3600000}, {"h", 3600000},
        };
        double total = 0;
        bool any = false;

        for (const char *p = v;;) {
                while (*p == ' ' || *p == '\t')
                        p++;
                if (!*p)
                        break;
                char *end;
                errno = 0;
                double d = strtod(p, &end);
                if (errno || end == p || !isfinite(d) || d < 0)
                        return -EINVAL;
                p = end;
                while (*p == ' ' || *p == '\t')
                        p++;
                double unit = 1; /* a bare number: milliseconds */
                if (*p && !isdigit((unsigned char) *p) && *p != '.') {
                        size_t best = 0;
                        for (size_t i = 0; i < ELEMENTSOF(units); i++) {
                                size_t n = strlen(units[i].suffix);
                                if (strncmp(p, units[i].suffix, n) == 0 && !isalpha((unsigned char) p[n]) &&
                                    n > best) {
                                        best = n;
                                        unit = units[i].ms;
                                }
                        }
                        if (best == 0)
                                return -EINVAL;
                        p += best;
                } else if (any)
                        return -EINVAL; /* "1s 500": a bare number only alone */
                total += d * unit;
                any = true;
        }
        if (!any)
                return -EINVAL;
        *ret = total;
        return 0;
}

static int parse_number(const char *v, bool allow_percent, double *ret, bool *ret_percent) {
        char *end;

        if (!*v)
                return -EINVAL;
        errno = 0;
        double d = strtod(v, &end);
        if (errno || end == v || !isfinite(d))
                return -EINVAL;
        bool pct = false;
        if (*end == '%' && allow_percent) {
                pct = true;
                end++;
        }
        if (*end)
                return -EINVAL;
        *ret = d;
        if (ret_percent)
                *ret_percent = pct;
        return 0;
}

static int parse_bool(const char *v, bool *ret) {
        static const char *const yes[] = {"1", "yes", "true", "on"}, *const no[] = {"0", "no", "false",
                                                                                    "off"};
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(v, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcasecmp(v, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

static int set_key(ParseState *ps, const KeyDef *k, const char *value) {
        char *field = (char *) &ps->config->settings + k->offset;
        double d;
        bool pct;

        switch (k->type) {
        case KEY_MODE: {
                Mode m = mode_from_string(value);
                if (m < 0)
                        return parse_error(ps, ps->line,
                                           "%s=: unknown mode '%s' (off, observe, latency, balanced)",
                                           k->name, value);
                *(Mode *) field = m;
                return 0;
        }
        case KEY_STICKY_SCOPE: {
                StickyScope s = sticky_scope_from_string(value);
                if (s < 0)
                        return parse_error(ps, ps->line, "%s=: unknown scope '%s' (core, cpu)", k->name,
                                           value);
                *(StickyScope *) field = s;
                return 0;
        }
        case KEY_PATH:
                if (*value && (value[0] != '/' || strlen(value) >= 4096))
                        return parse_error(ps, ps->line, "%s=: '%s' is not an absolute path", k->name,
                                           value);
                strcpy(field, value);
                return 0;
        case KEY_EVALUATE:
                if (!streq(value, "auto") && !streq(value, "no"))
                        return parse_error(ps, ps->line, "%s=: '%s' is neither auto nor no", k->name, value);
                *(bool *) field = streq(value, "auto");
                return 0;
        case KEY_BOOL:
                if (parse_bool(value, (bool *) field) < 0)
                        return parse_error(ps, ps->line, "%s=: '%s' is not a boolean", k->name, value);
                return 0;
        case KEY_FRACTION:
        case KEY_PERCENT:
        case KEY_DOUBLE:
        case KEY_UINT:
        case KEY_U64:
        case KEY_MSEC:
                break;
        }

        if (k->type == KEY_MSEC) {
                if (parse_timespan_ms(value, &d) < 0)
                        return parse_error(ps, ps->line,
                                           "%s=: '%s' is not a time span (milliseconds, or e.g. 100ms, 1s, "
                                           "2min)",
                                           k->name, value);
                if (fabs(d - round(d)) > 1e-6)
                        return parse_error(ps, ps->line, "%s=: '%s' is not a whole number of milliseconds",
                                           k->name, value);
                d = round(d);
        } else if (parse_number(value, k->type == KEY_PERCENT || k->type == KEY_FRACTION, &d, &pct) < 0)
                return parse_error(ps, ps->line, "%s=: '%s' is not a number", k->name, value);
        if (k->type == KEY_FRACTION && pct)
                d /= 100.0;
        if ((k->type == KEY_UINT || k->type == KEY_U64) && d != floor(d))
                return parse_error(ps, ps->line, "%s=: '%s' is not a whole number", k->name, value);
        if (d < k->min || d > k->max)
                return parse_error(ps, ps->line, "%s=: %s is out of range [%g, %g]%s", k->name, value,
                                   k->min, k->max, k->type == KEY_MSEC ? " ms" : "");
        switch (k->type) {
        case KEY_UINT:
                *(unsigned *) field = (unsigned) d;
                break;
        case KEY_U64:
        case KEY_MSEC:
                *(uint64_t *) field = (uint64_t) d;
                break;
        default:
                *(double *) field = d;
        }
        return 0;
}

static int add_opt_in(ParseState *ps, const char *cgroup, const char *text) {
        Config *c = ps->config;
        OptInEvaluate ev = OPTIN_EVALUATE_INHERIT;
        OptInSearch search = OPTIN_SEARCH_INHERIT;
        char value[64] = "";

        /* "POLICY" or "POLICY evaluate=auto|no search=yes|no" (blanks or a
         * comma between). */
        size_t len = strcspn(text, " \t,");
        if (len < sizeof(value))
                memcpy(value, text, len);
        for (const char *p = text + len; *p;) {
                p += strspn(p, " \t,");
                if (!*p)
                        break;
                size_t k = strcspn(p, " \t,");
                char opt[64] = "";
                if (k < sizeof(opt))
                        memcpy(opt, p, k);
                const char *v = startswith_literal(opt, "evaluate=");
                const char *sv = startswith_literal(opt, "search=");
                bool ok = v ? (ev = optin_evaluate_from_string(v)) > OPTIN_EVALUATE_INHERIT
                            : sv && (search = optin_search_from_string(sv)) > OPTIN_SEARCH_INHERIT;
                if (!ok)
                        return parse_error(ps, ps->line,
                                           "[OptIn] %s=: unknown option '%.*s' (evaluate=auto|no, "
                                           "search=yes|no)",
                                           cgroup, (int) k, p);
                p += k;
        }
        CgroupPolicy p = cgroup_policy_from_string(value);

        if (optin_rule_kind(cgroup) < 0)
                return parse_error(ps, ps->line,
                                   "[OptIn] '%s': not a cgroup path (absolute, without '.', '..' or empty "
                                   "components), a glob "
                                   "(/machine.slice/*) or a unit name (nginx.service)",
                                   cgroup);
        if (p < 0)
                return parse_error(ps, ps->line, "[OptIn] %s=: unknown policy '%s' (latency, balanced)",
                                   cgroup, value);

        /* Where it was set, for the checks that need the cgroup mounts. */
        char *origin = NULL;
        if (asprintf(&origin, "%s:%u", ps->file, ps->line) < 0)
                return -ENOMEM;
        /* A drop-in may override an earlier line for the same cgroup. */
        for (size_t i = 0; i < c->n_opt_ins; i++)
                if (streq(c->opt_ins[i].cgroup, cgroup)) {
                        c->opt_ins[i].policy = p;
                        c->opt_ins[i].evaluate = ev;
                        c->opt_ins[i].search = search;
                        free(c->opt_ins[i].origin);
                        c->opt_ins[i].origin = origin;
                        return 0;
                }

        OptInEntry *n = realloc(c->opt_ins, (c->n_opt_ins + 1) * sizeof(*n));
        if (!n) {
                free(origin);
                return -ENOMEM;
        }
        c->opt_ins = n;
        char *dup = strdup(cgroup);
        if (!dup) {
                free(origin);
                return -ENOMEM;
        }
        c->opt_ins[c->n_opt_ins++] =
                (OptInEntry){.cgroup = dup, .policy = p, .evaluate = ev, .search = search, .origin = origin};
        return 0;
}

static int handler(void *user, const char *section, const char *name, const char *value) {
        ParseState *ps = user;
        int r;

        if (!name) /* a section header alone */
                r = 0;
        else if (streq(section, "OptIn"))
                r = add_opt_in(ps, name, value);
        else {
                r = -ENOENT;
                for (size_t i = 0; i < ELEMENTSOF(key_table); i++)
                        if (streq(section, key_table[i].section) && streq(name, key_table[i].name)) {
                                r = set_key(ps, &key_table[i], value);
                                break;
                        }
                if (r == -ENOENT) {
                        if (!streq(section, "Manager") && !streq(section, "Policy"))
                                r = parse_error(ps, ps->line, "unknown section [%s]", section);
                        else
                                r = parse_error(ps, ps->line, "unknown key %s= in [%s]", name, section);
                }
        }
        if (r < 0 && ps->error >= 0)
                ps->error = r; /* the first; the rest are read and reported too */
        return 1;
}

/* What inih takes: blank, a comment, [section], or name=value / name: value. */
static bool line_is_ini(const char *s) {
        while (isspace((unsigned char) *s))
                s++;
        if (!*s || *s == ';' || *s == '#')
                return true;
        if (*s == '[')
                return strchr(s, ']') != NULL;
        const char *sep = strpbrk(s, "=:");
        return sep && sep != s;
}

/* Our own line reader, so that the handler knows the line number it is on. */
static char *reader(char *str, int num, void *stream) {
        ParseState *ps = stream;
        char *s = fgets(str, num, ps->f);
        if (s) {
                size_t n = strlen(s);
                if (n + 1 == (size_t) num && s[n - 1] != '\n' && !feof(ps->f)) {
                        /* inih would silently split an over-long line. */
                        int r = parse_error(ps, ps->line + 1, "line longer than %d characters", num - 2);
                        if (ps->error >= 0)
                                ps->error = r;
                        int ch;
                        while ((ch = fgetc(ps->f)) != EOF && ch != '\n')
                                ;
                } else if (!line_is_ini(s)) {
                        /* inih stops at the first such line (it reports only
                         * that one): every one is reported here. */
                        int r = parse_error(ps, ps->line + 1,
                                            "syntax error (expected [Section] or Key=Value)");
                        if (ps->error >= 0)
                                ps->error = r;
                        ps->syntax_errors++;
                }
                ps->line++;
        }
        return s;
}

static int parse_one(Config *c, const char *path, char **error_text) {
        _cleanup_(fclosep) FILE *f = fopen(path, "re");
        if (!f) {
                int r = -errno;
                if (asprintf(error_text, "%s: %s", path, strerror(-r)) < 0)
                        *error_text = NULL;
                return log_error_errno(r, "%s: cannot open", path);
        }

        ParseState ps = {.config = c, .file = path, .f = f};
        int r = ini_parse_stream(reader, &ps, handler, &ps);
        if (r > 0 && ps.syntax_errors == 0) {
                int k = parse_error(&ps, (unsigned) r, "syntax error (expected [Section] or Key=Value)");
                if (ps.error >= 0)
                        ps.error = k;
        }
        if (ps.error < 0) {
                *error_text = ps.error_text;
                return ps.error;
        }
        free(ps.error_text);
        if (r < 0)
                return log_error_errno(ENOMEM, "%s: cannot parse", path);
        return 0;
}

static int filter_conf(const struct dirent *de) {
        size_t n = strlen(de->d_name);
        return de->d_name[0] != '.' && n > 5 && streq(de->d_name + n - 5, ".conf");
}

Config *config_free(Config *c) {
        if (!c)
                return NULL;
        optin_entries_free(c->opt_ins, c->n_opt_ins);
        free(c->path);
        free(c);
        return NULL;
}

int config_load_full(const char *path, bool missing_ok, Config **ret, char **ret_error) {
        _cleanup_(config_freep) Config *c = calloc(1, sizeof(Config));
        _cleanup_(freep) char *error_text = NULL, *dir = NULL;
        int r;

        if (!c)
                return -ENOMEM;
        settings_init_defaults(&c->settings);
        if (!path) {
                *ret = TAKE_PTR(c);
                return 0;
        }
        c->path = strdup(path);
        if (!c->path)
                return -ENOMEM;

        if (access(path, F_OK) < 0) {
                if (!missing_ok || errno != ENOENT) {
                        r = -errno;
                        if (ret_error && asprintf(ret_error, "%s: %s", path, strerror(-r)) < 0)
                                *ret_error = NULL;
                        return log_error_errno(r, "%s: cannot open config", path);
                }
        } else {
                r = parse_one(c, path, &error_text);
                if (r < 0)
                        goto fail;
        }

        if (asprintf(&dir, "%s.d", path) < 0)
                return -ENOMEM;
        struct dirent **list = NULL;
        int n = scandir(dir, &list, filter_conf, alphasort);
        r = 0;
        for (int i = 0; i < n; i++) {
                if (r >= 0) {
                        _cleanup_(freep) char *p = NULL;
                        if (asprintf(&p, "%s/%s", dir, list[i]->d_name) < 0)
                                r = -ENOMEM;
                        else
                                r = parse_one(c, p, &error_text);
                }
                free(list[i]);
        }
        free(list);
        if (r < 0)
                goto fail;

        *ret = TAKE_PTR(c);
        return 0;

fail:
        if (ret_error)
                *ret_error = TAKE_PTR(error_text);
        return r;
}

int config_load(const char *path, bool missing_ok, Config **ret) {
        return config_load_full(path, missing_ok, ret, NULL);
}
