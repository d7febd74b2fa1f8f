#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/function.h>

#include <cstdint>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/spec/vocabulary.hpp"
#include "worker/gradient_reducer.hpp"
#include "worker/process_group.hpp"

namespace trainbench::worker {

/// trainbench's own DDP gradient reducer (spec.benchmark.ddp.implementation: trainbench; written
/// when Debian's libtorch 1.13 headers lacked what c10d::Reducer needs, kept to compare with it).
///
/// Parameters are assigned to flat buckets in reverse registration order, as PyTorch's DDP
/// does: a bucket closes once it holds at least its limit, 1 MiB for the first bucket and
/// bucket_cap_mb MiB for the others. A post-hook on each parameter's grad accumulator copies the
/// fresh gradient into the parameter's slot of its bucket and makes .grad a view of that slot
/// (DDP's gradient_as_bucket_view: the optimizer then reads the averaged gradient in place); a
/// full bucket is all-reduced (SUM, asynchronously), strictly in bucket index order on every
/// rank. finish_backward() zeroes the slots of parameters that got no gradient, launches the
/// remaining buckets, waits and divides by the world size in place. Optional compression casts
/// a bucket to fp16/bf16 for the all-reduce only.
class DdpReducer final : public GradientReducer {
 public:
  /// `params` in registration order. Issues one probe
  /// collective when compression is on (so every rank must construct it at the same point).
  DdpReducer(std::vector<at::Tensor> params, Communicator& comm, double bucket_cap_mb, GradientCompression compression);
  ~DdpReducer();
  DdpReducer(const DdpReducer&) = delete;
  DdpReducer& operator=(const DdpReducer&) = delete;

  /// Sets every parameter's .grad to none (use instead of the optimizer's zero_grad()); the
  /// gradients of the next backward pass are copied into the buckets as they arrive.
  void zero_grad();
  /// Arms the hooks for the next backward pass.
  void prepare_for_backward();
  /// Completes the reduction after loss.backward() returned.
  void finish_backward();

  // GradientReducer: zero_grad() + prepare_for_backward(); nothing; finish_backward(), timed.
  void before_forward() override;
  void before_backward(const at::Tensor& root) override;
  double after_backward() override;
  std::size_t bucket_count() const override { return buckets_.size(); }
  std::int64_t bytes_per_step() const override;

 private:
  struct Slot {
    std::size_t bucket = 0;
    std::int64_t offset = 0;  ///< in elements, inside the bucket
    std::int64_t numel = 0;
    bool ready = false;
  };
  struct Bucket {
    std::vector<std::size_t> params;
    at::Tensor flat;       ///< gradients, parameter dtype
    at::Tensor wire;       ///< what is all-reduced (flat, or its compressed copy)
    std::size_t pending = 0;
    bool launched = false;
    PendingCollective work;
  };

  void on_gradient_ready(std::size_t param_index);
  at::Tensor grad_view(std::size_t param_index) const;
  void launch_ready_buckets_locked();
  void launch_locked(Bucket& bucket);
  void check_compression_supported();

  std::vector<at::Tensor> params_;
  /// The grad accumulators must be kept alive, or their hooks vanish with them.
  std::vector<c10::intrusive_ptr<torch::autograd::Node>> accumulators_;
  std::vector<std::uintptr_t> hook_handles_;
  Communicator& comm_;
  at::ScalarType wire_dtype_;
  GradientCompression compression_;
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  std::size_t next_to_launch_ = 0;
  bool armed_ = false;
  std::mutex mutex_;
};

}  // namespace trainbench::worker
