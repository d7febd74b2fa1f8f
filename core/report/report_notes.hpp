#pragma once

// The verdicts of the text report: a mark on a run's row ("noisy [1]", "below target [2]") and a
// footnote per mark, with the reason and what would help, plus one line each for the noise and
// the efficiency target of the whole sweep, so that no verdict is left out silently
// (docs/report.md, "Noise" and "Efficiency target").

#include <map>
#include <string>
#include <vector>

#include "core/report/report.hpp"

namespace trainbench {

class ReportNotes {
 public:
  explicit ReportNotes(const Report& report);

  /// The marks of run `index` for the end of its row, "  noisy [2]" ("" when it has none).
  std::string marks(int index) const;
  /// The summary lines, then the footnotes ("[1] ..."), each line ending in "\n"; "" when the
  /// report has no verdicts (one written before they existed).
  std::string text() const;

 private:
  void add_mark(int index, const std::string& mark, const std::string& footnote);
  void note_efficiency(const Report& report);
  void note_noise(const Report& report);

  std::map<int, std::string> marks_;
  std::vector<std::string> footnotes_;
  std::vector<std::string> summary_;
};

/// One line naming the runs below the efficiency target, for the operator's BelowTarget Event:
/// "1 of 2 runs below the efficiency target 80%: 4 CPUs -- 2M/2G 43.2%"; "" when none is.
std::string below_target_summary(const Report& report);
/// One line naming the noisy runs with their spread and what would help first, for the
/// operator's Noisy Event; "" when none is.
std::string noisy_summary(const Report& report);

}  // namespace trainbench
