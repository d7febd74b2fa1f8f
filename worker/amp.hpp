#pragma once
// Mixed precision of the worker (spec.benchmark.precision):
//   fp32      no autocast
//   amp-bf16  autocast to bfloat16 (CPU and CUDA), no loss scaling (bf16 has fp32's range)
//   amp-fp16  autocast to float16 (CUDA only) with dynamic loss scaling: GradScaler below,
//             torch.cuda.amp.GradScaler's algorithm in C++.
// Header-only (included by train_loop.cpp): no extra libtorch translation unit.

#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/spec/vocabulary.hpp"
#include "worker/worker_error.hpp"

namespace trainbench::worker {

/// The autocast dtype of `precision` (nullopt: fp32). Throws ConfigError for amp-fp16 off CUDA.
inline std::optional<at::ScalarType> autocast_dtype_for(Precision precision, Device device) {
  switch (precision) {
    case Precision::kFp32:
      return std::nullopt;
    case Precision::kAmpBf16:
      return at::kBFloat16;
    case Precision::kAmpFp16:
      break;
  }
  if (device != Device::kCuda) {
    throw ConfigError("run config: precision amp-fp16 needs device cuda (CPU autocast has bfloat16 only)");
  }
  return at::kHalf;
}

/// Dynamic loss scaling, as torch.cuda.amp.GradScaler with its defaults: the loss is multiplied
/// by `scale` before backward; after the gradients are all-reduced they are unscaled and checked;
/// a step with an inf/NaN gradient is skipped and the scale multiplied by backoff_factor; after
/// growth_interval finite steps in a row the scale is multiplied by growth_factor.
/// With DDP every rank unscales the same all-reduced gradients, so all ranks take the same
/// decision without another collective.
class GradScaler {
 public:
  struct Options {
    double init_scale = 65536.0;  // 2^16
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int growth_interval = 2000;
  };

  GradScaler() : GradScaler(Options{}) {}
  explicit GradScaler(const Options& o) : options_(o), scale_(o.init_scale) {}

  /// amp-fp16 gets a scaler. A test's RunConfig option `test.loss_scale` (> 0: the initial
  /// scale) forces one on any precision, so that the CPU build's tests can drive the
  /// skip/back-off path.
  static std::optional<GradScaler> for_run(Precision precision, double test_loss_scale) {
    if (test_loss_scale != 0) {
      if (!(test_loss_scale > 0)) throw ConfigError("testOptions.lossScale must be a positive number");
      Options o;
      o.init_scale = test_loss_scale;
      return GradScaler(o);
    }
    if (precision == Precision::kAmpFp16) return GradScaler();
    return std::nullopt;
  }

  at::Tensor scale_loss(const at::Tensor& loss) const { return loss * scale_; }

  /// Divides every defined gradient of `params` by the scale; true when all are finite.
  bool unscale(const std::vector<at::Tensor>& params) {
    std::vector<at::Tensor> grads;
    for (const auto& p : params) {
      if (p.grad().defined()) grads.push_back(p.grad());
    }
    if (grads.empty()) return true;
    const double inv = 1.0 / scale_;
    bool fused = grads.front().is_cuda();
    for (const auto& g : grads) fused = fused && g.is_cuda() && g.scalar_type() == at::kFloat &&
                                        g.device() == grads.front().device();
    if (fused) {
      at::Tensor found = at::zeros({1}, grads.front().options());
      at::Tensor inv_scale = at::full({1}, inv, grads.front().options());
      at::_amp_foreach_non_finite_check_and_unscale_(grads, found, inv_scale);
      return found.item<float>() == 0.0f;
    }
    at::Tensor bad = at::zeros({}, grads.front().options().dtype(at::kInt));
    for (auto& g : grads) {
      g.mul_(inv);
      bad = bad + at::logical_not(at::isfinite(g)).any().to(at::kInt);
    }
    return bad.item<int>() == 0;
  }

  /// After a step: `finite` false backs off (the caller skipped optimizer.step()).
  void update(bool finite) {
    if (!finite) {
      scale_ *= options_.backoff_factor;
      growth_tracker_ = 0;
      ++skipped_;
      return;
    }
    if (++growth_tracker_ >= options_.growth_interval) {
      scale_ *= options_.growth_factor;
      growth_tracker_ = 0;
    }
  }

  double scale() const { return scale_; }
  std::int64_t skipped_steps() const { return skipped_; }

 private:
  Options options_;
  double scale_;
  int growth_tracker_ = 0;
  std::int64_t skipped_ = 0;
};

}  // namespace trainbench::worker
