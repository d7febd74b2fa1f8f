#pragma once

// Straggler scores: which ranks of a run compute slower than their peers. In synchronous data
// parallel training every rank waits for the slowest at each all-reduce, so every rank's step
// time is the slowest rank's and step times cannot say which rank it is; compute time can
// (the step minus the time spent waiting on other ranks, measured by the worker). As NVIDIA's
// resiliency extension scores ranks: score = fastest rank's compute / this rank's compute, 1.0
// for the fastest; a rank below the threshold (spec.benchmark.stragglerThreshold) is named.
// docs/report.md, "Straggler scores".

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainbench {

struct RankReport;

/// One rank named a straggler.
struct Straggler {
  int rank = 0;
  int node_rank = 0;
  int local_rank = 0;
  double score = 0;            ///< fastest compute / its compute, in (0, 1)
  double compute_seconds = 0;  ///< its compute per step (median over repeats of each repeat's p50)
};

/// A run's verdict: the fastest rank and the ranks whose score is below the threshold.
struct StragglerReport {
  double threshold = 0.7;
  int fastest_rank = 0;
  double fastest_compute_seconds = 0;
  int count = 0;                      ///< ranks below the threshold (`ranks` may keep fewer)
  std::vector<Straggler> stragglers;  ///< lowest score first (ties: lower rank first)
};

/// Sets each rank's straggler_score from its compute_seconds and returns the run's verdict;
/// nullopt (and no scores) when a rank has no compute time or the fastest has none to speak of.
std::optional<StragglerReport> score_stragglers(std::vector<RankReport>& ranks, double threshold);

/// Keeps the `n` lowest-scoring stragglers (count still says how many there are).
void keep_worst_stragglers(StragglerReport& s, std::size_t n);

/// "stragglers (score < 0.70): rank 2 (node 0, local 2) 0.41: compute 0.052s/step vs fastest
/// 0.021s (rank 0)", further ranks after "; ", at most `max_named` of them, then "; and N
/// more"; "" when there is none.
std::string straggler_line(const StragglerReport& s, std::size_t max_named);

nlohmann::json to_json(const StragglerReport& s);
/// Reads "stragglers"; throws std::runtime_error naming the bad field under `path`.
StragglerReport straggler_report_from_json(const nlohmann::json& j, const std::string& path);

}  // namespace trainbench
