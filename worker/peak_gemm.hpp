#pragma once
// The CPU's peak for MFU, measured in the run (docs/report.md, "Model FLOPs utilization"): at
// the start of a run every worker process times a GEMM of the model's dominant shape
// (core/plan/peak_flops.hpp peak_gemm_shape) in the run's precision, with the threads it trains
// with, while the other processes of the node do the same: as the all-reduce benchmark measures
// memcpy, the limit is measured where the run is measured.

#include <optional>

#include "core/plan/peak_flops.hpp"
#include "core/plan/run_config.hpp"

namespace trainbench::worker {

/// A layer of that shape runs three products per training step, with equal FLOPs, as autograd
/// hands them to BLAS: forward C = A B, the input's gradient dC B^T and the weight's gradient
/// A^T dC (the transposes are views). Each is timed kPeakGemmTimed times after one untimed
/// warm-up, or fewer once kPeakGemmBudgetSeconds have been spent timing (each at least once).
inline constexpr int kPeakGemmTimed = 5;
inline constexpr double kPeakGemmBudgetSeconds = 2.0;

/// The fastest of those products (its best time), for CPU runs of a model with FLOPs and no
/// spec.benchmark.peakTFLOPS; nullopt otherwise (GPU: the datasheet table). The fastest, since
/// training runs all three: a peak from the forward product alone was below what the quickstart's
/// training steps reached on a quiet machine (MFU 102%).
std::optional<MeasuredGemm> measure_peak_gemm(const RunConfig& c);

}  // namespace trainbench::worker
