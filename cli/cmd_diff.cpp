#include <iostream>
#include <optional>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/diff_output.hpp"
#include "cli/regression_check.hpp"
#include "core/report/report.hpp"

namespace trainbench::cli {

const char* const kDiffUsage =
    "usage: trainbench diff BASE.json TEST.json [--fail-on-regression PCT] [--output text|json]\n"
    "       trainbench diff REPORT.json --workloads BASE,TEST [...]\n"
    "\n"
    "Compares two reports written by `trainbench run --json`, in the layout of PyTorch's\n"
    "benchmarks/distributed/ddp/diff.py: the configurations side by side, then for each run\n"
    "(matched by label) p75 and p95 sec/iter, examples/sec and the % change of examples/sec,\n"
    "and the change of p50 examples/sec with its 95% confidence interval and a verdict\n"
    "(faster, slower, ~ no significant change, cannot tell: fewer than 2 repeats on a side),\n"
    "from Welch's t-test on the repeats' log p50 sec/iter (docs/report.md, \"Significance\").\n"
    "\n"
    "With --workloads, both sides come from one report of a job with spec.workloads: the runs of\n"
    "workload BASE against those of workload TEST, matched by shape (docs/workloads.md).\n"
    "\n"
    "options:\n"
    "  --fail-on-regression PCT  exit 4 when a row's p50 examples/sec is significantly lower\n"
    "                            than the baseline's by more than PCT percent (for CI)\n"
    "  --output json             print the comparison as one JSON document instead: every row\n"
    "                            with both sides, its change, verdict (faster, slower, no-change,\n"
    "                            cannot-tell) and, with --fail-on-regression, the regression\n"
    "                            verdict (docs/report.md, \"The diff as JSON\"); exit codes as for text\n"
    "\n"
    "exit codes: 0 ok, 2 a file is missing or not a valid report, or the command line is wrong,\n"
    "            4 a regression beyond --fail-on-regression PCT\n";

namespace {

/// Both reports, or nullopt after printing which file is bad and why.
std::optional<std::pair<Report, Report>> load_both(const std::vector<std::string>& files) {
  Report reports[2];
  for (std::size_t i = 0; i < 2; ++i) {
    try {
      reports[i] = load_report(files[i]);
    } catch (const std::exception& e) {
      // load_report's message names the file and the bad field; make sure of the file.
      const std::string what = e.what();
      std::cerr << "trainbench diff: " << (what.find(files[i]) == std::string::npos ? files[i] + ": " : "") << what
                << "\n";
      return std::nullopt;
    }
  }
  return std::make_pair(std::move(reports[0]), std::move(reports[1]));
}

/// --workloads BASE,TEST of REPORT.json: the two workloads' runs as two reports, or nullopt after
/// printing why not.
std::optional<std::pair<Report, Report>> load_workloads(const std::string& file, const std::string& names) {
  const auto comma = names.find(',');
  if (comma == std::string::npos || comma == 0 || comma + 1 == names.size() ||
      names.find(',', comma + 1) != std::string::npos) {
    throw UsageError("--workloads: expected BASE,TEST (two workload names), got \"" + names + "\"");
  }
  try {
    const Report report = load_report(file);
    return std::make_pair(workload_report(report, names.substr(0, comma)), workload_report(report, names.substr(comma + 1)));
  } catch (const std::exception& e) {
    const std::string what = e.what();
    std::cerr << "trainbench diff: " << (what.find(file) == std::string::npos ? file + ": " : "") << what << "\n";
    return std::nullopt;
  }
}

}  // namespace

int cmd_diff(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {"--fail-on-regression", "--output", "--workloads"});
  if (a.help) {
    std::cout << kDiffUsage;
    return kExitOk;
  }
  const bool workloads = a.has("--workloads");
  if (a.positional.size() != (workloads ? 1u : 2u)) {
    throw UsageError(std::string(workloads ? "expected one REPORT.json with --workloads" : "expected BASE.json and TEST.json") +
                     ", got " + std::to_string(a.positional.size()) + " file argument(s)");
  }
  std::optional<double> threshold;
  if (a.has("--fail-on-regression")) {
    threshold = parse_regression_threshold("--fail-on-regression", a.value("--fail-on-regression"));
  }
  const DiffFormat format = parse_diff_format("--output", a.value("--output", "text"));
  const auto reports = workloads ? load_workloads(a.positional[0], a.value("--workloads")) : load_both(a.positional);
  if (!reports) return kExitUsage;
  return print_diff(reports->first, reports->second, threshold, std::cout, format);
}

}  // namespace trainbench::cli
