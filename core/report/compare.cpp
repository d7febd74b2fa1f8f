#include "core/report/compare.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

#include <boost/math/distributions/students_t.hpp>

#include "core/util/text_cells.hpp"

namespace trainbench {
namespace {

struct LogSample {
  double mean = 0;
  double variance_of_mean = 0;  ///< sample variance / n
  int n = 0;
};

LogSample log_sample(const std::vector<double>& values, const char* side) {
  if (static_cast<int>(values.size()) < kMinRepeatsToCompare) {
    throw std::invalid_argument(std::string(side) + ": needs at least " + std::to_string(kMinRepeatsToCompare) +
                                " values, got " + std::to_string(values.size()));
  }
  std::vector<double> logs;
  for (double v : values) {
    if (!(v > 0) || !std::isfinite(v)) throw std::invalid_argument(std::string(side) + ": values must be > 0");
    logs.push_back(std::log(v));
  }
  LogSample s;
  s.n = static_cast<int>(logs.size());
  s.mean = std::accumulate(logs.begin(), logs.end(), 0.0) / s.n;
  double ss = 0;
  for (double l : logs) ss += (l - s.mean) * (l - s.mean);
  s.variance_of_mean = ss / (s.n - 1) / s.n;
  return s;
}

/// The repeats' p50 sec/iter of a run, or nothing when one is not a positive number.
std::vector<double> p50_samples(const RunReport& r) {
  std::vector<double> out;
  for (const auto& p : r.repeats) {
    if (!(p.p50 > 0) || !std::isfinite(p.p50)) return {};
    out.push_back(p.p50);
  }
  return out;
}

std::string row_key(const RunReport& r) { return r.devices_label + " -- " + r.label; }

void judge(RowComparison& row) {
  const RunReport& b = *row.base;
  const RunReport& t = *row.test;
  if (b.phase != "Succeeded" || t.phase != "Succeeded" || b.allreduce || t.allreduce) return;
  const std::vector<double> bs = p50_samples(b), ts = p50_samples(t);
  row.base_samples = static_cast<int>(bs.size());
  row.test_samples = static_cast<int>(ts.size());
  if (row.base_samples < kMinRepeatsToCompare || row.test_samples < kMinRepeatsToCompare) {
    row.verdict = Verdict::kCannotTell;
    return;
  }
  row.change = compare_samples(bs, ts);
  row.verdict = row.change->high < 1 ? Verdict::kSlower : row.change->low > 1 ? Verdict::kFaster : Verdict::kNoChange;
}

std::string row_line(const RowComparison& r) {
  return r.name + ": ex/sec " + format_change(*r.change) + " " + verdict_text(r);
}

}  // namespace

namespace {

/// Every verdict's spellings, in one table: the text diff's and the JSON's.
struct VerdictSpelling {
  Verdict verdict;
  const char* text;
  const char* word;
};
constexpr std::array<VerdictSpelling, 4> kVerdictSpellings{{{Verdict::kFaster, "faster", "faster"},
                                                            {Verdict::kSlower, "slower", "slower"},
                                                            {Verdict::kNoChange, "~", "no-change"},
                                                            {Verdict::kCannotTell, "cannot tell", "cannot-tell"}}};

const VerdictSpelling& spelling(Verdict v) {
  for (const auto& s : kVerdictSpellings) {
    if (s.verdict == v) return s;
  }
  return kVerdictSpellings.back();
}

}  // namespace

std::string to_string(Verdict v) { return spelling(v).text; }

std::string verdict_word(Verdict v) { return spelling(v).word; }

ThroughputChange compare_samples(const std::vector<double>& base_sec, const std::vector<double>& test_sec,
                                 double alpha) {
  const LogSample b = log_sample(base_sec, "baseline"), t = log_sample(test_sec, "test");
  const double d = t.mean - b.mean;  // log(test sec/iter / baseline sec/iter)
  const double se2 = b.variance_of_mean + t.variance_of_mean;
  ThroughputChange c;
  c.ratio = std::exp(-d);  // throughput is the inverse of time
  if (!(se2 > 0)) {        // no spread on either side: the difference is what it is
    c.low = c.high = c.ratio;
    c.p_value = d == 0 ? 1 : 0;
    return c;
  }
  // Welch-Satterthwaite: the degrees of freedom of two samples with unequal variances.
  c.df = se2 * se2 /
         (b.variance_of_mean * b.variance_of_mean / (b.n - 1) + t.variance_of_mean * t.variance_of_mean / (t.n - 1));
  const boost::math::students_t dist(c.df);
  const double se = std::sqrt(se2);
  const double q = boost::math::quantile(boost::math::complement(dist, alpha / 2));
  c.low = std::exp(-(d + q * se));
  c.high = std::exp(-(d - q * se));
  c.p_value = 2 * boost::math::cdf(boost::math::complement(dist, std::fabs(d) / se));
  return c;
}

Comparison compare_reports(const Report& base, const Report& test) {
  Comparison c;
  std::map<std::string, const RunReport*> test_by_key;
  for (const auto& r : test.runs) test_by_key.emplace(row_key(r), &r);
  std::map<std::string, bool> in_base;
  for (const auto& r : base.runs) {
    RowComparison row;
    row.name = row_key(r);
    row.base = &r;
    const auto it = test_by_key.find(row.name);
    if (it != test_by_key.end()) {
      row.test = it->second;
      judge(row);
    }
    in_base[row.name] = true;
    c.rows.push_back(std::move(row));
  }
  for (const auto& r : test.runs) {
    if (in_base.count(row_key(r)) != 0) continue;
    RowComparison row;
    row.name = row_key(r);
    row.test = &r;
    c.rows.push_back(std::move(row));
  }
  return c;
}

std::vector<const RowComparison*> regressions(const Comparison& c, double threshold_percent) {
  std::vector<const RowComparison*> out;
  for (const auto& r : c.rows) {
    if (r.verdict == Verdict::kSlower && r.change && -r.change->percent() > threshold_percent) out.push_back(&r);
  }
  return out;
}

std::string format_change(const ThroughputChange& c) {
  return printf_str("%+.1f%%", c.percent()) + printf_str(" [%+.1f%%", (c.low - 1) * 100) +
         printf_str(", %+.1f%%]", (c.high - 1) * 100);
}

std::string verdict_text(const RowComparison& r) {
  if (!r.verdict) return "";
  const std::string n = "n=" + std::to_string(r.base_samples) + "+" + std::to_string(r.test_samples) + ")";
  if (!r.change) return to_string(*r.verdict) + " (" + n;
  return to_string(*r.verdict) + printf_str(" (p=%.3f ", r.change->p_value) + n;
}

std::vector<std::string> significant_changes(const Comparison& c) {
  std::vector<std::string> slower, faster;
  for (const auto& r : c.rows) {
    if (r.verdict == Verdict::kSlower) slower.push_back(row_line(r));
    if (r.verdict == Verdict::kFaster) faster.push_back(row_line(r));
  }
  slower.insert(slower.end(), faster.begin(), faster.end());
  return slower;
}

RegressionVerdict regression_verdict(const Comparison& c, double threshold_percent) {
  RegressionVerdict v;
  const auto slower = regressions(c, threshold_percent);
  const auto compared = std::count_if(c.rows.begin(), c.rows.end(), [](const RowComparison& r) {
    return r.verdict && *r.verdict != Verdict::kCannotTell;
  });
  const std::string by = printf_str("by more than %g%% (p50 ex/sec", threshold_percent);
  v.regressed = !slower.empty();
  v.headline = v.regressed ? std::to_string(slower.size()) + " of " + std::to_string(compared) +
                                 " compared rows significantly slower " + by + ")"
                           : "no row significantly slower " + by + "; " + std::to_string(compared) +
                                 (compared == 1 ? " row" : " rows") + " compared)";
  v.changes = significant_changes(c);
  return v;
}

}  // namespace trainbench
