#!/usr/bin/env bash
# Offline checks of the conformance suite, on a machine without a GPU:
#   1. the Python tests: compare.py (standard library) and kt_run.py (numpy and
#      the fetched code: Kernel Tuner in simulation mode on the recorded A100
#      convolution cache, and on a fake GPU backend for all four kernels);
#   2. run.sh end to end with gtune's simulated GPU and Kernel Tuner's
#      simulation mode (convolution, dedispersion), checking the summary.
# usage: scripts/conformance/selftest.sh   (env: CONFORMANCE_EXT, PYTHON, GTUNE, A100_DIR)
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export CONFORMANCE_EXT=${CONFORMANCE_EXT:-$ROOT/.ext}
PY=${PYTHON:-python3}
if ! "$PY" -c 'import numpy' 2>/dev/null && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then PY=/usr/bin/python3; fi
export PYTHONDONTWRITEBYTECODE=1
pass=0 fail=0
step() { if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAILED: $*"; fi; }

echo "== Python tests ($PY, fetched code in $CONFORMANCE_EXT)"
step bash -c "cd '$HERE' && '$PY' -m unittest discover -s tests -v"

echo "== run.sh end to end (simulated)"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
G=${GTUNE:-}
if [ -z "$G" ]; then
  G="$TMP/gtune"
  (cd "$ROOT" && CGO_ENABLED=0 go build -o "$G" ./cmd/gtune) || { echo "cannot build gtune"; G=; }
fi
if [ -n "$G" ] && [ -e "$CONFORMANCE_EXT/benchmark_hub/kernels" ]; then
  step env EXT="$CONFORMANCE_EXT" GTUNE="$G" PYTHON="$PY" OUT="$TMP/out" GTUNE_BACKEND=sim KT_SIMULATE=1 \
    DEADLINE_S=0 N=60 SEED=7 "$HERE/run.sh" convolution dedispersion
  step "$PY" - "$TMP/out/summary.json" <<'EOF'
import json, sys
s = {k["kernel"]: k for k in json.load(open(sys.argv[1]))["kernels"]}
for k in ("convolution", "dedispersion"):
    r = s[k]
    assert r["sample"] == 60, (k, r.get("sample"), r.get("error"))
    assert r["kt_evaluated"] == 60 and r["kt_not_evaluated"] == 0, (k, r)
    assert r["kt_error"] is None, (k, r["kt_error"])
assert s["dedispersion"]["published_t1"]["exit_status"] == 2, s["dedispersion"]["published_t1"]
print("summary ok:", {k: (v["sample"], v["kt_evaluated"]) for k, v in s.items()})
EOF
  for f in conformance.log table.md summary.json results.tar.gz; do step test -s "$TMP/out/$f"; done
else
  echo "skipped: no gtune binary or no $CONFORMANCE_EXT/benchmark_hub"
fi
echo "selftest: $pass passed, $fail failed"
[ "$fail" = 0 ]
