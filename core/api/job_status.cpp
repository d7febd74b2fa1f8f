#include "core/api/job_status.hpp"

#include <cstddef>
#include <stdexcept>

#include "core/spec/json_fields.hpp"
#include "core/spec/spec_error.hpp"

namespace trainbench {

namespace jf = json_fields;
using nlohmann::json;

namespace {

std::string child(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

/// The enum value the string field `key` names; throws "<path>.<key>: unknown <what> "<text>"".
template <typename Enum>
Enum get_enum(const json& obj, const std::string& key, const std::string& path, const std::string& what) {
  const std::string text = jf::get_string(obj, key, path);
  const auto value = parse_enum<Enum>(text);
  if (!value) throw std::runtime_error(child(path, key) + ": unknown " + what + " \"" + printable(text) + "\"");
  return *value;
}

/// `read`(obj, key, path) when obj holds a non-null `key`, else nullopt.
template <typename T>
std::optional<T> optional_field(const json& obj, const std::string& key, const std::string& path,
                                T (*read)(const json&, const std::string&, const std::string&)) {
  if (!jf::has(obj, key)) return std::nullopt;
  return read(obj, key, path);
}

/// Writes `value` under `key` when it is set.
template <typename T>
void put(json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}

}  // namespace

const Condition* BenchmarkJobStatus::condition(ConditionType type) const {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

void BenchmarkJobStatus::set_condition(Condition c) {
  for (auto& have : conditions) {
    if (have.type != c.type) continue;
    if (have.status == c.status) c.last_transition_time = have.last_transition_time;
    have = std::move(c);
    return;
  }
  conditions.push_back(std::move(c));
}

// ---- writers ----

json to_json(const Condition& c) {
  json j = {{"type", to_string(c.type)},
            {"status", to_string(c.status)},
            {"reason", c.reason},
            {"message", c.message},
            {"lastTransitionTime", c.last_transition_time}};
  put(j, "observedGeneration", c.observed_generation);
  return j;
}

json to_json(const RunStatus& r) {
  json j = {{"index", r.index},
            {"label", r.label},
            {"phase", to_string(r.phase)},
            {"attempt", r.attempt},
            {"restarts", r.restarts}};
  put(j, "interruptions", r.interruptions);
  put(j, "podsCreated", r.pods_created);
  put(j, "startTime", r.start_time);
  put(j, "attemptStartTime", r.attempt_start_time);
  put(j, "completionTime", r.completion_time);
  put(j, "message", r.message);
  if (r.summary) j["summary"] = to_json(*r.summary);
  if (r.environment) j["environment"] = to_json(*r.environment);
  return j;
}

bool same_progress(const ProgressDetail& a, const ProgressDetail& b) {
  ProgressDetail x = a;
  x.last_update_time = b.last_update_time;
  return to_json(x) == to_json(b);
}

namespace {

json to_json(const CurrentRunProgress& r) {
  json j = {{"index", r.index},        {"label", r.label},
            {"attempt", r.attempt},    {"stage", to_string(r.position.stage)},
            {"step", r.position.step}, {"steps", r.position.steps}};
  if (r.position.stage == LoopStage::kMeasure || r.position.stage == LoopStage::kFinishing) {
    j["repeat"] = r.position.repeat;
    j["repeats"] = r.repeats;
  }
  put(j, "secondsPerStep", r.seconds_per_step);
  put(j, "estimatedRemainingSeconds", r.remaining_seconds);
  return j;
}

}  // namespace

json to_json(const ProgressDetail& p) {
  json j = {{"percent", p.percent}, {"lastUpdateTime", p.last_update_time}};
  put(j, "estimatedRemainingSeconds", p.remaining_seconds);
  if (p.current_run) j["currentRun"] = to_json(*p.current_run);
  return j;
}

json to_json(const BenchmarkJobStatus& s) {
  json j = json::object();
  if (s.phase) j["phase"] = to_string(*s.phase);
  if (!s.conditions.empty()) {
    json& conditions = j["conditions"] = json::array();
    for (const auto& c : s.conditions) conditions.push_back(to_json(c));
  }
  put(j, "observedGeneration", s.observed_generation);
  put(j, "runsTotal", s.runs_total);
  put(j, "runsDone", s.runs_done);
  put(j, "progress", s.progress);
  put(j, "percentComplete", s.percent_complete);
  if (s.progress_detail) j["progressDetail"] = to_json(*s.progress_detail);
  if (!s.runs.empty()) {
    json& runs = j["runs"] = json::array();
    for (const auto& r : s.runs) runs.push_back(to_json(r));
  }
  if (s.report) j["report"] = to_json(*s.report);
  put(j, "startTime", s.start_time);
  put(j, "completionTime", s.completion_time);
  put(j, "bestExamplesPerSec", s.best_examples_per_sec);
  put(j, "bestSpeedup", s.best_speedup);
  put(j, "lowestEfficiency", s.lowest_efficiency);
  put(j, "noisyRuns", s.noisy_runs);
  return j;
}

// ---- readers ----

Condition condition_from_json(const json& j, const std::string& path) {
  jf::require_object(j, path);
  Condition c;
  c.type = get_enum<ConditionType>(j, "type", path, "condition type");
  c.status = get_enum<ConditionStatus>(j, "status", path, "condition status");
  c.reason = jf::get_string(j, "reason", path);
  c.message = jf::get_string(j, "message", path);
  c.last_transition_time = jf::get_string(j, "lastTransitionTime", path);
  c.observed_generation = optional_field(j, "observedGeneration", path, jf::get_int);
  return c;
}

RunStatus run_status_from_json(const json& j, const std::string& path) {
  jf::require_object(j, path);
  RunStatus r;
  r.index = jf::get_int32(j, "index", path);
  r.label = jf::get_string(j, "label", path);
  r.phase = get_enum<RunPhase>(j, "phase", path, "run phase");
  r.attempt = jf::get_int32(j, "attempt", path);
  r.restarts = jf::get_int32(j, "restarts", path);
  r.interruptions = optional_field(j, "interruptions", path, jf::get_int32);
  r.pods_created = optional_field(j, "podsCreated", path, jf::get_bool);
  r.start_time = optional_field(j, "startTime", path, jf::get_string);
  r.attempt_start_time = optional_field(j, "attemptStartTime", path, jf::get_string);
  r.completion_time = optional_field(j, "completionTime", path, jf::get_string);
  r.message = optional_field(j, "message", path, jf::get_string);
  if (jf::has(j, "summary")) r.summary = run_report_from_json(j.at("summary"), child(path, "summary"));
  if (jf::has(j, "environment")) {
    const json& environment = jf::get_object(j, "environment", path);
    try {
      r.environment = environment_from_json(environment);
    } catch (const std::exception& e) {
      throw std::runtime_error(path + "." + e.what());  // its messages start "environment..."
    }
  }
  return r;
}

namespace {

/// The array `key` (absent: empty), each item read by `read`(item, "<path>.<key>[i]").
template <typename T>
std::vector<T> list_field(const json& obj, const std::string& key, const std::string& path,
                          T (*read)(const json&, const std::string&)) {
  std::vector<T> out;
  if (!jf::has(obj, key)) return out;
  const json& items = jf::get_array(obj, key, path);
  for (std::size_t i = 0; i < items.size(); ++i) {
    out.push_back(read(items[i], child(path, key) + "[" + std::to_string(i) + "]"));
  }
  return out;
}

Report status_report_from_json(const json& j, const std::string& path) {
  const json& report = jf::get_object(j, "report", path);
  try {
    return report_from_json(report);
  } catch (const std::exception& e) {
    throw std::runtime_error(child(path, "report") + "." + e.what());  // report_from_json's paths are relative
  }
}

}  // namespace

namespace {

CurrentRunProgress current_run_from_json(const json& j, const std::string& path) {
  jf::require_object(j, path);
  CurrentRunProgress r;
  r.index = jf::get_int32(j, "index", path);
  r.label = jf::get_string(j, "label", path);
  r.attempt = jf::get_int32(j, "attempt", path);
  r.position.stage = get_enum<LoopStage>(j, "stage", path, "loop stage");
  r.position.step = jf::get_int32(j, "step", path);
  r.position.steps = jf::get_int32(j, "steps", path);
  r.position.repeat = optional_field(j, "repeat", path, jf::get_int32).value_or(0);
  r.repeats = optional_field(j, "repeats", path, jf::get_int32).value_or(0);
  r.seconds_per_step = optional_field(j, "secondsPerStep", path, jf::get_number);
  r.remaining_seconds = optional_field(j, "estimatedRemainingSeconds", path, jf::get_int);
  return r;
}

}  // namespace

ProgressDetail progress_detail_from_json(const json& j, const std::string& path) {
  jf::require_object(j, path);
  ProgressDetail p;
  p.percent = jf::get_int32(j, "percent", path);
  p.last_update_time = jf::get_string(j, "lastUpdateTime", path);
  p.remaining_seconds = optional_field(j, "estimatedRemainingSeconds", path, jf::get_int);
  if (jf::has(j, "currentRun")) p.current_run = current_run_from_json(j.at("currentRun"), child(path, "currentRun"));
  return p;
}

BenchmarkJobStatus job_status_from_json(const json& j, const std::string& path) {
  jf::require_object(j, path);
  BenchmarkJobStatus s;
  if (jf::has(j, "phase")) s.phase = get_enum<JobPhase>(j, "phase", path, "job phase");
  s.conditions = list_field(j, "conditions", path, condition_from_json);
  s.observed_generation = optional_field(j, "observedGeneration", path, jf::get_int);
  s.runs_total = optional_field(j, "runsTotal", path, jf::get_int32);
  s.runs_done = optional_field(j, "runsDone", path, jf::get_int32);
  s.progress = optional_field(j, "progress", path, jf::get_string);
  s.percent_complete = optional_field(j, "percentComplete", path, jf::get_string);
  if (jf::has(j, "progressDetail")) {
    s.progress_detail = progress_detail_from_json(j.at("progressDetail"), child(path, "progressDetail"));
  }
  s.runs = list_field(j, "runs", path, run_status_from_json);
  if (jf::has(j, "report")) s.report = status_report_from_json(j, path);
  s.start_time = optional_field(j, "startTime", path, jf::get_string);
  s.completion_time = optional_field(j, "completionTime", path, jf::get_string);
  s.best_examples_per_sec = optional_field(j, "bestExamplesPerSec", path, jf::get_number);
  s.best_speedup = optional_field(j, "bestSpeedup", path, jf::get_number);
  s.lowest_efficiency = optional_field(j, "lowestEfficiency", path, jf::get_number);
  s.noisy_runs = optional_field(j, "noisyRuns", path, jf::get_int32);
  return s;
}

}  // namespace trainbench
