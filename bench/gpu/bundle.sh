#!/usr/bin/env bash
# Packs what a GPU machine with no package registry needs to build trainbench-worker against its
# own CUDA libtorch (bench/gpu/CMakeLists.txt) and run it through this machine's `trainbench`:
# the libtorch-free static libraries built here (debug info stripped), the Debian shared
# libraries they and the CLI link, and the headers the worker's libtorch translation units include.
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
multiarch=/usr/lib/x86_64-linux-gnu
for so in libprometheus-cpp-core.so.1.0 libyaml-cpp.so.0.7 libcpprest.so.2.10 libssl.so.3 libcrypto.so.3 \
          libbrotlidec.so.1 libbrotlienc.so.1 libbrotlicommon.so.1; do
  cp -L "$multiarch/$so" "$out/lib/$so"
done
for d in nlohmann cpprest pplx prometheus openssl; do cp -r "/usr/include/$d" "$out/include/"; done
cp -r /usr/include/x86_64-linux-gnu/openssl/. "$out/include/openssl/"
du -sh "$out"
