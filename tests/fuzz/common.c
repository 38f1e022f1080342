/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "lines.h"
#include "log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        /* Under systemd (JOURNAL_STREAM set) every parse error would be a
         * journal entry: millions of them. Plain lines on stderr instead,
         * which the runs silence with -close_fd_mask=2. */
        setenv("STEERD_LOG_STDERR", "1", 1);
        log_setup();
        return 0;
}

char *fuzz_string(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);
        if (!s)
                abort();
        if (size > 0)
                memcpy(s, data, size);
        s[size] = '\0';
        return s;
}

unsigned fuzz_count_lines(const char *text) {
        unsigned n = 0;

        FOREACH_LINE(p, eol, text)
        n++;
        return n;
}

static char *tmpdir;

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

void fuzz_rm_rf(const char *path) {
        (void) nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void tmpdir_remove(void) {
        if (tmpdir)
                fuzz_rm_rf(tmpdir);
}

const char *fuzz_tmpdir(void) {
        const char *base = getenv("TMPDIR");

        if (tmpdir)
                return tmpdir;
        if (!base || !*base)
                base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        if (asprintf(&tmpdir, "%s/steerd-fuzz-XXXXXX", base) < 0 || !mkdtemp(tmpdir)) {
                fprintf(stderr, "fuzz: cannot make a directory under %s: %m\n", base);
                abort();
        }
        atexit(tmpdir_remove);
        return tmpdir;
}

char *fuzz_path(const char *dir, const char *name) {
        char *p;
        if (asprintf(&p, "%s/%s", dir, name) < 0)
                abort();
        return p;
}

static void mkdir_parents(const char *path) {
        _cleanup_(freep) char *p = strdup(path);
        if (!p)
                abort();
        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                if (mkdir(p, 0755) < 0 && errno != EEXIST) {
                        fprintf(stderr, "fuzz: mkdir %s: %m\n", p);
                        abort();
                }
                *s = '/';
        }
}

void fuzz_write_file(const char *path, const void *data, size_t size) {
        mkdir_parents(path);
        FILE *f = fopen(path, "we");
        if (!f || (size > 0 && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
                fprintf(stderr, "fuzz: cannot write %s: %m\n", path);
                abort();
        }
}

const uint8_t *fuzz_split(const uint8_t *data, size_t size, const char *marker, size_t *ret_len) {
        size_t m = strlen(marker);

        for (size_t i = 0; i + m <= size; i++) {
                /* At the start of a line, the whole line. */
                if ((i > 0 && data[i - 1] != '\n') || memcmp(data + i, marker, m) != 0)
                        continue;
                if (i + m < size && data[i + m] != '\n')
                        continue;
                *ret_len = i;
                return data + MIN(i + m + 1, size);
        }
        *ret_len = size;
        return NULL;
}
