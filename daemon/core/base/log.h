/* SPDX-License-Identifier: MIT */
#pragma once

/* Logging: structured journal entries when running under systemd (or when
 * stderr is the journal), plain lines on a terminal otherwise. Debug lines
 * need STEERD_DEBUG=1. The environment is read once, at the first message
 * (log_setup() reads it again); the one process-wide setting of steerd,
 * like systemd's log_max_level. log_debug() is a branch when debug is off:
 * its arguments are not evaluated. */

#include <syslog.h>

#include "steerd-macros.h"

/* MESSAGE_IDs, one per event kind, so that `journalctl MESSAGE_ID=` finds them. */
#define STEERD_MESSAGE_STARTED "5c0e1b1f0a8b4e0ba5f2d3c4b5a69701"
#define STEERD_MESSAGE_PARSE_ERROR "5c0e1b1f0a8b4e0ba5f2d3c4b5a69702"
#define STEERD_MESSAGE_ACTION "5c0e1b1f0a8b4e0ba5f2d3c4b5a69703"
#define STEERD_MESSAGE_RESTORE "5c0e1b1f0a8b4e0ba5f2d3c4b5a69704"
#define STEERD_MESSAGE_LET_GO "5c0e1b1f0a8b4e0ba5f2d3c4b5a69705"
#define STEERD_MESSAGE_CONFIG "5c0e1b1f0a8b4e0ba5f2d3c4b5a69706"
#define STEERD_MESSAGE_TRIAL "5c0e1b1f0a8b4e0ba5f2d3c4b5a69707"

int log_internal(int level, int error, const char *message_id, const char *fmt, ...) _printf_(4, 5);

/* Read STEERD_DEBUG, JOURNAL_STREAM and STEERD_LOG_STDERR (again). */
void log_setup(void);
bool log_debug_enabled(void) _pure_;

/* Each returns -abs(error) (or 0 for error == 0) so that callers can write
 * `return log_error_errno(r, "...")`. */
#define log_full_errno(level, error, ...) log_internal((level), (error), NULL, __VA_ARGS__)
#define log_error_errno(error, ...) log_full_errno(LOG_ERR, (error), __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, (error), __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_debug(...) (log_debug_enabled() ? log_full_errno(LOG_DEBUG, 0, __VA_ARGS__) : 0)
#define log_struct(level, id, ...) log_internal((level), 0, (id), __VA_ARGS__)
#define log_struct_errno(level, error, id, ...) log_internal((level), (error), (id), __VA_ARGS__)

/* A malformed input: names the file and line. Returns -EBADMSG. */
int log_parse_error(const char *file, unsigned line, const char *fmt, ...) _printf_(3, 4);
