#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "core/results/run_progress.hpp"

namespace trainbench {

/// What a worker's rank 0 writes to TRAINBENCH_PROGRESS_FILE after every step.
struct ProgressUpdate {
  std::string phase;  ///< warmup | measure
  int repeat = 0;     ///< 1-based
  int repeats = 0;
  int step = 0;       ///< 1-based
  int steps = 0;
  double sec_per_iter = 0;
};

/// Parses a progress file's text; nullopt if it is not (yet) a complete progress object.
std::optional<ProgressUpdate> parse_progress(const std::string& text);

/// The identity of a run as the progress line shows it.
struct ProgressRun {
  int number = 1;  ///< 1-based position in the job
  int count = 1;
  std::string label;  ///< "1M/2G"
  std::string model;
  int world_size = 1;
  int warmup_steps = 0;
  RunSteps steps;  ///< the loop (run_steps): what the time left is counted in
};

/// Completed loop steps an update says (core/results/run_progress.hpp counts in them).
std::int64_t steps_done(const ProgressUpdate& p, const RunSteps& steps);

/// "run 2/3 [1M/2G mlp] warmup 20/20 | measure repeat 2/5 step 17/100 | 0.123 s/iter | ETA 12s"
/// (the ETA, the run's time left, when given).
std::string format_progress_line(const ProgressRun& run, const std::optional<ProgressUpdate>& p,
                                 std::optional<double> eta_seconds = std::nullopt);

/// One live line per run on stderr. On a terminal it is rewritten in place (\r) and ended
/// with \n; otherwise (CI logs) at most one line per `plain_interval_s` is printed, plus the
/// final one.
class ProgressDisplay {
 public:
  using Clock = std::function<double()>;  ///< seconds, monotonic

  ProgressDisplay(std::ostream& out, bool tty, double plain_interval_s = 5.0, Clock clock = {});

  /// On a terminal, live lines are cut to `columns - 1` so they never wrap (0: no limit).
  void set_width(std::size_t columns) { columns_ = columns; }

  void begin(const ProgressRun& run);
  void update(const ProgressUpdate& p);
  /// Ends the run's line with `status` ("done in 4.2 s | p50 0.123 s/iter", "FAILED: ...").
  void end(const std::string& status);

 private:
  void emit(const std::string& line, bool final_line);

  std::ostream& out_;
  bool tty_;
  double interval_;
  Clock clock_;
  ProgressRun run_;
  std::optional<ProgressUpdate> last_;
  StepRate rate_;  ///< the run's measured rate so far, for its ETA
  bool active_ = false;
  bool printed_any_ = false;
  double last_print_ = 0;
  std::size_t last_width_ = 0;
  std::size_t columns_ = 0;
};

}  // namespace trainbench
