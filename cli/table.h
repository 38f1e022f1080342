/* SPDX-License-Identifier: MIT */
#pragma once

/* A tiny table printer in the manner of systemd's ctl tools: one header line
 * (underlined on a terminal), columns padded to their widest cell, numeric
 * columns right-aligned, no trailing blanks. */

#include <stdio.h>

#include "steerd-macros.h"

typedef struct Table Table;

/* headers: n_columns column names. */
int table_new(size_t n_columns, const char *const *headers, Table **ret);
Table *table_free(Table *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Table *, table_free);

/* Right-align column (numbers). */
int table_set_align_right(Table *t, size_t column, bool right);

/* Cells are added left to right, top to bottom; NULL or "" prints as "-". */
int table_add_cell(Table *t, const char *s);
int table_add_cellf(Table *t, const char *fmt, ...) _printf_(2, 3);

size_t table_rows(const Table *t);

/* header: print the header line (false with --no-legend). */
int table_print(const Table *t, FILE *f, bool header);
