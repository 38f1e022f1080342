/* SPDX-License-Identifier: MIT */
/* A simulated host for steerd at scale (issue 33; docs/BENCHMARKS.md,
 * "The simulated host"): writes a fixture root (steerd --root) for a
 * machine of many CPUs in many LLCs and advances it every period from a
 * load script, while steerd steers it through the fixture's cpuset files
 * and its affinity table (steerd --affinity-table).
 *
 *   simhost ROOT --cpus N --llc-cpus K --cgroups G --threads T
 *           [--period-ms 100] [--seconds S] [--phase-s 4] [--churn-s 15]
 *           [--busy-pct 12] [--seed X] --requests FILE [--summary FILE]
 *
 * What it models, crudely but honestly:
 *   - threads in G cgroups (cpuset v1 with cpuacct, /simNNN), each its own
 *     process; every phase (--phase-s) a different --busy-pct of the
 *     cgroups is busy (each thread wanting 40-90% of a CPU), the others
 *     sleep; a busy cgroup's threads wake on its home LLC, or, for a
 *     quarter of them, on the phase's hot LLC, and the next phase heats
 *     another (an LLC overloaded, then another);
 *   - a thread runs on its last CPU while its mask allows it; a CPU with
 *     more demand than 1 sends a waking thread to an allowed CPU of the same
 *     LLC with room, scanning at most 4 (select_idle_sibling's limited
 *     scan), and every period an LLC over its capacity hands up to one
 *     thread per CPU it has, from its busiest CPUs, to the least loaded
 *     CPUs they may use anywhere (the load balancer); a thread whose mask no longer holds its CPU moves to
 * the least loaded CPU it may use;
 *   - a CPU shares its time among its threads in proportion to demand: a
 *     thread's run time is its demand scaled down by the CPU's overload, the
 *     rest is run-queue wait (schedstat), and util, the CPUs' /proc/stat
 *     and PSI follow;
 *   - steerd's thread masks: the requests it logs to FILE (TID CPULIST, or
 *     TID all) composed with the thread's cgroup CPUs, again whenever those
 *     change (the kernel since 6.2); its cgroup writes: the cpuset.cpus
 *     files, read every period;
 *   - every --churn-s the oldest cgroup goes (its threads exit) and a new
 *     one comes.
 * Not modelled: who wakes whom (perf events), SMT siblings, NUMA, the
 * threads' own wakeup latency.
 *
 * It writes ROOT/.ready once the root is complete, then runs until
 * --seconds pass or SIGTERM, and prints a summary (JSON) at the end. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS 8192
#define USER_HZ 100
#define CG_ROOT "sys/fs/cgroup/cpuset"
#define MAX(a, b) ((a) > (b) ? (a) : (b))

typedef struct Mask {
        uint64_t *w;
} Mask;

typedef struct Thread {
        int tid, cg, cpu;
        bool alive;
        double demand; /* of one CPU, this phase */
        uint64_t exec_ns, delay_ns, pcount, starttime;
        uint64_t *req;     /* steerd's request; NULL: none */
        uint64_t *allowed; /* composed; NULL: the cgroup's CPUs */
        bool dirty_stat;   /* its CPU changed: stat rewritten */
} Thread;

typedef struct Cgroup {
        char name[32];
        bool alive, busy, hot;
        int home_llc;
        uint64_t *cpus;
        char *cpus_text; /* as last read */
        int *threads;
        int n_threads;
        uint64_t usage_ns;
} Cgroup;

typedef struct Sim {
        const char *root;
        int rootfd;
        int ncpus, llc_cpus, nllcs, words;
        int period_ms, seconds, phase_s, churn_s, busy_pct, threads_per_cg, n_cg_target;
        uint64_t seed;
        uint64_t *all;
        double *cpu_load, *cpu_user, *cpu_idle, *cpu_run_ns, *cpu_wait_ns;
        Thread *threads;
        int n_threads, cap_threads, next_tid;
        Cgroup *cgs;
        int n_cgs, cap_cgs, next_cg;
        FILE *requests;
        int hot_llc;
        double psi_total_us, psi_avg10;
        /* the summary */
        uint64_t periods, requests_read, request_errors, cpuset_changes, recomposed, migrations,
                balance_moves, over_llc_periods, cgroups_created, cgroups_removed, writes, followed;
        double wait_s, run_s;
} Sim;

static volatile sig_atomic_t stop;
static void on_term(int sig) {
        (void) sig;
        stop = 1;
}

