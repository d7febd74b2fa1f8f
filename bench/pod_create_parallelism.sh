#!/usr/bin/env bash
# Pod creation of a big run, one create at a time against slow-start batches (the operator's
# --pod-create-parallelism, operator/controller/controller.hpp create_pods): the 1,000-GPU sweep
# of tests/scale/sweep1000_e2e.sh (real control plane, kwok nodes, the real scheduler), run
# ROUNDS times each way, alternating, in one invocation. Prints, per run size, the median seconds
# from a run's first pod create to its last (tCreated), to all bound (tBound) and to all Running
# (tRunning), the scheduler's FailedScheduling tries, and the operator's peak requests in 10 s,
# for each setting. BENCH_OUT=DIR keeps the sweeps' JSON figures there (pP-rR.json).
#
#   bash bench/pod_create_parallelism.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
ROUNDS=${2:-2}
if [ -n "${BENCH_OUT:-}" ]; then
  OUT=$BENCH_OUT
  mkdir -p "$OUT"
else
  OUT=$(mktemp -d "${TMPDIR:-/tmp}/pod-create-bench.XXXXXX")
  trap 'rm -rf "$OUT"' EXIT
fi
for round in $(seq 1 "$ROUNDS"); do
  for p in 1 32; do
    echo "round $round: --pod-create-parallelism=$p" >&2
    OPERATOR_ARGS="--pod-create-parallelism=$p" bash tests/scale/sweep1000_e2e.sh "$BUILD" "$OUT/p$p-r$round.json" \
      >"$OUT/p$p-r$round.log" 2>&1 || { tail -30 "$OUT/p$p-r$round.log" >&2; exit 1; }
  done
done
python3 - "$OUT" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
by = {}
for f in sorted(glob.glob(f"{out}/p*-r*.json")):
    p = f.split("/")[-1].split("-")[0][1:]
    by.setdefault(p, []).append(json.load(open(f)))
print("| GPUs | pods | tCreated: 1 at a time / slow start | tBound | tRunning | FailedScheduling |")
print("| ---: | ---: | ---: | ---: | ---: | ---: |")
runs = by["1"][0]["runs"]
for i, r in enumerate(runs):
    med = lambda p, k: statistics.median(d["runs"][i][k] for d in by[p])
    both = lambda k, f="{:.2f} s": f"{f.format(med('1', k))} / {f.format(med('32', k))}"
    tries = lambda p: statistics.median(d["runs"][i]["failedScheduling"] for d in by[p])
    print(f"| {r['gpus']} | {r['pods']} | {both('tCreated')} | {both('tBound')} | {both('tRunning')} "
          f"| {tries('1'):g} / {tries('32'):g} |")
for p in ("1", "32"):
    peak = max(d["operatorPeakRequestsPer10s"] for d in by[p])
    print(f"\n--pod-create-parallelism={p}: {len(by[p])} runs, operator peak {peak} requests in 10 s "
          f"(limit {by[p][0]['qps'] * 10:.0f})", end="")
print()
PY
