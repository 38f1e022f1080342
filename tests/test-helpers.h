/* SPDX-License-Identifier: MIT */
#pragma once

/* cmocka needs these before its header. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cmocka.h>

#include "rootdir.h"

/* Make a fresh temporary directory; caller removes it with rm_rf(). */
char *test_mkdtemp(void);
/* Write a file below dir (parents created). */
void test_write_file(const char *dir, const char *path, const char *contents);
void test_rm_rf(const char *dir);
void test_wait_thread_gone(pid_t tid);
/* Exit code ctest counts as "skipped". */
#define TEST_SKIP 77
