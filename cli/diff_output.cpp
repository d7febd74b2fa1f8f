#include "cli/diff_output.hpp"

#include "cli/commands.hpp"
#include "cli/regression_check.hpp"
#include "core/compare.hpp"
#include "core/report_format.hpp"

namespace trainbench::cli {

int print_diff(const Report& base, const Report& test, std::optional<double> threshold_percent, std::ostream& out) {
  out << format_diff(base, test);
  if (!threshold_percent) {
    out.flush();
    return kExitOk;
  }
  out << "\n";
  return report_regression(compare_reports(base, test), *threshold_percent, out);
}

}  // namespace trainbench::cli
