#pragma once

// A run's noise verdict (issue 14 item 3; docs/report.md, "Noise"). Benchmark numbers on a shared
// machine move between identical runs; a run whose repeats disagree is marked noisy, with the
// reason and what would help, so that nobody reads a 10% difference out of a 20% noise.
//
// Two halves, as the report's: measure_noise() runs where a run's raw step times are (
// summarize_run: the run's master on Kubernetes), judge_noise() where the job's spec is
// (assemble_report), against spec.benchmark.noiseThresholdPercent.

#include <array>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/plan/run_config.hpp"
#include "core/results/run_result.hpp"
#include "core/spec/vocabulary.hpp"
#include "core/util/stats.hpp"

namespace trainbench {

/// RunReport::noise.verdict.
enum class NoiseVerdict {
  kQuiet,     ///< the repeats agree within the threshold
  kNoisy,     ///< they do not
  kUnjudged,  ///< one repeat: nothing to compare
};
template <>
struct Spellings<NoiseVerdict> {
  static constexpr std::array<Spelling<NoiseVerdict>, 3> table{
      {{NoiseVerdict::kQuiet, "quiet"}, {NoiseVerdict::kNoisy, "noisy"}, {NoiseVerdict::kUnjudged, "unjudged"}}};
};

/// How much a run's timings moved, and the verdict on it (JSON "noise" of a run).
struct NoiseReport {
  /// Absent until judge_noise() (a run's summary before the report is assembled, as speedup).
  std::optional<NoiseVerdict> verdict;
  /// (max - min) / median of the repeats' p50 sec/iter, in %; absent with one repeat.
  std::optional<double> repeat_spread_percent;
  /// Coefficient of variation (sample standard deviation / mean) of each repeat's step times,
  /// all ranks pooled, in %; the median over the repeats (one disturbed repeat does not set it).
  double step_cv_percent = 0;
  double threshold_percent = 0;  ///< the spread above which the run is noisy (0 until judged)
  int processes_per_host = 1;    ///< processes on the busiest host (node 0)
  int threads_per_process = 1;
  std::optional<int> host_cores;    ///< CPUs rank 0 may run on; absent: unknown (older workers)
  std::string reason;               ///< the figures behind the verdict, for people
  std::vector<std::string> advice;  ///< what would help (noisy, unjudged); empty when quiet
};

/// A repeat's spread of step times: sample standard deviation / mean, in % (0 for fewer than
/// two values or a zero mean).
double coefficient_of_variation_percent(const std::vector<double>& values);

/// The spread of the repeats' p50s, (max - min) / median in %; nullopt for fewer than two repeats.
std::optional<double> repeat_spread_percent(const std::vector<Percentiles>& repeats);

/// The spread of `repeats` medians of `steps` step times each that step-to-step jitter of
/// `step_cv_percent` alone explains: d2(repeats) x 1.2533 x cv / sqrt(steps), where 1.2533 cv /
/// sqrt(n) is the standard error of a median and d2(r) the expected range of r standard normals.
double jitter_spread_percent(double step_cv_percent, int repeats, int steps);

/// The measured half, no verdict yet: spread, step CV, and the processes, threads and cores
/// the advice needs. `repeats` are the run's all-rank percentiles per repeat.
NoiseReport measure_noise(const RunConfig& run, const RunResult& result, const std::vector<Percentiles>& repeats);

/// The verdict: noisy when the spread exceeds `threshold_percent`; sets reason and advice.
/// `repeats` and `measure_steps` are the run's repeats and steps per repeat.
void judge_noise(NoiseReport& noise, double threshold_percent, int repeats, int measure_steps);

nlohmann::json to_json(const NoiseReport& n);
/// Throws std::runtime_error naming the bad field under `path` ("runs[1].noise.verdict: ...").
NoiseReport noise_report_from_json(const nlohmann::json& j, const std::string& path);

}  // namespace trainbench
