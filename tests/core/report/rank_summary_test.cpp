// core/report/rank_summary: how a large run is copied into the job's status.
#include <gtest/gtest.h>

#include "core/report/rank_summary.hpp"
#include "core/report/report.hpp"

namespace trainbench {
namespace {

RunReport run_with_ranks(int n, int slow_rank) {
  RunReport r;
  r.world_size = n;
  r.label = "1M/" + std::to_string(n) + "G";
  for (int k = 0; k < n; ++k) {
    RankReport rk;
    rk.rank = k;
    rk.local_rank = k;
    const double s = 0.1 + (k == slow_rank ? 0.5 : 0.001 * (k % 5));
    rk.sec_per_iter = {s, s, s, s};
    rk.peak_memory_bytes = 1000 + k;
    r.ranks.push_back(rk);
  }
  return r;
}

TEST(RankSummary, RunsUpToTheLimitKeepEveryRank) {
  const RunReport r = compact_for_status(run_with_ranks(kMaxRanksInStatus, 3), "cm");
  EXPECT_EQ(r.ranks.size(), static_cast<std::size_t>(kMaxRanksInStatus));
  EXPECT_FALSE(r.rank_summary.has_value());
}

TEST(RankSummary, LargerRunsKeepTheSpreadAndTheSlowestRanks) {
  const RunReport r = compact_for_status(run_with_ranks(kMaxRanksInStatus + 1, 40), "bj-r3-result");
  EXPECT_TRUE(r.ranks.empty());
  ASSERT_TRUE(r.rank_summary.has_value());
  const RankSummary& s = *r.rank_summary;
  EXPECT_EQ(s.count, kMaxRanksInStatus + 1);
  EXPECT_DOUBLE_EQ(s.sec_per_iter_p50_min, 0.1);
  EXPECT_DOUBLE_EQ(s.sec_per_iter_p50_max, 0.6);
  EXPECT_DOUBLE_EQ(s.sec_per_iter_p50_median, 0.102);
  ASSERT_EQ(s.slowest.size(), static_cast<std::size_t>(kSlowestRanksKept));
  EXPECT_EQ(s.slowest[0].rank, 40);
  // Then the ranks at 0.104 (k % 5 == 4), lowest rank first.
  EXPECT_EQ(s.slowest[1].rank, 4);
  EXPECT_EQ(s.slowest[2].rank, 9);
  EXPECT_EQ(s.detail_config_map, "bj-r3-result");
}

TEST(RankSummary, RoundTripsThroughTheRunsJson) {
  RunReport r = compact_for_status(run_with_ranks(100, 7), "bj-r1-result");
  const RunReport back = run_report_from_json(to_json(r), "runs[0]");
  ASSERT_TRUE(back.rank_summary.has_value());
  EXPECT_EQ(to_json(back), to_json(r));
}

TEST(RankSummary, ReaderNamesTheBadField) {
  nlohmann::json j = to_json(*compact_for_status(run_with_ranks(100, 7), "cm").rank_summary);
  nlohmann::json bad = j;
  bad["count"] = -1;
  EXPECT_THROW(
      {
        try {
          rank_summary_from_json(bad, "runs[2].rankSummary");
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("runs[2].rankSummary.count"), std::string::npos) << e.what();
          throw;
        }
      },
      std::runtime_error);
  bad = j;
  bad["count"] = 3;  // fewer ranks than it names as the slowest
  EXPECT_THROW(rank_summary_from_json(bad, "s"), std::runtime_error);
  bad = j;
  bad["secPerIterP50"].erase("max");
  EXPECT_THROW(rank_summary_from_json(bad, "s"), std::runtime_error);
}

}  // namespace
}  // namespace trainbench
