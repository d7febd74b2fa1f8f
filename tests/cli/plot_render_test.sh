#!/usr/bin/env bash
# The scaling plot as a reader sees it: `trainbench report FILE.json --plot` of a report with an
# efficiency target and a failed run, rendered by headless Chromium (scripts/render-plot.sh) to
# PNG, which must have the SVG's size, be neither blank nor a solid fill, and show ddp's blue and
# the target's (and the failed run's) red. Skipped (77) without chromium.
#   plot_render_test.sh TRAINBENCH SOURCE_DIR
set -euo pipefail
trainbench=$1 src=$2
command -v chromium >/dev/null || { echo "SKIP: chromium is not installed"; exit 77; }
python3 "$src/tests/cli/png_check.py" --self-test

work=$(mktemp -d "${TMPDIR:-/tmp}/plot-render.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 - "$src/tests/cli/data/report-bucket25.json" "$work/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["benchmark"]["efficiencyTarget"] = 0.9
failed = {k: r["runs"][-1][k] for k in ("index", "label", "devices", "nodes", "devicesPerNode", "worldSize",
                                        "paradigm", "bucketCapMB")}
failed.update(index=4, label="2M/2G", devices="4 CPUs", nodes=2, devicesPerNode=2, worldSize=4,
              phase="Failed", error="rank 3 was killed by signal 9 (SIGKILL)")
r["runs"].append(failed)
json.dump(r, open(sys.argv[2], "w"))
PY
"$trainbench" report "$work/report.json" --plot "$work/scaling.svg" >"$work/report.txt"
grep -q '2M/2G' "$work/report.txt"
grep -q 'class="failed" data-run="4"' "$work/scaling.svg"
bash "$src/scripts/render-plot.sh" "$work/scaling.svg" "$work/scaling.png"
python3 "$src/tests/cli/png_check.py" "$work/scaling.png" --size 960x500 --color 0072B2 --color D62728 --color 000000
echo "plot_render_test: ok"
