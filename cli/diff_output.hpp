#pragma once

// The one printing of a diff of two reports: `trainbench diff`, `trainbench run --baseline` and
// `kubectl trainbench diff` all print through here, so they read the same.

#include <optional>
#include <ostream>
#include <string>

#include "core/report/report.hpp"

namespace trainbench::cli {

/// text: the seeds' diff layout (core/report/report_format.hpp); json: core/report/compare_json.hpp's document.
enum class DiffFormat { kText, kJson };

/// The value of `option` (--output FORMAT): "text" or "json"; throws UsageError naming the
/// option and the value otherwise.
DiffFormat parse_diff_format(const std::string& option, const std::string& value);

/// text: format_diff(base, test), then, with a threshold (--fail-on-regression PCT), a blank
/// line and the regression check (report_regression). json: the comparison as one JSON document
/// (with the regression verdict when there is a threshold). Returns kExitRegression when the
/// check fails, else kExitOk.
int print_diff(const Report& base, const Report& test, std::optional<double> threshold_percent, std::ostream& out,
               DiffFormat format = DiffFormat::kText);

}  // namespace trainbench::cli
