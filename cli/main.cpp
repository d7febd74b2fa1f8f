// trainbench: runs distributed training benchmarks locally and compares their reports.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/util/version.hpp"

namespace {

constexpr const char* kUsage =
    "usage: trainbench <command> [options]\n"
    "\n"
    "Distributed deep-learning training benchmarks: sec/iter percentiles, throughput, scaling.\n"
    "\n"
    "commands:\n"
    "  run JOB.yaml [--json OUT.json] [--keep-logs DIR] [--baseline BASE.json]\n"
    "                 run every sweep entry of a BenchmarkJob locally and print the report\n"
    "  diff BASE.json TEST.json [--fail-on-regression PCT]\n"
    "                 compare two JSON reports (p75/p95 sec/iter, ex/sec, % change, verdicts)\n"
    "  report REPORT.json [--plot OUT.svg]\n"
    "                 print a saved JSON report as `run` does; --plot writes the scaling plot\n"
    "  validate JOB.yaml...\n"
    "                 check BenchmarkJob files without running anything\n"
    "  crd [--output yaml|json]\n"
    "                 print the BenchmarkJob CustomResourceDefinition for Kubernetes\n"
    "  node-launch    run one node's ranks of a run from the environment (operator pods)\n"
    "  version        print the trainbench version\n"
    "  help [COMMAND] show this help or a command's\n"
    "\n"
    "exit codes: 0 ok, 1 error, 2 usage error or invalid input, 3 a run failed,\n"
    "            4 significantly slower than the baseline (--fail-on-regression, --baseline),\n"
    "            130/143 interrupted by SIGINT/SIGTERM\n";

const char* usage_of(const std::string& command) {
  if (command == "run") return trainbench::cli::kRunUsage;
  if (command == "diff") return trainbench::cli::kDiffUsage;
  if (command == "report") return trainbench::cli::kReportUsage;
  if (command == "validate") return trainbench::cli::kValidateUsage;
  if (command == "crd") return trainbench::cli::kCrdUsage;
  if (command == "node-launch") return trainbench::cli::kNodeLaunchUsage;
  return nullptr;
}

int dispatch(const std::vector<std::string>& words) {
  using namespace trainbench::cli;
  if (words.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string& command = words[0];
  const std::vector<std::string> rest(words.begin() + 1, words.end());
  if (command == "-h" || command == "--help" || command == "help") {
    if (!rest.empty()) {
      if (const char* u = usage_of(rest[0])) {
        std::cout << u;
        return kExitOk;
      }
      if (rest[0] != "version" && rest[0] != "help") {
        std::cerr << "trainbench: unknown command \"" << rest[0] << "\"\n\n" << kUsage;
        return kExitUsage;
      }
    }
    std::cout << kUsage;
    return kExitOk;
  }
  if (command == "version" || command == "--version") {
    trainbench::parse_args(rest, {});  // rejects stray options; --help is handled below
    std::cout << "trainbench " << trainbench::kVersion << "\n";
    return kExitOk;
  }
  if (command == "run") return cmd_run(rest);
  if (command == "diff") return cmd_diff(rest);
  if (command == "report") return cmd_report(rest);
  if (command == "validate") return cmd_validate(rest);
  if (command == "crd") return cmd_crd(rest);
  if (command == "node-launch") return cmd_node_launch(rest);
  std::cerr << "trainbench: unknown command \"" << command << "\"\n\n" << kUsage;
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> words(argv + (argc > 0 ? 1 : 0), argv + argc);
  const std::string command = words.empty() ? "" : words[0];
  try {
    return dispatch(words);
  } catch (const trainbench::UsageError& e) {
    std::cerr << "trainbench " << command << ": " << e.what() << "\n\n";
    const char* u = usage_of(command);
    std::cerr << (u ? u : kUsage);
    return trainbench::cli::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "trainbench " << command << ": error: " << e.what() << "\n";
    return trainbench::cli::kExitError;
  } catch (...) {
    std::cerr << "trainbench " << command << ": error: unknown exception\n";
    return trainbench::cli::kExitError;
  }
}
