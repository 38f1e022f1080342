/* SPDX-License-Identifier: MIT */
#include <fcntl.h>

#include "ewma.h"
#include "proc-thread.h"
#include "sampler-internal.h"

static void kept_close(Sampler *s, int *fd) {
        if (*fd < 0)
                return;
        close(*fd);
        *fd = -EBADF;
        s->n_kept_fds--;
}

void thread_prev_close(Sampler *s, ThreadPrev *p) {
        kept_close(s, &p->stat_fd);
        kept_close(s, &p->schedstat_fd);
        kept_close(s, &p->status_fd);
}

void thread_prev_done(Sampler *s, ThreadPrev *p) {
        thread_prev_close(s, p);
        hwloc_bitmap_free(p->allowed);
        p->allowed = NULL;
}

void thread_prevs_free(Sampler *s, ThreadPrev *items, size_t n) {
        for (size_t i = 0; i < n; i++)
                thread_prev_done(s, &items[i]);
        free(items);
}

static int cmp_thread_prev(const void *a, const void *b) {
        const ThreadPrev *x = a, *y = b;
        return (x->tid > y->tid) - (x->tid < y->tid);
}

ThreadPrev *thread_cache_find(ThreadPrev *items, size_t n, pid_t tid) {
        ThreadPrev key = {.tid = tid};
        if (n == 0)
                return NULL; /* bsearch() wants a non-NULL base even then */
        return bsearch(&key, items, n, sizeof(ThreadPrev), cmp_thread_prev);
}

void thread_table_sort(ThreadTable *t) {
        if (t->n > 1)
                qsort(t->items, t->n, sizeof(ThreadPrev), cmp_thread_prev);
}

static ThreadPrev *thread_table_push(ThreadTable *t) {
        if (t->n == t->alloc) {
                size_t n = t->alloc ? t->alloc * 2 : 256;
                ThreadPrev *p = realloc(t->items, n * sizeof(ThreadPrev));
                if (!p)
                        return NULL;
                t->items = p;
                t->alloc = n;
        }
        t->items[t->n] = (ThreadPrev){.stat_fd = -EBADF, .schedstat_fd = -EBADF, .status_fd = -EBADF};
        return &t->items[t->n++];
}

/* "/proc/PID/task/TID/NAME" into buf (THREAD_PATH_MAX): formatted for every
 * sampled thread every tick, where snprintf() was a third of the sampler's
 * instructions. */
#define THREAD_PATH_MAX 96
static char *append_uint(char *p, unsigned v) {
        char tmp[12];
        size_t n = 0;

        do
                tmp[n++] = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        while (n > 0)
                *p++ = tmp[--n];
        return p;
}

static void thread_path(char buf[static THREAD_PATH_MAX], pid_t pid, pid_t tid, const char *name) {
        char *p = stpcpy(buf, "/proc/");
        p = append_uint(p, (unsigned) pid);
        p = stpcpy(p, "/task/");
        p = append_uint(p, (unsigned) tid);
        *p++ = '/';
        assert(strlen(name) < 16);
        strcpy(p, name);
}

/* Re-read a /proc file through a descriptor kept open: seq_file
 * regenerates it at offset 0. */
static int pread_text(int fd, char *buf, size_t size) {
        ssize_t n = pread(fd, buf, size - 1, 0);
        if (n < 0)
                return negative_errno();
        if ((size_t) n >= size - 1)
                return -EFBIG; /* cut short: the caller opens it afresh */
        buf[n] = '\0';
        return 0;
}

