#pragma once

// The regression check of `trainbench diff --fail-on-regression` and `trainbench run --baseline`:
// one verdict, one exit code (kExitRegression), the same words as the operator's Regressed
// condition (core/report/compare.hpp).

#include <ostream>
#include <string>

#include "core/report/compare.hpp"

namespace trainbench::cli {

/// The value of `option` (--fail-on-regression PCT): a number in [0, 100]; throws UsageError
/// naming the option and the value otherwise.
double parse_regression_threshold(const std::string& option, const std::string& value);

/// Prints "regression check: REGRESSED: <headline>" (or "ok: ...") and each significant change,
/// indented; returns kExitRegression when some row is significantly slower by more than
/// `threshold_percent`, else kExitOk.
int report_regression(const Comparison& c, double threshold_percent, std::ostream& out);

}  // namespace trainbench::cli
