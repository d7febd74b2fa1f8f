#include "cli/regression_check.hpp"

#include <cmath>
#include <cstdlib>

#include "cli/args.hpp"
#include "cli/commands.hpp"

namespace trainbench::cli {

double parse_regression_threshold(const std::string& option, const std::string& value) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v) || v < 0 || v > 100) {
    throw UsageError(option + ": expected a percentage between 0 and 100, got \"" + value + "\"");
  }
  return v;
}

int report_regression(const Comparison& c, double threshold_percent, std::ostream& out) {
  const RegressionVerdict v = regression_verdict(c, threshold_percent);
  out << "regression check: " << (v.regressed ? "REGRESSED: " : "ok: ") << v.headline << "\n";
  for (const auto& line : v.changes) out << "  " << line << "\n";
  out.flush();
  return v.regressed ? kExitRegression : kExitOk;
}

}  // namespace trainbench::cli
