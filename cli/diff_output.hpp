#pragma once

// The one printing of a diff of two reports: `trainbench diff`, `trainbench run --baseline` and
// `kubectl trainbench diff` all print through here, so they read the same.

#include <optional>
#include <ostream>

#include "core/report.hpp"

namespace trainbench::cli {

/// format_diff(base, test), then, with a threshold (--fail-on-regression PCT), a blank line and
/// the regression check (report_regression). Returns kExitRegression when the check fails, else
/// kExitOk.
int print_diff(const Report& base, const Report& test, std::optional<double> threshold_percent, std::ostream& out);

}  // namespace trainbench::cli
