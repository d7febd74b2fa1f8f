#include "worker/peak_gemm.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <limits>

namespace trainbench::worker {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// The best time of `product` over at most kPeakGemmTimed tries after one untimed warm-up
/// (first-touch of the output, BLAS's own setup); fewer once `deadline` has passed.
double best_time(const std::function<at::Tensor()>& product, Clock::time_point deadline, int& timed) {
  product();
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < kPeakGemmTimed && (i == 0 || Clock::now() < deadline); ++i) {
    const auto t0 = Clock::now();
    const at::Tensor out = product();
    best = std::min(best, seconds_since(t0));
    ++timed;
  }
  return best;
}

}  // namespace

std::optional<MeasuredGemm> measure_peak_gemm(const RunConfig& c) {
  if (c.device != Device::kCpu || c.peak_tflops || c.paradigm == Paradigm::kAllreduce) return std::nullopt;
  const std::optional<GemmShape> shape = peak_gemm_shape(c);
  if (!shape) return std::nullopt;
  // CPU autocast runs the matmuls in bfloat16 under amp-bf16 (amp-fp16 is CUDA only).
  const at::ScalarType dtype = c.precision == Precision::kAmpBf16 ? at::kBFloat16 : at::kFloat;
  const at::TensorOptions options = at::TensorOptions().dtype(dtype);
  const at::Tensor a = at::rand({shape->batch, shape->m, shape->k}, options);
  const at::Tensor b = at::rand({shape->batch, shape->k, shape->n}, options);
  const at::Tensor dc = at::rand({shape->batch, shape->m, shape->n}, options);
  auto mul = [one = shape->batch == 1](const at::Tensor& x, const at::Tensor& y) {
    return one ? at::mm(x[0], y[0]) : at::bmm(x, y);
  };
  const std::array<std::function<at::Tensor()>, 3> products = {
      [&] { return mul(a, b); },                   // forward
      [&] { return mul(dc, b.transpose(1, 2)); },  // the input's gradient
      [&] { return mul(a.transpose(1, 2), dc); },  // the weight's gradient
  };
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kPeakGemmBudgetSeconds));
  MeasuredGemm g{*shape, gemm_dtype(c.precision), 0, 0};
  double best = std::numeric_limits<double>::infinity();
  for (const auto& product : products) best = std::min(best, best_time(product, deadline, g.timed));
  const double flops = 2.0 * static_cast<double>(shape->m) * static_cast<double>(shape->k) *
                       static_cast<double>(shape->n) * static_cast<double>(shape->batch);
  g.tflops = best > 0 ? flops / best / 1e12 : 0;
  return g;
}

}  // namespace trainbench::worker