static uint64_t rnd(Sim *s) { /* splitmix64 */
        uint64_t z = (s->seed += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}
static double rndf(Sim *s) {
        return (double) (rnd(s) >> 11) / (double) (1ULL << 53);
}

static void die(const char *what) {
        fprintf(stderr, "simhost: %s: %s\n", what, strerror(errno));
        exit(1);
}

static uint64_t *mask_new(const Sim *s) {
        uint64_t *m = calloc(s->words, sizeof(uint64_t));
        if (!m)
                die("calloc");
        return m;
}
static bool mask_has(const uint64_t *m, int c) {
        return m[c / 64] >> (c % 64) & 1;
}
static void mask_set(uint64_t *m, int c) {
        m[c / 64] |= 1ULL << (c % 64);
}
static bool mask_empty(const Sim *s, const uint64_t *m) {
        for (int i = 0; i < s->words; i++)
                if (m[i])
                        return false;
        return true;
}

/* "0-3,8" -> mask within the CPUs; -1 on anything else. */
static int mask_parse(const Sim *s, const char *t, uint64_t *m) {
        memset(m, 0, s->words * sizeof(uint64_t));
        while (*t && *t != '\n') {
                char *e;
                long a = strtol(t, &e, 10), b = a;
                if (e == t || a < 0)
                        return -1;
                if (*e == '-') {
                        t = e + 1;
                        b = strtol(t, &e, 10);
                        if (e == t || b < a)
                                return -1;
                }
                for (long c = a; c <= b && c < s->ncpus; c++)
                        mask_set(m, (int) c);
                t = e;
                if (*t == ',')
                        t++;
                else if (*t && *t != '\n')
                        return -1;
        }
        return 0;
}

static int mask_format(const Sim *s, const uint64_t *m, char *buf, size_t size) {
        size_t n = 0;
        buf[0] = 0;
        for (int c = 0; c < s->ncpus; c++) {
                if (!mask_has(m, c))
                        continue;
                int e = c;
                while (e + 1 < s->ncpus && mask_has(m, e + 1))
                        e++;
                int k = e > c ? snprintf(buf + n, size - n, "%s%d-%d", n ? "," : "", c, e)
                              : snprintf(buf + n, size - n, "%s%d", n ? "," : "", c);
                if (k < 0 || (size_t) k >= size - n)
                        return -1;
                n += k;
                c = e;
        }
        return 0;
}

/* ---- files ---- */

static void mkdirs(Sim *s, const char *rel) {
        char p[512];
        snprintf(p, sizeof(p), "%s", rel);
        for (char *q = p + 1; *q; q++)
                if (*q == '/') {
                        *q = 0;
                        (void) mkdirat(s->rootfd, p, 0755);
                        *q = '/';
                }
        (void) mkdirat(s->rootfd, p, 0755);
}

/* Whole-file replace by rename: a reader sees the old file or the new one,
 * as /proc never shows half a line. */
static void put(Sim *s, const char *rel, const char *text) {
        char tmp[512];
        size_t n = strlen(text);
        snprintf(tmp, sizeof(tmp), "%s.sim", rel);
        int fd = openat(s->rootfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
                if (errno == ENOENT)
                        return; /* its directory went (a cgroup removed) */
                die(tmp);
        }
        if (write(fd, text, n) != (ssize_t) n)
                die(tmp);
        close(fd);
        if (renameat(s->rootfd, tmp, s->rootfd, rel) < 0)
                die(rel);
        s->writes++;
}

/* In place, as /proc and cgroupfs change a file: a reader that keeps its
 * descriptor open and re-reads it (steerd --keep-open, as on the live
 * root) sees the new text. The counters are written at a fixed width
 * (zero-padded), so a file never changes length; a CPU list that gets
 * shorter is padded with blanks after its newline, which its readers
 * strip. What rename gave and this does not: a read that meets the write
 * can see part of each (a window of nanoseconds per file per period; the
 * counters then seem to go back at the next read, which steerd takes as a
 * held figure). */
static void put_inplace(Sim *s, const char *rel, const char *text) {
        static char *pad;
        static size_t pad_size;
        struct stat st;
        size_t n = strlen(text);
        int fd = openat(s->rootfd, rel, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
                if (errno == ENOENT)
                        return; /* its directory went (a cgroup removed) */
                die(rel);
        }
        if (fstat(fd, &st) < 0)
                die(rel);
        if ((size_t) st.st_size > n) {
                if (pad_size < (size_t) st.st_size) {
                        free(pad);
                        pad_size = (size_t) st.st_size;
                        if (!(pad = malloc(pad_size)))
                                die("malloc");
                }
                memcpy(pad, text, n);
                memset(pad + n, ' ', (size_t) st.st_size - n);
                text = pad;
                n = (size_t) st.st_size;
        }
        if (pwrite(fd, text, n, 0) != (ssize_t) n)
                die(rel);
        close(fd);
        s->writes++;
}

static int get(Sim *s, const char *rel, char *buf, size_t size) {
        int fd = openat(s->rootfd, rel, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, size - 1);
        close(fd);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        return (int) n;
}

/* ---- threads ---- */

static const uint64_t *thread_allowed(const Sim *s, const Thread *t) {
        return t->allowed ? t->allowed : s->cgs[t->cg].cpus;
}

static void write_stat(Sim *s, Thread *t) {
        char p[96], text[512];
        /* pid (comm) state, then fields 4..52; 22 starttime, 39 processor */
        int n = snprintf(text, sizeof(text), "%d (sim %d) S", t->tid, t->tid);
        for (int f = 4; f <= 52; f++) {
                /* the moving fields at a fixed width (put_inplace()) */
                int width = f == 14 || f == 15 ? 20 : f == 39 ? 5 : 1;
                n += snprintf(text + n, sizeof(text) - n, " %0*llu", width,
                              f == 22   ? (unsigned long long) t->starttime
                              : f == 39 ? (unsigned long long) t->cpu
                              : f == 4  ? 1ULL
                              : f == 14 ? (unsigned long long) (t->exec_ns / 10000000 * 3 / 4)
                              : f == 15 ? (unsigned long long) (t->exec_ns / 10000000 / 4)
                                        : 0ULL);
        }
        snprintf(text + n, sizeof(text) - n, "\n");
        snprintf(p, sizeof(p), "proc/%d/task/%d/stat", t->tid, t->tid);
        put_inplace(s, p, text);
        snprintf(p, sizeof(p), "proc/%d/stat", t->tid);
        put_inplace(s, p, text);
}

static void write_schedstat(Sim *s, const Thread *t) {
        char p[96], text[96];
        snprintf(text, sizeof(text), "%020llu %020llu %020llu\n", (unsigned long long) t->exec_ns,
                 (unsigned long long) t->delay_ns, (unsigned long long) t->pcount);
        snprintf(p, sizeof(p), "proc/%d/task/%d/schedstat", t->tid, t->tid);
        put_inplace(s, p, text);
}

static void write_status(Sim *s, const Thread *t) {
        static char list[65536];
        char p[96];
        char *text;
        if (mask_format(s, thread_allowed(s, t), list, sizeof(list)) < 0)
                die("mask_format");
        if (asprintf(&text,
                     "Name:\tsim\nTgid:\t%d\nPid:\t%d\nCpus_allowed_list:\t%s\nMems_allowed_list:\t0\n",
                     t->tid, t->tid, list) < 0)
                die("asprintf");
        snprintf(p, sizeof(p), "proc/%d/task/%d/status", t->tid, t->tid);
        put_inplace(s, p, text);
        free(text);
}

/* A new thread of cgroup cg, started on a CPU of LLC llc. */
static void thread_new(Sim *s, int cg, int llc) {
        char p[96], text[512];
        if (s->n_threads == s->cap_threads) {
                s->cap_threads = s->cap_threads ? s->cap_threads * 2 : 1024;
                s->threads = realloc(s->threads, s->cap_threads * sizeof(Thread));
                if (!s->threads)
                        die("realloc");
        }
        Thread *t = &s->threads[s->n_threads];
        *t = (Thread){.tid = s->next_tid++,
                      .cg = cg,
                      .alive = true,
                      .pcount = 1,
                      .cpu = llc * s->llc_cpus + (int) (rnd(s) % s->llc_cpus),
                      .exec_ns = 1000000,
                      .delay_ns = 100000};
        t->starttime = 10000 + (uint64_t) t->tid;
        snprintf(p, sizeof(p), "proc/%d/task/%d", t->tid, t->tid);
        mkdirs(s, p);
        write_stat(s, t);
        write_schedstat(s, t);
        write_status(s, t);
        snprintf(p, sizeof(p), "proc/%d/task/%d/sched", t->tid, t->tid);
        snprintf(text, sizeof(text),
                 "sim (%d, #threads: "
                 "1)\n-------------------------------------------------------------------\n"
                 "se.nr_migrations                             :                    0\n"
                 "nr_voluntary_switches                        :                    1\n"
                 "nr_involuntary_switches                      :                    0\n",
                 t->tid);
        put(s, p, text);
        snprintf(p, sizeof(p), "proc/%d/cpuset", t->tid);
        snprintf(text, sizeof(text), "/%s\n", s->cgs[cg].name);
        put(s, p, text);
        Cgroup *c = &s->cgs[cg];
        c->threads = realloc(c->threads, (c->n_threads + 1) * sizeof(int));
        if (!c->threads)
                die("realloc");
        c->threads[c->n_threads++] = s->n_threads;
        s->n_threads++;
}

/* ---- cgroups ---- */

static void write_tasks(Sim *s, const Cgroup *c) {
        size_t size = (size_t) c->n_threads * 12 + 1, n = 0;
        char *text = malloc(size), p[96];
        if (!text)
                die("malloc");
        text[0] = 0;
        for (int i = 0; i < c->n_threads; i++)
                n += snprintf(text + n, size - n, "%d\n", s->threads[c->threads[i]].tid);
        snprintf(p, sizeof(p), CG_ROOT "/%s/tasks", c->name);
        put(s, p, text);
        snprintf(p, sizeof(p), CG_ROOT "/%s/cgroup.procs", c->name);
        put(s, p, text);
        free(text);
}

static void cgroup_new(Sim *s) {
        static char list[65536 + 2];
        char p[96];
        if (s->n_cgs == s->cap_cgs) {
                s->cap_cgs = s->cap_cgs ? s->cap_cgs * 2 : 256;
                s->cgs = realloc(s->cgs, s->cap_cgs * sizeof(Cgroup));
                if (!s->cgs)
                        die("realloc");
        }
        int cg = s->n_cgs++;
        Cgroup *c = &s->cgs[cg];
        *c = (Cgroup){.alive = true, .cpus = mask_new(s)};
        snprintf(c->name, sizeof(c->name), "sim%04d", s->next_cg++);
        memcpy(c->cpus, s->all, s->words * sizeof(uint64_t));
        mask_format(s, s->all, list, sizeof(list) - 2);
        c->cpus_text = strdup(list);
        if (!c->cpus_text)
                die("strdup");
        snprintf(p, sizeof(p), CG_ROOT "/%s", c->name);
        mkdirs(s, p);
        strcat(list, "\n");
        snprintf(p, sizeof(p), CG_ROOT "/%s/cpuset.cpus", c->name);
        put(s, p, list);
        snprintf(p, sizeof(p), CG_ROOT "/%s/cpuset.effective_cpus", c->name);
        put_inplace(s, p, list);
        snprintf(p, sizeof(p), CG_ROOT "/%s/cpuacct.usage", c->name);
        put_inplace(s, p, "00000000000000000000\n");
        int llc = (int) (rnd(s) % s->nllcs);
        c->home_llc = llc;
        for (int i = 0; i < s->threads_per_cg; i++)
                thread_new(s, cg, llc);
        write_tasks(s, c);
        s->cgroups_created++;
}

static void unlink_rel(Sim *s, const char *rel) {
        (void) unlinkat(s->rootfd, rel, 0);
}

static void cgroup_remove(Sim *s, int cg) {
        Cgroup *c = &s->cgs[cg];
        char p[128];
        static const char *const tfiles[] = {"stat", "schedstat", "status", "sched"};
        for (int i = 0; i < c->n_threads; i++) {
                Thread *t = &s->threads[c->threads[i]];
                for (size_t k = 0; k < 4; k++) {
                        snprintf(p, sizeof(p), "proc/%d/task/%d/%s", t->tid, t->tid, tfiles[k]);
                        unlink_rel(s, p);
                }
                snprintf(p, sizeof(p), "proc/%d/task/%d", t->tid, t->tid);
                (void) unlinkat(s->rootfd, p, AT_REMOVEDIR);
                snprintf(p, sizeof(p), "proc/%d/task", t->tid);
                (void) unlinkat(s->rootfd, p, AT_REMOVEDIR);
                snprintf(p, sizeof(p), "proc/%d/stat", t->tid);
                unlink_rel(s, p);
                snprintf(p, sizeof(p), "proc/%d/cpuset", t->tid);
                unlink_rel(s, p);
                snprintf(p, sizeof(p), "proc/%d", t->tid);
                (void) unlinkat(s->rootfd, p, AT_REMOVEDIR);
                t->alive = false;
                free(t->req);
                free(t->allowed);
                t->req = t->allowed = NULL;
        }
        static const char *const cfiles[] = {"tasks", "cgroup.procs", "cpuset.cpus", "cpuset.effective_cpus",
                                             "cpuacct.usage"};
        for (size_t k = 0; k < 5; k++) {
                snprintf(p, sizeof(p), CG_ROOT "/%s/%s", c->name, cfiles[k]);
                unlink_rel(s, p);
        }
        snprintf(p, sizeof(p), CG_ROOT "/%s", c->name);
        if (unlinkat(s->rootfd, p, AT_REMOVEDIR) < 0)
                fprintf(stderr, "simhost: rmdir %s: %s\n", p, strerror(errno));
        c->alive = false;
        s->cgroups_removed++;
}

/* ---- steerd's changes ---- */

static void compose(Sim *s, Thread *t) {
        const Cgroup *c = &s->cgs[t->cg];
        uint64_t *old = t->allowed;
        t->allowed = NULL;
        if (t->req) {
                uint64_t *m = mask_new(s);
                for (int i = 0; i < s->words; i++)
                        m[i] = t->req[i] & c->cpus[i];
                if (mask_empty(s, m))
                        free(m); /* no room: the cgroup's CPUs */
                else
                        t->allowed = m;
        }
        /* the cgroup's CPUs changed: so did the mask of every thread that
         * follows them, and maybe of those with a request */
        free(old);
        write_status(s, t);
        s->recomposed++;
}

static Thread *find_thread(Sim *s, int tid) {
        int i = tid - s->threads[0].tid; /* tids are handed out in order */
        if (i < 0 || i >= s->n_threads || s->threads[i].tid != tid || !s->threads[i].alive)
                return NULL;
        return &s->threads[i];
}

static void read_requests(Sim *s) {
        static char line[70000];
        clearerr(s->requests);
        while (fgets(line, sizeof(line), s->requests)) {
                int tid;
                char *sp = strchr(line, ' ');
                if (!sp || sscanf(line, "%d", &tid) != 1) {
                        s->request_errors++;
                        continue;
                }
                s->requests_read++;
                Thread *t = find_thread(s, tid);
                if (!t)
                        continue;
                free(t->req);
                t->req = NULL;
                if (strncmp(sp + 1, "all", 3) != 0) {
                        t->req = mask_new(s);
                        if (mask_parse(s, sp + 1, t->req) < 0) {
                                s->request_errors++;
                                free(t->req);
                                t->req = NULL;
                        }
                }
                /* steerd's table wrote the status already; the model follows */
                uint64_t *old = t->allowed;
                t->allowed = NULL;
                if (t->req) {
                        uint64_t *m = mask_new(s);
                        for (int i = 0; i < s->words; i++)
                                m[i] = t->req[i] & s->cgs[t->cg].cpus[i];
                        if (mask_empty(s, m))
                                free(m);
                        else
                                t->allowed = m;
                }
                free(old);
        }
}

static void read_cpusets(Sim *s) {
        static char text[65536 + 2];
        char p[96];
        for (int cg = 0; cg < s->n_cgs; cg++) {
                Cgroup *c = &s->cgs[cg];
                if (!c->alive)
                        continue;
                snprintf(p, sizeof(p), CG_ROOT "/%s/cpuset.cpus", c->name);
                if (get(s, p, text, sizeof(text)) < 0)
                        continue;
                text[strcspn(text, "\n")] = 0;
                if (!strcmp(text, c->cpus_text))
                        continue;
                if (mask_parse(s, text, c->cpus) < 0 || mask_empty(s, c->cpus))
                        memcpy(c->cpus, s->all, s->words * sizeof(uint64_t)); /* "" in v1: refused; as all */
                free(c->cpus_text);
                c->cpus_text = strdup(text);
                if (!c->cpus_text)
                        die("strdup");
                snprintf(p, sizeof(p), CG_ROOT "/%s/cpuset.effective_cpus", c->name);
                put_inplace(s, p, strcat(text, "\n"));
                s->cpuset_changes++;
                for (int i = 0; i < c->n_threads; i++)
                        compose(s, &s->threads[c->threads[i]]);
        }
}

/* ---- the load ---- */

static void new_phase(Sim *s) {
        s->hot_llc = (s->hot_llc + 1 + (int) (rnd(s) % (s->nllcs > 1 ? s->nllcs - 1 : 1))) % s->nllcs;
        for (int cg = 0; cg < s->n_cgs; cg++) {
                Cgroup *c = &s->cgs[cg];
                if (!c->alive)
                        continue;
                bool was = c->busy;
                c->busy = rnd(s) % 100 < (uint64_t) s->busy_pct;
                c->hot = rnd(s) % 4 == 0;
                for (int i = 0; i < c->n_threads; i++) {
                        Thread *t = &s->threads[c->threads[i]];
                        t->demand = c->busy ? 0.4 + 0.5 * rndf(s) : 0;
                        if (c->busy && !was) {
                                /* woken near its cgroup's home, or, a quarter
                                 * of the cgroups, where the phase's work
                                 * arrives */
                                int l = c->hot ? s->hot_llc : c->home_llc;
                                t->cpu = l * s->llc_cpus + (int) (rnd(s) % s->llc_cpus);
                                t->dirty_stat = true;
                        }
                }
        }
}

static int least_loaded(const Sim *s, const uint64_t *allowed, int lo, int hi) {
        int best = -1;
        for (int c = lo; c < hi; c++)
                if (mask_has(allowed, c) && (best < 0 || s->cpu_load[c] < s->cpu_load[best]))
                        best = c;
        return best;
}

static void move(Sim *s, Thread *t, int cpu) {
        if (cpu < 0 || cpu == t->cpu)
                return;
        s->cpu_load[t->cpu] -= t->demand;
        s->cpu_load[cpu] += t->demand;
        t->cpu = cpu;
        t->dirty_stat = true;
        s->migrations++;
}

static void place(Sim *s, bool balance) {
        memset(s->cpu_load, 0, s->ncpus * sizeof(double));
        for (int i = 0; i < s->n_threads; i++) {
                Thread *t = &s->threads[i];
                if (t->alive && t->demand > 0)
                        s->cpu_load[t->cpu] += t->demand;
        }
        for (int i = 0; i < s->n_threads; i++) {
                Thread *t = &s->threads[i];
                if (!t->alive || t->demand <= 0)
                        continue;
                const uint64_t *allowed = thread_allowed(s, t);
                if (!mask_has(allowed, t->cpu)) {
                        move(s, t, least_loaded(s, allowed, 0, s->ncpus));
                        continue;
                }
                if (s->cpu_load[t->cpu] <= 1.0)
                        continue;
                /* a limited scan of the LLC for room, from the next CPU on */
                int l0 = t->cpu / s->llc_cpus * s->llc_cpus;
                for (int k = 1, tried = 0; k < s->llc_cpus && tried < 4; k++) {
                        int c = l0 + (t->cpu - l0 + k) % s->llc_cpus;
                        if (!mask_has(allowed, c))
                                continue;
                        tried++;
                        if (s->cpu_load[c] + t->demand <= 1.0) {
                                move(s, t, c);
                                break;
                        }
                }
        }
        if (!balance)
                return;
        /* The load balancer: an LLC over its capacity hands up to a quarter
         * of its CPUs' worth of threads, from its busiest CPUs, to the
         * least loaded CPUs they may use, anywhere. */
        for (int l = 0; l < s->nllcs; l++) {
                int lo = l * s->llc_cpus, hi = lo + s->llc_cpus;
                double sum = 0;
                for (int c = lo; c < hi; c++)
                        sum += s->cpu_load[c];
                for (int moves = 0; sum > s->llc_cpus && moves < s->llc_cpus; moves++) {
                        int busiest = lo;
                        for (int c = lo; c < hi; c++)
                                if (s->cpu_load[c] > s->cpu_load[busiest])
                                        busiest = c;
                        if (s->cpu_load[busiest] <= 1.0)
                                break;
                        Thread *pick = NULL;
                        for (int i = 0; i < s->n_threads && !pick; i++) {
                                Thread *t = &s->threads[i];
                                if (t->alive && t->demand > 0 && t->cpu == busiest)
                                        pick = t;
                        }
                        if (!pick)
                                break;
                        int to = least_loaded(s, thread_allowed(s, pick), 0, s->ncpus);
                        if (to < 0 || (to >= lo && to < hi) || s->cpu_load[to] + pick->demand > 1.0)
                                break;
                        sum -= pick->demand;
                        move(s, pick, to);
                        s->balance_moves++;
                }
        }
}

static void advance(Sim *s) {
        const double period_ns = s->period_ms * 1e6;
        double total_wait = 0, total_demand = 0;
        for (int l = 0; l < s->nllcs; l++) {
                double sum = 0;
                for (int c = l * s->llc_cpus; c < (l + 1) * s->llc_cpus; c++)
                        sum += s->cpu_load[c];
                if (sum > s->llc_cpus)
                        s->over_llc_periods++;
        }
        for (int cg = 0; cg < s->n_cgs; cg++) {
                Cgroup *c = &s->cgs[cg];
                if (!c->alive || !c->busy)
                        continue;
                for (int i = 0; i < c->n_threads; i++) {
                        Thread *t = &s->threads[c->threads[i]];
                        double load = s->cpu_load[t->cpu];
                        double run = t->demand * (load > 1.0 ? 1.0 / load : 1.0);
                        double wait = t->demand - run + 0.002; /* a wakeup never runs at once */
                        t->exec_ns += (uint64_t) (run * period_ns);
                        t->delay_ns += (uint64_t) (wait * period_ns);
                        t->pcount += 1 + (uint64_t) (t->demand * 10);
                        c->usage_ns += (uint64_t) (run * period_ns);
                        total_wait += wait;
                        total_demand += t->demand;
                        s->wait_s += wait * period_ns / 1e9;
                        s->run_s += run * period_ns / 1e9;
                        s->cpu_run_ns[t->cpu] += run * period_ns;
                        s->cpu_wait_ns[t->cpu] += wait * period_ns;
                        write_schedstat(s, t);
                        if (t->dirty_stat) {
                                write_stat(s, t);
                                t->dirty_stat = false;
                        }
                }
                char p[96], text[32];
                snprintf(p, sizeof(p), CG_ROOT "/%s/cpuacct.usage", c->name);
                snprintf(text, sizeof(text), "%020llu\n", (unsigned long long) c->usage_ns);
                put_inplace(s, p, text);
        }
        /* /proc/stat: each CPU busy as far as its demand fills it */
        size_t size = (size_t) s->ncpus * 96 + 256, n = 0;
        char *text = malloc(size);
        if (!text)
                die("malloc");
        n += snprintf(text + n, size - n, "cpu  0 0 0 0 0 0 0 0 0 0\n");
        for (int c = 0; c < s->ncpus; c++) {
                double busy = s->cpu_load[c] > 1.0 ? 1.0 : s->cpu_load[c];
                s->cpu_user[c] += busy * USER_HZ * s->period_ms / 1000.0;
                s->cpu_idle[c] += (1.0 - busy) * USER_HZ * s->period_ms / 1000.0;
                n += snprintf(text + n, size - n, "cpu%d %020llu 0 0 %020llu 0 0 0 0 0 0\n", c,
                              (unsigned long long) s->cpu_user[c], (unsigned long long) s->cpu_idle[c]);
        }
        snprintf(text + n, size - n,
                 "intr 0\nctxt 0\nbtime 0\nprocesses 0\nprocs_running 1\nprocs_blocked 0\n");
        put_inplace(s, "proc/stat", text);
        free(text);
        /* /proc/schedstat (version 15): per CPU, run and run-queue wait */
        size = (size_t) s->ncpus * 96 + 64, n = 0;
        text = malloc(size);
        if (!text)
                die("malloc");
        n += snprintf(text + n, size - n, "version 15\ntimestamp %020llu\n",
                      (unsigned long long) (4294900000ULL + s->periods * s->period_ms / 10));
        for (int c = 0; c < s->ncpus; c++)
                n += snprintf(text + n, size - n, "cpu%d 0 0 0 0 0 0 %020llu %020llu 0\n", c,
                              (unsigned long long) s->cpu_run_ns[c], (unsigned long long) s->cpu_wait_ns[c]);
        put_inplace(s, "proc/schedstat", text);
        free(text);
        /* PSI cpu some: the share of time with someone waiting, as avg10 */
        double some = total_demand > 0 ? 100.0 * total_wait / total_demand : 0;
        double a = exp(-(s->period_ms / 1000.0) / 10.0);
        s->psi_avg10 = s->psi_avg10 * a + some * (1 - a);
        s->psi_total_us += some / 100.0 * s->period_ms * 1000.0;
        char psi[256];
        snprintf(psi, sizeof(psi),
                 "some avg10=%06.2f avg60=%06.2f avg300=%06.2f total=%020llu\nfull avg10=0.00 avg60=0.00 "
                 "avg300=0.00 total=0\n",
                 s->psi_avg10, s->psi_avg10, s->psi_avg10, (unsigned long long) s->psi_total_us);
        put_inplace(s, "proc/pressure/cpu", psi);
}

/* ---- main ---- */

static void sim_free(Sim *s) {
        for (int i = 0; i < s->n_threads; i++) {
                free(s->threads[i].req);
                free(s->threads[i].allowed);
        }
        for (int cg = 0; cg < s->n_cgs; cg++) {
                free(s->cgs[cg].cpus);
                free(s->cgs[cg].cpus_text);
                free(s->cgs[cg].threads);
        }
        free(s->threads);
        free(s->cgs);
        free(s->all);
        free(s->cpu_load);
        free(s->cpu_user);
        free(s->cpu_idle);
        free(s->cpu_run_ns);
        free(s->cpu_wait_ns);
        if (s->requests)
                fclose(s->requests);
        close(s->rootfd);
}

static uint64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* steerd's last tick start (CLOCK_MONOTONIC, ms) from its --tick-stats
 * file, 0 if none yet. */
static uint64_t last_tick_ms(const char *path) {
        char buf[1024];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        off_t end = lseek(fd, 0, SEEK_END);
        off_t from = end > (off_t) sizeof(buf) - 1 ? end - (off_t) sizeof(buf) + 1 : 0;
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, from);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = 0;
        /* the last whole line: "tick mono_us ..." */
        char *e = strrchr(buf, '\n');
        if (!e)
                return 0;
        *e = 0;
        char *l = strrchr(buf, '\n');
        unsigned long long tick, mono;
        if (sscanf(l ? l + 1 : buf, "%llu %llu", &tick, &mono) != 2)
                return 0;
        return mono / 1000;
}

