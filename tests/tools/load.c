/* SPDX-License-Identifier: MIT */
/* A load for the daemon's tests: N threads that each burn DUTY% of a CPU in
 * short slices (so that they wake and sleep like a service), or thread churn:
 * RATE short-lived threads created per second, or RINGS rings of N threads
 * that pass a token around through pipes (each wakes the next: groups that
 * talk among themselves and never to another ring). Runs SECONDS, then
 * exits; with --hops H, rings run until each ring has handed its token on
 * H times and print how long that took (the benchmark's ring workload). */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_bool stop;
static unsigned duty = 100;

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void *worker(void *arg) {
        (void) arg;
        const double slice = 0.002; /* 2 ms of work, then the rest of the period asleep */
        volatile unsigned long x = 0;
        while (!atomic_load(&stop)) {
                double t0 = now_s();
                while (now_s() - t0 < slice * duty / 100.0)
                        x++;
                if (duty < 100) {
                        struct timespec ts = {0, (long) (slice * (100 - duty) / 100.0 * 1e9)};
                        nanosleep(&ts, NULL);
                }
        }
        return NULL;
}

/* One thread of a ring: reads the token from its pipe, hands it on. Its
 * count of hand-overs has a cache line of its own: a shared counter would
 * add a transfer to every hand-over. */
typedef struct RingEnd {
        int in, out;
        _Alignas(64) atomic_ulong hops;
} RingEnd;

static void *ring_worker(void *arg) {
        RingEnd *e = arg;
        char c;
        while (!atomic_load(&stop) && read(e->in, &c, 1) == 1) {
                if (write(e->out, &c, 1) != 1)
                        break;
                atomic_store_explicit(&e->hops, atomic_load_explicit(&e->hops, memory_order_relaxed) + 1,
                                      memory_order_relaxed);
        }
        return NULL;
}

/* rings x n threads; the first of each ring gets the token. */
static pthread_t *start_rings(unsigned rings, unsigned n, RingEnd **ret_ends, size_t *ret_n) {
        pthread_t *t = calloc((size_t) rings * n, sizeof(pthread_t));
        RingEnd *e = aligned_alloc(64, sizeof(RingEnd) * (size_t) rings * n);
        if (!t || !e)
                return NULL;
        memset(e, 0, sizeof(RingEnd) * (size_t) rings * n);
        for (unsigned r = 0; r < rings; r++) {
                int(*fd)[2] = calloc(n, sizeof(*fd));
                if (!fd)
                        return NULL;
                for (unsigned i = 0; i < n; i++)
                        if (pipe(fd[i]) < 0)
                                return NULL;
                for (unsigned i = 0; i < n; i++)
                        e[r * n + i] = (RingEnd){.in = fd[i][0], .out = fd[(i + 1) % n][1]};
                if (write(fd[0][1], "x", 1) != 1)
                        return NULL;
                free(fd);
        }
        for (size_t i = 0; i < (size_t) rings * n; i++)
                if (pthread_create(&t[i], NULL, ring_worker, &e[i]) != 0)
                        return NULL;
        *ret_n = (size_t) rings * n;
        *ret_ends = e; /* lives as long as the threads: until exit */
        return t;
}

/* Until every ring has handed its token on hops times (or SECONDS passed):
 * prints the time it took. */
static int run_hops(const RingEnd *e, unsigned rings, unsigned n, unsigned long hops, double seconds) {
        double t0 = now_s();
        for (;;) {
                bool done = true;
                for (unsigned r = 0; r < rings && done; r++) {
                        unsigned long sum = 0;
                        for (unsigned i = 0; i < n; i++)
                                sum += atomic_load_explicit(&e[r * n + i].hops, memory_order_relaxed);
                        done = sum >= hops;
                }
                if (done)
                        break;
                if (now_s() - t0 > seconds) {
                        fprintf(stderr, "ring: not done within %.0f s\n", seconds);
                        return 1;
                }
                usleep(2000);
        }
        double dt = now_s() - t0;
        printf("ring: %lu hand-overs in %.3f s: %.0f a second, %.3f us each\n", hops, dt, hops / dt,
               dt * 1e6 / hops);
        fflush(stdout);
        return 0;
}

