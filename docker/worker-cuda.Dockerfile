# syntax=docker/dockerfile:1
# The GPU worker image: `trainbench` and `trainbench-worker` built against the libtorch (CUDA,
# NCCL) of an NVIDIA PyTorch container, which is also the runtime: the CUDA libraries and the
# driver interface come from it. Runs as uid/gid 65532, the runAsUser the operator gives every
# benchmark pod (operator/controller/manifests.cpp).
#
# Image: trainbench/worker:0.1.0-cuda   (set spec.template.image to it in GPU BenchmarkJobs)
# Build, from the repository root:
#   docker build -f docker/worker-cuda.Dockerfile -t trainbench/worker:0.1.0-cuda .
#   (--build-arg PYTORCH_IMAGE=nvcr.io/nvidia/pytorch:<tag> for another release)
# Assumes an Ubuntu 24.04 based release (25.01 and later) whose apt carries the packages below.
# Not built in this project's CI (no container engine, no GPU there): tests/helm checks only that
# the name, tag and uid here agree with the chart and the operator (docs/install.md).
ARG PYTORCH_IMAGE=nvcr.io/nvidia/pytorch:25.01-py3
FROM ${PYTORCH_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake ninja-build pkg-config \
      libyaml-cpp-dev nlohmann-json3-dev libcpprest-dev libssl-dev prometheus-cpp-dev libboost-dev \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
# libtorch from the image's PyTorch (worker/CMakeLists.txt finds it through CMAKE_PREFIX_PATH).
RUN cmake -S /src -B /tmp/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINBENCH_BUILD_TESTS=OFF \
      -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')" \
 && cmake --build /tmp/build --target trainbench trainbench-worker \
 && install -s -m 0755 /tmp/build/cli/trainbench /tmp/build/worker/trainbench-worker /usr/local/bin/ \
 && rm -rf /tmp/build /src \
 && ! ldd /usr/local/bin/trainbench /usr/local/bin/trainbench-worker | grep 'not found'
# The root filesystem is read-only in the pods; the operator mounts an emptyDir on /tmp.
ENV HOME=/tmp
USER 65532:65532
CMD ["trainbench", "version"]
