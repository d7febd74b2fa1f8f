#!/usr/bin/env bash
# A venv with Python PyTorch for the side-by-side benchmarks (bench/*_vs_pytorch.sh): the torch
# 2.15.0 wheel the worker's libtorch comes from, with everything it needs on Linux x86_64
# (scripts/torch/python-requirements.txt: exact versions, sha256 hashes, --require-hashes), so
# both sides of a comparison run the same libtorch binary, and DeepSpeed 0.19.8 for
# examples/programs/deepspeed_zero.py (scripts/torch/deepspeed-requirements.txt, the same way).
# Not needed to build or test.
#
# The wheels are downloaded into ${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/wheels/python
# (about 2.8 GB: the default wheel is the CUDA build and `import torch` loads its nvidia-*
# libraries even on a CPU; DeepSpeed and its dependencies add about 6 MB; an interrupted download
# resumes from what is there) and installed into .../venv/torch-VERSION-HASH, HASH of both
# requirement files (a venv cannot move, so it is made in place; .complete marks a finished one).
# The venv is the cache: once it is complete the downloads are deleted (2.9 GB that a machine
# running the whole suite, images included, needs for other things; a new pin downloads again). DeepSpeed publishes only an sdist: that one source
# package is allowed (hash-checked like the wheels) and built with the venv's own setuptools and
# torch (--no-build-isolation, DS_BUILD_OPS=0: no op is compiled now; DeepSpeed compiles the few a
# program needs on first use, with g++, into $TORCH_EXTENSIONS_DIR).
#   scripts/python-torch.sh          create if absent, print the venv's python
#   scripts/python-torch.sh --path   print it only (exit 1 when absent)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
req="$here/scripts/torch/python-requirements.txt"
dsreq="$here/scripts/torch/deepspeed-requirements.txt"
version=$(sed -n 's/^torch==\([^ ]*\) .*/\1/p' "$req")
[ -n "$version" ] || { echo "python-torch: no torch==VERSION line in $req" >&2; exit 1; }
cache="${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}"
dir="$cache/venv/torch-$version-$(cat "$req" "$dsreq" | sha256sum | cut -c1-12)"
# The downloads (and what older versions of this script left there) once the venv is complete.
clean_downloads() { rm -rf "$cache/wheels"; }
# DeepSpeed's shared-memory comm op, which deepspeed.init_distributed compiles with g++ the first
# time it runs on the CPU (torch's JIT extensions): built here, once, into the TORCH_EXTENSIONS_DIR
# that examples/programs/deepspeed_zero.py and the tests use, so no run waits on a compile (a
# minute on 2 idle cores, over 4 on a fresh machine's busy ones, where a job's hang watch named the
# compiling ranks: controlplane.operator.e2e.program, 2026-12-07).
ds_ops="$cache/torch_extensions"
build_ds_ops() {
  [ ! -f "$ds_ops/deepspeed_shm_comm/deepspeed_shm_comm.so" ] || return 0
  echo "python-torch: compiling DeepSpeed's shm comm op into $ds_ops (once)" >&2
  # With the venv's ninja first on PATH, as deepspeed_zero.py runs (ninja's command hash differs
  # between versions: another ninja would compile the op again).
  PATH="$dir/bin:$PATH" TORCH_EXTENSIONS_DIR="$ds_ops" "$dir/bin/python" -c \
    'from deepspeed.comm.torch import build_shm_op; assert build_shm_op() is not None, "no shm op"' >&2
}
if [ -f "$dir/.complete" ]; then
  [ "${1:-}" = --path ] || build_ds_ops
  clean_downloads
  echo "$dir/bin/python"
  exit 0
fi
[ "${1:-}" != --path ] || { echo "python-torch: $dir not made (run scripts/python-torch.sh)" >&2; exit 1; }

py=$(command -v python3) || { echo "python-torch: python3 is needed" >&2; exit 1; }
wheels="$cache/wheels/python"
mkdir -p "$wheels"
echo "python-torch: downloading torch $version, DeepSpeed and their dependencies from PyPI (about 2.8 GB, once)" >&2
"$py" -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes -r "$req" -r "$dsreq" \
  --only-binary=:all: --no-binary=deepspeed --python-version 3.11 --implementation cp --abi cp311 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_25_x86_64 \
  --platform manylinux_2_24_x86_64 --platform manylinux_2_18_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux_2_12_x86_64 --platform manylinux_2_5_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux2010_x86_64 --platform manylinux1_x86_64 --find-links "$wheels" -d "$wheels" >&2
rm -rf "$dir"
"$py" -m venv "$dir" || { echo "python-torch: $py -m venv failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --find-links "$wheels" \
  --require-hashes -r "$req" >&2
# After torch: DeepSpeed's setup.py is run by the venv's python, with its setuptools and torch.
DS_BUILD_OPS=0 "$dir/bin/python" -m pip install --quiet --disable-pip-version-check --no-index \
  --find-links "$wheels" --no-build-isolation --require-hashes -r "$dsreq" >&2
"$dir/bin/python" -c 'import torch, torch.distributed as d; assert d.is_gloo_available(); print("python-torch:", torch.__version__, torch.__file__)' >&2
"$dir/bin/python" -c 'import deepspeed; print("python-torch: deepspeed", deepspeed.__version__, deepspeed.__file__)' >&2
build_ds_ops
touch "$dir/.complete"
# Other pins' venvs are not needed any more.
for old in "$cache"/venv/torch-*; do [ "$old" = "$dir" ] || rm -rf "$old"; done
clean_downloads
echo "$dir/bin/python"
