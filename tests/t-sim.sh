#!/usr/bin/env bash
# The simulated host as a regression check (issue 33; tests/sim/, docs/
# BENCHMARKS.md "The simulated host"): steerd steers a simulated 1,024-CPU
# host in 64 LLCs of 16 (200 cgroups, 10,000 threads, the load moving
# between cgroups every 4 s, a cgroup removed and another created every
# 10 s) end to end for 30 s: the sampler reads the fixture root as it
# moves, the actuator writes its cpuset files and sets thread masks through
# the affinity table. Not timed (tests/bench/scale.sh measures): it checks
# that windows and sticky pins happen and reach the simulated host, that the
# engine's checker dropped nothing, and that the stop gives every cgroup and
# thread back.
#
# $1 = build dir. Needs nothing of the host: no root, no cgroups.
# SIM_SECONDS (30), SIM_CPUS (1024), SIM_LLC (16), SIM_CGROUPS (200),
# SIM_THREADS (10000) change the run; KEEP=1 keeps the files.
set -uo pipefail
BUILD=$1
[ -x "$BUILD/steerd" ] && [ -x "$BUILD/steerd-simhost" ] || { echo "SKIP: steerd or steerd-simhost not built in $BUILD"; exit 77; }
RUN_S=${SIM_SECONDS:-30}
CPUS=${SIM_CPUS:-1024} LLC=${SIM_LLC:-16} CGS=${SIM_CGROUPS:-200} THREADS=${SIM_THREADS:-10000}
OUT=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] && echo "kept $OUT" || rm -rf "$OUT"' EXIT
fail() {
        echo "FAIL: $*"
        echo "--- steerd (last 30 lines)"
        tail -30 "$OUT/steerd.log"
        echo "--- simhost"
        tail -5 "$OUT/sim.log"
        exit 1
}

bash "$(dirname "$(readlink -f "$0")")/sim/run-sim.sh" "$BUILD" "$OUT" "$CPUS" "$LLC" "$CGS" "$THREADS" "$RUN_S" ||
        fail "the run did not complete"
read -r ticks cg_sets th_sets restores win sticky bal guard failed dropped rss fds < <(
        awk '!/^#/ {n++; a+=$5; b+=$6; c+=$7; w+=$8; s+=$9; l+=$10; g+=$11; f=$12; d=$13; r=$14; fd=$15}
             END {print n+0, a+0, b+0, c+0, w+0, s+0, l+0, g+0, f+0, d+0, r+0, fd+0}' "$OUT/ticks.txt")
summary=$(cat "$OUT/summary.json")
echo "steerd on a simulated $CPUS-CPU host ($((CPUS / LLC)) LLCs of $LLC, $CGS cgroups, $THREADS threads), $RUN_S s:"
echo "  $ticks ticks; actions: $cg_sets cgroup CPUs, $th_sets thread CPUs, $restores restores" \
        "(window $win, sticky $sticky, balance $bal, guard $guard); failed $failed, dropped $dropped;" \
        "RSS $rss kB, $fds fds at the end"
echo "  simulation: $summary"
field() { sed -E "s/.*\"$1\": ([0-9.]+).*/\1/" <<<"$summary"; }
[ "$(cat "$OUT/rc")" = 0 ] || fail "steerd's stop exited $(cat "$OUT/rc")"
[ "$ticks" -ge $((RUN_S * 10 / 4)) ] || fail "only $ticks ticks in $RUN_S s at a 100 ms period"
[ "$dropped" = 0 ] || fail "the engine's checker dropped $dropped actions"
[ "$win" -gt 0 ] || fail "no window in $RUN_S s of an overloaded LLC moving about"
[ "$sticky" -gt 0 ] || fail "no sticky pin in $RUN_S s"
[ "$cg_sets" -gt 0 ] && [ "$th_sets" -gt 0 ] && [ "$restores" -gt 0 ] || fail "not every kind of action happened"
[ "$(field cpuset_changes)" -gt 0 ] || fail "no cgroup write of steerd's reached the simulated host"
[ "$(field requests_read)" -gt 0 ] || fail "no thread mask of steerd's reached the simulated host"
[ "$(field request_errors)" = 0 ] || fail "the simulated host could not read $(field request_errors) of steerd's requests"
[ "$(field cgroups_removed)" -gt 0 ] || fail "no cgroup was removed during the run"
grep -q "Could not give back" "$OUT/steerd.log" && fail "the stop could not give everything back"
[ ! -s "$OUT/gone.txt" ] || fail "$(wc -l <"$OUT/gone.txt") cgroups or threads still narrowed after the stop: $(head -5 "$OUT/gone.txt" | paste -sd'|')"
echo "PASS: decisions made and applied on the simulated host, nothing dropped, everything given back at the stop"
