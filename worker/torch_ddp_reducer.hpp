#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/spec/vocabulary.hpp"
#include "worker/gradient_reducer.hpp"
#include "worker/process_group.hpp"

namespace c10d {
class Reducer;
class Logger;
}  // namespace c10d

namespace trainbench::worker {

/// PyTorch's own DDP (spec.benchmark.ddp.implementation: pytorch): the c10d::Reducer of the
/// libtorch the worker runs on, driven as torch.nn.parallel.DistributedDataParallel drives it
/// with its defaults (find_unused_parameters, static_graph and gradient_as_bucket_view off):
///  - construction: the parameters' shapes checked across the ranks
///    (verify_params_across_processes), then every parameter in one bucket until the first
///    backward pass has shown the order in which gradients become ready; the reducer then
///    rebuilds its buckets in that order (rebuild_buckets, before the second forward), the
///    first up to min(1 MiB, cap) (DDP's first-bucket size), the others up to bucketCapMB;
///  - each step: prepare_for_forward and rebuild_buckets before the forward pass,
///    prepare_for_backward after it; its autograd hooks launch each bucket's all-reduce as the
///    bucket fills and its finalizer (queued on the autograd engine) waits for them and writes
///    the averaged gradients into .grad before backward() returns;
///  - compression: fp16, PyTorch's built-in FP16_COMPRESS hook; bf16, a hook doing what
///    Python's bf16_compress_hook does (cast, divide by the world size, all-reduce, cast back).
/// The communication a step waited for is measured from the end of the backward computation
/// (an engine callback queued ahead of the reducer's finalizer) to backward()'s return.
class TorchDdpReducer final : public GradientReducer {
 public:
  /// `params` in registration order; a collective (every rank constructs it at the same point).
  TorchDdpReducer(std::vector<at::Tensor> params, Communicator& comm, double bucket_cap_mb,
                  GradientCompression compression);
  ~TorchDdpReducer() override;
  TorchDdpReducer(const TorchDdpReducer&) = delete;
  TorchDdpReducer& operator=(const TorchDdpReducer&) = delete;

  void before_forward() override;
  void before_backward(const at::Tensor& root) override;
  double after_backward() override;
  std::size_t bucket_count() const override;
  std::int64_t bytes_per_step() const override;

 private:
  using Clock = std::chrono::steady_clock;
  std::vector<at::Tensor> params_;
  Communicator& comm_;
  GradientCompression compression_;
  std::shared_ptr<c10d::Reducer> reducer_;
  std::shared_ptr<c10d::Logger> logger_;  ///< the reducer's (bucket sizes after a rebuild)
  /// Set by the engine callback when the backward computation ended (the backward thread).
  std::optional<Clock::time_point> computed_at_;
};

}  // namespace trainbench::worker
