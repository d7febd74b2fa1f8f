#!/usr/bin/env bash
# Fetches the pinned PyTorch the worker builds against and unpacks what a C++ build needs, in one
# of two flavours:
#   cpu   scripts/torch/cpu-requirements.txt: the torch 2.15.0 wheel from PyPI (torch/include,
#         torch/lib, torch/share) and the two CUDA runtime pieces its libtorch_cpu links (about
#         550 MB of wheels, 1.1 GB unpacked);
#   cuda  the cpu flavour's torch/ (the same files: links to them, so that both builds compile
#         against one include path and share ccache's objects) and every nvidia-* library and
#         header libtorch_cuda needs (scripts/torch/cuda-requirements.txt: cuBLAS, cuDNN, NCCL,
#         ...; about 2.5 GB more of wheels, 4 GB unpacked).
# No Python package is installed: the wheels are downloaded by pip with --require-hashes (the
# manylinux/CPython 3.11 builds, whatever the Python that runs pip: pip does not widen an explicit
# --platform to the older manylinux tags it implies, nor to their legacy names (manylinux2014 is
# manylinux_2_17), so each is listed) and unzipped.
#
# Everything goes to a cache outside the clone keyed by the requirements files' hash:
#   ${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/torch/{torch,cuda}-2.15.0-HASH/{torch,nvidia}
# so a machine downloads each once.
#   scripts/torch.sh [cpu|cuda]          fetch if absent, print the directory (progress: stderr)
#   scripts/torch.sh --path [cpu|cuda]   print the directory only (exit 1 when not fetched)
#   scripts/torch.sh --libs [cpu|cuda]   the unpacked libraries a worker of the flavour loads
#                                        (what its image ships), one path a line
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
mode=fetch
case "${1:-}" in --path | --libs) mode=${1#--}; shift ;; esac
flavour=${1:-cpu}
case $flavour in cpu | cuda) ;; *) echo "usage: scripts/torch.sh [--path | --libs] [cpu | cuda]" >&2; exit 2 ;; esac
cpu_req="$here/scripts/torch/cpu-requirements.txt"
cuda_req="$here/scripts/torch/cuda-requirements.txt"
version=$(sed -n 's/^torch==\([^ ]*\) .*/\1/p' "$cpu_req")
[ -n "$version" ] || { echo "torch: no torch==VERSION line in $cpu_req" >&2; exit 1; }
root="${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/torch"
cpu_dir="$root/torch-$version-$(sha256sum "$cpu_req" | cut -c1-12)"
cuda_dir="$root/cuda-$version-$(cat "$cpu_req" "$cuda_req" | sha256sum | cut -c1-12)"
if [ "$flavour" = cpu ]; then dir=$cpu_dir; else dir=$cuda_dir; fi

# libs: for cpu, libtorch_cpu and what it links; for cuda, torch's libraries but the Python
# bindings, and every library of the nvidia wheels (cuDNN and NVRTC load parts of themselves
# with dlopen, so a walk of NEEDED entries would miss some).
libs() {
  if [ "$flavour" = cpu ]; then
    printf '%s\n' "$dir/torch/lib/libtorch_cpu.so" "$dir/torch/lib/libc10.so" "$dir/torch/lib/libgomp.so.1" \
      "$dir/nvidia/cu13/lib/libcudart.so.13" "$dir/nvidia/cu13/lib/libcupti.so.13"
  else
    find -L "$dir/torch/lib" -maxdepth 1 -type f -name 'lib*.so*' ! -name '*python*' ! -name 'libshm*' | sort
    find "$dir/nvidia" -path '*/lib/*' -type f -name 'lib*.so*' | sort
  fi
}

if [ -f "$dir/.complete" ]; then
  if [ "$mode" = libs ]; then libs; else echo "$dir"; fi
  exit 0
fi
[ "$mode" = fetch ] || { echo "torch: $dir not fetched (run scripts/torch.sh $flavour)" >&2; exit 1; }

py=$(command -v python3) || { echo "torch: python3 (with pip) is needed to download the wheels" >&2; exit 1; }
"$py" -m pip --version >/dev/null 2>&1 || { echo "torch: $py has no pip (Debian: apt-get install python3-pip)" >&2; exit 1; }
[ "$flavour" = cpu ] || bash "$0" cpu >/dev/null # the torch/ that the cuda flavour links to
mkdir -p "$root"
tmp=$(mktemp -d "$root/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ "$flavour" = cpu ]; then
  req=$cpu_req
  echo "torch: downloading torch $version and its CUDA runtime pieces from PyPI (about 550 MB)" >&2
else
  req=$cuda_req
  echo "torch: downloading the CUDA libraries of torch $version from PyPI (about 2.5 GB)" >&2
fi
"$py" -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes -r "$req" \
  --only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 \
  $(for t in _2_28 _2_27 _2_25 _2_18 _2_17 _2_12 _2_5 2014 2010 1; do echo --platform "manylinux${t}_x86_64"; done) \
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
if [ "$flavour" = cpu ]; then
  check=("$tmp/out/torch/lib/libtorch_cpu.so" "$tmp/out/torch/lib/libc10.so")
else
  cp -a "$cpu_dir/nvidia/." "$tmp/out/nvidia/" # cudart and CUPTI, from cpu-requirements.txt
  # torch/: the cpu flavour's files. Headers by a link (the build resolves it: one include path);
  # libraries by hard links, since libtorch_cuda finds the nvidia-* libraries through its RPATH
  # $ORIGIN/../../nvidia/*/lib, relative to the directory it is loaded from.
  mkdir "$tmp/out/torch"
  for d in include share; do ln -s "../../$(basename "$cpu_dir")/torch/$d" "$tmp/out/torch/$d"; done
  cp "$cpu_dir/torch/version.py" "$tmp/out/torch/"
  cp -al "$cpu_dir/torch/lib" "$tmp/out/torch/lib"
  check=("$tmp/out/torch/lib/libtorch_cuda.so" "$tmp/out/torch/lib/libc10_cuda.so" "$tmp/out/nvidia/nccl/lib/libnccl.so.2"
    "$tmp/out/nvidia/nccl/include/nccl.h" "$tmp/out/nvidia/cu13/include/cublas_v2.h" "$tmp/out/nvidia/cudnn/include/cudnn.h")
fi
for f in "${check[@]}"; do [ -e "$f" ] || { echo "torch: ${f#"$tmp/out/"} missing from the wheels" >&2; exit 1; }; done
cat "$req" >"$tmp/out/requirements.txt"
touch "$tmp/out/.complete"
rm -rf "$dir"
mv "$tmp/out" "$dir"
# Other pins' unpacked trees of this flavour are not needed any more.
prefix=torch
[ "$flavour" = cpu ] || prefix=cuda
for old in "$root/$prefix"-*; do [ "$old" = "$dir" ] || rm -rf "$old"; done
echo "$dir"
