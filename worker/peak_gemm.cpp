#include "worker/peak_gemm.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <limits>

namespace trainbench::worker {

std::optional<MeasuredGemm> measure_peak_gemm(const RunConfig& c) {
  if (c.device != Device::kCpu || c.peak_tflops || c.paradigm == Paradigm::kAllreduce) return std::nullopt;
  const std::optional<GemmShape> shape = peak_gemm_shape(c);
  if (!shape) return std::nullopt;
  // CPU autocast runs the matmuls in bfloat16 under amp-bf16 (amp-fp16 is CUDA only).
  const at::ScalarType dtype = c.precision == Precision::kAmpBf16 ? at::kBFloat16 : at::kFloat;
  const at::TensorOptions options = at::TensorOptions().dtype(dtype);
  const at::Tensor a = at::rand({shape->batch, shape->m, shape->k}, options);
  const at::Tensor b = at::rand({shape->batch, shape->k, shape->n}, options);
  auto product = [&] { return shape->batch > 1 ? at::bmm(a, b) : at::mm(a[0], b[0]); };
  product();  // warm-up: first-touch of the output, BLAS's own setup
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  double best = std::numeric_limits<double>::infinity();
  MeasuredGemm g{*shape, gemm_dtype(c.precision), 0, 0};
  while (g.timed < kPeakGemmTimed &&
         (g.timed == 0 || std::chrono::duration<double>(Clock::now() - start).count() < kPeakGemmBudgetSeconds)) {
    const auto t0 = Clock::now();
    const at::Tensor out = product();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    ++g.timed;
  }
  const double flops = 2.0 * static_cast<double>(shape->m) * static_cast<double>(shape->k) *
                       static_cast<double>(shape->n) * static_cast<double>(shape->batch);
  g.tflops = best > 0 ? flops / best / 1e12 : 0;
  return g;
}

}  // namespace trainbench::worker
