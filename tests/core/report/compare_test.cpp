// core/report/compare: Welch's t-test on the repeats' log p50 sec/iter, the verdicts and the regression
// check, on synthetic reports with known answers.
#include <cmath>

#include <gtest/gtest.h>

#include "core/report/compare.hpp"
#include "core/report/report_format.hpp"

namespace trainbench {
namespace {

/// A succeeded run whose repeats have these p50 sec/iter (other percentiles follow them).
RunReport run(const std::string& label, const std::vector<double>& p50s, int batch = 32) {
  RunReport r;
  r.label = label;
  r.devices_label = "2 CPUs";
  r.world_size = 2;
  for (double p : p50s) r.repeats.push_back({p, p * 1.01, p * 1.02, p * 1.03});
  r.sec_per_iter = median_of(r.repeats);
  r.examples_per_sec = throughput(r.sec_per_iter, batch * 2.0);
  return r;
}

Report report(std::vector<RunReport> runs) {
  Report rep;
  rep.model = "mlp";
  rep.batch_size_per_device = 32;
  rep.repeats = runs.empty() ? 0 : static_cast<int>(runs.front().repeats.size());
  rep.runs = std::move(runs);
  return rep;
}

std::vector<double> scaled(const std::vector<double>& v, double f) {
  std::vector<double> out;
  for (double x : v) out.push_back(x * f);
  return out;
}

// Five repeats with about 1% spread around 0.1 s.
const std::vector<double> kLowNoise = {0.0990, 0.1005, 0.1000, 0.1010, 0.0995};

TEST(Compare, WelchKnownAnswer) {
  // log values -0.02..0.02 around log(0.1), n = 5 each, equal variances: Welch's df is exactly
  // 8, the standard error 0.01, and t(0.975, 8) = 2.306 (tables).
  std::vector<double> base;
  for (double e : {-0.02, -0.01, 0.0, 0.01, 0.02}) base.push_back(0.1 * std::exp(e));
  const ThroughputChange c = compare_samples(base, scaled(base, 1.1));
  EXPECT_NEAR(c.df, 8.0, 1e-9);
  EXPECT_NEAR(c.ratio, 1 / 1.1, 1e-12);
  EXPECT_NEAR(c.low, std::exp(-(std::log(1.1) + 2.306004 * 0.01)), 1e-6);
  EXPECT_NEAR(c.high, std::exp(-(std::log(1.1) - 2.306004 * 0.01)), 1e-6);
  EXPECT_LT(c.p_value, 1e-4);
  EXPECT_GT(c.p_value, 0);
  EXPECT_THROW(compare_samples({0.1}, base), std::invalid_argument);
  EXPECT_THROW(compare_samples({0.1, 0.0}, base), std::invalid_argument);
}

TEST(Compare, IdenticalReportsAreNoChange) {
  const Report a = report({run("1M/2G", kLowNoise), run("2M/1G", scaled(kLowNoise, 1.3))});
  const Comparison c = compare_reports(a, a);
  ASSERT_EQ(c.rows.size(), 2u);
  for (const auto& row : c.rows) {
    ASSERT_TRUE(row.verdict);
    EXPECT_EQ(*row.verdict, Verdict::kNoChange) << row.name;
    EXPECT_DOUBLE_EQ(row.change->ratio, 1.0);
    EXPECT_DOUBLE_EQ(row.change->p_value, 1.0);
    EXPECT_EQ(row.base_samples, 5);
  }
  EXPECT_FALSE(regression_verdict(c, 0).regressed);
  EXPECT_TRUE(significant_changes(c).empty());
}

TEST(Compare, TenPercentSlowerWithLowNoiseIsARegression) {
  // The test's repeats take 10% longer, in another order than the baseline's.
  const std::vector<double> shuffled = {kLowNoise[3], kLowNoise[0], kLowNoise[4], kLowNoise[2], kLowNoise[1]};
  const Comparison c =
      compare_reports(report({run("1M/2G", kLowNoise)}), report({run("1M/2G", scaled(shuffled, 1.1))}));
  const RowComparison& row = c.rows.at(0);
  ASSERT_EQ(row.verdict, Verdict::kSlower);
  EXPECT_NEAR(row.change->percent(), (1 / 1.1 - 1) * 100, 0.01);  // -9.1% ex/sec
  EXPECT_LT(row.change->high, 1.0);
  EXPECT_GT(row.change->low, 0.85);
  EXPECT_LT(row.change->p_value, 0.001);
  // 9.1% fewer ex/sec: a regression beyond 5%, not beyond 10%.
  EXPECT_EQ(regressions(c, 5).size(), 1u);
  EXPECT_TRUE(regressions(c, 10).empty());
  const RegressionVerdict v = regression_verdict(c, 5);
  EXPECT_TRUE(v.regressed);
  EXPECT_EQ(v.headline, "1 of 1 compared rows significantly slower by more than 5% (p50 ex/sec)");
  ASSERT_EQ(v.changes.size(), 1u);
  EXPECT_EQ(v.changes[0].rfind("2 CPUs -- 1M/2G: ex/sec -9.1% [", 0), 0u) << v.changes[0];
  EXPECT_NE(v.changes[0].find("] slower (p=0.000 n=5+5)"), std::string::npos) << v.changes[0];
}

TEST(Compare, ThreePercentInsideTheNoiseIsNoSignificantChange) {
  // About 6% spread between repeats (a loaded machine); the test is 3% slower on average.
  const std::vector<double> noisy = {0.094, 0.106, 0.100, 0.097, 0.103};
  const std::vector<double> other = {0.105, 0.096, 0.101, 0.108, 0.099};
  const Comparison c = compare_reports(report({run("1M/2G", noisy)}), report({run("1M/2G", scaled(other, 1.02))}));
  const RowComparison& row = c.rows.at(0);
  ASSERT_EQ(row.verdict, Verdict::kNoChange);
  EXPECT_LT(row.change->ratio, 0.98);  // the point estimate says about -3%...
  EXPECT_LT(row.change->low, 1.0);     // ...but the interval holds no change
  EXPECT_GT(row.change->high, 1.0);
  EXPECT_GT(row.change->p_value, 0.05);
  EXPECT_FALSE(regression_verdict(c, 1).regressed);
}

TEST(Compare, ThreeRepeatsAgainstThreeCanBeSignificant) {
  // Mann-Whitney U cannot go below p = 0.1 with 3 + 3 samples; Welch's t-test can.
  const Comparison c =
      compare_reports(report({run("1M/2G", {0.100, 0.101, 0.099})}), report({run("1M/2G", {0.090, 0.091, 0.089})}));
  EXPECT_EQ(c.rows.at(0).verdict, Verdict::kFaster);
  EXPECT_GT(c.rows.at(0).change->low, 1.0);
  EXPECT_TRUE(regressions(c, 0).empty()) << "faster is never a regression";
}

TEST(Compare, OneRepeatEachCannotTell) {
  const Comparison c = compare_reports(report({run("1M/2G", {0.1})}), report({run("1M/2G", {0.2})}));
  const RowComparison& row = c.rows.at(0);
  EXPECT_EQ(row.verdict, Verdict::kCannotTell);
  EXPECT_FALSE(row.change);
  EXPECT_EQ(verdict_text(row), "cannot tell (n=1+1)");
  EXPECT_FALSE(regression_verdict(c, 0).regressed) << "twice as slow, but one repeat proves nothing";
}

TEST(Compare, RowsOnOneSideFailedRunsAndAllReduceHaveNoVerdict) {
  RunReport failed = run("2M/1G", kLowNoise);
  failed.phase = "Failed";
  RunReport allreduce = run("allreduce", kLowNoise);
  allreduce.allreduce = AllreduceReport{};
  const Report base = report({run("1M/2G", kLowNoise), failed, allreduce, run("only-base", kLowNoise)});
  const Report test =
      report({run("1M/2G", kLowNoise), run("2M/1G", kLowNoise), allreduce, run("only-test", kLowNoise)});
  const Comparison c = compare_reports(base, test);
  ASSERT_EQ(c.rows.size(), 5u);
  EXPECT_EQ(c.rows[0].verdict, Verdict::kNoChange);
  for (std::size_t i = 1; i < 5; ++i) EXPECT_FALSE(c.rows[i].verdict) << c.rows[i].name;
  EXPECT_EQ(c.rows[3].name, "2 CPUs -- only-base");
  EXPECT_EQ(c.rows[3].test, nullptr);
  EXPECT_EQ(c.rows[4].name, "2 CPUs -- only-test");
  EXPECT_EQ(c.rows[4].base, nullptr);
  EXPECT_EQ(regression_verdict(c, 5).headline,
            "no row significantly slower by more than 5% (p50 ex/sec; 1 row compared)");
  const std::string text = format_diff(base, test);
  EXPECT_NE(text.find("2 CPUs -- only-test:  only in test"), std::string::npos) << text;
  EXPECT_NE(text.find("2 CPUs -- only-base:  only in baseline"), std::string::npos) << text;
  EXPECT_NE(text.find("2 CPUs -- 2M/1G:  failed in baseline"), std::string::npos) << text;
}

TEST(Compare, DiffShowsTheChangeItsIntervalAndTheVerdictWithALegend) {
  const Report base = report({run("1M/2G", kLowNoise), run("2M/1G", {0.2})});
  const Report test = report({run("1M/2G", scaled(kLowNoise, 1.1)), run("2M/1G", {0.2})});
  const std::string text = format_diff(base, test);
  EXPECT_NE(text.find("p50 ex/sec change [95% CI]  verdict"), std::string::npos) << text;
  EXPECT_NE(text.find("-9.1% [-"), std::string::npos) << text;
  EXPECT_NE(text.find("  slower (p=0.000 n=5+5)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  cannot tell (n=1+1)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Welch's t-test on log(p50 sec/iter) of each repeat, 95% confidence interval"), std::string::npos)
      << text;
  EXPECT_NE(text.find("significant at alpha 0.05"), std::string::npos) << text;
}

}  // namespace
}  // namespace trainbench
