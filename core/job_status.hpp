#pragma once

// A BenchmarkJob's status, as the operator writes it (docs/operator.md, "Status"; its schema is
// status_schema() in core/crd.cpp). One typed model for everything that writes or reads status:
// the operator's reconciler builds it and serialises it once, the CLI or a kubectl plugin reads
// it back; no other code spells a status key.
//
// Absent and empty stay apart (std::optional) wherever the operator leaves a field out until it
// knows it, so to_json(from_json(j)) == j for every status the operator writes: the reconciler
// compares the two to decide whether to write status at all.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/report.hpp"
#include "core/run_result.hpp"

namespace trainbench {

enum class JobPhase { Pending, Running, Succeeded, Failed, Invalid };
enum class RunPhase { Pending, Starting, Running, Restarting, Succeeded, Failed };
/// The condition types the operator sets on a job.
enum class ConditionType { Invalid, Running, Succeeded, Failed };
enum class ConditionStatus { True, False, Unknown };

/// The text each value is written as ("Running"), and the value a text names (nullopt if none).
std::string to_string(JobPhase p);
std::string to_string(RunPhase p);
std::string to_string(ConditionType t);
std::string to_string(ConditionStatus s);
std::optional<JobPhase> job_phase_from_string(const std::string& text);
std::optional<RunPhase> run_phase_from_string(const std::string& text);
std::optional<ConditionType> condition_type_from_string(const std::string& text);
std::optional<ConditionStatus> condition_status_from_string(const std::string& text);
/// Every value's text, in declaration order (the CRD's enums, core/crd.cpp).
const std::vector<std::string>& job_phase_names();
const std::vector<std::string>& run_phase_names();
const std::vector<std::string>& condition_type_names();

/// A condition as the Kubernetes API conventions have it (metav1.Condition).
struct Condition {
  ConditionType type = ConditionType::Running;
  ConditionStatus status = ConditionStatus::Unknown;
  std::string reason;                               ///< CamelCase, e.g. RunsInProgress
  std::string message;                              ///< for people
  std::string last_transition_time;                 ///< RFC 3339: when `status` last changed
  std::optional<std::int64_t> observed_generation;  ///< the job's generation it was set for
};

/// status.runs[i]: one sweep entry's run.
struct RunStatus {
  int index = 0;      ///< position in spec.sweep
  std::string label;  ///< "1 CPU -- no ddp"
  RunPhase phase = RunPhase::Pending;
  int attempt = 0;                                ///< 0-based; bumped by a restart
  int restarts = 0;                               ///< whole-run restarts so far
  std::optional<bool> pods_created;               ///< the current attempt's pods were created (absent before the first)
  std::optional<std::string> start_time;          ///< RFC 3339: the first attempt's pods were created
  std::optional<std::string> attempt_start_time;  ///< RFC 3339: the current attempt's pods were created
  std::optional<std::string> completion_time;     ///< RFC 3339: the run ended
  std::optional<std::string> message;             ///< why it failed or restarted
  std::optional<RunReport> summary;               ///< the run's result, compacted (core/rank_summary.hpp)
  std::optional<EnvironmentInfo> environment;     ///< what the run's rank 0 saw
};

struct BenchmarkJobStatus {
  std::optional<JobPhase> phase;  ///< absent until the operator first acts on the job
  std::vector<Condition> conditions;
  std::optional<std::int64_t> observed_generation;  ///< the generation last acted on
  std::optional<int> runs_total;
  std::optional<int> runs_done;
  std::optional<std::string> progress;  ///< "runsDone/runsTotal", the Runs column
  std::vector<RunStatus> runs;
  std::optional<Report> report;                ///< built from the runs' summaries
  std::optional<std::string> start_time;       ///< RFC 3339
  std::optional<std::string> completion_time;  ///< RFC 3339
  std::optional<double> best_examples_per_sec;
  std::optional<double> best_speedup;  ///< set once the report has a baseline run

  /// The condition of this type, or nullptr.
  const Condition* condition(ConditionType type) const;
  /// Adds or replaces the condition of c.type; lastTransitionTime stays when its status does
  /// not change (as apimachinery's meta.SetStatusCondition).
  void set_condition(Condition c);
};

nlohmann::json to_json(const Condition& c);
nlohmann::json to_json(const RunStatus& r);
nlohmann::json to_json(const BenchmarkJobStatus& s);
/// Readers: throw std::runtime_error naming the missing or mistyped field under `path`
/// ("status.runs[1].phase: unknown run phase \"Done\"").
Condition condition_from_json(const nlohmann::json& j, const std::string& path);
RunStatus run_status_from_json(const nlohmann::json& j, const std::string& path);
BenchmarkJobStatus job_status_from_json(const nlohmann::json& j, const std::string& path = "status");

}  // namespace trainbench
