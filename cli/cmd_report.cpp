#include <iostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/plot/scaling_plot.hpp"
#include "core/report/report.hpp"
#include "core/report/report_format.hpp"
#include "core/util/atomic_file.hpp"

namespace trainbench::cli {

const char* const kReportUsage =
    "usage: trainbench report REPORT.json [--plot OUT.svg]\n"
    "\n"
    "Prints a report written by `trainbench run --json` in the text layout `trainbench run`\n"
    "prints (the seeds' layout: p50/p75/p90/p95 sec/iter and ex/sec, speedup, efficiency, per\n"
    "rank).\n"
    "\n"
    "options:\n"
    "  --plot OUT.svg  also write the scaling plot: examples/s and scaling efficiency against\n"
    "                  devices, one line per paradigm, the ideal line, the efficiency target and\n"
    "                  the baseline run marked (docs/report.md, \"Scaling plot\")\n"
    "\n"
    "exit codes: 0 ok, 1 OUT.svg cannot be written, 2 the file is missing or not a valid report,\n"
    "            or the command line is wrong\n";

int cmd_report(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {"--plot"});
  if (a.help) {
    std::cout << kReportUsage;
    return kExitOk;
  }
  if (a.positional.size() != 1) {
    throw UsageError(a.positional.empty()
                         ? "expected a REPORT.json file"
                         : "expected one REPORT.json file, got " + std::to_string(a.positional.size()));
  }
  Report report;
  try {
    report = load_report(a.positional[0]);
  } catch (const std::exception& e) {
    const std::string what = e.what();  // names the file and the bad field
    std::cerr << "trainbench report: "
              << (what.find(a.positional[0]) == std::string::npos ? a.positional[0] + ": " : "") << what << "\n";
    return kExitUsage;
  }
  std::cout << format_report(report);
  std::cout.flush();
  if (a.has("--plot")) {
    write_file_atomically(a.value("--plot"), scaling_plot_svg(report));
    std::cerr << "trainbench report: wrote the scaling plot to " << a.value("--plot") << "\n";
  }
  return kExitOk;
}

}  // namespace trainbench::cli