int sampler_read_kept(Sampler *s, int *fd, const char *path, char **ret) {
        _cleanup_(freep) char *buf = NULL;
        size_t size = 0, alloc = 0;
        int r;

        if (*fd < 0) {
                r = rootdir_open_file(s->root, path, O_RDONLY | O_CLOEXEC, fd);
                if (r < 0)
                        return r;
        }
        for (;;) {
                /* Small first (a cgroup's CPU list, its use, PSI: under 1 KB,
                 * which malloc serves from its per-thread cache; 4 KB blocks,
                 * hundreds a tick, had it sort everything freed since the
                 * last), then doubling (/proc/stat of 1,024 CPUs is 100 KB). */
                if (alloc - size < 256) {
                        size_t n = alloc ? alloc * 2 : 1000;
                        char *p = realloc(buf, n);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        alloc = n;
                }
                ssize_t n = pread(*fd, buf + size, alloc - size - 1, (off_t) size);
                if (n < 0) {
                        r = negative_errno();
                        close(*fd);
                        *fd = -EBADF;
                        return r;
                }
                if (n == 0)
                        break;
                size += (size_t) n;
                /* seq_file gives all it has to a read that asks for more:
                 * short means the end, no second read to see it. */
                if ((size_t) n < alloc - (size - (size_t) n) - 1)
                        break;
        }
        buf[size] = '\0';
        if (!s->keep_open) {
                close(*fd); /* fixture roots: opened afresh each time */
                *fd = -EBADF;
        }
        *ret = TAKE_PTR(buf);
        return 0;
}

int thread_read_status(Sampler *s, ThreadPrev *tp, const char *path, char **ret) {
        _cleanup_(closep) int fd = -EBADF;
        int r;

        if (tp->status_fd >= 0) {
                r = sampler_read_kept(s, &tp->status_fd, path, ret);
                if (r < 0)
                        s->n_kept_fds--; /* closed by the failed read */
                return r;
        }
        if (!s->keep_open || s->n_kept_fds + 1 > s->max_kept_fds)
                return sampler_read_file(s, path, ret);
        r = sampler_read_kept(s, &fd, path, ret);
        if (r < 0)
                return r;
        tp->status_fd = TAKE_FD(fd);
        s->n_kept_fds++;
        return 0;
}

/* Open one of the thread's files, read it into buf; *ret_fd keeps it open
 * (or -1 when keep is false). */
static int open_thread_file(Sampler *s, const char *path, bool keep, char *buf, size_t size, int *ret_fd) {
        _cleanup_(closep) int fd = -EBADF;
        int r;

        r = rootdir_open_file(s->root, path, O_RDONLY | O_CLOEXEC, &fd);
        if (r < 0)
                return r;
        r = pread_text(fd, buf, size);
        if (r < 0)
                return r;
        *ret_fd = keep ? TAKE_FD(fd) : -EBADF;
        return 0;
}

/* Move what p owns (descriptors, mask) into n. */
static void thread_prev_move(ThreadPrev *n, ThreadPrev *p) {
        n->stat_fd = p->stat_fd;
        n->schedstat_fd = p->schedstat_fd;
        n->status_fd = p->status_fd;
        n->allowed = p->allowed;
        p->stat_fd = p->schedstat_fd = p->status_fd = -EBADF;
        p->allowed = NULL;
}

/* An idle thread's turn to be skipped: its figures are held. */
static int thread_hold(ThreadTable *t, ThreadPrev *p, ThreadPrev **ret) {
        ThreadPrev *n = thread_table_push(t);
        if (!n)
                return -ENOMEM;
        *n = *p;
        thread_prev_move(n, p);
        n->skip--;
        n->fresh = false;
        n->delta_run_delay_ns = 0;
        *ret = n;
        return 0;
}

/* The files of a thread kept open; ss_text is its schedstat, just re-read.
 * 1 with *st and *ss set, 0 to skip the thread, or -errno. */
static int read_kept(Sampler *s, const ThreadPrev *p, pid_t pid, pid_t tid, const char *ss_text,
                     ThreadStat *st, ThreadSchedstat *ss) {
        char path[THREAD_PATH_MAX], stat_text[1024];
        int r;

        thread_path(path, pid, tid, "schedstat");
        if (thread_schedstat_parse(ss_text, DISPLAY(s, path), ss, NULL) < 0)
                return 0;
        if (ss->sum_exec_runtime_ns == p->exec_ns && ss->run_delay_ns == p->run_delay_ns &&
            p->processor >= 0) {
                st->starttime = p->starttime;
                st->processor = p->processor;
                return 1;
        }
        thread_path(path, pid, tid, "stat");
        r = pread_text(p->stat_fd, stat_text, sizeof(stat_text));
        if (r < 0)
                return sampler_vanished(r) ? 0 : r;
        if (thread_stat_parse(stat_text, DISPLAY(s, path), st, NULL) < 0)
                return 0;
        return 1;
}

