#!/usr/bin/env bash
# Install what is missing, build, and run steerd on this host in the
# foreground (Ctrl-C stops it and restores every mask it changed).
# Arguments are passed to steerd, e.g. scripts/run.sh --once --json
set -euo pipefail
. "$(dirname "$0")/lib.sh"

steerd_install_packages "${STEERD_BUILD_PACKAGES[@]}"
cd "$STEERD_TOP"
steerd_build build

args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--once)
exec build/steerd "${args[@]}"
