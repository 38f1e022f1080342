/* SPDX-License-Identifier: MIT */
#include "log.h"
#include "manager.h"

int run_daemon(const Args *args, Config *config) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        if (geteuid() != 0)
                log_warning("Not running as root: threads of other users cannot be steered.");
        r = manager_new(args, config, &m);
        if (r < 0)
                return r;
        r = manager_run(m);
        if (r < 0)
                return log_error_errno(r, "The event loop failed");
        /* manager_free() gives every mask back. */
        return 0;
}
