#pragma once
// Every API difference between Debian's libtorch 1.13 (CPU) and libtorch 2.x (CPU or CUDA)
// that the worker touches lives here, and only here:
//  - c10d: ProcessGroupGloo/NCCL derive from c10d::ProcessGroup in 1.x and from c10d::Backend
//    in 2.x (same header paths, same collective signatures) -> compat::CommBackend.
//  - autocast: set_cpu_enabled/set_enabled + set_autocast_{cpu,gpu}_dtype in <= 2.3,
//    set_autocast_enabled(device, on) + set_autocast_dtype(device, dtype) from 2.4
//    (the old names are deprecated there) -> compat::AutocastScope.
//  - CUDA (only when built against a CUDA libtorch, TRAINBENCH_WITH_CUDA): synchronize,
//    allocator peak memory, device name, runtime version, current device.
//  - Gloo: pip's libtorch wheels ship c10d's ProcessGroupGloo.hpp but not the gloo headers it
//    includes, so a worker built against one has backend nccl only (TRAINBENCH_WITH_GLOO unset).

#include <ATen/autocast_mode.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>
#include <torch/version.h>

#if defined(USE_C10D_GLOO) && __has_include(<gloo/algorithm.h>)
#define TRAINBENCH_WITH_GLOO 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#ifdef TRAINBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <cstdint>
#include <string>

#define TRAINBENCH_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||             \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if !defined(TRAINBENCH_WITH_GLOO) && !defined(USE_C10D_NCCL)
#error "the worker needs a libtorch with Gloo (and its headers) or NCCL"
#endif

namespace trainbench::worker::compat {

/// The polymorphic base of ProcessGroupGloo / ProcessGroupNCCL.
#if TORCH_VERSION_MAJOR >= 2
using CommBackend = c10d::Backend;
#else
using CommBackend = c10d::ProcessGroup;
#endif
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

inline constexpr bool kBuiltWithCuda =
#ifdef TRAINBENCH_WITH_CUDA
    true;
#else
    false;
#endif

/// Enables autocast to `dtype` on `device` for its lifetime (no C++ guard exists in 1.13).
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType device, at::ScalarType dtype) : device_(device) {
#if TRAINBENCH_TORCH_AT_LEAST(2, 4)
    previous_enabled_ = at::autocast::is_autocast_enabled(device_);
    previous_dtype_ = at::autocast::get_autocast_dtype(device_);
    at::autocast::set_autocast_enabled(device_, true);
    at::autocast::set_autocast_dtype(device_, dtype);
#else
    if (device_ == c10::DeviceType::CPU) {
      previous_enabled_ = at::autocast::is_cpu_enabled();
      previous_dtype_ = at::autocast::get_autocast_cpu_dtype();
      at::autocast::set_cpu_enabled(true);
      at::autocast::set_autocast_cpu_dtype(dtype);
    } else {
      previous_enabled_ = at::autocast::is_enabled();
      previous_dtype_ = at::autocast::get_autocast_gpu_dtype();
      at::autocast::set_enabled(true);
      at::autocast::set_autocast_gpu_dtype(dtype);
    }
#endif
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if TRAINBENCH_TORCH_AT_LEAST(2, 4)
    at::autocast::set_autocast_enabled(device_, previous_enabled_);
    at::autocast::set_autocast_dtype(device_, previous_dtype_);
#else
    if (device_ == c10::DeviceType::CPU) {
      at::autocast::set_cpu_enabled(previous_enabled_);
      at::autocast::set_autocast_cpu_dtype(previous_dtype_);
    } else {
      at::autocast::set_enabled(previous_enabled_);
      at::autocast::set_autocast_gpu_dtype(previous_dtype_);
    }
#endif
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_;
  bool previous_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kFloat;
};

// ---- CUDA (each throws on a CPU-only build; callers only use them for device "cuda") ----

inline void cuda_set_device(int index) {
#ifdef TRAINBENCH_WITH_CUDA
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
#else
  (void)index;
  TORCH_CHECK(false, "this trainbench-worker was built without CUDA");
#endif
}

inline void cuda_synchronize(int index) { torch::cuda::synchronize(index); }

inline void cuda_reset_peak_memory(int index) {
#ifdef TRAINBENCH_WITH_CUDA
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index));
#else
  (void)index;
#endif
}

/// Peak bytes allocated by the caching allocator (StatType::AGGREGATE is index 0).
inline std::int64_t cuda_peak_memory_bytes(int index) {
#ifdef TRAINBENCH_WITH_CUDA
  const auto stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
  return stats.allocated_bytes[0].peak;
#else
  (void)index;
  return 0;
#endif
}

/// Bytes the caching allocator's live tensors hold now.
inline std::int64_t cuda_memory_allocated_bytes(int index) {
#ifdef TRAINBENCH_WITH_CUDA
  const auto stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
  return stats.allocated_bytes[0].current;
#else
  (void)index;
  return 0;
#endif
}

inline std::string cuda_device_name(int index) {
#ifdef TRAINBENCH_WITH_CUDA
  return at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(index))->name;
#else
  (void)index;
  return "";
#endif
}

/// CUDA runtime version the libtorch was built with ("12.1"); "" without CUDA.
inline std::string cuda_version() {
#if defined(TRAINBENCH_WITH_CUDA) && defined(CUDART_VERSION)
  return std::to_string(CUDART_VERSION / 1000) + "." + std::to_string((CUDART_VERSION % 1000) / 10);
#else
  return "";
#endif
}

/// cuDNN's version as libtorch was built against it ("9.26.0"); empty without CUDA.
inline std::string cudnn_version() {
#ifdef TRAINBENCH_WITH_CUDA
  const long v = at::detail::getCUDAHooks().versionCuDNN();  // MAJOR*10000 + MINOR*100 + PATCH (cuDNN 9)
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
#else
  return "";
#endif
}

/// The NCCL that ProcessGroupNCCL loads ("2.30.7"); empty without NCCL.
inline std::string nccl_version() {
#ifdef USE_C10D_NCCL
  return c10d::getNcclVersion();
#else
  return "";
#endif
}

/// c10::Error's message without the C++ backtrace it carries in 1.13.
inline std::string error_message(const c10::Error& e) { return e.what_without_backtrace(); }

}  // namespace trainbench::worker::compat
