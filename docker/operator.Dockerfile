# syntax=docker/dockerfile:1
# The operator image: trainbench-operator on distroless (no shell, no package manager), running
# as uid/gid 65532 (distroless' "nonroot"; the Helm chart's runAsUser).
#
# Image: trainbench/operator:0.1.0   (the chart's image.repository; tag = the project version)
# Build, from the repository root:
#   docker build -f docker/operator.Dockerfile -t trainbench/operator:0.1.0 .
# Not built in this project's CI (no container engine there); tests/helm checks that the name, tag
# and uid here agree with the chart (docs/install.md).

FROM debian:bookworm AS build
# scripts/install-deps.sh's build packages, less libtorch (the operator does not use it) and tests.
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake ninja-build pkg-config \
      libyaml-cpp-dev nlohmann-json3-dev libcpprest-dev libssl-dev prometheus-cpp-dev libboost-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /tmp/build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DTRAINBENCH_BUILD_WORKER=OFF -DTRAINBENCH_BUILD_TESTS=OFF \
 && cmake --build /tmp/build --target trainbench-operator \
 && install -D -m 0755 /tmp/build/operator/trainbench-operator /rootfs/usr/local/bin/trainbench-operator
# The shared libraries it loads beyond distroless/cc's glibc, libstdc++ and libgcc (yaml-cpp,
# cpprest, OpenSSL, prometheus-cpp, brotli, zlib ...), from the same Debian release.
RUN set -eu; libdir=/rootfs/usr/lib/$(gcc -print-multiarch); mkdir -p "$libdir"; \
    ldd /rootfs/usr/local/bin/trainbench-operator | awk '$2 == "=>" && $3 ~ /^\// {print $3}' \
      | grep -Ev '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' \
      | while read -r lib; do cp -L "$lib" "$libdir/"; done

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /rootfs/ /
USER 65532:65532
# The chart runs `trainbench-operator` (on PATH) with its flags; without a kubeconfig it uses the
# pod's ServiceAccount (in-cluster config).
ENTRYPOINT ["/usr/local/bin/trainbench-operator"]
