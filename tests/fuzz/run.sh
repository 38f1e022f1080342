#!/usr/bin/env bash
# Build the libFuzzer targets (STEERD_FUZZ=ON, clang) and run each one for
# a short fixed time: the step of scripts/test.sh, and the way to run one
# longer (tests/fuzz/README.md).
#
#   tests/fuzz/run.sh [BUILD_DIR] [TARGET...]
#
# BUILD_DIR defaults to build-fuzz (configured with CC=${STEERD_FUZZ_CC:-clang-14}
# if it is not yet). STEERD_FUZZ_SECONDS (default 20) is the time of each
# target, cut so that all of them together stay within STEERD_FUZZ_BUDGET
# seconds (default 240: under 5 minutes with each start and exit) when no
# target is named. Each run starts from the checked-in seeds and
# regressions, read only: what it finds goes to a scratch corpus that is
# thrown away, a crash to BUILD_DIR/fuzz-artifacts/. Exit 1 if any target
# crashed, leaked, timed out or ran out of memory.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${1:-build-fuzz}
[ $# -gt 0 ] && shift
case $build in /*) ;; *) build=$top/$build ;; esac

if [ $# -gt 0 ]; then
        targets=("$@")
else
        targets=()
        for src in "$here"/fuzz-*.c; do
                t=${src##*/fuzz-}
                targets+=("${t%.c}")
        done
fi

seconds=${STEERD_FUZZ_SECONDS:-20}
budget=${STEERD_FUZZ_BUDGET:-240}
if [ $# -eq 0 ] && [ $((seconds * ${#targets[@]})) -gt "$budget" ]; then
        seconds=$((budget / ${#targets[@]}))
        [ "$seconds" -ge 1 ] || seconds=1
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
        CC=${STEERD_FUZZ_CC:-clang-14} cmake -S "$top" -B "$build" -DSTEERD_FUZZ=ON -DSTEERD_MAN=OFF >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target steerd-fuzzers

# The targets' files (config, state files) in a private directory on tmpfs
# where there is one: no disk write per input.
shm=/dev/shm
[ -w "$shm" ] || shm=${TMPDIR:-/tmp}
work=$(mktemp -d "$shm/steerd-fuzz-run.XXXXXX")
trap 'rm -rf "$work"' EXIT
artifacts=$build/fuzz-artifacts
mkdir -p "$artifacts"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# Debian's llvm-14 has only the versioned name, which ASan does not look for.
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && ! command -v llvm-symbolizer >/dev/null &&
        [ -x /usr/bin/llvm-symbolizer-14 ]; then
        export ASAN_SYMBOLIZER_PATH=/usr/bin/llvm-symbolizer-14
fi

dict_of() { # the libFuzzer dictionary of a target, if it has one
        case $1 in
        config) echo "$here/dict/config.dict" ;;
        runtime-state | snapshot-json | actuator-state) echo "$here/dict/json.dict" ;;
        esac
}

failed=()
printf 'fuzz: %d targets, %d s each\n' "${#targets[@]}" "$seconds"
for t in "${targets[@]}"; do
        bin=$build/tests/fuzz/fuzz-$t
        if [ ! -x "$bin" ]; then
                echo "fuzz: $t: no binary $bin" >&2
                failed+=("$t")
                continue
        fi
        scratch=$work/corpus-$t
        mkdir -p "$scratch" "$work/tmp-$t"
        dirs=("$here/corpus/$t")
        [ -d "$here/regressions/$t" ] && dirs+=("$here/regressions/$t")
        dict=$(dict_of "$t")
        log=$work/$t.log
        set +e
        # The first corpus directory is where libFuzzer writes what it
        # finds: the scratch one, never the checked-in seeds.
        TMPDIR=$work/tmp-$t "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
                -close_fd_mask=2 -print_final_stats=1 -artifact_prefix="$artifacts/$t-" \
                ${dict:+-dict="$dict"} "$scratch" "${dirs[@]}" >"$log" 2>&1
        rc=$?
        set -e
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
        last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)
        cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
        ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
        corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
        if [ "$rc" -eq 0 ]; then
                printf 'fuzz: %-16s %10s executions in %3d s, coverage %s edges (%s features), corpus %s: no crash\n' \
                        "$t" "${runs:-?}" "$seconds" "${cov:-?}" "${ft:-?}" "${corp:-?}"
        else
                echo "fuzz: $t: FAILED (exit $rc) after ${runs:-?} executions; the end of its log:" >&2
                grep -vE '^#[0-9]+' "$log" | tail -40 >&2
                crash=$(sed -n 's/.*Test unit written to \(.*\)/\1/p' "$log" | tail -1)
                if [ -n "$crash" ]; then
                        echo "fuzz: $t: the input is $crash; replay it: $bin $crash" >&2
                        echo "fuzz: $t: keep it as a regression: cp $crash tests/fuzz/regressions/$t/" >&2
                fi
                failed+=("$t")
        fi
done

if [ ${#failed[@]} -gt 0 ]; then
        echo "fuzz: FAILED: ${failed[*]}" >&2
        exit 1
fi
echo "fuzz: ${#targets[@]} targets, no crash"
