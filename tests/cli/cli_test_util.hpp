#pragma once

// Helpers for the CLI's end-to-end tests: spawn the real `trainbench` binary with a chosen
// environment, wait for it with a timeout, and inspect /proc for the processes it started.

#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "file_io.hpp"
#include "temp_dir.hpp"

namespace trainbench::test {


/// Environment changes for a spawned process: set (value) or unset (nullopt).
using EnvChanges = std::map<std::string, std::optional<std::string>>;

/// A unique string to put in a child's environment, so its descendants can be found in /proc.
std::string unique_marker();

struct Spawned {
  pid_t pid = -1;
  std::string out_path;  ///< its stdout
  std::string err_path;  ///< its stderr
};

/// Starts `exe args...` with this process's environment changed by `env`; stdout and stderr go
/// to files in `dir`.
Spawned spawn(const std::string& exe, const std::vector<std::string>& args, const EnvChanges& env,
              const std::string& dir);

/// Waits for `pid` up to `timeout_s`; returns its exit code (128 + signal if killed), or
/// nullopt on timeout (the process is then SIGKILLed and reaped). With `progressed`, polled as it
/// waits, the timeout counts from the last time it returned true.
std::optional<int> wait_exit(pid_t pid, double timeout_s, const std::function<bool()>& progressed = {});

/// For wait_exit's `progressed`: true each time the spawned process's stdout + stderr grew.
std::function<bool()> output_grows(const Spawned& s);

struct CliResult {
  int code = -1;  ///< -1: timed out
  std::string out;
  std::string err;
};

/// Runs `trainbench args...` to completion, following its progress instead of the clock: it is
/// stopped (code -1) only when its stdout and stderr stay unchanged for `stall_s` seconds, so a
/// slow or busy machine makes a run longer, never a failure (ctest's TIMEOUT is the backstop).
CliResult run_cli(const std::vector<std::string>& args, const EnvChanges& env, const std::string& dir,
                  double stall_s = 60);

/// Direct children of `parent` (from /proc/PID/stat), zombies included.
std::vector<pid_t> children_of(pid_t parent);

/// The environment of a live process (empty if it is gone or a zombie).
std::map<std::string, std::string> environ_of(pid_t pid);

/// Processes (not zombies) whose environment contains `needle` (other than this process).
std::vector<pid_t> processes_with_env(const std::string& needle);

/// Whether `pid` exists at all (zombie included).
bool process_exists(pid_t pid);

/// Polls `pred` every 50 ms until it is true or `timeout_s` passes.
bool wait_until(double timeout_s, const std::function<bool()>& pred);

/// The processes with `marker` in their environment still there after up to `timeout_s`.
std::vector<pid_t> processes_left(const std::string& marker, double timeout_s = 5);

/// A BenchmarkJob of the small mlp (input 64, hidden [128], 10 classes, batch 8).
/// `sweep` is the YAML list body ("    - {nodes: 1, devicesPerNode: 2}\n"); `spec_extra` is
/// appended under spec: (e.g. "  runPolicy: {activeDeadlineSeconds: 2}\n").
std::string mlp_job_yaml(const std::string& name, int warmup, int measure, int repeats, const std::string& sweep,
                         const std::string& spec_extra = "");

/// Path of the trainbench executable under test.
std::string trainbench_exe();
/// Path of the real worker, or "" when this build has none.
std::string real_worker_exe();
/// tests/cli/data.
std::string data_dir();

/// A script in `dir` that runs the real worker with `test_options_json` (a RunConfig
/// "testOptions" object, core/plan/run_config.hpp RunTestOptions, e.g. {"allreduceFaultRank":1})
/// added to its TRAINBENCH_RUN_CONFIG: set as TRAINBENCH_WORKER, `trainbench run` then hands its
/// workers the test options (the worker reads no test hooks from its environment).
std::string worker_with_test_options(const TempDir& dir, const std::string& test_options_json);

}  // namespace trainbench::test
