#pragma once
// The few libtorch spellings the worker wraps (libtorch 2.15, the pinned wheel of
// scripts/torch/cpu-requirements.txt), and the one build-dependent choice:
//  - compat::CommBackend: c10d::Backend, the polymorphic base of ProcessGroupGloo / ProcessGroupNCCL;
//  - compat::AutocastScope: a C++ guard for autocast (PyTorch has only Python's context manager);
//  - Gloo: the wheel ships c10d's ProcessGroupGloo.hpp but not the gloo headers it includes
//    (Debian's libgloo-dev provides them: cmake/TrainbenchTorch.cmake); without them the worker
//    has backend nccl only (TRAINBENCH_WITH_GLOO unset).
// CUDA and NCCL calls are in worker/torch_cuda.hpp, one translation unit per flavour.

#include <ATen/autocast_mode.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>
#include <torch/version.h>

#if defined(USE_C10D_GLOO) && __has_include(<gloo/algorithm.h>)
#define TRAINBENCH_WITH_GLOO 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <string>

#include "worker/torch_cuda.hpp"

static_assert(TORCH_VERSION_MAJOR >= 2 && (TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 4),
              "the worker needs libtorch >= 2.4 (set_autocast_enabled(device, on)); scripts/torch.sh pins it");

namespace trainbench::worker::compat {

using CommBackend = c10d::Backend;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

/// Enables autocast to `dtype` on `device` for its lifetime.
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType device, at::ScalarType dtype) : device_(device) {
    previous_enabled_ = at::autocast::is_autocast_enabled(device_);
    previous_dtype_ = at::autocast::get_autocast_dtype(device_);
    at::autocast::set_autocast_enabled(device_, true);
    at::autocast::set_autocast_dtype(device_, dtype);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(device_, previous_enabled_);
    at::autocast::set_autocast_dtype(device_, previous_dtype_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_;
  bool previous_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kFloat;
};

inline void cuda_synchronize(int index) { torch::cuda::synchronize(index); }

/// c10::Error's message without the C++ backtrace it may carry.
inline std::string error_message(const c10::Error& e) { return e.what_without_backtrace(); }

}  // namespace trainbench::worker::compat
