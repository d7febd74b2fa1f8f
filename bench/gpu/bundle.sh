#!/usr/bin/env bash
# Packs what a GPU machine with no package registry needs to run trainbench's GPU checks
# (bench/gpu/checks.sh) through this machine's `trainbench`:
#  - the cuda worker image's trainbench-worker (TORCH_FLAVOUR=cuda, built into BUILD_DIR-cuda,
#    stripped as in docker/worker.Dockerfile: bin/trainbench-worker-cuda) and the sha256 of every
#    library that image carries (torch-libs.sha256: scripts/torch.sh --libs cuda, the pinned
#    wheels' files). The GPU machine has no container engine and the libraries (3.8 GB) are too
#    big to carry; a machine with the same pip torch (2.15.0 and its nvidia-* wheels) has the same
#    files, which checks.sh verifies by hash before it uses them;
#  - for a machine with another torch: the libtorch-free static libraries built here (debug info
#    stripped) and the headers the worker's libtorch translation units include, to build the
#    worker against its own CUDA libtorch (bench/gpu/CMakeLists.txt);
#  - the Debian shared libraries the CLI and the worker link.
# Usage: bash bench/gpu/bundle.sh [build-dir] [out-dir]   (defaults: build, .gpu)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(realpath "${1:-$root/build}")
out=${2:-$root/.gpu}
cmake --build "$build" --target trainbench trainbench_core trainbench_telemetry trainbench_worker_support \
  trainbench_worker_metrics trainbench_kube >/dev/null
rm -rf "$out"
mkdir -p "$out/lib" "$out/include" "$out/bin"
for a in core/libtrainbench_core.a kube/libtrainbench_kube.a telemetry/libtrainbench_telemetry.a \
         worker/libtrainbench_worker_support.a worker/libtrainbench_worker_metrics.a; do
  strip --strip-debug -o "$out/lib/$(basename "$a")" "$build/$a"
done
strip -o "$out/bin/trainbench" "$build/cli/trainbench"
( cd "$root" && BUILD_DIR="$build-cuda" TORCH_FLAVOUR=cuda BUILD_TARGETS=trainbench-worker \
    bash scripts/build.sh -DTRAINBENCH_BUILD_TESTS=OFF >/dev/null )
strip -o "$out/bin/trainbench-worker-cuda" "$build-cuda/worker/trainbench-worker"
bash "$root/scripts/torch.sh" --libs cuda | xargs sha256sum | sed 's|  .*/|  |' >"$out/torch-libs.sha256"
multiarch=/usr/lib/x86_64-linux-gnu
for so in libprometheus-cpp-core.so.1.0 libyaml-cpp.so.0.7 libcpprest.so.2.10 libssl.so.3 libcrypto.so.3 \
          libbrotlidec.so.1 libbrotlienc.so.1 libbrotlicommon.so.1; do
  cp -L "$multiarch/$so" "$out/lib/$so"
done
for d in nlohmann cpprest pplx prometheus openssl; do cp -r "/usr/include/$d" "$out/include/"; done
cp -r /usr/include/x86_64-linux-gnu/openssl/. "$out/include/openssl/"
du -sh "$out"