static void *short_lived(void *arg) {
        (void) arg;
        volatile unsigned long x = 0;
        for (int i = 0; i < 20000; i++)
                x++;
        return NULL;
}

int main(int argc, char *argv[]) {
        unsigned threads = 4, rate = 0, rings = 0;
        unsigned long hops = 0;
        double seconds = 10;
        int c;
        static const struct option options[] = {
                {"threads", required_argument, NULL, 't'},
                {"duty", required_argument, NULL, 'd'},
                {"churn", required_argument, NULL, 'c'},
                {"seconds", required_argument, NULL, 's'},
                {"rings", required_argument, NULL, 'r'},
                {"hops", required_argument, NULL, 'H'},
                {},
        };
        while ((c = getopt_long(argc, argv, "t:d:c:s:r:H:", options, NULL)) >= 0)
                switch (c) {
                case 't':
                        threads = (unsigned) atoi(optarg);
                        break;
                case 'd':
                        duty = (unsigned) atoi(optarg);
                        break;
                case 'c':
                        rate = (unsigned) atoi(optarg);
                        break;
                case 's':
                        seconds = atof(optarg);
                        break;
                case 'r':
                        rings = (unsigned) atoi(optarg);
                        break;
                case 'H':
                        hops = strtoul(optarg, NULL, 10);
                        break;
                default:
                        fprintf(stderr,
                                "usage: %s [--threads N] [--duty PCT] [--churn RATE] [--rings N [--hops H]] "
                                "[--seconds S]\n",
                                argv[0]);
                        return 2;
                }

        /* Wait for the caller to move us into a cgroup: it writes a line to stdin. */
        printf("ready %d\n", (int) getpid());
        fflush(stdout);
        char line[16];
        if (!fgets(line, sizeof(line), stdin))
                return 1;

        if (rings > 0) {
                size_t n = 0;
                RingEnd *e = NULL;
                if (!start_rings(rings, threads, &e, &n))
                        return 1;
                if (hops > 0)
                        return run_hops(e, rings, threads, hops, seconds);
                usleep((useconds_t) (seconds * 1e6));
                return 0; /* the ring threads end with the process */
        }
        pthread_t *t = calloc(threads ? threads : 1, sizeof(pthread_t));
        for (unsigned i = 0; i < threads; i++)
                if (pthread_create(&t[i], NULL, worker, NULL) != 0)
                        return 1;

        unsigned long churned = 0;
        double end = now_s() + seconds, next = now_s();
        while (now_s() < end) {
                if (rate == 0) {
                        usleep(50000);
                        continue;
                }
                /* One batch every 10 ms. */
                unsigned batch = rate / 100 ? rate / 100 : 1;
                pthread_t b[1024];
                unsigned n = batch < 1024 ? batch : 1024;
                for (unsigned i = 0; i < n; i++)
                        if (pthread_create(&b[i], NULL, short_lived, NULL) != 0)
                                n = i;
                for (unsigned i = 0; i < n; i++)
                        pthread_join(b[i], NULL);
                churned += n;
                /* The next batch 10 ms after the last one began, not after
                 * it ended: the creation time does not lower the rate. */
                next += 0.01;
                double wait = next - now_s();
                if (wait > 0)
                        usleep((useconds_t) (wait * 1e6));
                else if (wait < -0.1)
                        next = now_s(); /* far behind: do not burst to catch up */
        }
        atomic_store(&stop, true);
        for (unsigned i = 0; i < threads; i++)
                pthread_join(t[i], NULL);
        free(t);
        if (rate)
                fprintf(stderr, "churned %lu threads\n", churned);
        return 0;
}
