/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test-helpers.h"

char *test_mkdtemp(void) {
        char *t = strdup("/tmp/steerd-test-XXXXXX");
        assert_non_null(t);
        assert_non_null(mkdtemp(t));
        return t;
}

static void mkdir_parents(const char *path) {
        char *p = strdup(path);
        assert_non_null(p);
        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                (void) mkdir(p, 0755);
                *s = '/';
        }
        free(p);
}

void test_write_file(const char *dir, const char *path, const char *contents) {
        char *full;
        assert_true(asprintf(&full, "%s/%s", dir, path[0] == '/' ? path + 1 : path) > 0);
        mkdir_parents(full);
        FILE *f = fopen(full, "we");
        assert_non_null(f);
        fputs(contents, f);
        assert_int_equal(fclose(f), 0);
        free(full);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path);
}

void test_rm_rf(const char *dir) {
        if (dir)
                (void) nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* pthread_join returns when the kernel clears the tid, before the thread
 * leaves its thread group: until then /proc shows it and it still takes an
 * affinity, so a test that expects "gone" waits for that too. */
void test_wait_thread_gone(pid_t tid) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/task/%d", (int) tid);
        for (int i = 0; i < 2000 && access(path, F_OK) == 0; i++)
                usleep(1000);
        assert_true(access(path, F_OK) < 0);
}
