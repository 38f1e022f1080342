/* SPDX-License-Identifier: MIT */
#pragma once

/* Every /proc and /sys read goes through a root directory so that tests run
 * on fixture trees and a tree recorded on one host replays on another. */

#include <dirent.h>
#include <stdio.h>

#include "steerd-macros.h"

/* Called with every path opened through the root (tests: which files a
 * layer of the sampler reads). */
typedef void (*rootdir_trace_cb)(const char *path, void *userdata);

typedef struct RootDir {
        int fd;     /* O_PATH|O_DIRECTORY fd of the root */
        char *path; /* as given, for messages */
        rootdir_trace_cb trace;
        void *trace_userdata;
} RootDir;

int rootdir_open(const char *path, RootDir **ret);
RootDir *rootdir_free(RootDir *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(RootDir *, rootdir_free);

/* Paths are absolute as on the host ("/proc/stat"); they are resolved below
 * the root. */
int rootdir_open_file(const RootDir *r, const char *path, int flags, int *ret_fd);
/* Read a whole (proc) file; NUL-terminated, size excludes the NUL. */
int rootdir_read_file(const RootDir *r, const char *path, char **ret, size_t *ret_size);
int rootdir_opendir(const RootDir *r, const char *path, DIR **ret);
/* 0 if the path exists below the root, -errno otherwise. */
int rootdir_access(const RootDir *r, const char *path, int mode);
/* The path as the OS sees it, for messages ("ROOT/proc/stat"). Caller frees. */
int rootdir_display_path(const RootDir *r, const char *path, char **ret);

/* The root is the host's own "/" (same device and inode), where syscalls,
 * libcgroup and systemd act on what the files show. */
bool rootdir_is_host(const RootDir *r);

/* Read everything from an fd; NUL-terminated. */
int read_full_fd(int fd, char **ret, size_t *ret_size);

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);
