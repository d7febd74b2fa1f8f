#include "cli/plugin_args.hpp"

#include <array>
#include <climits>
#include <cstdlib>
#include <utility>

#include "cli/args.hpp"
#include "cli/diff_output.hpp"
#include "cli/regression_check.hpp"

namespace trainbench::cli {
namespace {

constexpr std::array<std::pair<PluginCommand, const char*>, 4> kCommands{{{PluginCommand::kReport, "report"},
                                                                          {PluginCommand::kDiff, "diff"},
                                                                          {PluginCommand::kPlot, "plot"},
                                                                          {PluginCommand::kLogs, "logs"}}};

/// kubectl's short flags, as their long names.
std::string long_name(char c) {
  switch (c) {
    case 'n':
      return "--namespace";
    case 'o':
      return "--output";
    case 'f':
      return "--follow";
    default:
      return "";
  }
}

/// -n NS, -nNS, -n=NS -> --namespace NS (likewise -o, -f): parse_args then sees long options only.
std::vector<std::string> expand_short_flags(const std::vector<std::string>& words) {
  std::vector<std::string> out;
  bool options_done = false;
  for (const auto& w : words) {
    options_done = options_done || w == "--";
    const std::string name = (!options_done && w.size() >= 2 && w[0] == '-' && w[1] != '-') ? long_name(w[1]) : "";
    if (name.empty()) {
      out.push_back(w);
      continue;
    }
    out.push_back(name);
    if (w.size() > 2) out.push_back(w.substr(w[2] == '=' ? 3 : 2));
  }
  return out;
}

std::set<std::string> value_options(PluginCommand c) {
  std::set<std::string> v{"--kubeconfig", "--context", "--namespace"};
  if (c == PluginCommand::kReport) v.insert("--json");
  if (c == PluginCommand::kDiff) v.insert({"--fail-on-regression", "--output"});
  if (c == PluginCommand::kPlot) v.insert("--output");
  if (c == PluginCommand::kLogs) v.insert({"--run", "--rank", "--attempt"});
  return v;
}

int non_negative(const ParsedArgs& a, const std::string& option, const char* what) {
  const std::string v = a.value(option);
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || end != v.c_str() + v.size() || n < 0 || n > INT_MAX) {
    throw UsageError(option + ": expected " + what + " (0, 1, ...), got \"" + v + "\"");
  }
  return static_cast<int>(n);
}

LogsTarget logs_target(const ParsedArgs& a) {
  LogsTarget t;
  if (a.has("--run")) t.run = non_negative(a, "--run", "a run index");
  if (a.has("--attempt")) t.attempt = non_negative(a, "--attempt", "an attempt number");
  if (a.has("--rank")) t.rank = non_negative(a, "--rank", "a rank");
  t.master = a.has("--master");
  t.follow = a.has("--follow");
  if (t.master && a.has("--rank")) throw UsageError("--master and --rank name different pods: give one");
  return t;
}

}  // namespace

std::optional<PluginCommand> parse_plugin_command(const std::string& word) {
  for (const auto& [c, name] : kCommands) {
    if (word == name) return c;
  }
  return std::nullopt;
}

const char* to_string(PluginCommand c) {
  for (const auto& [cmd, name] : kCommands) {
    if (cmd == c) return name;
  }
  return "?";
}

PluginRequest parse_plugin_args(PluginCommand command, const std::vector<std::string>& words) {
  const std::set<std::string> flags =
      command == PluginCommand::kLogs ? std::set<std::string>{"--follow", "--master"} : std::set<std::string>{};
  const ParsedArgs a = parse_args(expand_short_flags(words), value_options(command), flags);
  PluginRequest r;
  r.command = command;
  r.help = a.help;
  r.kube = {a.value("--kubeconfig"), a.value("--context"), a.value("--namespace")};
  if (r.help) return r;
  r.names = a.positional;
  const std::size_t want = command == PluginCommand::kDiff ? 2 : 1;
  if (r.names.size() != want) {
    throw UsageError(std::string("expected ") +
                     (want == 2 ? "two BenchmarkJob names (BASE TEST)" : "a BenchmarkJob name") + ", got " +
                     std::to_string(r.names.size()) + " argument(s)");
  }
  r.json_out = a.value("--json");
  if (a.has("--fail-on-regression")) {
    r.fail_threshold = parse_regression_threshold("--fail-on-regression", a.value("--fail-on-regression"));
  }
  r.output = a.value("--output");
  if (command == PluginCommand::kDiff && !r.output.empty()) parse_diff_format("--output", r.output);
  if (command == PluginCommand::kPlot && r.output.empty())
    throw UsageError("plot needs -o FILE.svg (\"-o -\": stdout)");
  if (command == PluginCommand::kLogs) r.logs = logs_target(a);
  return r;
}

}  // namespace trainbench::cli
