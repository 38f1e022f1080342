/* SPDX-License-Identifier: MIT */
#pragma once

/* steerd.conf: [Manager], [Policy] and [OptIn] (DESIGN.md 6), parsed with
 * libinih, then drop-ins FILE.d/ *.conf in lexical order, each overriding
 * any key. A bad file is refused whole with file:line: reason; the caller
 * keeps its running config. */

#include "optin-entry.h"
#include "settings.h"

typedef struct Config {
        Settings settings;
        OptInEntry *opt_ins;
        size_t n_opt_ins;
        char *path; /* the main file, for messages and reloads */
} Config;

Config *config_free(Config *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Config *, config_free);

/* Load path (NULL: defaults only) and its drop-ins. A missing main file is
 * an error unless missing_ok. */
int config_load(const char *path, bool missing_ok, Config **ret);
/* The same, and on a bad file also the first error as "file:line: reason"
 * (for a bus caller, who cannot see the log). ret_error is set on -EBADMSG. */
int config_load_full(const char *path, bool missing_ok, Config **ret, char **ret_error);

#define STEERD_DEFAULT_CONFIG "/etc/steerd/steerd.conf"
