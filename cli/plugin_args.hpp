#pragma once

// The command line of `kubectl trainbench` (cli/kubectl_trainbench.cpp): subcommand, job names,
// kubectl's connection flags and each subcommand's options, parsed into one typed request.
// kubectl hands a plugin every word after its name, so the connection flags come after the
// subcommand (`kubectl trainbench report NAME -n NS`), and may stand anywhere after it.

#include <optional>
#include <string>
#include <vector>

namespace trainbench::cli {

enum class PluginCommand { kReport, kDiff, kPlot, kLogs };

/// kubectl's flags for reaching the cluster, with kubectl's meaning: --kubeconfig (else
/// $KUBECONFIG, else ~/.kube/config), --context (else current-context), -n/--namespace (else the
/// context's namespace, else "default"). Empty: not given.
struct KubeFlags {
  std::string kubeconfig;
  std::string context;
  std::string namespace_;
};

/// logs: which pod and container.
struct LogsTarget {
  std::optional<int> run;      ///< --run I; default: the running run, else the last one started
  std::optional<int> attempt;  ///< --attempt A; default: the run's current (latest) attempt
  int rank = 0;                ///< --rank R
  bool master = false;         ///< --master: the run's master pod instead of a rank's
  bool follow = false;         ///< -f/--follow: stream until the container ends
};

struct PluginRequest {
  PluginCommand command = PluginCommand::kReport;
  bool help = false;  ///< -h/--help: print the subcommand's usage
  KubeFlags kube;
  std::vector<std::string> names;        ///< report/plot/logs: one job; diff: base, test
  std::string json_out;                  ///< report --json OUT.json
  std::optional<double> fail_threshold;  ///< diff --fail-on-regression PCT
  std::string output;                    ///< plot -o/--output FILE ("-": stdout); diff: text | json
  LogsTarget logs;
};

/// "report" -> kReport; nullopt for anything else.
std::optional<PluginCommand> parse_plugin_command(const std::string& word);
const char* to_string(PluginCommand c);

/// Parses the words after the subcommand name. Short forms as kubectl spells them: -n NS,
/// -nNS, -n=NS; -o FILE; -f. Throws UsageError naming the option or argument that is wrong.
PluginRequest parse_plugin_args(PluginCommand command, const std::vector<std::string>& words);

}  // namespace trainbench::cli
