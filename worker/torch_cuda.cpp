// The cuda flavour of worker/torch_cuda.hpp: libtorch_cuda, c10_cuda and ProcessGroupNCCL.
#include "worker/torch_cuda.hpp"

#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

namespace trainbench::worker::compat {
namespace {

c10::DeviceIndex device_index(int index) { return static_cast<c10::DeviceIndex>(index); }

}  // namespace

bool built_with_cuda() { return true; }

void cuda_set_device(int index) { c10::cuda::set_device(device_index(index)); }

void cuda_reset_peak_memory(int index) { c10::cuda::CUDACachingAllocator::resetPeakStats(device_index(index)); }

// StatType::AGGREGATE is index 0 of each stat array.
std::int64_t cuda_peak_memory_bytes(int index) {
  return c10::cuda::CUDACachingAllocator::getDeviceStats(device_index(index)).allocated_bytes[0].peak;
}

std::int64_t cuda_memory_allocated_bytes(int index) {
  return c10::cuda::CUDACachingAllocator::getDeviceStats(device_index(index)).allocated_bytes[0].current;
}

std::string cuda_device_name(int index) { return at::cuda::getDeviceProperties(device_index(index))->name; }

std::string cuda_version() {
  return std::to_string(CUDART_VERSION / 1000) + "." + std::to_string((CUDART_VERSION % 1000) / 10);
}

std::string cudnn_version() {
  const long v = at::detail::getCUDAHooks().versionCuDNN();  // MAJOR*10000 + MINOR*100 + PATCH (cuDNN 9)
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

std::string nccl_version() { return c10d::getNcclVersion(); }

c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                    int world_size, std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, options);
}

}  // namespace trainbench::worker::compat
