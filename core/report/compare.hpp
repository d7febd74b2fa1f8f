#pragma once

// The significance of an A/B comparison of two reports (`trainbench diff`, `trainbench run
// --baseline`, the operator's Regressed condition). Go's benchstat is the model: one verdict per
// row, "~" when the difference is not significant; the test differs (docs/report.md,
// "Significance"): Welch's t-test on the logarithm of each repeat's p50 sec/iter, which can
// reach p < 0.05 with the 3-5 repeats a benchmark has, where benchstat's Mann-Whitney U test
// cannot below 4 + 4 samples.

#include <optional>
#include <string>
#include <vector>

#include "core/report/report.hpp"

namespace trainbench {

/// The significance level of every comparison: a change is significant when its 95% confidence
/// interval excludes zero.
inline constexpr double kSignificanceAlpha = 0.05;
/// Repeats each side needs for a verdict (a sample variance needs two).
inline constexpr int kMinRepeatsToCompare = 2;

enum class Verdict {
  kFaster,      ///< the test's throughput is significantly higher
  kSlower,      ///< significantly lower
  kNoChange,    ///< "~": the confidence interval includes no change
  kCannotTell,  ///< fewer than kMinRepeatsToCompare repeats on a side
};

/// "faster", "slower", "~", "cannot tell (n=1+1)" is the row's text; this is the word alone.
std::string to_string(Verdict v);
/// "faster", "slower", "no-change", "cannot-tell": the verdict as JSON says it (core/report/compare_json).
std::string verdict_word(Verdict v);

/// The change of p50 examples/sec from baseline to test, as ratios test / baseline (1.05: 5%
/// more ex/sec). From the repeats' p50 sec/iter: their geometric means' ratio, inverted.
struct ThroughputChange {
  double ratio = 1;  ///< point estimate
  double low = 1;    ///< 95% confidence interval of the ratio
  double high = 1;
  double p_value = 1;  ///< two-sided, Welch's t-test
  double df = 0;       ///< Welch-Satterthwaite degrees of freedom (0: both sides without spread)
  /// ratio - 1 in percent (-9.1: 9.1% fewer ex/sec).
  double percent() const { return (ratio - 1) * 100; }
};

/// One configuration of the comparison, matched by its row name.
struct RowComparison {
  std::string name;                 ///< "2 CPUs -- 1M/2G"
  const RunReport* base = nullptr;  ///< nullptr: only in test
  const RunReport* test = nullptr;  ///< nullptr: only in baseline
  int base_samples = 0;             ///< repeats compared (0 when the row has none to compare)
  int test_samples = 0;
  /// Set when both sides succeeded and are training runs (not all-reduce: busbw per size).
  std::optional<Verdict> verdict;
  std::optional<ThroughputChange> change;  ///< set with every verdict but kCannotTell
};

struct Comparison {
  std::vector<RowComparison> rows;  ///< baseline order, then the rows only in test
  double alpha = kSignificanceAlpha;
};

/// Welch's t-test of two samples of p50 sec/iter (one per repeat) in log space. Throws
/// std::invalid_argument for fewer than kMinRepeatsToCompare values on a side or a value <= 0.
ThroughputChange compare_samples(const std::vector<double>& base_sec, const std::vector<double>& test_sec,
                                 double alpha = kSignificanceAlpha);

/// Compares two reports row by row (runs matched by "devices -- label").
Comparison compare_reports(const Report& base, const Report& test);

/// The rows significantly slower by more than `threshold_percent` of p50 ex/sec (the point
/// estimate of the drop exceeds it): what `--fail-on-regression PCT` fails on.
std::vector<const RowComparison*> regressions(const Comparison& c, double threshold_percent);

/// "-9.1% [-9.6%, -8.5%]": a change and its confidence interval.
std::string format_change(const ThroughputChange& c);
/// "slower (p=0.000 n=5+5)", "cannot tell (n=1+1)"; "" for a row without a verdict.
std::string verdict_text(const RowComparison& r);
/// One line per row that changed significantly ("2 CPUs -- 1M/2G: ex/sec -9.1% [-9.6%, -8.5%]
/// slower (p=0.000 n=5+5)"), slower rows first.
std::vector<std::string> significant_changes(const Comparison& c);

/// The verdict against a baseline, as `trainbench diff --fail-on-regression`, `trainbench run
/// --baseline` and the operator's Regressed condition say it.
struct RegressionVerdict {
  bool regressed = false;  ///< some row is in regressions(c, threshold)
  /// "1 of 3 compared rows significantly slower by more than 5% (p50 ex/sec)", or "no row
  /// significantly slower by more than 5% (p50 ex/sec; 3 rows compared)".
  std::string headline;
  std::vector<std::string> changes;  ///< significant_changes(c)
};
RegressionVerdict regression_verdict(const Comparison& c, double threshold_percent);

}  // namespace trainbench
