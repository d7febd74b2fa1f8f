#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cli/progress.hpp"
#include "core/plan/run_config.hpp"
#include "core/report/report.hpp"

namespace trainbench {

struct LocalExecutorOptions {
  std::string worker;    ///< worker executable (see find_worker_binary)
  std::string runs_dir;  ///< existing directory under which the run's directory is created
  bool keep_logs = false;          ///< keep the run directory when the run succeeds too
  int active_deadline_seconds = 0; ///< 0: none; a run past it is stopped and failed
  double grace_seconds = 3.0;      ///< SIGTERM -> SIGKILL when stopping ranks
  int poll_ms = 100;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;             ///< 0: a free port is picked for the run
  int node_rank = -1;              ///< >= 0: start only that node's trainers (trainbench node-launch)
  bool expect_result = true;       ///< false: success is every rank exiting 0 (rank 0 reports elsewhere)
  /// A rank's log is emptied (with a note of what was dropped) whenever it grows past this.
  long long max_log_bytes = 16LL << 20;
  std::function<void(const ProgressUpdate&)> on_progress;  ///< called when rank 0's progress changes
};

struct LocalRunOutcome {
  RunOutcome outcome;         ///< the parsed RunResult, or the error that failed the run
  std::string run_dir;        ///< rank-R.log, result.json, progress.json
  bool logs_kept = false;     ///< false: run_dir was removed (success without keep_logs)
  int failed_rank = -1;       ///< the rank whose exit failed the run (or the first hung rank), -1 if none
  bool hang = false;          ///< the run failed by a hang (outcome.error: core/analysis/hang.hpp's message)
  std::string failed_log;     ///< that rank's log file
  std::string log_tail;       ///< its last lines
  int interrupted_by = 0;     ///< the signal that interrupted the CLI (interrupt.hpp), 0 if none
  double elapsed_seconds = 0;
};

/// The worker binary: $TRAINBENCH_WORKER if set, else `trainbench-worker` next to the running
/// executable (/proc/self/exe), in ../worker/ (build tree) or ../libexec/trainbench/ (install).
/// Throws std::runtime_error saying where it looked.
std::string find_worker_binary();

/// A TCP port that was free on 127.0.0.1 a moment ago (bind to port 0, read it, close).
int pick_free_port();

/// One worker process run_local starts: its place in the run and the variables it gets on top
/// of the CLI's own environment (the rank's torchrun variables, rank_environment, plus
/// TRAINBENCH_RESULT_FILE, TRAINBENCH_PROGRESS_FILE and TRAINBENCH_RANK_PROGRESS_FILE under run_dir;
/// a program workload's ranks also TRAINBENCH_RANK_RECORD_FILE, always their progress file, and
/// the program's env).
struct RankLaunch {
  RankPlacement placement;
  std::map<std::string, std::string> env;
};

/// The processes run_local starts for `run`, in rank order: every placement, or with
/// opts.node_rank >= 0 (node-launch) that node's trainers only.
std::vector<RankLaunch> rank_launches(const RunConfig& run, const LocalExecutorOptions& opts, int master_port,
                                      const std::string& run_dir);

/// Runs one configuration as process_count() local worker processes (the trainers, then any
/// parameter servers: placements(run)), one process group, each with
/// the parent's environment plus the rank's torchrun variables, TRAINBENCH_RESULT_FILE and
/// TRAINBENCH_PROGRESS_FILE; stdout+stderr of rank R go to run_dir/rank-R.log.
/// The first rank to exit non-zero or by a signal fails the run; the deadline, a hang (no rank
/// advanced for run.hang_timeout_seconds, read from the ranks' rank-R.progress.json; not under
/// node-launch, whose run the master pod watches) and an interrupt (SIGINT/SIGTERM/SIGHUP via
/// interrupt.hpp) stop it too. In every case all ranks are stopped
/// (SIGTERM, grace, SIGKILL to the process group) and reaped before this returns.
/// Children also get PR_SET_PDEATHSIG(SIGKILL), so they die with the CLI even if it is killed.
/// Never throws for run failures; setup failures (cannot create run_dir, fork fails) are
/// returned as the outcome's error as well.
LocalRunOutcome run_local(const RunConfig& run, const LocalExecutorOptions& opts);

}  // namespace trainbench
