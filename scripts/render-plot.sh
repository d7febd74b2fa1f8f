#!/usr/bin/env bash
# Renders an SVG (the scaling plot of `trainbench report FILE.json --plot OUT.svg`) to PNG with
# headless Chromium (Debian's `chromium`), at the SVG's own width and height.
#
#   scripts/render-plot.sh IN.svg OUT.png [SCALE]
#
# SCALE is the device scale factor (default 1; 2 for the sharper PNGs in docs/img/).
# Exits 77 when chromium is not installed (ctest counts that as skipped).
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 IN.svg OUT.png [SCALE]" >&2
  exit 2
fi
in=$1 out=$2 scale=${3:-1}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "render-plot: chromium is not installed (scripts/install-deps.sh installs it)" >&2
  exit 77
fi
[ -r "$in" ] || { echo "render-plot: cannot read $in" >&2; exit 2; }
# The canvas is the SVG's own size: its root element's width="..." height="...".
size=$(head -c 2000 "$in" | tr '\n' ' ' | sed -n 's/.*<svg[^>]* width="\([0-9.]*\)" height="\([0-9.]*\)".*/\1,\2/p')
[ -n "$size" ] || { echo "render-plot: $in has no <svg width=... height=...>" >&2; exit 2; }
w=$(printf '%.0f' "${size%,*}") h=$(printf '%.0f' "${size#*,}")

# A profile of its own (concurrent renders do not share a lock) removed afterwards; as root
# Chromium refuses to start without --no-sandbox.
profile=$(mktemp -d "${TMPDIR:-/tmp}/render-plot.XXXXXX")
trap 'rm -rf "$profile"' EXIT
out_abs=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
in_url=$(python3 -c 'import pathlib, sys; print(pathlib.Path(sys.argv[1]).resolve().as_uri())' "$in")
rm -f "$out_abs"
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
  --user-data-dir="$profile" --force-device-scale-factor="$scale" --window-size="$w,$h" \
  --screenshot="$out_abs" "$in_url" >"$profile/chromium.log" 2>&1 || {
  echo "render-plot: chromium failed; its output:" >&2
  cat "$profile/chromium.log" >&2
  exit 1
}
[ -s "$out_abs" ] || { echo "render-plot: chromium wrote no $out" >&2; cat "$profile/chromium.log" >&2; exit 1; }
echo "render-plot: $out (${w}x${h} at scale $scale)"
