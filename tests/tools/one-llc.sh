# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Sourced by the live tests that need steerd to open a window (a cgroup
# narrowed to whole cores of one LLC): t-daemon and tests/tools/lib-steerd-test.sh.
#
# A window needs a window domain of at least MinLLCCPUs (2) CPUs that holds
# the test's cgroups: an LLC of two or more CPUs, or one-core LLCs of one
# package, which steerd places windows over together (docs/POLICY.md).
# Hosts of this project's kind differ: some report the two vCPUs under one
# L3, others (Firecracker guests since late 2026) one L3 per vCPU; both
# have such a domain, and the tests run on the host's own topology. Where
# there is none (one-core LLCs in packages of their own), steerd rightly
# opens no window: what these tests prove is the actuator and the ledger
# (give-back, let-go, crashes, vanishing cgroups), not the host's caches,
# so there they run steerd on a synthetic topology of the same CPUs in one
# LLC, and say so. test-topology and t-once check the host's own reading.
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
cores = {}
for c in snap["cpus"]:
    cores.setdefault(c["llc"], set()).add(c["core"])
one_core = [l for l in snap["llcs"] if len(cores.get(l["id"], ())) == 1 and l.get("package", -1) >= 0]
merged = {}
for l in one_core:
    merged.setdefault(l["package"], set()).update(expand(l["cpus"]))
if any(want <= c and len(c) >= 2 for _, c in llcs):
    print("ok host LLCs: " + " ".join(s for s, _ in llcs))
elif any(want <= c and len(c) >= 2 for c in merged.values()):
    print("ok host LLCs: %s, one core each, in one package: one window domain" % " ".join(s for s, _ in llcs))
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
