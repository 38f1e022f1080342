# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Sourced by the live tests that need steerd to open a window (a cgroup
# narrowed to whole cores of one LLC): t-daemon and tests/tools/lib-steerd-test.sh.
#
# A window needs an LLC of at least MinLLCCPUs (2) CPUs that holds the
# test's cgroups. Hosts of this project's kind differ: some report the two
# vCPUs under one L3, others (Firecracker guests since late 2026) one L3 per
# vCPU, where steerd rightly opens no window at all. What these tests prove
# is the actuator and the ledger (give-back, let-go, crashes, vanishing
# cgroups), not the host's caches: on a host without such an LLC they run
# steerd on a synthetic topology of the same CPUs in one LLC, and say so.
# test-topology and t-once check the host's own reading.
#
# one_llc_args STEERD CPULIST: sets TOPO_ARGS (empty, or --topology STRING)
# and TOPO_NOTE (one line for the log); returns 1 (with TOPO_NOTE saying
# why) when no synthetic topology can stand in for the host's.
one_llc_args() {
        local steerd=$1 cpus=$2 out
        TOPO_ARGS=()
        out=$("$steerd" --once --json --interval 50 --config /dev/null 2>/dev/null | python3 -c '
import json, sys

def expand(s):
    r = set()
    for part in filter(None, s.split(",")):
        a, _, b = part.partition("-")
        r.update(range(int(a), int(b or a) + 1))
    return r

want = expand(sys.argv[1])
snap = json.load(sys.stdin)
llcs = [(l["cpus"], expand(l["cpus"])) for l in snap["llcs"]]
n = len(snap["cpus"])
if any(want <= c and len(c) >= 2 for _, c in llcs):
    print("ok host LLCs: " + " ".join(s for s, _ in llcs))
elif sorted(c["cpu"] for c in snap["cpus"]) != list(range(n)):
    print("no host CPUs are not 0-%d" % (n - 1))
else:
    print("synthetic %d host LLCs: %s" % (n, " ".join(s for s, _ in llcs)))
' "$cpus")
        case $out in
        ok*)
                TOPO_NOTE="${out#ok }: a window fits"
                ;;
        synthetic*)
                local n=${out#synthetic }
                n=${n%% *}
                TOPO_ARGS=(--topology "pack:1 l3:1 core:$n pu:1")
                TOPO_NOTE="${out#synthetic $n }: none holds CPUs $cpus with 2 or more CPUs; steerd runs on the synthetic topology '${TOPO_ARGS[1]}'"
                ;;
        *)
                TOPO_NOTE="cannot read the host's LLCs with steerd --once (${out:-no output})"
                [[ $out == no* ]] && TOPO_NOTE=${out#no }
                return 1
                ;;
        esac
        return 0
}
