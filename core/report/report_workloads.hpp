#pragma once
// The workloads of a report side by side (docs/workloads.md, "Comparing workloads"): one row per
// cluster shape, one column per workload, each cell the run's p50 examples/sec and its speedup
// against the workload's own one-device run. The large-scale evaluation plan's framework table,
// made from any job with spec.workloads.

#include <string>

#include "core/report/report.hpp"

namespace trainbench {

/// The table as text, "" when the report has fewer than two workloads.
std::string format_workloads_table(const Report& report);

}  // namespace trainbench
