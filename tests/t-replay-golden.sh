#!/usr/bin/env bash
# The policy engine's plans on the recorded and synthetic snapshot streams
# of tests/fixtures/streams are what they were when the stream was added:
# each stream replays, as JSON lines and as text, byte for byte into its
# .plan.json / .plan.txt. A change that means to change plans regenerates
# them (tests/fixtures/streams/README.md) and says why in its commit.
# $1 = build dir.
set -uo pipefail
BUILD=$1
STEERD=$BUILD/steerd
DIR=$(cd "$(dirname "$0")/fixtures/streams" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=0 bad=0
for gz in "$DIR"/*.jsonl.gz; do
        s=$(basename "$gz" .jsonl.gz)
        gzip -dc "$gz" >"$TMP/$s.jsonl" || { echo "FAIL: $s: cannot unpack $gz" >&2; exit 1; }
        "$STEERD" --replay "$TMP/$s.jsonl" --json --config "$DIR/$s.conf" >"$TMP/$s.plan.json" ||
                { echo "FAIL: $s: --replay --json failed" >&2; exit 1; }
        "$STEERD" --replay "$TMP/$s.jsonl" --config "$DIR/$s.conf" >"$TMP/$s.plan.txt" ||
                { echo "FAIL: $s: --replay failed" >&2; exit 1; }
        for ext in plan.json plan.txt; do
                if ! cmp -s "$DIR/$s.$ext" "$TMP/$s.$ext"; then
                        echo "FAIL: $s.$ext differs from the golden plan:" >&2
                        diff "$DIR/$s.$ext" "$TMP/$s.$ext" | head -20 >&2
                        bad=$((bad + 1))
                fi
        done
        actions=$(grep -o '"kind"' "$TMP/$s.plan.json" | wc -l)
        echo "$s: $(wc -l <"$TMP/$s.plan.json") ticks, $actions actions"
        n=$((n + 1))
done
# The overload rule is the policy's: a recording's flags are recomputed, so
# a stream whose flags say the opposite replays into the same plans.
s=synthetic-1llc
gzip -dc "$DIR/$s.jsonl.gz" | sed 's/"overloaded": true/"overloaded": X/g; s/"overloaded": false/"overloaded": true/g; s/"overloaded": X/"overloaded": false/g' >"$TMP/flipped.jsonl"
grep -q '"overloaded": false' "$TMP/flipped.jsonl" || { echo "FAIL: no flag to flip in $s" >&2; exit 1; }
"$STEERD" --replay "$TMP/flipped.jsonl" --json --config "$DIR/$s.conf" >"$TMP/flipped.plan.json" ||
        { echo "FAIL: replay of the flipped stream failed" >&2; exit 1; }
cmp -s "$DIR/$s.plan.json" "$TMP/flipped.plan.json" ||
        { echo "FAIL: the recorded overloaded flags changed the plans: the rule must be the policy's" >&2; bad=$((bad + 1)); }

[ "$n" -ge 4 ] || { echo "FAIL: expected at least 4 streams in $DIR, found $n" >&2; exit 1; }
[ "$bad" -eq 0 ] || exit 1
echo "PASS: $n streams replay byte-identically"
