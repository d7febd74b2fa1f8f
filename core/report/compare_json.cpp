#include "core/report/compare_json.hpp"

#include <algorithm>

namespace trainbench {
namespace {

using nlohmann::json;

/// One side of a row: its phase, repeats, p50 examples/sec and sec/iter percentiles.
json side_json(const RunReport& r) {
  json j = {{"phase", r.phase}, {"repeats", r.repeats.size()}};
  if (r.phase == "Succeeded") {
    j["examplesPerSec"] = r.examples_per_sec.p50;
    j["secPerIter"] = percentiles_json(r.sec_per_iter);
  } else {
    j["error"] = r.error;
  }
  return j;
}

const char* presence(const RowComparison& r) {
  if (r.base != nullptr && r.test != nullptr) return "both";
  return r.base != nullptr ? "baseline" : "test";
}

json change_json(const ThroughputChange& c) {
  return {{"percent", c.percent()},
          {"lowPercent", (c.low - 1) * 100},
          {"highPercent", (c.high - 1) * 100},
          {"pValue", c.p_value},
          {"df", c.df}};
}

json row_json(const RowComparison& r, const std::vector<const RowComparison*>& regressed,
              std::optional<double> threshold_percent) {
  json j = {{"name", r.name}, {"in", presence(r)}};
  if (r.base != nullptr) j["baseline"] = side_json(*r.base);
  if (r.test != nullptr) j["test"] = side_json(*r.test);
  const bool both_ran = r.base != nullptr && r.test != nullptr && r.base->phase == "Succeeded" &&
                        r.test->phase == "Succeeded" && r.base->examples_per_sec.p50 > 0;
  if (both_ran) {
    j["examplesPerSecChangePercent"] = (r.test->examples_per_sec.p50 / r.base->examples_per_sec.p50 - 1) * 100;
  }
  if (r.verdict) {
    j["verdict"] = verdict_word(*r.verdict);
    j["samples"] = {{"baseline", r.base_samples}, {"test", r.test_samples}};
  }
  if (r.change) j["change"] = change_json(*r.change);
  if (threshold_percent) j["regression"] = std::find(regressed.begin(), regressed.end(), &r) != regressed.end();
  return j;
}

}  // namespace

json comparison_to_json(const Comparison& c, std::optional<double> threshold_percent) {
  const auto regressed = threshold_percent ? regressions(c, *threshold_percent) : std::vector<const RowComparison*>{};
  json rows = json::array();
  for (const auto& r : c.rows) rows.push_back(row_json(r, regressed, threshold_percent));
  json j = {{"schemaVersion", kComparisonSchemaVersion}, {"alpha", c.alpha}, {"rows", std::move(rows)}};
  if (threshold_percent) {
    const RegressionVerdict v = regression_verdict(c, *threshold_percent);
    json names = json::array();
    for (const auto* r : regressed) names.push_back(r->name);
    j["regression"] = {{"thresholdPercent", *threshold_percent},
                       {"regressed", v.regressed},
                       {"headline", v.headline},
                       {"rows", std::move(names)}};
  }
  j["significantChanges"] = significant_changes(c);
  return j;
}

}  // namespace trainbench
