/* SPDX-License-Identifier: MIT */
/* The driver of the fuzz targets without libFuzzer (the ordinary gcc
 * build and its ASan twin): every file named, or found in a directory
 * named, goes once through LLVMFuzzerTestOneInput(). A crash is the
 * sanitizer's report or an abort(); the exit code is non-zero. So every
 * seed and every regression stays tested by ctest, without clang. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "rootdir.h"

static size_t n_inputs;

static int run_file(const char *path) {
        _cleanup_(freep) char *data = NULL;
        _cleanup_(closep) int fd = open(path, O_RDONLY | O_CLOEXEC);
        size_t size;

        if (fd < 0 || read_full_fd(fd, &data, &size) < 0) {
                fprintf(stderr, "replay: cannot read %s: %m\n", path);
                return -1;
        }
        fprintf(stderr, "replay: %s (%zu bytes)\n", path, size);
        (void) LLVMFuzzerTestOneInput((const uint8_t *) data, size);
        n_inputs++;
        return 0;
}

static int name_cmp(const struct dirent **a, const struct dirent **b) {
        return strcmp((*a)->d_name, (*b)->d_name);
}

static int run_path(const char *path) {
        struct dirent **list = NULL;
        struct stat st;
        int n, r = 0;

        if (stat(path, &st) < 0) {
                /* regressions/<target>/ exists only once a bug was found
                 * there; the check on n_inputs still catches a corpus
                 * that is not where it should be. */
                if (errno == ENOENT) {
                        fprintf(stderr, "replay: %s: none\n", path);
                        return 0;
                }
                fprintf(stderr, "replay: %s: %m\n", path);
                return -1;
        }
        if (!S_ISDIR(st.st_mode))
                return run_file(path);
        /* Sorted, so that a failure names the same input on every run. */
        n = scandir(path, &list, NULL, name_cmp);
        if (n < 0) {
                fprintf(stderr, "replay: %s: %m\n", path);
                return -1;
        }
        for (int i = 0; i < n; i++) {
                if (list[i]->d_name[0] != '.' && r >= 0) {
                        _cleanup_(freep) char *p = fuzz_path(path, list[i]->d_name);
                        r = run_path(p);
                }
                free(list[i]);
        }
        free(list);
        return r;
}

int main(int argc, char **argv) {
        if (argc < 2) {
                fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
                return 2;
        }
        LLVMFuzzerInitialize(&argc, &argv);
        for (int i = 1; i < argc; i++)
                if (run_path(argv[i]) < 0)
                        return 1;
        /* An empty corpus would pass and test nothing. */
        if (n_inputs == 0) {
                fprintf(stderr, "replay: no inputs in the paths given\n");
                return 1;
        }
        printf("replay: %zu inputs, no crash\n", n_inputs);
        return 0;
}
