#include "core/report/report_workloads.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "core/util/text_cells.hpp"

namespace trainbench {
namespace {

/// "8.2x", "-" without a speedup.
std::string speedup_cell(const RunReport& r) { return r.speedup ? printf_str("%.2fx", *r.speedup) : "-"; }

/// A run's cell: "3155/s  0.49x", "FAILED", "" where the workload has no run of that shape.
std::string cell(const RunReport* r) {
  if (!r) return "";
  if (r->phase != "Succeeded") return "FAILED";
  return fmt_rate(r->examples_per_sec.p50) + "  " + speedup_cell(*r);
}

}  // namespace

std::string format_workloads_table(const Report& report) {
  std::vector<std::string> workloads;
  for (const auto& r : report.runs) {
    if (!r.workload.empty() && std::find(workloads.begin(), workloads.end(), r.workload) == workloads.end()) {
      workloads.push_back(r.workload);
    }
  }
  if (workloads.size() < 2) return "";
  // shape (nodes, devices per node) -> workload -> its first run of that shape
  std::map<std::pair<int, int>, std::map<std::string, const RunReport*>> rows;
  for (const auto& r : report.runs) {
    auto& at = rows[{r.nodes, r.devices_per_node}][r.workload];
    if (!at) at = &r;
  }
  std::size_t width = 14;
  for (const auto& w : workloads) width = std::max(width, w.size() + 2);
  for (const auto& [shape, by] : rows) {
    for (const auto& [w, r] : by) width = std::max(width, cell(r).size() + 2);
  }
  std::ostringstream os;
  os << "\nWorkloads side by side (p50 ex/sec and speedup against the workload's own one-device run):\n\n"
     << pad_right("", 12);
  for (const auto& w : workloads) os << pad_left(w, width);
  os << "\n";
  for (const auto& [shape, by] : rows) {
    os << pad_right(std::to_string(shape.first) + "M/" + std::to_string(shape.second) + "G", 12);
    for (const auto& w : workloads) {
      const auto it = by.find(w);
      os << pad_left(cell(it == by.end() ? nullptr : it->second), width);
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace trainbench
