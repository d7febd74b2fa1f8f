#include "core/report/straggler.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/report/report.hpp"
#include "core/spec/json_fields.hpp"
#include "core/util/text_cells.hpp"

namespace trainbench {

namespace jf = json_fields;

std::optional<StragglerReport> score_stragglers(std::vector<RankReport>& ranks, double threshold) {
  if (ranks.empty()) return std::nullopt;
  const RankReport* fastest = nullptr;
  for (const RankReport& rk : ranks) {
    if (!rk.compute_seconds) return std::nullopt;
    if (!fastest || *rk.compute_seconds < *fastest->compute_seconds) fastest = &rk;
  }
  // A step of no measurable compute scores nothing (and would make every other rank score 0).
  if (!(*fastest->compute_seconds > 0)) return std::nullopt;
  StragglerReport s;
  s.threshold = threshold;
  s.fastest_rank = fastest->rank;
  s.fastest_compute_seconds = *fastest->compute_seconds;
  for (RankReport& rk : ranks) {
    rk.straggler_score = s.fastest_compute_seconds / *rk.compute_seconds;
    if (*rk.straggler_score < threshold) {
      s.stragglers.push_back({rk.rank, rk.node_rank, rk.local_rank, *rk.straggler_score, *rk.compute_seconds});
    }
  }
  std::stable_sort(s.stragglers.begin(), s.stragglers.end(), [](const Straggler& a, const Straggler& b) {
    return a.score != b.score ? a.score < b.score : a.rank < b.rank;
  });
  s.count = static_cast<int>(s.stragglers.size());
  return s;
}

void keep_worst_stragglers(StragglerReport& s, std::size_t n) {
  if (s.stragglers.size() > n) s.stragglers.resize(n);
}

std::string straggler_line(const StragglerReport& s, std::size_t max_named) {
  if (s.count == 0) return "";
  std::string out = printf_str("stragglers (score < %.2f): ", s.threshold);
  const std::size_t named = std::min(max_named, s.stragglers.size());
  for (std::size_t i = 0; i < named; ++i) {
    const Straggler& x = s.stragglers[i];
    out += (i > 0 ? "; rank " : "rank ") + std::to_string(x.rank) + " (node " + std::to_string(x.node_rank) +
           ", local " + std::to_string(x.local_rank) + ") " + printf_str("%.2f", x.score) + ": compute " +
           fmt_sec(x.compute_seconds) + "/step";
    if (i == 0)
      out += " vs fastest " + fmt_sec(s.fastest_compute_seconds) + " (rank " + std::to_string(s.fastest_rank) + ")";
  }
  if (static_cast<std::size_t>(s.count) > named) out += "; and " + std::to_string(s.count - named) + " more";
  return out;
}

nlohmann::json to_json(const StragglerReport& s) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const Straggler& x : s.stragglers) {
    ranks.push_back({{"rank", x.rank},
                     {"nodeRank", x.node_rank},
                     {"localRank", x.local_rank},
                     {"score", x.score},
                     {"computeSeconds", x.compute_seconds}});
  }
  return {{"threshold", s.threshold},
          {"fastestRank", s.fastest_rank},
          {"fastestComputeSeconds", s.fastest_compute_seconds},
          {"count", s.count},
          {"ranks", ranks}};
}

StragglerReport straggler_report_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  StragglerReport s;
  s.threshold = jf::get_number(j, "threshold", path);
  if (!(s.threshold > 0 && s.threshold <= 1)) throw std::runtime_error(path + ".threshold: must be in (0, 1]");
  s.fastest_rank = jf::get_int32(j, "fastestRank", path);
  s.fastest_compute_seconds = jf::get_number(j, "fastestComputeSeconds", path);
  if (s.fastest_compute_seconds < 0) throw std::runtime_error(path + ".fastestComputeSeconds: must be >= 0");
  s.count = jf::get_int32(j, "count", path);
  const auto& ranks = jf::get_array(j, "ranks", path);
  if (s.count < 0 || ranks.size() > static_cast<std::size_t>(s.count)) {
    throw std::runtime_error(path + ".count: must be >= 0 and at least the ranks listed");
  }
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    const std::string p = path + ".ranks[" + std::to_string(k) + "]";
    jf::require_object(ranks[k], p);
    Straggler x{jf::get_int32(ranks[k], "rank", p), jf::get_int32(ranks[k], "nodeRank", p),
                jf::get_int32(ranks[k], "localRank", p), jf::get_number(ranks[k], "score", p),
                jf::get_number(ranks[k], "computeSeconds", p)};
    if (x.score < 0 || x.compute_seconds < 0) throw std::runtime_error(p + ": score and computeSeconds must be >= 0");
    s.stragglers.push_back(x);
  }
  return s;
}

}  // namespace trainbench
