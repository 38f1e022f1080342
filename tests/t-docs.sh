#!/usr/bin/env bash
# The README is what a newcomer reads first: at most 12 KB, and every link
# in it and in docs/ resolves to a file of this repository (no link leaves
# it: the design is docs/DESIGN.md, not a file beside the clone). $1 =
# build dir (unused: the check reads the tree).
set -uo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 needed"; exit 77; }
exec python3 - "$TOP" <<'PYEOF'
import os, re, sys
top = sys.argv[1]
bad = []
size = os.path.getsize(os.path.join(top, "README.md"))
print(f"README.md: {size} bytes (at most 12288)")
if size > 12288:
    bad.append(f"README.md is {size} bytes, more than 12 KB")
files = ["README.md"] + sorted("docs/" + f for f in os.listdir(os.path.join(top, "docs")) if f.endswith(".md"))
link = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
n = 0
for f in files:
    text = open(os.path.join(top, f), encoding="utf-8").read()
    # Code blocks hold shell, not links.
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for m in link.finditer(text):
        target = m.group(1)
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        full = os.path.normpath(os.path.join(top, os.path.dirname(f), path))
        n += 1
        if not (full == top or full.startswith(top + os.sep)):
            bad.append(f"{f}: link {target} leaves the repository")
        elif not os.path.exists(full):
            bad.append(f"{f}: link {target} resolves to nothing ({os.path.relpath(full, top)})")
print(f"{n} relative links in {len(files)} files checked")
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PYEOF
