#!/usr/bin/env bash
# tests/scale/plot_figures.py on small synthetic figures: the SVG parses as XML, holds the series'
# legend texts and the client's limit, and the same input gives the same bytes (also with --compare).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/plot-figures.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/a.json" <<'JSON'
{"operatorCpuSeconds": 1.5, "operatorVmHWMKiB": 40960, "statusBytes": 1234, "qps": 5, "runs": [
 {"index": 0, "gpus": 1, "pods": 2, "tCreated": 0.03, "tBound": 0.09, "tRunning": 0.35, "tResult": 1.2,
  "operatorRequests": 10, "peakRequestsPer10s": 10},
 {"index": 2, "gpus": 64, "pods": 9, "tCreated": 0.6, "tBound": 0.62, "tRunning": 0.71, "tResult": 1.5,
  "operatorRequests": 16, "peakRequestsPer10s": 16},
 {"index": 1, "gpus": 8, "pods": 2, "tCreated": 0, "tBound": 0.04, "tRunning": 0.05, "tResult": 0.75,
  "operatorRequests": 9, "peakRequestsPer10s": 9}]}
JSON
sed 's/"qps": 5/"qps": 20/; s/"tCreated": 0.6/"tCreated": 0.2/' "$tmp/a.json" >"$tmp/b.json"

python3 "$here/plot_figures.py" "$tmp/a.json" "$tmp/one.svg"
python3 "$here/plot_figures.py" "$tmp/a.json" "$tmp/two.svg"
cmp "$tmp/one.svg" "$tmp/two.svg"
python3 "$here/plot_figures.py" "$tmp/a.json" "$tmp/c1.svg" --compare "$tmp/b.json" --labels "one by one" batches
python3 "$here/plot_figures.py" "$tmp/a.json" "$tmp/c2.svg" --compare "$tmp/b.json" --labels "one by one" batches
cmp "$tmp/c1.svg" "$tmp/c2.svg"

python3 - "$tmp/one.svg" "$tmp/c1.svg" <<'PY'
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def texts(path):
    root = ET.parse(path).getroot()
    assert root.tag == NS + "svg", root.tag
    return " | ".join(t.text for t in root.iter(NS + "text")), root


def check(path, expected, series_count):
    """Each expected text within one <text> (a legend entry may be one line or two)."""
    found, root = texts(path)
    missing = [e for e in expected if e not in found]
    assert not missing, "%s lacks %s" % (path, missing)
    lines = [g for g in root.iter(NS + "g") if g.get("class") == "series"]
    assert len(lines) == series_count, (path, len(lines))


single = ["all pods created (tCreated): 0.6 s at 64 GPUs", "all pods bound (tBound): 0.62 s at 64 GPUs",
          "all pods Running (tRunning): 0.71 s at 64 GPUs", "result collected (tResult): 1.5 s at 64 GPUs",
          "API requests per run (operatorRequests): 16 at 64 GPUs",
          "peak requests in any 10 s (peakRequestsPer10s): 16 at 64 GPUs",
          "client limit: qps 5 x 10 s = 50", "(a) Seconds from a run's first pod create",
          "seconds (log scale)", "requests (log scale)", "GPUs (ranks) in the run, log2 scale"]
check(sys.argv[1], single, 6)
compare = ["all pods created (tCreated)", "one by one 0.6 s, batches 0.2 s at 64 GPUs",
           "all pods Running (tRunning)", "one by one: solid, filled", "batches: dashed, hollow",
           "one by one: client limit: qps 5 x 10 s = 50", "batches: client limit: qps 20 x 10 s = 200"]
check(sys.argv[2], compare, 8)
# tCreated 0 of the 8-GPU run has no place on a log axis: 2 of its 3 points drawn
root = ET.parse(sys.argv[1]).getroot()
created = [g for g in root.iter(NS + "g") if g.get("data-key") == "tCreated"][0]
assert len([e for e in created if e.get("class") == "point"]) == 2
print("plot_figures_test: ok")
PY
