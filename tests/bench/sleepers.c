/* sleepers N [BUSY]: N threads that sleep (wake once a second, do nothing),
 * for the overhead benchmark: an opted-in cgroup with N idle threads; the
 * first BUSY of them (default 0) spin instead.
 * Prints "ready" once every thread exists; runs until killed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void *spinner(void *arg) {
        volatile unsigned long n = 0;
        (void) arg;
        for (;;)
                n++;
        return NULL;
}

static void *sleeper(void *arg) {
        (void) arg;
        for (;;) {
                struct timespec ts = {.tv_sec = 1};
                nanosleep(&ts, NULL);
        }
        return NULL;
}

int main(int argc, char **argv) {
        long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
        long busy = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        for (long i = 0; i < n; i++) {
                pthread_t t;
                if (pthread_create(&t, &attr, i < busy ? spinner : sleeper, NULL) != 0) {
                        fprintf(stderr, "sleepers: only %ld threads\n", i);
                        break;
                }
        }
        printf("ready\n");
        fflush(stdout);
        for (;;)
                pause();
}
