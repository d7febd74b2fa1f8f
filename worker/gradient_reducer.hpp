#pragma once

// How a data-parallel step's gradients are averaged over the ranks, whoever's DDP does it:
// PyTorch's own c10d::Reducer (worker/torch_ddp_reducer.hpp) or trainbench's bucketed reducer
// (worker/ddp_reducer.hpp); spec.benchmark.ddp.implementation picks one (make_ddp_reducer in
// worker/train_common.hpp). A step calls the three in order around its forward and backward.

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>

namespace trainbench::worker {

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;

  /// Before the forward pass: every parameter's .grad to none (instead of the optimizer's
  /// zero_grad()) and the reducer ready for a new step.
  virtual void before_forward() = 0;
  /// After the forward pass, before `root`.backward(): the backward pass will reduce.
  virtual void before_backward(const at::Tensor& root) = 0;
  /// After backward() returned: every .grad holds the average over the ranks. Returns the
  /// seconds the step waited for communication after its gradients had been computed.
  virtual double after_backward() = 0;

  /// Buckets (as the reducer groups them once it has seen a backward pass).
  virtual std::size_t bucket_count() const = 0;
  /// Bytes one step all-reduces (all buckets, in the wire dtype).
  virtual std::int64_t bytes_per_step() const = 0;
};

}  // namespace trainbench::worker
