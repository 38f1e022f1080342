/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "rootdir.h"
#include "trial-store.h"

static int open_dir(const char *dir, bool create, int *ret_fd) {
        if (create && mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        *ret_fd = fd;
        return 0;
}

static bool record_name(const char *name, char *id, size_t size) {
        size_t n = strlen(name);
        if (n <= 5 || n - 5 >= size || !streq(name + n - 5, ".json"))
                return false;
        memcpy(id, name, n - 5);
        id[n - 5] = 0;
        return trial_id_valid(id);
}

int trial_store_save(const char *dir, const Trial *t) {
        _cleanup_(closep) int dfd = -EBADF, fd = -EBADF;
        _cleanup_(freep) char *text = NULL;
        char name[80], tmp[96];
        int r;

        if (!trial_id_valid(t->id))
                return -EINVAL;
        r = trial_to_json(t, &text);
        if (r < 0)
                return r;
        r = open_dir(dir, true, &dfd);
        if (r < 0)
                return r;
        snprintf(name, sizeof(name), "%s.json", t->id);
        snprintf(tmp, sizeof(tmp), ".%s.json.tmp", t->id);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        size_t len = strlen(text);
        for (size_t off = 0; off < len;) {
                ssize_t k = write(fd, text + off, len - off);
                if (k < 0) {
                        r = -errno;
                        (void) unlinkat(dfd, tmp, 0);
                        return r;
                }
                off += (size_t) k;
        }
        if (write(fd, "\n", 1) != 1 || fsync(fd) < 0) {
                r = errno > 0 ? -errno : -EIO;
                (void) unlinkat(dfd, tmp, 0);
                return r;
        }
        if (renameat(dfd, tmp, dfd, name) < 0) {
                r = -errno;
                (void) unlinkat(dfd, tmp, 0);
                return r;
        }
        return 0;
}

static int load_at(int dfd, const char *id, Trial **ret) {
        _cleanup_(closep) int fd = -EBADF;
        _cleanup_(freep) char *text = NULL;
        char name[80];
        size_t size;
        struct stat st;
        int r;

        snprintf(name, sizeof(name), "%s.json", id);
        fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ELOOP ? -EBADMSG : -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || st.st_size > TRIAL_STORE_MAX_BYTES)
                return -EBADMSG;
        r = read_full_fd(fd, &text, &size);
        if (r < 0)
                return r;
        if (strlen(text) != size)
                return -EBADMSG;
        _cleanup_(trial_freep) Trial *t = NULL;
        r = trial_from_json(text, &t);
        if (r < 0)
                return r;
        if (!streq(t->id, id))
                return -EBADMSG; /* a record copied under another name */
        *ret = TAKE_PTR(t);
        return 0;
}

int trial_store_load(const char *dir, const char *id, Trial **ret) {
        _cleanup_(closep) int dfd = -EBADF;
        int r;

        if (!trial_id_valid(id))
                return -EINVAL;
        r = open_dir(dir, false, &dfd);
        if (r < 0)
                return r;
        return load_at(dfd, id, ret);
}

void trial_list_free(Trial **list, size_t n) {
        for (size_t i = 0; list && i < n; i++)
                trial_free(list[i]);
        free(list);
}

static int cmp_name(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static void ids_free(char **ids, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(ids[i]);
        free(ids);
}

/* The ids of the records in dir, sorted. */
static int list_ids(int dfd, char ***ret, size_t *ret_n) {
        _cleanup_(closedirp) DIR *d = NULL;
        char **ids = NULL;
        size_t n = 0;
        int fd = dup(dfd);

        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        rewinddir(d);
        for (struct dirent *de; (de = readdir(d));) {
                char id[72];
                if (!record_name(de->d_name, id, sizeof(id)))
                        continue;
                char *copy = strdup(id), **l = copy ? reallocarray(ids, n + 1, sizeof(char *)) : NULL;
                if (!l) {
                        free(copy);
                        ids_free(ids, n);
                        return -ENOMEM;
                }
                ids = l;
                ids[n++] = copy;
        }
        if (n > 1)
                qsort(ids, n, sizeof(char *), cmp_name);
        *ret = ids;
        *ret_n = n;
        return 0;
}

int trial_store_list(const char *dir, Trial ***ret, size_t *ret_n) {
        _cleanup_(closep) int dfd = -EBADF;
        char **ids = NULL;
        size_t n_ids = 0, n = 0;
        int r;

        r = open_dir(dir, false, &dfd);
        if (r == -ENOENT) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        if (r < 0)
                return r;
        r = list_ids(dfd, &ids, &n_ids);
        if (r < 0)
                return r;
        Trial **list = calloc(MAX(n_ids, (size_t) 1), sizeof(Trial *));
        if (!list) {
                ids_free(ids, n_ids);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_ids; i++) {
                r = load_at(dfd, ids[i], &list[n]);
                if (r == -ENOMEM) {
                        ids_free(ids, n_ids);
                        trial_list_free(list, n);
                        return r;
                }
                if (r >= 0)
                        n++;
        }
        ids_free(ids, n_ids);
        *ret = list;
        *ret_n = n;
        return 0;
}

int trial_store_prune(const char *dir, size_t keep) {
        _cleanup_(closep) int dfd = -EBADF;
        Trial **list = NULL;
        size_t n = 0;
        int r, removed = 0;

        /* Records only: a stray file never counts, nor goes. */
        r = trial_store_list(dir, &list, &n);
        if (r < 0)
                return r;
        r = open_dir(dir, false, &dfd);
        for (size_t i = 0; r >= 0 && i + keep < n; i++) {
                char name[80];
                snprintf(name, sizeof(name), "%s.json", list[i]->id);
                if (unlinkat(dfd, name, 0) >= 0)
                        removed++;
        }
        trial_list_free(list, n);
        return r == -ENOENT ? 0 : r < 0 ? r : removed;
}

int trial_store_interrupt_running(const char *dir, const char *reason) {
        Trial **list = NULL;
        size_t n = 0;
        int r, k = 0;

        r = trial_store_list(dir, &list, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                if (list[i]->state != TRIAL_STATE_RUNNING)
                        continue;
                if (trial_finish(list[i], TRIAL_STATE_INTERRUPTED, reason) >= 0 &&
                    trial_store_save(dir, list[i]) >= 0)
                        k++;
        }
        trial_list_free(list, n);
        return k;
}
