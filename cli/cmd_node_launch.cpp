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
#include "cli/node_launch.hpp"
#include "core/plan/run_config.hpp"

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
  NodeLaunch launch = node_launch_from_env(process_environment);
  const RunConfig& run = launch.run;
  LocalExecutorOptions& opts = launch.options;
  const int node = opts.node_rank;

  install_interrupt_handlers();
  opts.worker = find_worker_binary();
  const char* tmp = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe)
  opts.runs_dir = tmp != nullptr ? tmp : "/tmp";
  std::cerr << "trainbench node-launch: node " << node << " of " << run.nodes << ", ranks "
            << node * run.devices_per_node << ".." << (node + 1) * run.devices_per_node - 1 << " of "
            << run.process_count() << ", master " << opts.master_addr << ":" << opts.master_port << "\n";
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
