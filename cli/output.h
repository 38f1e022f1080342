/* SPDX-License-Identifier: MIT */
#pragma once

/* Terminal, logging and JSON helpers of steerctl. Stateless: whether stdout
 * is a terminal is asked each time, nothing is cached in globals. */

#include <stdarg.h>

#include "steerd-json.h"
#include "steerd-macros.h"

#include "steerctl.h"

#define ANSI_NORMAL "\x1b[0m"
#define ANSI_HIGHLIGHT "\x1b[1m"
#define ANSI_UNDERLINE "\x1b[4m"
#define ANSI_HIGHLIGHT_RED "\x1b[1;31m"
#define ANSI_HOME_CLEAR "\x1b[H\x1b[2J"

/* stdout is a terminal. */
bool on_tty(void);
/* stdout is a terminal that takes ANSI styles ($NO_COLOR unset, $TERM not "dumb"). */
bool colors_enabled(void);
/* ANSI_HIGHLIGHT etc. when colors_enabled(), "" otherwise. */
const char *ansi(const char *code);
/* Rows of the terminal on stdout, 0 when unknown. */
unsigned terminal_rows(void);

/* Print "steerctl: "-less messages to stderr, systemd style; return -abs(error)
 * (or -EIO for error == 0), so that callers can `return log_error_errno(r, ...)`. */
int log_error_errno(int error, const char *fmt, ...) _printf_(2, 3);
#define log_error(...) log_error_errno(0, __VA_ARGS__)
#define log_oom() log_error_errno(ENOMEM, "Out of memory.")

/* One JSON document on stdout, followed by a newline, flushed. */
int json_print(json_object *o, JsonMode mode);

/* Lookups that tolerate missing or mistyped fields (a newer daemon may add
 * fields, an older one may lack some): they return the fallback. */
json_object *json_get(json_object *o, const char *key);
const char *json_get_string(json_object *o, const char *key, const char *fallback);
double json_get_double(json_object *o, const char *key, double fallback);
int64_t json_get_int(json_object *o, const char *key, int64_t fallback);
bool json_get_bool(json_object *o, const char *key, bool fallback);

/* "100ms", "1s", "1.5s", "2min 30s" into buf; returns buf. */
#define FORMAT_TIMESPAN_MAX 64
char *format_timespan(char *buf, size_t size, uint64_t usec);
/* A figure on the kernel's capacity scale as "612  60%": value and percent of one CPU. */
#define FORMAT_CAPACITY_MAX 48
char *format_capacity(char *buf, size_t size, double value);
