/* SPDX-License-Identifier: MIT */
#pragma once

/* Shared by the fuzz targets (tests/fuzz/README.md). Each target is one
 * LLVMFuzzerTestOneInput() that hands the bytes to one parser's public
 * entry point; the same file links either with libFuzzer (STEERD_FUZZ=ON,
 * clang) or with replay-main.c, which feeds it the checked-in corpus and
 * regressions in the ordinary ctest run. */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "steerd-macros.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A parser's contract broken: abort() is what both libFuzzer and the
 * replay driver report as a crash, with the input saved. */
#define FUZZ_CHECK(cond)                                                                                    \
        do {                                                                                                \
                if (!(cond)) {                                                                              \
                        fprintf(stderr, "%s:%d: %s: check failed: %s\n", __FILE__, __LINE__, __func__,      \
                                #cond);                                                                     \
                        abort();                                                                            \
                }                                                                                           \
        } while (0)

/* The bytes as the C string a parser is given after a whole-file read
 * (rootdir_read_file() stops nothing at a NUL: the parser does). Never
 * NULL. */
char *fuzz_string(const uint8_t *data, size_t size);
/* Lines as FOREACH_LINE counts them: the bound of a reported error line. */
unsigned fuzz_count_lines(const char *text);

/* A private directory for the targets that read files, made at the first
 * call and removed at exit: under $TMPDIR, else /dev/shm (no disk I/O per
 * input), else /tmp. */
const char *fuzz_tmpdir(void);
/* dir/name, caller frees; never NULL. */
char *fuzz_path(const char *dir, const char *name);
/* Write (create or truncate) a file, its parent directories made first. */
void fuzz_write_file(const char *path, const void *data, size_t size);
void fuzz_rm_rf(const char *path);

/* The start of the next part of data after a line that is exactly marker
 * (the line's '\n' included), or NULL; *ret_len is the length of the part
 * before the marker line. Lets one input carry several files. */
const uint8_t *fuzz_split(const uint8_t *data, size_t size, const char *marker, size_t *ret_len);
