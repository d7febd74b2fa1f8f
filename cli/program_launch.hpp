#pragma once
// What the local executor does differently for a program workload (spec.workloads[].program,
// docs/workloads.md): the program's argv, executable, working directory and environment
// instead of trainbench-worker's, each rank's record and progress files, the run's result
// assembled from the ranks' records, and the cap on a rank's log.

#include <string>
#include <vector>

#include "core/plan/run_config.hpp"
#include "core/report/report.hpp"

namespace trainbench {

/// A regular file this process may execute.
bool is_executable_file(const std::string& path);

/// Rank R's record file under the run directory (TRAINBENCH_RANK_RECORD_FILE).
std::string rank_record_file(const std::string& run_dir, int rank);

/// The executable a program's command[0] names: a path with a '/' as given (relative to the
/// program's workingDir when set), else the first executable file of that name on PATH. Throws
/// std::runtime_error naming command[0] and where it looked.
std::string resolve_program_executable(const ProgramSpec& program);

/// command + args, in order.
std::vector<std::string> program_argv(const ProgramSpec& program);

/// Every rank exited 0: each rank's record read and checked, then assembled into the run's
/// result. A missing or bad record fails the run naming the rank, its file and what was wrong.
RunOutcome read_program_result(const RunConfig& run, const std::string& run_dir);

/// Keeps a rank's log file under `max_bytes`: when it is larger, empties it and writes a line
/// saying how much was dropped (the rank writes with O_APPEND, so its output continues after
/// that line). Returns the bytes dropped (0: nothing done).
long long cap_log(const std::string& path, long long max_bytes);

}  // namespace trainbench
