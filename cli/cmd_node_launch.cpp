#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/interrupt.hpp"
#include "cli/local_executor.hpp"
#include "core/run_config.hpp"

namespace trainbench::cli {

const char* const kNodeLaunchUsage =
    "usage: trainbench node-launch\n"
    "\n"
    "Runs one node's share of a run, as torchrun does on one machine: starts LOCAL_WORLD_SIZE\n"
    "(or NPROC_PER_NODE) trainbench-worker processes with RANK = NODE_RANK x NPROC_PER_NODE +\n"
    "LOCAL_RANK, and fails as soon as one of them fails, stopping the others. The operator's\n"
    "trainer pods run this. Everything comes from the environment: TRAINBENCH_RUN_CONFIG,\n"
    "MASTER_ADDR, MASTER_PORT, WORLD_SIZE, NODE_RANK (or GROUP_RANK), NPROC_PER_NODE.\n"
    "On failure the error is also written to TRAINBENCH_TERMINATION_LOG (default\n"
    "/dev/termination-log when it exists), which Kubernetes shows as the pod's message.\n"
    "\n"
    "exit codes: 0 every local rank exited 0, 1 a rank failed, 2 bad environment,\n"
    "            143/130 stopped by SIGTERM/SIGINT\n";

namespace {

std::string required_env(const char* name) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): single-threaded here
  if (v == nullptr || *v == '\0') throw UsageError(std::string("environment variable ") + name + " is not set");
  return v;
}

int int_env(const char* name, const std::string& value) {
  try {
    std::size_t used = 0;
    const int v = std::stoi(value, &used);
    if (used == value.size()) return v;
  } catch (const std::exception&) {
  }
  throw UsageError(std::string(name) + " must be an integer, got \"" + value + "\"");
}

void write_termination_message(const std::string& message) {
  const char* path = std::getenv("TRAINBENCH_TERMINATION_LOG");  // NOLINT(concurrency-mt-unsafe)
  std::string file = path != nullptr ? path : "/dev/termination-log";
  if (path == nullptr) {
    std::ifstream probe(file);
    if (!probe) return;
  }
  std::ofstream out(file, std::ios::trunc);
  out << message.substr(0, 4000) << "\n";
}

}  // namespace

int cmd_node_launch(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {});
  if (a.help) {
    std::cout << kNodeLaunchUsage;
    return kExitOk;
  }
  if (!a.positional.empty()) throw UsageError("node-launch takes no arguments (it reads the environment)");
  RunConfig run;
  try {
    run = run_config_from_json(nlohmann::json::parse(required_env("TRAINBENCH_RUN_CONFIG")));
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    throw UsageError(std::string("TRAINBENCH_RUN_CONFIG: ") + e.what());
  }
  const char* node_var = std::getenv("NODE_RANK") != nullptr ? "NODE_RANK" : "GROUP_RANK";  // NOLINT
  const int node = int_env(node_var, required_env(node_var));
  const int world = int_env("WORLD_SIZE", required_env("WORLD_SIZE"));
  const char* nproc_var = std::getenv("NPROC_PER_NODE") != nullptr ? "NPROC_PER_NODE" : "LOCAL_WORLD_SIZE";  // NOLINT
  const int nproc = int_env(nproc_var, required_env(nproc_var));
  if (world != run.process_count()) {
    throw UsageError("WORLD_SIZE " + std::to_string(world) + " disagrees with the run config (" +
                     std::to_string(run.process_count()) + (run.parameter_servers > 0 ? " processes: trainers and parameter servers)" : ")"));
  }
  if (nproc != run.devices_per_node) {
    throw UsageError(std::string(nproc_var) + " " + std::to_string(nproc) + " disagrees with the run config (" +
                     std::to_string(run.devices_per_node) + " devices per node)");
  }
  if (node < 0 || node >= run.nodes) {
    throw UsageError(std::string(node_var) + " must be in [0, " + std::to_string(run.nodes) + "), got " +
                     std::to_string(node));
  }

  install_interrupt_handlers();
  LocalExecutorOptions opts;
  opts.worker = find_worker_binary();
  const char* tmp = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe)
  opts.runs_dir = tmp != nullptr ? tmp : "/tmp";
  opts.master_addr = required_env("MASTER_ADDR");
  opts.master_port = int_env("MASTER_PORT", required_env("MASTER_PORT"));
  opts.node_rank = node;
  opts.expect_result = false;
  // Ranks that finished their run serve their last metrics for TRAINBENCH_METRICS_LINGER_SECONDS,
  // through the SIGTERM of the run's cleanup: give them that long before SIGKILL. A rank still
  // training stops at the SIGTERM itself, so this does not slow down a cancelled run.
  if (std::getenv("TRAINBENCH_METRICS_LINGER_SECONDS") != nullptr) {  // NOLINT(concurrency-mt-unsafe)
    const int linger = int_env("TRAINBENCH_METRICS_LINGER_SECONDS", required_env("TRAINBENCH_METRICS_LINGER_SECONDS"));
    opts.grace_seconds = std::max(opts.grace_seconds, linger + 2.0);
  }
  std::cerr << "trainbench node-launch: node " << node << " of " << run.nodes << ", ranks "
            << node * run.devices_per_node << ".." << (node + 1) * run.devices_per_node - 1 << " of " << world
            << ", master " << opts.master_addr << ":" << opts.master_port << "\n";
  const LocalRunOutcome out = run_local(run, opts);
  if (out.interrupted_by != 0) return 128 + out.interrupted_by;
  if (!out.outcome.error.empty()) {
    std::cerr << "trainbench node-launch: " << out.outcome.error << "\n";
    if (!out.log_tail.empty()) std::cerr << out.log_tail << "\n";
    write_termination_message(out.outcome.error);
    return kExitError;
  }
  std::cerr << "trainbench node-launch: all " << run.devices_per_node << " ranks of node " << node << " finished\n";
  return kExitOk;
}

}  // namespace trainbench::cli
