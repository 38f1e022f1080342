/* SPDX-License-Identifier: MIT */
#pragma once

/* The state file: the ledger's records as JSON, so that a successor can give
 * back what a killed steerd owned. Reads and writes the ledger only. */

#include "actuator-ledger.h"

/* Rewrite (or, when nothing is owned, remove) the state file if dirty;
 * failures are logged and returned. */
int actuator_state_save(Actuator *a);
/* 0 if a file can be created next to the state file (a temporary, removed
 * at once), else why not. */
int actuator_state_probe(const Actuator *a);
/* Load a state file into an empty actuator; -EBADMSG (logged with the file
 * name) when malformed, -ENOENT when there is none. */
int actuator_state_load(Actuator *a, const char *path);
/* A predecessor killed between mkostemp() and rename() left ".NAME.XXXXXX"
 * next to the state file: never a state anyone reads, so it goes. */
void act_state_remove_stale_temporaries(const char *state_path);
