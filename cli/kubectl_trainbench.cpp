// kubectl-trainbench: the kubectl plugin (`kubectl trainbench ...`: kubectl runs an executable
// named kubectl-<name> found on PATH). Reads BenchmarkJobs from the cluster through the
// kubeconfig and the kube library, no kubectl underneath, and prints them as `trainbench` does.
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/plugin_args.hpp"
#include "cli/plugin_cluster.hpp"
#include "cli/plugin_commands.hpp"
#include "core/util/version.hpp"

namespace {

using namespace trainbench::cli;

#define TB_CONNECTION_FLAGS                                                            \
  "connection (as kubectl's):\n"                                                       \
  "  --kubeconfig FILE   the kubeconfig (default: $KUBECONFIG, else ~/.kube/config)\n" \
  "  --context NAME      a context of the kubeconfig (default: its current-context)\n" \
  "  -n, --namespace NS  the jobs' namespace (default: the context's, else \"default\")\n"

#define TB_EXIT_CODES                                                                             \
  "exit codes: 0 ok, 1 error (kubeconfig, API server, API error, no such job or pod),\n"          \
  "            2 usage error, 4 a regression beyond --fail-on-regression PCT (diff),\n"           \
  "            5 not there yet (the job has no report yet; logs: the run, pod or container has\n" \
  "            not started)\n"

constexpr const char* kUsage =
    "usage: kubectl trainbench <command> NAME... [options]\n"
    "\n"
    "BenchmarkJobs on the cluster, read through the kubeconfig (no kubectl needed underneath).\n"
    "\n"
    "commands:\n"
    "  report NAME [--json OUT.json]   the job's report in `trainbench run`'s text layout\n"
    "  diff BASE TEST [--fail-on-regression PCT] [-o json]\n"
    "                                  compare two jobs' reports as `trainbench diff` does\n"
    "  plot NAME -o scaling.svg        the job's scaling plot (SVG)\n"
    "  logs NAME [--run I] [--rank R] [--attempt A] [--master] [-f]\n"
    "                                  the log of the pod running a rank\n"
    "  version                         print the version\n"
    "  help [COMMAND]                  show this help or a command's\n"
    "\n" TB_CONNECTION_FLAGS "\n" TB_EXIT_CODES;

constexpr const char* kReportUsage =
    "usage: kubectl trainbench report NAME [--json OUT.json] [-n NS] [--context C] [--kubeconfig F]\n"
    "\n"
    "Prints the BenchmarkJob's report (status.report, written by the operator as runs end) in the\n"
    "layout `trainbench run` prints: environment, then per configuration sec/iter percentiles,\n"
    "ex/sec, speedup and scaling efficiency, the verdicts' notes, loss, per-rank rows. While the\n"
    "job runs it has the runs that ended (stderr says so); without any, it says the job's phase\n"
    "and what its runs are doing.\n"
    "\n"
    "options:\n"
    "  --json OUT.json     also write the report as JSON (for `trainbench diff`, `trainbench report`)\n"
    "\n" TB_CONNECTION_FLAGS "\n" TB_EXIT_CODES;

constexpr const char* kDiffUsage =
    "usage: kubectl trainbench diff BASE TEST [--fail-on-regression PCT] [-o json] [-n NS] [--context C]\n"
    "\n"
    "Compares the reports of two BenchmarkJobs (same namespace) exactly as `trainbench diff`\n"
    "compares two JSON reports: settings side by side, p75/p95 sec/iter, ex/sec and their change\n"
    "per configuration, with a verdict from Welch's t-test on the repeats (docs/report.md).\n"
    "\n"
    "options:\n"
    "  --fail-on-regression PCT  exit 4 when a row's p50 ex/sec is significantly lower than\n"
    "                            BASE's by more than PCT percent (for CI)\n"
    "  -o, --output json         print the comparison as JSON, as `trainbench diff --output json`\n"
    "\n" TB_CONNECTION_FLAGS "\n" TB_EXIT_CODES;

constexpr const char* kPlotUsage =
    "usage: kubectl trainbench plot NAME -o FILE.svg [-n NS] [--context C] [--kubeconfig F]\n"
    "\n"
    "Writes the job's scaling plot (as `trainbench report FILE.json --plot FILE.svg`): ex/sec and\n"
    "scaling efficiency against devices, the ideal line, the efficiency target, the baseline run.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   where to write the SVG (\"-\": stdout)\n"
    "\n" TB_CONNECTION_FLAGS "\n" TB_EXIT_CODES;

constexpr const char* kLogsUsage =
    "usage: kubectl trainbench logs NAME [--run I] [--rank R | --master] [--attempt A] [-f]\n"
    "\n"
    "Prints the log of the pod and container that run rank R of run I (the operator's pod names:\n"
    "NAME-r<I>-a<A>-trainer-<node>, -ps-<j>, -master), through the API (pods/log). stderr names\n"
    "the pod first. A trainer pod runs devicesPerNode ranks: its log is `trainbench node-launch`'s\n"
    "(which ranks, and a failed rank's last lines). Pods are deleted when their run ends unless\n"
    "spec.runPolicy.cleanPodPolicy is None.\n"
    "\n"
    "options:\n"
    "  --run I             the run (sweep entry); default: the one running, else the last started\n"
    "  --rank R            the rank (default 0); paradigm hybrid-ps: servers follow the trainers\n"
    "  --master            the run's master pod (rendezvous store, hang watch, result hand-over)\n"
    "  --attempt A         the attempt (default: the run's latest)\n"
    "  -f, --follow        stream the log until the container ends\n"
    "\n" TB_CONNECTION_FLAGS "\n" TB_EXIT_CODES;

const char* usage_of(PluginCommand c) {
  switch (c) {
    case PluginCommand::kReport:
      return kReportUsage;
    case PluginCommand::kDiff:
      return kDiffUsage;
    case PluginCommand::kPlot:
      return kPlotUsage;
    case PluginCommand::kLogs:
      return kLogsUsage;
  }
  return kUsage;
}

int run_command(PluginCommand c, const std::vector<std::string>& rest) {
  const PluginRequest r = parse_plugin_args(c, rest);
  if (r.help) {
    std::cout << usage_of(c);
    return kExitOk;
  }
  switch (c) {
    case PluginCommand::kReport:
      return plugin_report(r);
    case PluginCommand::kDiff:
      return plugin_diff(r);
    case PluginCommand::kPlot:
      return plugin_plot(r);
    case PluginCommand::kLogs:
      return plugin_logs(r);
  }
  return kExitUsage;
}

/// help, --help, help COMMAND, version; nullopt for the subcommands.
std::optional<int> general(const std::vector<std::string>& words) {
  const std::string& w = words[0];
  if (w == "version" || w == "--version") {
    std::cout << "kubectl-trainbench " << trainbench::kVersion << "\n";
    return kExitOk;
  }
  if (w != "help" && w != "-h" && w != "--help") return std::nullopt;
  if (words.size() > 1) {
    if (const auto c = parse_plugin_command(words[1])) {
      std::cout << usage_of(*c);
      return kExitOk;
    }
  }
  std::cout << kUsage;
  return kExitOk;
}

int dispatch(const std::vector<std::string>& words) {
  if (words.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  if (const auto rc = general(words)) return *rc;
  const auto c = parse_plugin_command(words[0]);
  if (!c) {
    std::cerr << "kubectl-trainbench: unknown command \"" << words[0] << "\"\n\n" << kUsage;
    return kExitUsage;
  }
  try {
    return run_command(*c, std::vector<std::string>(words.begin() + 1, words.end()));
  } catch (const trainbench::UsageError& e) {
    std::cerr << "kubectl-trainbench " << words[0] << ": " << e.what() << "\n\n" << usage_of(*c);
    return kExitUsage;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> words(argv + (argc > 0 ? 1 : 0), argv + argc);
  const std::string command = words.empty() ? "" : words[0];
  try {
    return dispatch(words);
  } catch (const PluginError& e) {
    std::cerr << "kubectl-trainbench " << command << ": " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "kubectl-trainbench " << command << ": error: " << e.what() << "\n";
    return kExitError;
  }
}
