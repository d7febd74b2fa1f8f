#pragma once
// Model FLOPs utilization of a run (docs/report.md, "Model FLOPs utilization"): the model's
// training FLOPs per example (core/plan/model_flops.hpp) times the examples per second the run
// achieved, per device, against the device's peak for the run's precision (core/plan/peak_flops.hpp).

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/plan/run_config.hpp"
#include "core/results/run_result.hpp"

namespace trainbench {

/// A run's FLOP/s and MFU ("mfu" of a run in the report; absent for all-reduce runs, failed runs
/// and older reports).
struct MfuSummary {
  double flops_per_example = 0;       ///< training: 3 x forward ("flopsPerExample")
  double achieved_tflops = 0;         ///< per device: flops/example x p50 ex/sec / devices ("achievedTFLOPS")
  std::optional<double> peak_tflops;  ///< per device ("peakTFLOPS"); absent: no peak known
  std::string peak_source;            ///< where the peak came from ("peakSource")
  std::optional<double> mfu;          ///< achieved / peak ("mfu")
};

/// The run's MFU from its config, its result (device name, the CPU's measured GEMM) and its p50
/// examples/sec (all devices); nullopt for a model with no FLOPs (paradigm allreduce).
std::optional<MfuSummary> summarize_mfu(const RunConfig& c, const RunResult& result, double examples_per_sec);

/// Training FLOPs of one example on one rank: the model's, or an even share of it where the
/// ranks are stages of one model (pipeline, model-parallel). 0 for no model.
double rank_flops_per_example(const RunConfig& c);

/// Achieved TFLOP/s per device of `flops_per_example` at `examples_per_sec` over `devices`.
double achieved_tflops(double flops_per_example, double examples_per_sec, int devices);

/// The text report's cells: "150.4 MFLOP/ex  0.048 TFLOP/s per device  peak 0.200 (SOURCE)  MFU 24.1%".
std::string format_mfu(const MfuSummary& m);

nlohmann::json to_json(const MfuSummary& m);
/// Throws std::runtime_error naming the bad field under `path`.
MfuSummary mfu_summary_from_json(const nlohmann::json& j, const std::string& path);

}  // namespace trainbench
