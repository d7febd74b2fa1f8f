# syntax=docker/dockerfile:1
# The operator image: trainbench-operator on distroless (no shell, no package manager), running
# as uid/gid 65532 (distroless' "nonroot"; the Helm chart's runAsUser).
#
# Image: trainbench/operator:0.1.0   (the chart's image.repository; tag = the project version)
# Build, from the repository root:
#   docker build -f docker/operator.Dockerfile -t trainbench/operator:0.1.0 .
# The bases are build arguments so that tests can give local stand-ins; the defaults are what a
# user builds from. This project's tests build this file with buildah (scripts/images.sh, with
# local bases made by mmdebstrap) and run the image (tests/images, docs/install.md "Images").
ARG BUILD_IMAGE=debian:bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${BUILD_IMAGE} AS build
# scripts/install-deps.sh's build packages, less libtorch (the operator does not use it) and tests.
# apt's downloads and lists and ccache's objects live in cache mounts, kept between builds.
RUN --mount=type=cache,id=trainbench-apt-archives,target=/var/cache/apt/archives \
    --mount=type=cache,id=trainbench-apt-lists,target=/var/lib/apt/lists \
    rm -f /etc/apt/apt.conf.d/docker-clean \
 && apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake ninja-build pkg-config ccache \
      libyaml-cpp-dev nlohmann-json3-dev libcpprest-dev libssl-dev prometheus-cpp-dev libboost-dev
WORKDIR /src
COPY . .
# The flags of the tested build (scripts/build.sh: RelWithDebInfo), stripped at install. Rebuilds
# are fast through ccache, which keys on content (a cached build tree would trust mtimes, and
# COPY keeps the context's: a changed file older than its object was once left out). ccache keys on
# paths relative to the source tree and on no locale (CMakeLists.txt's launcher), so its objects
# serve this build and scripts/build.sh's alike (scripts/images.sh).
RUN --mount=type=cache,id=trainbench-ccache,target=/root/.cache/ccache \
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DTRAINBENCH_BUILD_WORKER=OFF -DTRAINBENCH_BUILD_TESTS=OFF \
 && cmake --build build --target trainbench-operator \
 && install -D -s -m 0755 build/operator/trainbench-operator /rootfs/usr/local/bin/trainbench-operator
# The shared libraries it loads beyond distroless/cc's glibc, libstdc++ and libgcc (yaml-cpp,
# cpprest, OpenSSL, prometheus-cpp, brotli, zlib ...), from the same Debian release. And
# distroless' /home/nonroot (65532's) and /var/tmp, /var/lock (world-writable) made root's: the
# operator writes nothing there, and no file in the image is to be writable by its user except
# /tmp, where the pod mounts an emptyDir (tests/images/image_checks.sh).
RUN set -eu; libdir=/rootfs/usr/lib/$(gcc -print-multiarch); mkdir -p "$libdir"; \
    ldd /rootfs/usr/local/bin/trainbench-operator | awk '$2 == "=>" && $3 ~ /^\// {print $3}' \
      | grep -Ev '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' \
      | while read -r lib; do cp -L "$lib" "$libdir/"; done; \
    install -d -m 0755 /rootfs/home/nonroot /rootfs/var/tmp /rootfs/var/lock

FROM ${RUNTIME_IMAGE}
COPY --from=build /rootfs/ /
USER 65532:65532
# The chart runs `trainbench-operator` (on PATH) with its flags; without a kubeconfig it uses the
# pod's ServiceAccount (in-cluster config).
ENTRYPOINT ["/usr/local/bin/trainbench-operator"]
