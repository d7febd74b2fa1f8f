# syntax=docker/dockerfile:1
# The CPU worker image: `trainbench` (trainer pods run `trainbench node-launch`) and
# `trainbench-worker` (master pods run `trainbench-worker --master`; node-launch starts one per
# device), both on PATH, with Debian's libtorch 1.13 (gloo). Runs as uid/gid 65532, the
# runAsUser the operator gives every benchmark pod (operator/controller/manifests.cpp).
#
# Image: trainbench/worker:0.1.0   (the operator's default spec.template.image; tag = the project version)
# Build, from the repository root:
#   docker build -f docker/worker.Dockerfile -t trainbench/worker:0.1.0 .
# Not built in this project's CI (no container engine there); tests/helm checks that the name, tag
# and uid here agree with the operator and the chart (docs/install.md).

FROM debian:bookworm AS build
# scripts/install-deps.sh's build packages (no test frameworks: tests are off here).
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake ninja-build pkg-config \
      libtorch-dev libgloo-dev libyaml-cpp-dev nlohmann-json3-dev libcpprest-dev libssl-dev \
      prometheus-cpp-dev libboost-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /tmp/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINBENCH_BUILD_TESTS=OFF \
 && cmake --build /tmp/build --target trainbench trainbench-worker \
 && install -D -m 0755 /tmp/build/cli/trainbench /rootfs/usr/local/bin/trainbench \
 && install -D -m 0755 /tmp/build/worker/trainbench-worker /rootfs/usr/local/bin/trainbench-worker

FROM debian:bookworm-slim
# Runtime libraries only (apt pulls their dependencies); libopenblas0-pthread becomes libblas.so.3
# (Debian's reference BLAS is about 5x slower, docs/development.md).
RUN apt-get update \
 && apt-get install -y --no-install-recommends libtorch1.13 libgloo0 libopenblas0-pthread \
      libyaml-cpp0.7 libcpprest2.10 libssl3 libprometheus-cpp-core1.0 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /rootfs/usr/local/bin/ /usr/local/bin/
# Fail the build when a library is missing rather than the first benchmark pod.
RUN ! ldd /usr/local/bin/trainbench /usr/local/bin/trainbench-worker | grep 'not found'
# The root filesystem is read-only in the pods; the operator mounts an emptyDir on /tmp.
ENV HOME=/tmp
USER 65532:65532
CMD ["trainbench", "version"]
