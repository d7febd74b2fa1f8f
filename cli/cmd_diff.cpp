#include <iostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/report.hpp"
#include "core/report_format.hpp"

namespace trainbench::cli {

const char* const kDiffUsage =
    "usage: trainbench diff BASE.json TEST.json\n"
    "\n"
    "Compares two reports written by `trainbench run --json`, in the layout of PyTorch's\n"
    "benchmarks/distributed/ddp/diff.py: the configurations side by side, then for each run\n"
    "(matched by label) p75 and p95 sec/iter, examples/sec and the % change of examples/sec.\n"
    "\n"
    "exit codes: 0 ok, 2 a file is missing or not a valid report, or the command line is wrong\n";

int cmd_diff(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {});
  if (a.help) {
    std::cout << kDiffUsage;
    return kExitOk;
  }
  if (a.positional.size() != 2) {
    throw UsageError("expected BASE.json and TEST.json, got " + std::to_string(a.positional.size()) +
                     " file argument(s)");
  }
  Report reports[2];
  for (int i = 0; i < 2; ++i) {
    try {
      reports[i] = load_report(a.positional[static_cast<std::size_t>(i)]);
    } catch (const std::exception& e) {
      // load_report's message names the file and the bad field; make sure of the file.
      const std::string& file = a.positional[static_cast<std::size_t>(i)];
      const std::string what = e.what();
      std::cerr << "trainbench diff: " << (what.find(file) == std::string::npos ? file + ": " : "") << what
                << "\n";
      return kExitUsage;
    }
  }
  std::cout << format_diff(reports[0], reports[1]);
  std::cout.flush();
  return kExitOk;
}

}  // namespace trainbench::cli
