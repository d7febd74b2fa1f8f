#pragma once
// The probe protocol's rank record (docs/workloads.md, "Protocol"): what one rank of a program
// workload hands over when it ends, through the file TRAINBENCH_RANK_RECORD_FILE (trainbench
// run) or the run store's key trainbench/record/<rank> (the operator's master pod). The run's
// executor reads every rank's record and assembles the RunResult the built-in worker's rank 0
// would have gathered, so the report, diff, plot, MFU, straggler scores and noise verdicts work
// on a program unchanged. Records are untrusted input: bounded, checked field by field.

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/plan/run_config.hpp"
#include "core/results/run_result.hpp"

namespace trainbench {

inline constexpr const char* kRankRecordKind = "trainbench.dev/rank-record";
inline constexpr int kRankRecordVersion = 1;
/// The largest record read (a million measured steps' seconds and their splits fit).
inline constexpr std::size_t kMaxRankRecordBytes = 64u << 20;
/// The store key of rank R's record: kRankRecordKeyPrefix + R.
inline constexpr const char* kRankRecordKeyPrefix = "trainbench/record/";

/// One rank's record as the run needs it: its measurements and the environment it names.
struct ProgramRankRecord {
  RankResult result;
  EnvironmentInfo environment;  ///< framework, device name, hostname, backend, threads
};

/// Reads rank `rank`'s record of `run`. Throws std::runtime_error naming the field that is
/// missing, mistyped or inconsistent with the run ("stepSeconds[1]: has 3 steps, the run measures
/// 20 per repeat"): kind and version, rank and worldSize, stepSeconds as repeats x measureSteps
/// seconds >= 0, communicationSeconds (optional, same shape, each within its step), losses
/// (finite), memory and counts (>= 0).
ProgramRankRecord program_rank_record_from_json(const nlohmann::json& j, const RunConfig& run, int rank);

/// Parses `text` (at most kMaxRankRecordBytes) as rank `rank`'s record; errors as above, and
/// "is not JSON: ..." / "is larger than 64 MiB".
ProgramRankRecord parse_program_rank_record(const std::string& text, const RunConfig& run, int rank);

/// The run's result from every rank's record, in rank order (records[r] is rank r's): world
/// size and index from the run, the environment rank 0 named, parameter count rank 0's.
RunResult assemble_program_result(const RunConfig& run, const std::vector<ProgramRankRecord>& records);

/// A record as JSON (the probe's format): tests and other implementations of the protocol.
nlohmann::json to_json(const ProgramRankRecord& r, int world_size);

}  // namespace trainbench
