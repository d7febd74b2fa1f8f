#pragma once
// The CPU's peak for MFU, measured in the run (docs/report.md, "Model FLOPs utilization"): at
// the start of a run every worker process times a GEMM of the model's dominant shape
// (core/peak_flops.hpp peak_gemm_shape) in the run's precision, with the threads it trains
// with, while the other processes of the node do the same: as the all-reduce benchmark measures
// memcpy, the limit is measured where the run is measured.

#include <optional>

#include "core/peak_flops.hpp"
#include "core/run_config.hpp"

namespace trainbench::worker {

/// Products timed after one untimed warm-up product: kPeakGemmTimed, or fewer once
/// kPeakGemmBudgetSeconds have been spent timing.
inline constexpr int kPeakGemmTimed = 3;
inline constexpr double kPeakGemmBudgetSeconds = 2.0;

/// The best of the timed products, for CPU runs of a model with FLOPs and no
/// spec.benchmark.peakTFLOPS; nullopt otherwise (GPU: the datasheet table).
std::optional<MeasuredGemm> measure_peak_gemm(const RunConfig& c);

}  // namespace trainbench::worker
