#!/usr/bin/env bash
# README command 2: install the dependencies, build, and run every test.
#  1. the full build (core, cli, worker) and all ctest tests;
#  2. core/ (and operator/ once it exists) rebuilt with AddressSanitizer + UBSan, their tests run again.
# Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)

echo "== build (RelWithDebInfo) =="
bash scripts/build.sh
echo "== tests =="
(cd build && ctest --output-on-failure --timeout 600 -j1)

echo "== core tests under AddressSanitizer + UBSan =="
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTRAINBENCH_BUILD_WORKER=OFF -DTRAINBENCH_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs" --target core_tests
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -L core -j"$jobs")
