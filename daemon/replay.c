/* SPDX-License-Identifier: MIT */
#include "log.h"
#include "steerd.h"

int run_replay(const Args *args, const Config *config) {
        return log_error("--replay: not built yet"), -EOPNOTSUPP;
}