static void usage(void) {
        fprintf(stderr,
                "usage: simhost ROOT --cpus N --llc-cpus K --cgroups G --threads T --requests FILE\n"
                "       [--period-ms 100] [--seconds S] [--phase-s 4] [--churn-s 15] [--busy-pct 12]\n"
                "       [--seed X] [--summary FILE] [--follow TICK_STATS]\n");
        exit(2);
}

int main(int argc, char **argv) {
        Sim s = {.period_ms = 100,
                 .seconds = 0,
                 .phase_s = 4,
                 .churn_s = 15,
                 .busy_pct = 12,
                 .seed = 1,
                 .next_tid = 100000};
        const char *requests = NULL, *summary = NULL, *follow = NULL;
        int total_threads = 0;
        static const struct option opts[] = {{"cpus", 1, 0, 'c'},
                                             {"llc-cpus", 1, 0, 'l'},
                                             {"cgroups", 1, 0, 'g'},
                                             {"threads", 1, 0, 't'},
                                             {"period-ms", 1, 0, 'p'},
                                             {"seconds", 1, 0, 's'},
                                             {"phase-s", 1, 0, 'P'},
                                             {"churn-s", 1, 0, 'C'},
                                             {"busy-pct", 1, 0, 'b'},
                                             {"seed", 1, 0, 'S'},
                                             {"requests", 1, 0, 'r'},
                                             {"summary", 1, 0, 'o'},
                                             {"follow", 1, 0, 'f'},
                                             {0, 0, 0, 0}};
        for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;)
                switch (o) {
                case 'c':
                        s.ncpus = atoi(optarg);
                        break;
                case 'l':
                        s.llc_cpus = atoi(optarg);
                        break;
                case 'g':
                        s.n_cg_target = atoi(optarg);
                        break;
                case 't':
                        total_threads = atoi(optarg);
                        break;
                case 'p':
                        s.period_ms = atoi(optarg);
                        break;
                case 's':
                        s.seconds = atoi(optarg);
                        break;
                case 'P':
                        s.phase_s = atoi(optarg);
                        break;
                case 'C':
                        s.churn_s = atoi(optarg);
                        break;
                case 'b':
                        s.busy_pct = atoi(optarg);
                        break;
                case 'S':
                        s.seed = strtoull(optarg, NULL, 0);
                        break;
                case 'r':
                        requests = optarg;
                        break;
                case 'o':
                        summary = optarg;
                        break;
                case 'f':
                        follow = optarg;
                        break;
                default:
                        usage();
                }
        if (optind + 1 != argc || !requests || s.ncpus <= 0 || s.ncpus > MAX_CPUS || s.llc_cpus <= 0 ||
            s.ncpus % s.llc_cpus || s.n_cg_target <= 0 || total_threads < s.n_cg_target ||
            s.period_ms <= 0 || s.phase_s <= 0 || s.busy_pct < 0 || s.busy_pct > 100)
                usage();
        s.root = argv[optind];
        s.nllcs = s.ncpus / s.llc_cpus;
        s.words = (s.ncpus + 63) / 64;
        s.threads_per_cg = total_threads / s.n_cg_target;
        if (mkdir(s.root, 0755) < 0 && errno != EEXIST)
                die(s.root);
        s.rootfd = open(s.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (s.rootfd < 0)
                die(s.root);
        int rfd = open(requests, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
        if (rfd < 0 || !(s.requests = fdopen(rfd, "r")))
                die(requests);
        s.all = mask_new(&s);
        for (int c = 0; c < s.ncpus; c++)
                mask_set(s.all, c);
        s.cpu_load = calloc(s.ncpus, sizeof(double));
        s.cpu_user = calloc(s.ncpus, sizeof(double));
        s.cpu_idle = calloc(s.ncpus, sizeof(double));
        s.cpu_run_ns = calloc(s.ncpus, sizeof(double));
        s.cpu_wait_ns = calloc(s.ncpus, sizeof(double));
        if (!s.cpu_load || !s.cpu_user || !s.cpu_idle || !s.cpu_run_ns || !s.cpu_wait_ns)
                die("calloc");

        static char list[65536], text[70000];
        mask_format(&s, s.all, list, sizeof(list));
        mkdirs(&s, "proc/self");
        mkdirs(&s, "proc/pressure");
        mkdirs(&s, "sys/devices/system/cpu");
        mkdirs(&s, CG_ROOT);
        put(&s, "proc/self/mounts",
            "cgroup /" CG_ROOT " cgroup rw,nosuid,nodev,noexec,relatime,cpuset,cpuacct 0 0\n");
        snprintf(text, sizeof(text), "%s\n", list);
        put(&s, "sys/devices/system/cpu/online", text);
        put(&s, CG_ROOT "/cpuset.cpus", text);
        put(&s, CG_ROOT "/cpuset.effective_cpus", text);
        put(&s, CG_ROOT "/tasks", "1\n");
        for (int i = 0; i < s.n_cg_target; i++)
                cgroup_new(&s);
        new_phase(&s);
        place(&s, false);
        advance(&s);
        put(&s, ".ready", "1\n");

        signal(SIGTERM, on_term);
        signal(SIGINT, on_term);
        uint64_t t0 = now_ms(), next = t0, last_phase = t0, last_churn = t0, last_balance = t0;
        while (!stop && (s.seconds <= 0 || now_ms() - t0 < (uint64_t) s.seconds * 1000)) {
                next += s.period_ms;
                uint64_t n = now_ms();
                /* --follow: a period ends halfway between two of steerd's
                 * tick starts. The kernel's counters move continuously;
                 * these move a period at a time, so an interval of steerd's
                 * that took in none or two of them read a cgroup's use as 0
                 * or twice what it was (a swing of +-40% that made steerd
                 * read every thread of half the busy cgroups every tick). */
                uint64_t tick = follow ? last_tick_ms(follow) : 0;
                if (tick > 0 && tick + 2 * (uint64_t) s.period_ms > n) {
                        uint64_t at = tick + (uint64_t) s.period_ms / 2;
                        while (at <= n)
                                at += (uint64_t) s.period_ms;
                        next = at;
                        s.followed++;
                }
                if (next > n)
                        usleep((useconds_t) (next - n) * 1000);
                else
                        next = n; /* fell behind: no catching up in a burst */
                n = now_ms();
                read_requests(&s);
                read_cpusets(&s);
                if (s.churn_s > 0 && n - last_churn >= (uint64_t) s.churn_s * 1000) {
                        last_churn = n;
                        for (int cg = 0; cg < s.n_cgs; cg++)
                                if (s.cgs[cg].alive) {
                                        cgroup_remove(&s, cg);
                                        break;
                                }
                        cgroup_new(&s);
                        Cgroup *c = &s.cgs[s.n_cgs - 1];
                        c->busy = true;
                        for (int i = 0; i < c->n_threads; i++)
                                s.threads[c->threads[i]].demand = 0.4 + 0.5 * rndf(&s);
                }
                if (n - last_phase >= (uint64_t) s.phase_s * 1000) {
                        last_phase = n;
                        new_phase(&s);
                }
                bool balance = n - last_balance >= 100;
                if (balance)
                        last_balance = n;
                place(&s, balance);
                advance(&s);
                s.periods++;
        }
        /* What steerd did last (the give-backs of its stop) is taken in
         * before the end, however long a period took: a request and the
         * cgroups' CPUs, composed again. */
        read_requests(&s);
        read_cpusets(&s);
        FILE *out = summary ? fopen(summary, "w") : stdout;
        if (!out)
                die(summary);
        fprintf(out,
                "{\"cpus\": %d, \"llcs\": %d, \"threads\": %d, \"periods\": %llu, \"seconds\": %.1f, "
                "\"requests_read\": %llu, \"request_errors\": %llu, \"cpuset_changes\": %llu, "
                "\"recomposed\": %llu, "
                "\"migrations\": %llu, \"balance_moves\": %llu, \"over_llc_periods\": %llu, "
                "\"cgroups_created\": %llu, \"cgroups_removed\": %llu, \"writes\": %llu, \"run_s\": %.1f, "
                "\"wait_s\": %.1f, \"followed\": %llu}\n",
                s.ncpus, s.nllcs, s.n_threads, (unsigned long long) s.periods, (now_ms() - t0) / 1000.0,
                (unsigned long long) s.requests_read, (unsigned long long) s.request_errors,
                (unsigned long long) s.cpuset_changes, (unsigned long long) s.recomposed,
                (unsigned long long) s.migrations, (unsigned long long) s.balance_moves,
                (unsigned long long) s.over_llc_periods, (unsigned long long) s.cgroups_created,
                (unsigned long long) s.cgroups_removed, (unsigned long long) s.writes, s.run_s, s.wait_s,
                (unsigned long long) s.followed);
        if (out != stdout)
                fclose(out);
        sim_free(&s);
        return 0;
}