/* Both files opened afresh, kept open in *ret_stat_fd and *ret_ss_fd when
 * keep is true. 1 with *st and *ss set, 0 to skip the thread, or -errno.
 * *pid is the process they were opened under: tid when the one given was
 * not the thread's. */
static int read_fresh(Sampler *s, pid_t *pid, pid_t tid, bool keep, ThreadStat *st, ThreadSchedstat *ss,
                      int *ret_stat_fd, int *ret_ss_fd) {
        char path[THREAD_PATH_MAX], stat_text[1024], ss_text[128];
        _cleanup_(closep) int stat_fd = -EBADF, ss_fd = -EBADF;
        int r;

        thread_path(path, *pid, tid, "stat");
        r = open_thread_file(s, path, keep, stat_text, sizeof(stat_text), &stat_fd);
        if (r == -ENOENT && *pid != tid) {
                /* A process list out of date: the thread is not that process's. */
                *pid = tid;
                thread_path(path, *pid, tid, "stat");
                r = open_thread_file(s, path, keep, stat_text, sizeof(stat_text), &stat_fd);
        }
        if (r < 0)
                return sampler_vanished(r) ? 0 : r;
        if (thread_stat_parse(stat_text, DISPLAY(s, path), st, NULL) < 0)
                return 0;
        thread_path(path, *pid, tid, "schedstat");
        r = open_thread_file(s, path, keep, ss_text, sizeof(ss_text), &ss_fd);
        if (r < 0)
                return sampler_vanished(r) ? 0 : r;
        if (thread_schedstat_parse(ss_text, DISPLAY(s, path), ss, NULL) < 0)
                return 0;
        *ret_stat_fd = TAKE_FD(stat_fd);
        *ret_ss_fd = TAKE_FD(ss_fd);
        return 1;
}

/* The thread's figures since its last read (p, the same thread), and how
 * long until it is read again. */
static void thread_fold(const Sampler *s, ThreadPrev *n, const ThreadPrev *p, uint64_t now_us,
                        unsigned turns) {
        uint64_t dt_us = now_us > p->read_us ? now_us - p->read_us : 0;

        /* No interval to fold (counters that went back): the figures held. */
        n->util = p->util;
        n->wait = p->wait;
        n->wakeups = p->wakeups;
        n->measured = p->measured;
        if (dt_us == 0 || n->exec_ns < p->exec_ns || n->run_delay_ns < p->run_delay_ns)
                return;

        double scale = (double) SCHED_CAPACITY_SCALE / ((double) dt_us * NSEC_PER_USEC);
        double util = MIN((double) (n->exec_ns - p->exec_ns) * scale, (double) SCHED_CAPACITY_SCALE);
        double wait = (double) (n->run_delay_ns - p->run_delay_ns) * scale;
        double alpha = ewma_alpha(dt_us, s->settings.smoothing_half_life_ms * USEC_PER_MSEC);
        double idle = SAMPLER_IDLE_PERCENT * SCHED_CAPACITY_SCALE / 100.0;

        double wakeups = n->pcount >= p->pcount
                                 ? (double) (n->pcount - p->pcount) * USEC_PER_SEC / (double) dt_us
                                 : 0;

        n->delta_run_delay_ns = n->run_delay_ns - p->run_delay_ns;
        /* The first interval is the thread's first figure as it is: smoothed
         * from 0, a thread that starts busy (a workload's phase) took three
         * periods to show half its load, and every decision waited for it. */
        if (!p->measured)
                alpha = 1.0;
        n->util = ewma_update(p->util, util, alpha);
        n->wait = ewma_update(p->wait, wait, alpha);
        n->wakeups = ewma_update(p->wakeups, wakeups, alpha);
        n->measured = true;
        if (util < idle && wait < idle && n->util < idle && n->wait < idle)
                n->interval = MIN(MAX(p->interval, 1u) * 2, SAMPLER_IDLE_MAX_TICKS);
        n->skip = n->interval - 1;
        if (n->interval == 1 && turns > 1)
                /* The next tick t with (t + tid) % turns == 0. */
                n->skip = (unsigned) ((turns - (s->n_samples + 1 + (uint64_t) n->tid) % turns) % turns);
}

/* This tick's entry of a thread just read; p is its previous one, NULL if
 * none, and kept says whether the descriptors to take over are p's. */
