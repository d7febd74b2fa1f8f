#include "core/report/rank_summary.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/spec/json_fields.hpp"
#include "core/util/stats.hpp"

namespace trainbench {

namespace jf = json_fields;

RankSummary summarize_ranks(const std::vector<RankReport>& ranks, const std::string& detail_config_map) {
  RankSummary s;
  s.count = static_cast<int>(ranks.size());
  s.detail_config_map = detail_config_map;
  if (ranks.empty()) return s;
  std::vector<double> p50;
  p50.reserve(ranks.size());
  for (const auto& rk : ranks) p50.push_back(rk.sec_per_iter.p50);
  const auto [lo, hi] = std::minmax_element(p50.begin(), p50.end());
  s.sec_per_iter_p50_min = *lo;
  s.sec_per_iter_p50_max = *hi;
  s.sec_per_iter_p50_median = median(p50);
  std::vector<RankReport> by_p50 = ranks;
  std::stable_sort(by_p50.begin(), by_p50.end(), [](const RankReport& a, const RankReport& b) {
    return a.sec_per_iter.p50 != b.sec_per_iter.p50 ? a.sec_per_iter.p50 > b.sec_per_iter.p50 : a.rank < b.rank;
  });
  by_p50.resize(std::min<std::size_t>(by_p50.size(), kSlowestRanksKept));
  s.slowest = std::move(by_p50);
  return s;
}

RunReport compact_for_status(RunReport run, const std::string& detail_config_map) {
  if (run.stragglers) keep_worst_stragglers(*run.stragglers, kStragglersInStatus);
  if (static_cast<int>(run.ranks.size()) <= kMaxRanksInStatus) return run;
  run.rank_summary = summarize_ranks(run.ranks, detail_config_map);
  run.ranks.clear();
  run.ranks.shrink_to_fit();
  run.topology.reset();  // as large as the ranks; the ConfigMap keeps it
  return run;
}

nlohmann::json to_json(const RankSummary& s) {
  nlohmann::json slowest = nlohmann::json::array();
  for (const auto& rk : s.slowest) slowest.push_back(to_json(rk));
  nlohmann::json j = {
      {"count", s.count},
      {"secPerIterP50",
       {{"min", s.sec_per_iter_p50_min}, {"median", s.sec_per_iter_p50_median}, {"max", s.sec_per_iter_p50_max}}},
      {"slowest", slowest}};
  if (!s.detail_config_map.empty()) j["detail"] = {{"configMap", s.detail_config_map}, {"key", "result"}};
  return j;
}

RankSummary rank_summary_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  RankSummary s;
  const std::int64_t count = jf::get_int(j, "count", path);
  if (count < 0 || count > kMaxWorldSize) {
    throw std::runtime_error(path + ".count: must be 0.." + std::to_string(kMaxWorldSize));
  }
  s.count = static_cast<int>(count);
  const auto& p50 = jf::get_object(j, "secPerIterP50", path);
  const std::string pp = path + ".secPerIterP50";
  s.sec_per_iter_p50_min = jf::get_number(p50, "min", pp);
  s.sec_per_iter_p50_median = jf::get_number(p50, "median", pp);
  s.sec_per_iter_p50_max = jf::get_number(p50, "max", pp);
  const auto& slowest = jf::get_array(j, "slowest", path);
  if (slowest.size() > static_cast<std::size_t>(std::min(s.count, kSlowestRanksKept))) {
    throw std::runtime_error(path + ".slowest: more ranks than count (or than " + std::to_string(kSlowestRanksKept) +
                             ")");
  }
  for (std::size_t k = 0; k < slowest.size(); ++k) {
    s.slowest.push_back(rank_report_from_json(slowest[k], path + ".slowest[" + std::to_string(k) + "]"));
  }
  if (jf::has(j, "detail"))
    s.detail_config_map = jf::get_string(jf::get_object(j, "detail", path), "configMap", path + ".detail");
  return s;
}

}  // namespace trainbench
