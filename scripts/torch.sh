#!/usr/bin/env bash
# Fetches the pinned PyTorch the worker builds against (scripts/torch/cpu-requirements.txt: the
# torch 2.15.0 wheel from PyPI and the CUDA runtime pieces its libtorch_cpu links) and unpacks
# what a C++ build needs: torch/include, torch/lib, torch/share and the nvidia/*/lib directories.
# No Python package is installed: the wheels are downloaded by pip with --require-hashes (the
# manylinux/CPython 3.11 builds, whatever the Python that runs pip) and unzipped.
#
# Everything goes to a cache outside the clone keyed by the requirements file's hash:
#   ${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/torch/torch-2.15.0-HASH/{torch,nvidia}
# so a machine downloads it once (about 550 MB of wheels, 1.1 GB unpacked).
#   scripts/torch.sh          fetch if absent, print the directory (progress goes to stderr)
#   scripts/torch.sh --path   print the directory only (exit 1 when not fetched)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
req="$here/scripts/torch/cpu-requirements.txt"
version=$(sed -n 's/^torch==\([^ ]*\) .*/\1/p' "$req")
[ -n "$version" ] || { echo "torch: no torch==VERSION line in $req" >&2; exit 1; }
hash=$(sha256sum "$req" | cut -c1-12)
root="${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/torch"
dir="$root/torch-$version-$hash"
if [ -f "$dir/.complete" ]; then echo "$dir"; exit 0; fi
[ "${1:-}" != --path ] || { echo "torch: $dir not fetched (run scripts/torch.sh)" >&2; exit 1; }

py=$(command -v python3) || { echo "torch: python3 (with pip) is needed to download the wheels" >&2; exit 1; }
"$py" -m pip --version >/dev/null 2>&1 || { echo "torch: $py has no pip (Debian: apt-get install python3-pip)" >&2; exit 1; }
mkdir -p "$root"
tmp=$(mktemp -d "$root/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "torch: downloading torch $version and its CUDA runtime pieces from PyPI (about 550 MB)" >&2
"$py" -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes -r "$req" \
  --only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_25_x86_64 --platform manylinux_2_17_x86_64 \
  -d "$tmp/wheels" >&2
mkdir -p "$tmp/out"
for w in "$tmp"/wheels/*.whl; do
  # The Python half of torch (torch/*.py, torch/_C*.so, ...) stays behind: the C++ build needs
  # the headers, the libraries and the CMake files.
  "$py" - "$w" "$tmp/out" <<'PY'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
keep = ("torch/include/", "torch/lib/", "torch/share/", "torch/version.py", "nvidia/")
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        if info.filename.startswith(keep) and ".dist-info/" not in info.filename:
            z.extract(info, out)
PY
done
for lib in torch/lib/libtorch_cpu.so torch/lib/libc10.so; do
  [ -f "$tmp/out/$lib" ] || { echo "torch: $lib missing from the wheel" >&2; exit 1; }
done
cp "$req" "$tmp/out/requirements.txt"
touch "$tmp/out/.complete"
rm -rf "$dir"
mv "$tmp/out" "$dir"
# Other pins' unpacked trees are not needed any more.
for old in "$root"/torch-*; do [ "$old" = "$dir" ] || rm -rf "$old"; done
echo "$dir"