static int thread_push_read(Sampler *s, ThreadTable *t, ThreadPrev *p, bool kept, pid_t tid,
                            const ThreadStat *st, const ThreadSchedstat *ss, int *stat_fd, int *ss_fd,
                            uint64_t now_us, unsigned turns, ThreadPrev **ret) {
        ThreadPrev *n = thread_table_push(t);
        if (!n)
                return -ENOMEM;
        *n = (ThreadPrev){
                .tid = tid,
                .starttime = st->starttime,
                .exec_ns = ss->sum_exec_runtime_ns,
                .run_delay_ns = ss->run_delay_ns,
                .pcount = ss->pcount,
                .processor = st->processor,
                .stat_fd = TAKE_FD(*stat_fd),
                .schedstat_fd = TAKE_FD(*ss_fd),
                .status_fd = -EBADF,
                .read_us = now_us,
                .interval = 1,
                .fresh = true,
        };
        s->n_kept_fds += (n->stat_fd >= 0) + (n->schedstat_fd >= 0);
        /* A new thread (or a reused tid) has no history: it starts at 0 and
         * gets real figures from its second sample on (thread_fold()). */
        if (p && p->starttime == st->starttime) {
                if (kept)
                        thread_prev_move(n, p);
                n->nr_migrations = p->nr_migrations;
                n->have_migrations = p->have_migrations;
                n->tgid = p->tgid;
                thread_fold(s, n, p, now_us, turns);
        }
        *ret = n;
        return 0;
}

/* What it costs decides what steerd costs (one /proc open is ~5 us, most of
 * it path lookup), hence: on the live root both files stay open and are
 * re-read with pread(); stat (the thread's CPU, its identity) is read again
 * only when schedstat moved, since a thread that neither ran nor waited is
 * where it was; and a thread that used under SAMPLER_IDLE_PERCENT of a CPU
 * (run and wait) since its last read is read every 2, 4, ... up to
 * SAMPLER_IDLE_MAX_TICKS ticks, its figures held in between. */
int thread_cache_sample(Sampler *s, ThreadPrev *prev, size_t n_prev, ThreadTable *t, pid_t pid, pid_t tid,
                        uint64_t now_us, unsigned turns, ThreadPrev **ret) {
        char ss_text[128];
        _cleanup_(closep) int stat_fd = -EBADF, ss_fd = -EBADF;
        ThreadStat st = {.processor = -1};
        ThreadSchedstat ss;
        ThreadPrev *p;
        bool kept;
        int r;

        *ret = NULL;
        p = thread_cache_find(prev, n_prev, tid);
        if (p && p->skip > 0)
                return thread_hold(t, p, ret);

        /* schedstat's counters are read now. */
        uint64_t read_us = sampler_read_time_us(s, now_us);
        kept = p && p->schedstat_fd >= 0;
        if (kept && pread_text(p->schedstat_fd, ss_text, sizeof(ss_text)) < 0) {
                /* Exited (ESRCH): a thread with this tid now is another. */
                thread_prev_close(s, p);
                p = NULL;
                kept = false;
        }
        if (kept)
                r = read_kept(s, p, pid, tid, ss_text, &st, &ss);
        else
                r = read_fresh(s, &pid, tid, s->keep_open && s->n_kept_fds + 2 <= s->max_kept_fds, &st, &ss,
                               &stat_fd, &ss_fd);
        if (r <= 0)
                return r;
        r = thread_push_read(s, t, p, kept, tid, &st, &ss, &stat_fd, &ss_fd, read_us, turns, ret);
        /* While descriptors are scarce (a host of more threads than a
         * quarter of the open-file limit keeps), an idle thread gives its
         * up: it is read every few ticks, a busy one every tick or turn,
         * and a busy thread that found the budget spent was opened afresh
         * at every read (on the simulated host, whose hard limit of 20,000
         * keeps 2,500 of its 10,000 threads open, a thousand opens a tick). */
        if (r >= 0 && (*ret)->interval > 1 && s->n_kept_fds * 4 > s->max_kept_fds * 3)
                thread_prev_close(s, *ret);
        /* Its files opened under another process's directory: the kernel
         * says that process is the thread's. */
        if (r >= 0 && !kept && pid != tid)
                (*ret)->tgid = pid;
        return r;
}
