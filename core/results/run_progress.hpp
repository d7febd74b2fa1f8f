#pragma once
// Progress and estimated time left: the one home of the concept for both executors. The CLI's
// progress line (cli/progress) and the operator's status (a run's master serves a
// RunProgressSample, the reconciler turns it into status.progressDetail) count steps, measure
// the rate and estimate the time left with these functions (docs/operator.md, "Progress").

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/spec/vocabulary.hpp"

namespace trainbench {

struct RunConfig;

/// The step loop of a run's rank 0 (worker/train_loop): warm-up, then `repeats` rounds of
/// `measure` steps.
struct RunSteps {
  int warmup = 0;
  int repeats = 1;
  int measure = 1;
  std::int64_t total() const { return warmup + static_cast<std::int64_t>(repeats) * measure; }
};
/// The loop `run` steps through (the all-reduce benchmark: one step per message size).
RunSteps run_steps(const RunConfig& run);

/// Where a run's loop stands.
enum class LoopStage { kStarting, kWarmup, kMeasure, kFinishing };
template <>
struct Spellings<LoopStage> {
  static constexpr std::array<Spelling<LoopStage>, 4> table{{{LoopStage::kStarting, "Starting"},
                                                             {LoopStage::kWarmup, "Warmup"},
                                                             {LoopStage::kMeasure, "Measure"},
                                                             {LoopStage::kFinishing, "Finishing"}}};
};

/// Steps done within the stage: "warmup 3/20", "measure repeat 2/5 step 17/100".
struct LoopPosition {
  LoopStage stage = LoopStage::kStarting;
  int repeat = 0;  ///< 1-based round while measuring, else 0
  int step = 0;    ///< steps completed in the warm-up or in the round
  int steps = 0;   ///< steps of the warm-up or of a round
};
/// The position after `done` completed loop steps (-1: rank 0 has not begun its first step).
LoopPosition loop_position(const RunSteps& steps, std::int64_t done);

/// The measured rate so far: observations of completed steps over time, the first one (with a
/// step begun) the anchor. Seconds per step = time since the anchor / steps since the anchor;
/// none until a step has completed after the anchor. A stalled rank makes the rate slower at
/// each observation, as it should: the estimate is of the run as it goes.
class StepRate {
 public:
  void observe(std::int64_t done, double seconds);
  std::optional<double> seconds_per_step() const;
  void reset() { *this = StepRate{}; }

 private:
  std::optional<std::int64_t> anchor_done_;
  double anchor_seconds_ = 0;
  std::int64_t last_done_ = 0;
  double last_seconds_ = 0;
};

/// What a run's master serves at GET /progress (worker/master): rank 0's place in the loop,
/// from its progress record (core/results/rank_progress.hpp), and the rate it measured.
struct RunProgressSample {
  int run = 0;
  int attempt = 0;
  std::int64_t steps_done = -1;  ///< completed loop steps; -1 before the first began
  std::int64_t steps_total = 0;
  std::optional<double> seconds_per_step;
  double updated = 0;  ///< wall clock (seconds since the epoch) of rank 0's record
};
nlohmann::json to_json(const RunProgressSample& s);
/// Reads a sample a pod served: throws std::runtime_error naming the bad field, also for
/// numbers out of range (steps_done outside [-1, steps_total], a rate not finite or negative).
RunProgressSample run_progress_sample_from_json(const nlohmann::json& j);

/// What the job's estimate is made of.
struct JobEstimateInput {
  int runs_total = 1;
  int runs_done = 0;                  ///< runs ended before the current one
  std::vector<double> ended_seconds;  ///< wall time of each ended run (pods created -> ended)
  double current_elapsed = 0;         ///< seconds since the current attempt's pods were created
  std::int64_t current_done = -1;     ///< the current run's completed steps (-1: none known)
  std::int64_t current_total = 0;
  std::optional<double> seconds_per_step;  ///< the current run's measured rate
};
struct JobEstimate {
  int percent = 0;                              ///< of the whole job, 0..99 until it ended
  std::optional<double> run_remaining_seconds;  ///< the current run's steps left x its rate
  std::optional<double> remaining_seconds;      ///< the whole job
};
/// percent = (ended runs + the current run's fraction of steps) / runs, rounded down and kept
/// below 100 while a run is left. The current run's time left is its steps left at its measured
/// rate; each run after it is expected to take as long as the ended runs took on average (or,
/// before any ended, as long as the current one is projected to). Unknown (nullopt) before the
/// current run has a rate and no run has ended.
JobEstimate estimate_job(const JobEstimateInput& in);

/// "45s", "12m30s", "2h05m": a time left as kubectl prints ages.
std::string format_eta(double seconds);

}  // namespace trainbench
