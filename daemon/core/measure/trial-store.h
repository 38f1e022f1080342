/* SPDX-License-Identifier: MIT */
#pragma once

/* Trial records under the state directory (/var/lib/steerd/trials): one
 * file ID.json per trial, written whole (a temporary file renamed) at every
 * block's end, the last TRIAL_STORE_KEEP kept. Only names that
 * trial_id_valid() accepts are opened, relative to the directory, never
 * through a symbolic link. */

#include <stddef.h>

#include "trial.h"

#define TRIAL_STORE_KEEP 100
/* A record is a few hundred bytes a block. */
#define TRIAL_STORE_MAX_BYTES (1024 * 1024)

/* Creates dir (0755) when missing. */
int trial_store_save(const char *dir, const Trial *t);
/* -EINVAL for an id trial_id_valid() refuses, -ENOENT when there is none,
 * -EBADMSG when the file is not a record. */
int trial_store_load(const char *dir, const char *id, Trial **ret);
/* Every readable record, oldest first (ids sort by start); files that are
 * not records are skipped. An absent dir is an empty list. */
int trial_store_list(const char *dir, Trial ***ret, size_t *ret_n);
void trial_list_free(Trial **list, size_t n);
/* Removes the oldest records beyond keep; returns how many went. */
int trial_store_prune(const char *dir, size_t keep);
/* A record still "running" when steerd starts was cut short (a kill, a
 * crash): it becomes "interrupted" with this reason. Returns how many. */
int trial_store_interrupt_running(const char *dir, const char *reason);
