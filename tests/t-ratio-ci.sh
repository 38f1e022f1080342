#!/usr/bin/env bash
# steerd-ratio-ci, the benchmark report's link to daemon/core/base/stats.c:
# known pairs give the known ratio, interval and verdict as one line of JSON,
# fewer than two pairs still give JSON ("can't tell", exit 0), and a malformed
# line or option exits 2 with a message. $1 = build dir, $2 = shared dir.
set -uo pipefail
BUILD=$1
TOOL=$BUILD/steerd-ratio-ci

[ -x "$TOOL" ] || { echo "SKIP: $TOOL not built"; exit 77; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILED=0
fail() { echo "FAIL: $*" >&2; FAILED=1; }

# run WHAT INPUT -- options...: exit code in $RC, output in $TMP/out, $TMP/err
run() {
        local what=$1 input=$2
        shift 3
        printf '%b' "$input" | "$TOOL" "$@" >"$TMP/out" 2>"$TMP/err"
        RC=$?
        WHAT=$what
}

# check 'python expression over j (the parsed JSON)': after run with exit 0.
check() {
        if [ "$RC" != 0 ]; then
                fail "$WHAT: exit $RC, stderr: $(head -c 400 "$TMP/err")"
                return
        fi
        [ "$(wc -l <"$TMP/out")" = 1 ] || fail "$WHAT: not one line of output: $(cat "$TMP/out")"
        python3 -c '
import json, math, sys
j = json.loads(open(sys.argv[1]).read())
close = lambda a, b, tol=1e-9: a is not None and abs(a - b) <= tol
sys.exit(0 if eval(sys.argv[2]) else 1)
' "$TMP/out" "$1" || fail "$WHAT: '$1' does not hold for $(cat "$TMP/out")"
}

# Expected values worked out with python3's math module from the formulas
# (t975 at df 4 = 2.776, at df 7 = 2.365).

# Four equal pairs and one 50% outlier: mean log ln(1.5)/5.
run "skewed" '# A B\n1 1\n1 1\n\n1 1\n1 1\n1.5 1\n' -- --target-max 1.5
check 'j["n"] == 5 and close(j["ratio"], 1.0844717711976986) and close(j["ci_low"], 0.8658693858919457)'
check 'close(j["ci_high"], 1.3582637770628372) and close(j["sd_log"], 0.18132950884683133)'
check 'j["verdict"] == "can'"'"'t tell" and j["target"] == "met" and j["more_pairs"] > 0'

# log-ratios 0.05 -0.02 0.03 0.01 0.04 -0.01 0.02 0.00 as pairs B = 100.
pairs=""
for l in 0.05 -0.02 0.03 0.01 0.04 -0.01 0.02 0.00; do
        pairs+="$(python3 -c "import math; print(repr(100 * math.exp($l)))") 100\n"
done
run "eight pairs" "$pairs" --
check 'j["n"] == 8 and close(j["ratio"], 1.015113064615719) and close(j["ci_low"], 0.9945334952132752)'
check 'close(j["ci_high"], 1.0361184805872612) and close(j["sd_log"], 0.024494897427831782)'
check 'j["verdict"] == "can'"'"'t tell" and "target" not in j'
# As throughputs with a 5% margin the same interval is well within the band.
run "eight pairs, higher is better, 5%" "$pairs" -- --higher-is-better --margin 5 --target-min 0.99
check 'j["verdict"] == "same" and j["target"] == "met" and j["more_pairs"] == 0'

# Clearly faster (lower is better) and clearly more throughput.
run "faster" '90 100\n91 100\n89 100\n90.5 100\n' --
check 'j["verdict"] == "better" and j["ci_high"] < 1 and j["more_pairs"] == 0'
run "more throughput" '110 100\n111 100\n109 100\n' -- --higher-is-better --target-min 1.2
check 'j["verdict"] == "better" and j["target"] == "missed"'
run "slower" '110 100\n111 100\n109 100\n' -- --lower-is-better --target-max 1.05
check 'j["verdict"] == "worse" and j["target"] == "missed"'

# A constant series: a zero-width interval.
run "constant" '5 5\n7 7\n3 3\n' --
check 'j["ratio"] == 1 and j["ci_low"] == 1 and j["ci_high"] == 1 and j["sd_log"] == 0 and j["verdict"] == "same"'

# Swapping A and B mirrors the interval.
printf '10.2 10.0\n9.7 10.1\n11.5 10.4\n10.0 9.6\n' >"$TMP/ab"
awk '{ print $2, $1 }' "$TMP/ab" >"$TMP/ba"
run "a/b" "$(cat "$TMP/ab")" --
cp "$TMP/out" "$TMP/ab.json"
run "b/a" "$(cat "$TMP/ba")" --
check 'close(j["ci_low"], 1 / json.load(open("'"$TMP"'/ab.json"))["ci_high"], 1e-12)'

# Fewer than two pairs: still JSON, exit 0.
run "one pair" '12 10\n' -- --target-max 1.1
check 'j["n"] == 1 and close(j["ratio"], 1.2) and j["ci_low"] is None and j["verdict"] == "can'"'"'t tell"'
check 'j["target"] == "can'"'"'t tell" and j["more_pairs"] is None'
run "no pairs" '# nothing ran\n\n' --
check 'j["n"] == 0 and j["ratio"] is None and j["verdict"] == "can'"'"'t tell"'

# jq, when there, reads the same line.
if command -v jq >/dev/null; then
        run "jq" '1 1\n1 1\n' --
        [ "$(jq -r .verdict "$TMP/out")" = same ] || fail "jq: verdict is $(jq -r .verdict "$TMP/out")"
fi

# Malformed input and usage errors: exit 2, a message on stderr, no JSON.
usage_error() {
        local what=$1 input=$2
        shift 2
        run "$what" "$input" "$@"
        [ "$RC" = 2 ] || fail "$what: exit $RC, expected 2"
        [ -s "$TMP/err" ] || fail "$what: no message on stderr"
        [ -s "$TMP/out" ] && fail "$what: wrote to stdout: $(cat "$TMP/out")"
}
usage_error "word" '1 1\n1 x\n' --
grep -q "line 2" "$TMP/err" || fail "word: the message does not name line 2: $(cat "$TMP/err")"
usage_error "one number" '1 1\n2\n' --
usage_error "three numbers" '1 2 3\n' --
usage_error "zero" '1 0\n1 1\n' --
usage_error "negative" '-1 1\n1 1\n' --
usage_error "nan" 'nan 1\n1 1\n' --
usage_error "inf" '1 inf\n1 1\n' --
usage_error "bad margin" '1 1\n1 1\n' -- --margin lots
usage_error "negative margin" '1 1\n1 1\n' -- --margin -1
usage_error "bad target" '1 1\n1 1\n' -- --target-max 0
usage_error "two targets" '1 1\n1 1\n' -- --target-max 1 --target-min 1
usage_error "unknown option" '1 1\n1 1\n' -- --frobnicate
usage_error "argument" '1 1\n1 1\n' -- pairs.txt

[ $FAILED = 0 ] || exit 1
echo "t-ratio-ci: all checks passed"
