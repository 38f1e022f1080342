#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite: once as
# built for production, once under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# Test-only tools: a private bus, threads in cgroups, load generators.
steerd_install_packages "${STEERD_BUILD_PACKAGES[@]}" python3 dbus-daemon util-linux procps stress-ng rt-tests

cd "$STEERD_TOP"
steerd_build build
(cd build && ctest --output-on-failure --timeout 300 -j1)

steerd_build build-asan -DSTEERD_SANITIZE=ON
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ctest --output-on-failure --timeout 600 -j1)
