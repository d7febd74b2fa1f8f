#pragma once

// Keeping a job's status small at any scale. A run's per-rank detail (RunReport::ranks) grows with
// its world size; the job's status holds every run twice (status.runs[].summary and
// status.report.runs[]) and must fit etcd's object limit (1.5 MiB) with room to spare. A run with
// more than kMaxRanksInStatus ranks is therefore copied into status with a RankSummary instead
// of its ranks; the full per-rank detail stays in the run's result ConfigMap (written by the
// run's master, kept until the job is deleted). docs/report.md, "Status at scale".

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/report/report.hpp"

namespace trainbench {

/// Runs up to this many ranks keep every rank in the job's status (seed 004 sweeps to 1024).
inline constexpr int kMaxRanksInStatus = 64;
/// How many of the slowest ranks a RankSummary names.
inline constexpr int kSlowestRanksKept = 8;
/// How many stragglers (lowest score first) a run's copy in status names; its count says how
/// many there are, its result ConfigMap names every one.
inline constexpr int kStragglersInStatus = 16;

/// The ranks' p50 spread and the kSlowestRanksKept slowest ranks (ties: lower rank first).
RankSummary summarize_ranks(const std::vector<RankReport>& ranks, const std::string& detail_config_map);

/// The copy of `run` for the job's status: unchanged up to kMaxRanksInStatus ranks, else its
/// ranks replaced by their summary, naming `detail_config_map` as where every rank is kept; its
/// stragglers stay, the kStragglersInStatus lowest-scoring named.
RunReport compact_for_status(RunReport run, const std::string& detail_config_map);

nlohmann::json to_json(const RankSummary& s);
/// Reads a rankSummary; throws std::runtime_error naming the bad field under `path`.
RankSummary rank_summary_from_json(const nlohmann::json& j, const std::string& path);

}  // namespace trainbench
