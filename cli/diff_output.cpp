#include "cli/diff_output.hpp"

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/regression_check.hpp"
#include "core/report/compare.hpp"
#include "core/report/compare_json.hpp"
#include "core/report/report_format.hpp"

namespace trainbench::cli {

DiffFormat parse_diff_format(const std::string& option, const std::string& value) {
  if (value == "text") return DiffFormat::kText;
  if (value == "json") return DiffFormat::kJson;
  throw UsageError(option + ": expected text or json, got \"" + value + "\"");
}

int print_diff(const Report& base, const Report& test, std::optional<double> threshold_percent, std::ostream& out,
               DiffFormat format) {
  if (format == DiffFormat::kJson) {
    const Comparison c = compare_reports(base, test);
    out << comparison_to_json(c, threshold_percent).dump(2) << "\n";
    out.flush();
    return threshold_percent && regression_verdict(c, *threshold_percent).regressed ? kExitRegression : kExitOk;
  }
  out << format_diff(base, test);
  if (!threshold_percent) {
    out.flush();
    return kExitOk;
  }
  out << "\n";
  return report_regression(compare_reports(base, test), *threshold_percent, out);
}

}  // namespace trainbench::cli
