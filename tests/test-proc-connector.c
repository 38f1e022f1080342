/* SPDX-License-Identifier: MIT */
/* The proc connector sees a new thread of this process. Needs root
 * (CAP_NET_ADMIN); skipped otherwise. */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>

#include "test-helpers.h"

#include "proc-connector.h"

typedef struct Seen {
        pid_t tids[4096];
        size_t n;
        pid_t want_tgid;
} Seen;

static void on_fork(pid_t tid, pid_t tgid, pid_t parent_tgid, void *userdata) {
        (void) parent_tgid;
        Seen *s = userdata;
        if (tgid == s->want_tgid && s->n < ELEMENTSOF(s->tids))
                s->tids[s->n++] = tid;
}

static void *thread_main(void *arg) {
        *(pid_t *) arg = (pid_t) syscall(SYS_gettid);
        return NULL;
}

static void test_sees_new_threads(void **state) {
        ProcConnector *pc = NULL;
        Seen *seen = calloc(1, sizeof(Seen));
        pid_t tids[8] = {};
        int r;

        assert_non_null(seen);
        seen->want_tgid = getpid();
        r = proc_connector_new(on_fork, seen, &pc);
        if (r == -EPERM || r == -EACCES || r == -EPROTONOSUPPORT) {
                free(seen);
                skip();
        }
        assert_int_equal(r, 0);
        assert_true(proc_connector_fd(pc) >= 0);

        for (size_t i = 0; i < ELEMENTSOF(tids); i++) {
                pthread_t t;
                assert_int_equal(pthread_create(&t, NULL, thread_main, &tids[i]), 0);
                assert_int_equal(pthread_join(t, NULL), 0);
        }

        /* Events arrive asynchronously: poll for up to 2 s. */
        for (int i = 0; i < 20 && seen->n < ELEMENTSOF(tids); i++) {
                struct pollfd p = {.fd = proc_connector_fd(pc), .events = POLLIN};
                if (poll(&p, 1, 100) > 0)
                        assert_int_equal(proc_connector_process(pc), 0);
        }
        for (size_t i = 0; i < ELEMENTSOF(tids); i++) {
                bool found = false;
                for (size_t j = 0; j < seen->n; j++)
                        found = found || seen->tids[j] == tids[i];
                if (!found)
                        fail_msg("thread %d was not reported", (int) tids[i]);
        }
        proc_connector_free(pc);
        free(seen);
}

int main(void) {
        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: the proc connector needs root (CAP_NET_ADMIN)\n");
                return TEST_SKIP;
        }
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sees_new_threads),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
