#include "core/report/report_notes.hpp"

#include <algorithm>

#include "core/util/text_cells.hpp"

namespace trainbench {
namespace {

std::string row_name(const RunReport& r) { return r.devices_label + " -- " + r.label; }

/// A measured %: one decimal below 100; a setting (target, threshold): as the spec has it.
std::string percent(double v) { return printf_str(v < 100 ? "%.1f%%" : "%.0f%%", v); }
std::string setting(double v) { return printf_str("%g%%", v); }

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : "; ") + s;
  return out;
}

/// The runs a verdict flags, and how many it judged.
struct Tally {
  int judged = 0;
  std::vector<const RunReport*> flagged;
};

Tally below_target_runs(const Report& report) {
  Tally t;
  for (const auto& r : report.runs) {
    if (!r.below_target || !r.efficiency) continue;
    ++t.judged;
    if (*r.below_target) t.flagged.push_back(&r);
  }
  return t;
}

/// Noisy runs among the quiet and noisy ones (unjudged ones are not counted).
Tally noisy_runs(const Report& report) {
  Tally t;
  for (const auto& r : report.runs) {
    if (!r.noise || !r.noise->verdict || *r.noise->verdict == NoiseVerdict::kUnjudged) continue;
    ++t.judged;
    if (*r.noise->verdict == NoiseVerdict::kNoisy) t.flagged.push_back(&r);
  }
  return t;
}

/// As the table prints it.
std::string efficiency_text(const RunReport& r) { return printf_str("%.1f%%", *r.efficiency * 100.0); }

}  // namespace

ReportNotes::ReportNotes(const Report& report) {
  note_efficiency(report);
  note_noise(report);
}

void ReportNotes::add_mark(int index, const std::string& mark, const std::string& footnote) {
  auto it = std::find(footnotes_.begin(), footnotes_.end(), footnote);
  if (it == footnotes_.end()) it = footnotes_.insert(footnotes_.end(), footnote);
  marks_[index] += "  " + mark + " [" + std::to_string(it - footnotes_.begin() + 1) + "]";
}

void ReportNotes::note_efficiency(const Report& report) {
  const Tally t = below_target_runs(report);
  if (!report.efficiency_target || t.judged == 0) return;
  const std::string target = setting(*report.efficiency_target * 100.0);
  for (const RunReport* r : t.flagged) {
    add_mark(r->index, "below target",
             row_name(*r) + ": scaling efficiency " + efficiency_text(*r) + " is below the target " + target +
                 " (spec.benchmark.efficiencyTarget)");
  }
  summary_.push_back("efficiency target " + target + ": " +
                     (t.flagged.empty()
                          ? "every run meets it"
                          : std::to_string(t.flagged.size()) + " of " + std::to_string(t.judged) + " runs below it"));
}

void ReportNotes::note_noise(const Report& report) {
  const Tally t = noisy_runs(report);
  int unjudged = 0;
  double quiet_max = 0;
  for (const auto& r : report.runs) {
    if (!r.noise || !r.noise->verdict) continue;
    if (*r.noise->verdict == NoiseVerdict::kUnjudged) ++unjudged;
    if (*r.noise->verdict == NoiseVerdict::kQuiet) quiet_max = std::max(quiet_max, *r.noise->repeat_spread_percent);
  }
  for (const RunReport* r : t.flagged) {
    add_mark(r->index, "noisy",
             row_name(*r) + " is noisy: " + r->noise->reason + "\n    what would help: " + joined(r->noise->advice));
  }
  if (t.judged > 0) {
    const std::size_t quiet = static_cast<std::size_t>(t.judged) - t.flagged.size();
    std::string line = "noise (the spread of the repeats' p50 sec/iter, threshold " +
                       setting(report.noise_threshold_percent.value_or(0)) + "): ";
    if (t.flagged.empty()) {
      line += "every run's repeats agree within " + percent(quiet_max);
    } else {
      line += std::to_string(t.flagged.size()) + " of " + std::to_string(t.judged) + " runs noisy";
      if (quiet > 0) line += ", the others' repeats agree within " + percent(quiet_max);
    }
    summary_.push_back(line);
  }
  if (unjudged > 0) {
    summary_.push_back("noise: not judged for " + std::to_string(unjudged) + (unjudged == 1 ? " run" : " runs") +
                       " with one repeat (set spec.benchmark.repeats >= 2 to compare repeats)");
  }
}

std::string below_target_summary(const Report& report) {
  const Tally t = below_target_runs(report);
  if (t.flagged.empty()) return "";
  std::string runs;
  for (const RunReport* r : t.flagged) runs += (runs.empty() ? "" : ", ") + row_name(*r) + " " + efficiency_text(*r);
  return std::to_string(t.flagged.size()) + " of " + std::to_string(t.judged) + " runs below the efficiency target " +
         setting(report.efficiency_target.value_or(0) * 100.0) + ": " + runs;
}

std::string noisy_summary(const Report& report) {
  const Tally t = noisy_runs(report);
  if (t.flagged.empty()) return "";
  std::string runs;
  for (const RunReport* r : t.flagged) {
    runs += (runs.empty() ? "" : "; ") + row_name(*r) + " (repeats differ by " +
            percent(r->noise->repeat_spread_percent.value_or(0)) +
            (r->noise->advice.empty() ? "" : "; try " + r->noise->advice.front()) + ")";
  }
  return std::to_string(t.flagged.size()) + " of " + std::to_string(t.judged) +
         " runs noisy (repeats' p50 spread above " + setting(report.noise_threshold_percent.value_or(0)) + "): " + runs;
}

std::string ReportNotes::marks(int index) const {
  const auto it = marks_.find(index);
  return it == marks_.end() ? "" : it->second;
}

std::string ReportNotes::text() const {
  std::string out;
  for (const auto& s : summary_) out += s + "\n";
  for (std::size_t i = 0; i < footnotes_.size(); ++i) out += "[" + std::to_string(i + 1) + "] " + footnotes_[i] + "\n";
  return out;
}

}  // namespace trainbench
