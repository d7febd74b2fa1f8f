#pragma once
// Test support: spawn trainbench-worker processes (fork/exec) the way a launcher would.

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/plan/run_config.hpp"
#include "file_io.hpp"
#include "temp_dir.hpp"

namespace trainbench::test {

/// Path of the worker under test (compile definition TRAINBENCH_WORKER_PATH).
std::string worker_path();


/// A TCP port that was free a moment ago (bind 127.0.0.1:0, read it, close).
int free_port();

struct ProcessOutcome {
  int exit_code = -1;      ///< -1 when killed (timeout or signal)
  int signal = 0;          ///< the signal that ended it (0: it exited)
  bool timed_out = false;
  std::string output;      ///< stdout and stderr, interleaved
};

/// Runs `argv` with the current environment plus `env` (which wins); kills it once its output
/// has not grown for `timeout`.
ProcessOutcome run_process(const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& env,
                           std::chrono::seconds timeout = std::chrono::seconds(120));

/// Launches every rank of `run` on 127.0.0.1 (a fresh port), each with
/// trainbench::rank_environment(...) plus `extra_env`, and waits for all of them (all are
/// killed once no rank's output grew for `timeout`). Returns the outcomes by rank.
std::vector<ProcessOutcome> run_ranks(const RunConfig& run,
                                      const std::map<std::string, std::string>& extra_env,
                                      std::chrono::seconds timeout = std::chrono::seconds(120));

/// A tiny mlp run (16-32-4, batch 8, 1 warm-up + 2 x 3 measured steps) on one node.
RunConfig tiny_mlp_run(const std::string& job, const std::string& paradigm, int world);

/// Raw little-endian float32 file (TRAINBENCH_DUMP_PARAMS output).
std::vector<float> read_float32_file(const std::string& path);


}  // namespace trainbench::test
