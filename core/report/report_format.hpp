#pragma once

#include <string>

#include "core/report/report.hpp"

namespace trainbench {

/// The report as text, in the layout of PyTorch's DDP benchmark: an environment header, then
/// one row per configuration ("2 CPUs -- 1M/2G: p50: 0.100s 320/s p75: ...") with speedup and
/// scaling efficiency, then per-rank rows.
std::string format_report(const Report& report);

/// A/B comparison in diff.py's layout: the configuration side by side, then per configuration
/// p75 and p95 sec/iter, examples/sec and the % change of examples/sec (test vs base).
/// Configurations are matched by label; ones present on one side only are listed as such.
/// Each matched row adds the change of p50 ex/sec with its 95% confidence interval and a
/// verdict (core/report/compare.hpp), and a legend says the test, its level and the sample counts.
std::string format_diff(const Report& base, const Report& test);

}  // namespace trainbench
