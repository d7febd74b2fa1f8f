# syntax=docker/dockerfile:1
# The worker images: `trainbench` (trainer pods run `trainbench node-launch`) and
# `trainbench-worker` (master pods run `trainbench-worker --master`; node-launch starts one per
# device), both on PATH, with the libtorch of the pinned torch wheel from PyPI, in one of two
# flavours (TORCH_FLAVOUR, cmake/TrainbenchTorch.cmake, scripts/torch.sh):
#   cpu   only what the CPU worker loads: libtorch_cpu, libc10, their OpenMP, and the CUDA runtime
#         and CUPTI that libtorch_cpu links (scripts/torch/cpu-requirements.txt);
#   cuda  libtorch_cuda too, with the CUDA 13 libraries, cuDNN and NCCL of the nvidia-* wheels that
#         torch pins (scripts/torch/cuda-requirements.txt): the same files Python's torch 2.15.0
#         loads. The GPU driver (libcuda) is the node's, put into the container by NVIDIA's
#         container toolkit, as for any CUDA image.
# Both run as uid/gid 65532, the runAsUser the operator gives every benchmark pod
# (operator/controller/manifests.cpp).
#
# Images: trainbench/worker:0.1.0        (the operator's default for spec.device cpu)
#         trainbench/worker:0.1.0-cuda   (its default for spec.device cuda)
# Build, from the repository root (tag = the project version):
#   docker build -f docker/worker.Dockerfile -t trainbench/worker:0.1.0 .
#   docker build -f docker/worker.Dockerfile --build-arg TORCH_FLAVOUR=cuda -t trainbench/worker:0.1.0-cuda .
# The bases are build arguments so that tests can give local stand-ins; the defaults are what a
# user builds from. This project's tests build this file with buildah (scripts/images.sh, with
# local bases made by mmdebstrap) and run the images (tests/images, docs/install.md "Images").
ARG BUILD_IMAGE=debian:bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim
ARG TORCH_FLAVOUR=cpu

FROM ${BUILD_IMAGE} AS build
ARG TORCH_FLAVOUR
# scripts/install-deps.sh's build packages (no test frameworks: tests are off here); pip downloads
# the torch wheels (scripts/torch.sh: hash-checked, unzipped, nothing installed).
# apt's downloads and lists and ccache's objects live in cache mounts, kept between builds (shared,
# not sharing=locked: buildah 1.28 holds a stage's locks to the end of the build, and the runtime
# stage below, which mounts the same caches, then waits for ever).
RUN --mount=type=cache,id=trainbench-apt-archives,target=/var/cache/apt/archives \
    --mount=type=cache,id=trainbench-apt-lists,target=/var/lib/apt/lists \
    rm -f /etc/apt/apt.conf.d/docker-clean \
 && apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake ninja-build pkg-config ccache \
      libgloo-dev libyaml-cpp-dev nlohmann-json3-dev libcpprest-dev libssl-dev \
      prometheus-cpp-dev libboost-dev python3-pip
WORKDIR /src
COPY . .
# The flags of the tested build (scripts/build.sh: RelWithDebInfo), stripped at install. Rebuilds
# are fast through ccache, which keys on content (a cached build tree would trust mtimes, and
# COPY keeps the context's: a changed file older than its object was once left out). ccache keys on
# paths relative to the source tree and on no locale (CMakeLists.txt's launcher), so its objects
# serve this build and scripts/build.sh's alike (scripts/images.sh). The unpacked
# wheels live in a cache mount too.
RUN --mount=type=cache,id=trainbench-ccache,target=/root/.cache/ccache \
    --mount=type=cache,id=trainbench-torch,target=/root/.cache/trainbench/torch \
    export TRAINBENCH_CACHE=/root/.cache/trainbench \
 && torch=$(bash scripts/torch.sh "$TORCH_FLAVOUR") \
 && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINBENCH_BUILD_TESTS=OFF \
      -DTRAINBENCH_TORCH_FLAVOUR="$TORCH_FLAVOUR" -DTRAINBENCH_TORCH_DIR="$torch" \
 && cmake --build build --target trainbench trainbench-worker \
 && install -D -s -m 0755 build/cli/trainbench /rootfs/usr/local/bin/trainbench \
 && install -D -s -m 0755 build/worker/trainbench-worker /rootfs/usr/local/bin/trainbench-worker \
 && bash scripts/torch.sh --libs "$TORCH_FLAVOUR" > /torch-libs.txt

FROM ${RUNTIME_IMAGE}
# Runtime libraries only (apt pulls their dependencies); libtorch_cpu carries its own BLAS (MKL).
RUN --mount=type=cache,id=trainbench-apt-archives,target=/var/cache/apt/archives \
    --mount=type=cache,id=trainbench-apt-lists,target=/var/lib/apt/lists \
    rm -f /etc/apt/apt.conf.d/docker-clean \
 && apt-get update \
 && apt-get install -y --no-install-recommends libyaml-cpp0.7 libcpprest2.10 libssl3 libprometheus-cpp-core1.0 \
 && chmod 0755 /var/tmp /run/lock
# (/var/tmp and /run/lock made root's: nothing in the image is writable by its user but /tmp, where
# every pod mounts an emptyDir; tests/images/image_checks.sh.)
COPY --from=build /rootfs/usr/local/ /usr/local/
# libtorch and the libraries it loads (scripts/torch.sh --libs: the cuda flavour's are 4 GB),
# copied from the unpacked wheels in the cache mount straight into this stage rather than through
# the build stage, which would hold a second copy until the build ends. The binaries' RUNPATH
# names the build's cache; here the loader finds them through ld.so.conf.
RUN --mount=type=cache,id=trainbench-torch,target=/root/.cache/trainbench/torch \
    --mount=type=bind,from=build,source=/torch-libs.txt,target=/tmp/torch-libs.txt \
    mkdir -p /usr/local/lib/trainbench \
 && xargs -a /tmp/torch-libs.txt cp -L -t /usr/local/lib/trainbench/ \
 && echo /usr/local/lib/trainbench > /etc/ld.so.conf.d/trainbench.conf && ldconfig
# Fail the build when a library is missing rather than the first benchmark pod.
RUN ! ldd /usr/local/bin/trainbench /usr/local/bin/trainbench-worker | grep 'not found'
# The root filesystem is read-only in the pods; the operator mounts an emptyDir on /tmp.
ENV HOME=/tmp
# What NVIDIA's container toolkit gives a container of this image on a GPU node: the driver's
# compute (CUDA) and utility (NVML, nvidia-smi) libraries. The device plugin chooses the GPUs.
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility
USER 65532:65532
CMD ["trainbench", "version"]
