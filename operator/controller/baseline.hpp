#pragma once

// spec.baseline on the operator's side (docs/operator.md, "Regressed"): which object the
// controller reads for a job that has ended (baseline_to_look_up), and the Regressed condition
// reconcile derives from it (judge_regression). Both pure: the read itself is the controller's,
// and what it found reaches reconcile through Observed::baseline.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/api/job_status.hpp"
#include "core/report/report.hpp"
#include "core/spec/spec.hpp"

namespace trainbench::op {

/// The object spec.baseline names, in the job's namespace.
struct BaselineRef {
  enum class Kind { kBenchmarkJob, kConfigMap };
  Kind kind = Kind::kBenchmarkJob;
  std::string name;
  std::string key;  ///< kConfigMap: the data key holding the report
};

/// What the controller found for a job's baseline.
struct ObservedBaseline {
  bool looked_up = false;                ///< false: not read (no baseline, or not needed now)
  std::optional<nlohmann::json> object;  ///< the BenchmarkJob or ConfigMap; nullopt: not found
  std::string error;                     ///< why it could not be read ("" when it could, or is absent)
};

/// The object to read for `job` (a BenchmarkJob as the API has it): its spec.baseline's, once
/// the job has ended (status.phase Succeeded or Failed) and while its Regressed condition is
/// absent or Unknown (not decided: the baseline was missing, unfinished or unreadable). nullopt
/// otherwise, so a decided job costs no read.
std::optional<BaselineRef> baseline_to_look_up(const nlohmann::json& job);

/// The Regressed condition's status, reason and message.
struct RegressionOutcome {
  ConditionStatus status = ConditionStatus::kUnknown;
  /// Regressed | NoRegression (True / False); BaselineNotFound | BaselinePending |
  /// BaselineInvalid | NoReport (Unknown: nothing was compared).
  std::string reason;
  std::string message;
};

/// Compares the ended job's report with the baseline found (core/report/compare.hpp: the verdict of
/// `trainbench diff --fail-on-regression`). Never throws for a bad baseline: it says why.
RegressionOutcome judge_regression(const BaselineSpec& spec, const std::optional<Report>& report,
                                   const ObservedBaseline& found);

}  // namespace trainbench::op
