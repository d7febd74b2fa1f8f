#pragma once
// The worker's CUDA and NCCL calls, behind plain declarations, so that only one translation unit
// of each libtorch flavour sees CUDA's headers (cmake/TrainbenchTorch.cmake):
//   torch_cuda.cpp        TRAINBENCH_TORCH_FLAVOUR=cuda: libtorch_cuda, c10_cuda, NCCL (the cuda
//                         worker image, docker/worker.Dockerfile with TORCH_FLAVOUR=cuda);
//   torch_cuda_none.cpp   the cpu flavour: no CUDA; each call below that needs a device throws.
// Every other worker file compiles the same in both flavours, so they share ccache's objects.

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace trainbench::worker::compat {

/// Whether this worker was built against libtorch_cuda and NCCL (the cuda flavour).
bool built_with_cuda();

void cuda_set_device(int index);
void cuda_reset_peak_memory(int index);
/// Peak bytes allocated by the caching allocator since the last reset.
std::int64_t cuda_peak_memory_bytes(int index);
/// Bytes the caching allocator's live tensors hold now.
std::int64_t cuda_memory_allocated_bytes(int index);
std::string cuda_device_name(int index);

/// The CUDA runtime the libtorch was built with ("13.2"); "" in the cpu flavour.
std::string cuda_version();
/// cuDNN's version as libtorch reports it ("9.26.0"); "" in the cpu flavour.
std::string cudnn_version();
/// The NCCL that ProcessGroupNCCL loads ("2.30.7"); "" in the cpu flavour.
std::string nccl_version();

/// c10d's NCCL backend over `store`, on the current CUDA device (throws in the cpu flavour).
c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                    int world_size, std::chrono::milliseconds timeout);

}  // namespace trainbench::worker::compat
