#include <gtest/gtest.h>

#include <stdexcept>

#include "core/util/stats.hpp"

namespace trainbench {
namespace {

// Hand-computed with h = (n - 1) * q / 100 and linear interpolation (numpy's default).
TEST(Stats, PercentileInterpolatesBetweenClosestRanks) {
  const std::vector<double> v{4, 1, 3, 2};  // sorted: 1 2 3 4
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 4.0);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);    // h = 1.5
  EXPECT_DOUBLE_EQ(percentile(v, 75), 3.25);   // h = 2.25
  EXPECT_DOUBLE_EQ(percentile(v, 90), 3.7);    // h = 2.7
  EXPECT_DOUBLE_EQ(percentile(v, 95), 3.85);   // h = 2.85
}

TEST(Stats, PercentilesOfTenSamples) {
  const std::vector<double> v{0.10, 0.11, 0.12, 0.13, 0.14, 0.15, 0.16, 0.17, 0.18, 0.30};
  const Percentiles p = percentiles(v);
  EXPECT_NEAR(p.p50, 0.145, 1e-12);  // h = 4.5
  EXPECT_NEAR(p.p75, 0.1675, 1e-12); // h = 6.75
  EXPECT_NEAR(p.p90, 0.192, 1e-12);  // h = 8.1: 0.18 + 0.1 * 0.12
  EXPECT_NEAR(p.p95, 0.246, 1e-12);  // h = 8.55: 0.18 + 0.55 * 0.12
}

TEST(Stats, SingleSample) {
  EXPECT_DOUBLE_EQ(percentile({7.0}, 95), 7.0);
}

TEST(Stats, MedianOddAndEven) {
  EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3.0);
  EXPECT_DOUBLE_EQ(median({5, 1, 3, 10}), 4.0);
}

TEST(Stats, RejectsEmptyAndOutOfRange) {
  EXPECT_THROW(percentile({}, 50), std::invalid_argument);
  EXPECT_THROW(percentile({1.0}, 101), std::invalid_argument);
  EXPECT_THROW(percentile({1.0}, -1), std::invalid_argument);
  EXPECT_THROW(median_of({}), std::invalid_argument);
}

TEST(Stats, MedianOverRepeatsIsElementWise) {
  const Percentiles m = median_of({{1, 2, 3, 4}, {3, 1, 9, 5}, {2, 8, 4, 6}});
  EXPECT_DOUBLE_EQ(m.p50, 2);
  EXPECT_DOUBLE_EQ(m.p75, 2);
  EXPECT_DOUBLE_EQ(m.p90, 4);
  EXPECT_DOUBLE_EQ(m.p95, 5);
}

TEST(Stats, ThroughputSpeedupEfficiency) {
  const Percentiles t = throughput({0.1, 0.2, 0.25, 0.5}, 32);
  EXPECT_DOUBLE_EQ(t.p50, 320);
  EXPECT_DOUBLE_EQ(t.p75, 160);
  EXPECT_DOUBLE_EQ(t.p90, 128);
  EXPECT_DOUBLE_EQ(t.p95, 64);
  // 16 devices at 0.104 s/iter x batch 32 vs one device at 0.097 s/iter (the seed's resnet50 rows).
  const double s = speedup(16 * 32 / 0.104, 32 / 0.097);
  EXPECT_NEAR(s, 14.923, 1e-3);
  EXPECT_NEAR(scaling_efficiency(s, 16), 0.9327, 1e-4);
  EXPECT_THROW(speedup(1, 0), std::invalid_argument);
  EXPECT_THROW(scaling_efficiency(1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace trainbench

namespace trainbench {
namespace {

TEST(Stats, MedianOfRepeatsIsTheMedianOfEachRepeatsPercentiles) {
  // Repeat medians 2, 5 and 20: the median of the repeats is 5, whatever the pooled median.
  const Percentiles p = median_of_repeats({{1, 2, 3}, {4, 5, 6}, {10, 20, 30}});
  EXPECT_DOUBLE_EQ(p.p50, 5.0);
  EXPECT_THROW(median_of_repeats({}), std::invalid_argument);
  try {
    median_of_repeats({{1.0}, {}});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[1] is empty");
  }
}

}  // namespace
}  // namespace trainbench
