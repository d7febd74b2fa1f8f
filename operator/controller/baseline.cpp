#include "operator/controller/baseline.hpp"

#include <algorithm>
#include <variant>

#include "core/api/crd.hpp"
#include "core/report/compare.hpp"
#include "operator/controller/json_access.hpp"

namespace trainbench::op {
namespace {

using nlohmann::json;

std::string str_at(const json& j, const char* key) {
  const json v = get_or(j, key, "");
  return v.is_string() ? v.get<std::string>() : "";
}

RegressionOutcome unknown(const std::string& reason, const std::string& message) {
  return {ConditionStatus::kUnknown, reason, message};
}

/// Whether some run of the report succeeded (a failed run is a row without numbers).
bool any_succeeded(const Report& r) {
  return std::any_of(r.runs.begin(), r.runs.end(), [](const RunReport& run) { return run.phase == "Succeeded"; });
}

/// "BenchmarkJob base" or "ConfigMap reports (key report)".
std::string describe(const BaselineSpec& spec) {
  return spec.benchmark_job.empty() ? "ConfigMap " + spec.config_map + " (key " + spec.config_map_key + ")"
                                    : "BenchmarkJob " + spec.benchmark_job;
}

/// The baseline's report, or the outcome that says why there is none.
std::variant<Report, RegressionOutcome> baseline_report(const BaselineSpec& spec, const json& object) {
  const std::string what = describe(spec);
  try {
    if (!spec.benchmark_job.empty()) {
      const json status = get_or(object, "status", json::object());
      const std::string phase = str_at(status, "phase");
      if (phase != "Succeeded" && phase != "Failed") {
        return unknown("BaselinePending", what + " has not ended (phase " + (phase.empty() ? "Pending" : phase) +
                                              "); compared when it does");
      }
      if (!status.contains("report")) return unknown("BaselineInvalid", what + " ended without a report");
      Report rep = report_from_json(status.at("report"));
      if (!any_succeeded(rep)) return unknown("BaselineInvalid", what + " ended without a run that succeeded");
      return rep;
    }
    const json data = get_or(object, "data", json::object());
    if (!data.contains(spec.config_map_key)) return unknown("BaselineInvalid", what + ": no such key");
    const json parsed = json::parse(str_at(data, spec.config_map_key.c_str()), nullptr, false);
    if (parsed.is_discarded()) return unknown("BaselineInvalid", what + ": not a JSON report");
    return report_from_json(parsed);
  } catch (const std::exception& e) {
    return unknown("BaselineInvalid", what + ": not a report: " + e.what());
  }
}

std::string bounded(std::string message) {
  if (message.size() > static_cast<std::size_t>(kMaxConditionMessageLength)) {
    message.resize(static_cast<std::size_t>(kMaxConditionMessageLength) - 3);
    message += "...";
  }
  return message;
}

}  // namespace

std::optional<BaselineRef> baseline_to_look_up(const json& job) {
  const json baseline = get_or(get_or(job, "spec", json::object()), "baseline", nullptr);
  const json status = get_or(job, "status", json::object());
  const std::string phase = str_at(status, "phase");
  if (!baseline.is_object() || (phase != "Succeeded" && phase != "Failed")) return std::nullopt;
  for (const auto& c : get_or(status, "conditions", json::array())) {
    if (str_at(c, "type") == "Regressed" && str_at(c, "status") != "Unknown") return std::nullopt;
  }
  const json cm = get_or(baseline, "configMap", nullptr);
  if (cm.is_object()) {
    const std::string key = str_at(cm, "key");
    return BaselineRef{BaselineRef::Kind::kConfigMap, str_at(cm, "name"),
                       key.empty() ? BaselineSpec{}.config_map_key : key};
  }
  const std::string name = str_at(baseline, "benchmarkJob");
  if (name.empty()) return std::nullopt;
  return BaselineRef{BaselineRef::Kind::kBenchmarkJob, name, ""};
}

RegressionOutcome judge_regression(const BaselineSpec& spec, const std::optional<Report>& report,
                                   const ObservedBaseline& found) {
  const std::string what = describe(spec);
  if (!found.error.empty()) return unknown("BaselineNotFound", "cannot read " + what + ": " + bounded(found.error));
  if (!found.object) return unknown("BaselineNotFound", what + " not found in the job's namespace");
  if (!report || !any_succeeded(*report))
    return unknown("NoReport", "no run succeeded: nothing to compare with " + what);
  auto base = baseline_report(spec, *found.object);
  if (const auto* why = std::get_if<RegressionOutcome>(&base)) return {why->status, why->reason, bounded(why->message)};
  const RegressionVerdict v =
      regression_verdict(compare_reports(std::get<Report>(base), *report), spec.regression_threshold_percent);
  std::string message = "against " + what + ": " + v.headline;
  for (std::size_t i = 0; i < v.changes.size(); ++i) message += (i == 0 ? ": " : "; ") + v.changes[i];
  return {v.regressed ? ConditionStatus::kTrue : ConditionStatus::kFalse, v.regressed ? "Regressed" : "NoRegression",
          bounded(message)};
}

}  // namespace trainbench::op
