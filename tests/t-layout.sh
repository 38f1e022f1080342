#!/usr/bin/env bash
# The stages of docs/ARCHITECTURE.md hold: no function in daemon/core over
# 80 lines, no call cycle between its files, a policy that calls nothing
# that reaches the OS, and a policy file that includes an I/O header does
# not compile. $1 = build dir.
set -uo pipefail
command -v python3 >/dev/null || { echo "SKIP: python3 needed"; exit 77; }
command -v nm >/dev/null || { echo "SKIP: nm (binutils) needed"; exit 77; }
[ -f "$1/compile_commands.json" ] || { echo "FAIL: no $1/compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS)"; exit 1; }
exec python3 "$(dirname "$0")/tools/layout-check.py" "$(cd "$(dirname "$0")/.." && pwd)" "$1"
