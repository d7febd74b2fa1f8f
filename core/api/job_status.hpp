#pragma once

// A BenchmarkJob's status, as the operator writes it (docs/operator.md, "Status"; its schema is
// status_schema() in core/api/crd.cpp). One typed model for everything that writes or reads status:
// the operator's reconciler builds it and serialises it once, the CLI or a kubectl plugin reads
// it back; no other code spells a status key.
//
// Absent and empty stay apart (std::optional) wherever the operator leaves a field out until it
// knows it, so to_json(from_json(j)) == j for every status the operator writes: the reconciler
// compares the two to decide whether to write status at all.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/report/report.hpp"
#include "core/results/run_progress.hpp"
#include "core/results/run_result.hpp"
#include "core/spec/vocabulary.hpp"

namespace trainbench {

// Each closed set is one table of texts (core/spec/vocabulary.hpp): to_string(v), parse_enum<E>(text)
// and allowed_texts<E>() (the CRD's enums) are views of it.

/// status.phase. Suspended: spec.suspend holds an unfinished job (no pods run).
enum class JobPhase { kPending, kRunning, kSucceeded, kFailed, kInvalid, kSuspended };
template <>
struct Spellings<JobPhase> {
  static constexpr std::array<Spelling<JobPhase>, 6> table{{{JobPhase::kPending, "Pending"},
                                                            {JobPhase::kRunning, "Running"},
                                                            {JobPhase::kSucceeded, "Succeeded"},
                                                            {JobPhase::kFailed, "Failed"},
                                                            {JobPhase::kInvalid, "Invalid"},
                                                            {JobPhase::kSuspended, "Suspended"}}};
};

/// status.runs[].phase.
enum class RunPhase { kPending, kStarting, kRunning, kRestarting, kSucceeded, kFailed };
template <>
struct Spellings<RunPhase> {
  static constexpr std::array<Spelling<RunPhase>, 6> table{{{RunPhase::kPending, "Pending"},
                                                            {RunPhase::kStarting, "Starting"},
                                                            {RunPhase::kRunning, "Running"},
                                                            {RunPhase::kRestarting, "Restarting"},
                                                            {RunPhase::kSucceeded, "Succeeded"},
                                                            {RunPhase::kFailed, "Failed"}}};
};

/// status.conditions[].type: the conditions the operator sets on a job. Regressed: the ended
/// job compared with spec.baseline (docs/operator.md). Suspended: spec.suspend (as Job's).
enum class ConditionType { kInvalid, kRunning, kSucceeded, kFailed, kRegressed, kSuspended };
template <>
struct Spellings<ConditionType> {
  static constexpr std::array<Spelling<ConditionType>, 6> table{{{ConditionType::kInvalid, "Invalid"},
                                                                 {ConditionType::kRunning, "Running"},
                                                                 {ConditionType::kSucceeded, "Succeeded"},
                                                                 {ConditionType::kFailed, "Failed"},
                                                                 {ConditionType::kRegressed, "Regressed"},
                                                                 {ConditionType::kSuspended, "Suspended"}}};
};

/// status.conditions[].status.
enum class ConditionStatus { kTrue, kFalse, kUnknown };
template <>
struct Spellings<ConditionStatus> {
  static constexpr std::array<Spelling<ConditionStatus>, 3> table{
      {{ConditionStatus::kTrue, "True"}, {ConditionStatus::kFalse, "False"}, {ConditionStatus::kUnknown, "Unknown"}}};
};

/// A condition as the Kubernetes API conventions have it (metav1.Condition).
struct Condition {
  ConditionType type = ConditionType::kRunning;
  ConditionStatus status = ConditionStatus::kUnknown;
  std::string reason;                               ///< CamelCase, e.g. RunsInProgress
  std::string message;                              ///< for people
  std::string last_transition_time;                 ///< RFC 3339: when `status` last changed
  std::optional<std::int64_t> observed_generation;  ///< the job's generation it was set for
};

/// status.runs[i]: one sweep entry's run.
struct RunStatus {
  int index = 0;      ///< position in spec.sweep
  std::string label;  ///< "1 CPU -- no ddp"
  RunPhase phase = RunPhase::kPending;
  int attempt = 0;                                ///< 0-based; bumped by a restart
  int restarts = 0;                               ///< whole-run restarts so far
  std::optional<int> interruptions;               ///< attempts ended by spec.suspend (absent: none)
  std::optional<bool> pods_created;               ///< the current attempt's pods were created (absent before the first)
  std::optional<std::string> start_time;          ///< RFC 3339: the first attempt's pods were created
  std::optional<std::string> attempt_start_time;  ///< RFC 3339: the current attempt's pods were created
  std::optional<std::string> completion_time;     ///< RFC 3339: the run ended
  std::optional<std::string> message;             ///< why it failed or restarted
  std::optional<RunReport> summary;               ///< the run's result, compacted (core/report/rank_summary.hpp)
  std::optional<EnvironmentInfo> environment;     ///< what the run's rank 0 saw
};

/// status.progressDetail.currentRun: the run in progress and where its loop stands.
struct CurrentRunProgress {
  int index = 0;      ///< status.runs[index]
  std::string label;  ///< its shape, as status.runs[index].label
  int attempt = 0;
  LoopPosition position;                          ///< stage, repeat of repeats, step of steps
  int repeats = 0;                                ///< rounds of the measure stage
  std::optional<double> seconds_per_step;         ///< the measured rate so far
  std::optional<std::int64_t> remaining_seconds;  ///< this run's estimatedRemainingSeconds
};

/// status.progressDetail (docs/operator.md, "Progress"): written at most once per the operator's
/// --progress-interval, and only when it changed.
struct ProgressDetail {
  int percent = 0;                                ///< of the whole job (status.percentComplete)
  std::optional<std::int64_t> remaining_seconds;  ///< estimatedRemainingSeconds of the whole job
  std::optional<CurrentRunProgress> current_run;  ///< absent once the job ended
  std::string last_update_time;                   ///< RFC 3339
};
/// Equal but for last_update_time: whether a new estimate says anything new.
bool same_progress(const ProgressDetail& a, const ProgressDetail& b);

struct BenchmarkJobStatus {
  std::optional<JobPhase> phase;  ///< absent until the operator first acts on the job
  std::vector<Condition> conditions;
  std::optional<std::int64_t> observed_generation;  ///< the generation last acted on
  std::optional<int> runs_total;
  std::optional<int> runs_done;
  std::optional<std::string> progress;  ///< "runsDone/runsTotal", the Runs column
  std::optional<std::string> percent_complete;    ///< "42%", the Progress column
  std::optional<ProgressDetail> progress_detail;  ///< the current run's progress, the estimate
  std::vector<RunStatus> runs;
  std::optional<Report> report;                ///< built from the runs' summaries
  std::optional<std::string> start_time;       ///< RFC 3339
  std::optional<std::string> completion_time;  ///< RFC 3339
  std::optional<double> best_examples_per_sec;
  std::optional<double> best_speedup;  ///< set once the report has a baseline run
  /// The sweep's lowest scaling efficiency (the Lowest eff. column; below
  /// spec.benchmark.efficiencyTarget, a BelowTarget Event); set once a run has an efficiency.
  std::optional<double> lowest_efficiency;
  /// Runs whose noise verdict is noisy (core/analysis/noise.hpp); set with the report.
  std::optional<int> noisy_runs;

  /// The condition of this type, or nullptr.
  const Condition* condition(ConditionType type) const;
  /// Adds or replaces the condition of c.type; lastTransitionTime stays when its status does
  /// not change (as apimachinery's meta.SetStatusCondition).
  void set_condition(Condition c);
};

nlohmann::json to_json(const Condition& c);
nlohmann::json to_json(const RunStatus& r);
nlohmann::json to_json(const ProgressDetail& p);
nlohmann::json to_json(const BenchmarkJobStatus& s);
/// Readers: throw std::runtime_error naming the missing or mistyped field under `path`
/// ("status.runs[1].phase: unknown run phase \"Done\"").
Condition condition_from_json(const nlohmann::json& j, const std::string& path);
RunStatus run_status_from_json(const nlohmann::json& j, const std::string& path);
ProgressDetail progress_detail_from_json(const nlohmann::json& j, const std::string& path);
BenchmarkJobStatus job_status_from_json(const nlohmann::json& j, const std::string& path = "status");

}  // namespace trainbench
