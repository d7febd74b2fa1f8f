#pragma once
// Hang detection over the ranks' progress records (core/results/rank_progress.hpp): pure, so that both
// watchers (the local executor, the operator's master pod) and the tests share one rule.
//
// A run hangs when no rank has advanced (step, phase or collective unchanged) for the hang
// timeout. The stuck ranks are then, in this order of evidence: those whose heartbeat went
// stale (the process is stopped or wedged: SIGSTOP, a hung driver); else those not waiting on
// another rank (stuck computing: a stuck data loader, an endless kernel); else those missing
// from the collective most ranks wait in (a lower sequence number, another collective). The
// others are named by where they wait, ranks compressed ("0-2, 4-7").

#include <optional>
#include <string>
#include <vector>

#include "core/results/rank_progress.hpp"

namespace trainbench {

/// A heartbeat older than this is stale (ranks publish about once a second).
inline constexpr double kStaleHeartbeatSeconds = 5;

/// The shape of the run the records come from.
struct HangRun {
  int processes = 0;  ///< every rank publishes: ranks 0..processes-1
  int trainers = 0;   ///< ranks >= trainers are parameter servers
};

struct HangVerdict {
  std::vector<RankProgressRecord> stuck;    ///< the ranks the others wait for (may be empty)
  std::vector<RankProgressRecord> waiting;  ///< every other rank
  double idle_seconds = 0;                  ///< how long the most recently advanced rank has not
  std::string message;                      ///< "hang: rank 3 (...) in backward of step 41 for 125 s; ..."
};

/// The verdict when every rank of `run` has a record, not all are done, and none has advanced
/// for `timeout_seconds` at wall-clock time `now` (seconds since the epoch); else nullopt.
/// Records of ranks outside the run are ignored; the latest record of a rank counts.
std::optional<HangVerdict> detect_hang(const std::vector<RankProgressRecord>& records, double now,
                                       double timeout_seconds, const HangRun& run);

/// "0-2, 4-7, 9": sorted, duplicates dropped, runs of three or more as ranges.
std::string compress_ranks(std::vector<int> ranks);

/// A program workload (docs/workloads.md) whose probe publishes as soon as it exists: the ranks (0..processes-1) that have published no progress record `elapsed` seconds after
/// their start, once that is past `timeout` seconds: a program that never created its probe or
/// hangs before it (a verdict naming them and what is missing); nullopt otherwise.
std::optional<HangVerdict> detect_silent_ranks(const std::vector<int>& silent, double elapsed, double timeout);

}  // namespace trainbench
