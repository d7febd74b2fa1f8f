// Hang detection (core/analysis/hang.hpp) on known records: which ranks are named, where each stands, and
// the message's shape.
#include <gtest/gtest.h>

#include "core/analysis/hang.hpp"

namespace trainbench {
namespace {

// 2026-11-24 14:02:10 UTC.
constexpr double kT0 = 1795528930;

/// A rank that entered `phase` at kT0 + entered and published at kT0 + published.
RankProgressRecord rec(int rank, ProgressPhase phase, double entered, double published, std::int64_t step = 40) {
  RankProgressRecord r;
  r.rank = rank;
  r.local_rank = rank % 4;
  r.node_rank = rank / 4;
  r.pid = 1000 + rank;
  r.step = step;
  r.phase = phase;
  r.since = kT0 + entered;
  r.published = kT0 + published;
  r.phase_seconds = published - entered;
  return r;
}

RankProgressRecord in_allreduce(int rank, std::uint64_t seq, int bucket, int buckets, double entered, double now) {
  RankProgressRecord r = rec(rank, ProgressPhase::kAllReduce, entered, now - kT0 - 0.5);  // alive
  r.collective = seq;
  r.bucket = bucket;
  r.buckets = buckets;
  return r;
}

TEST(CompressRanks, RangesOfThreeOrMore) {
  EXPECT_EQ(compress_ranks({4, 0, 1, 2, 5, 6, 7, 9}), "0-2, 4-7, 9");
  EXPECT_EQ(compress_ranks({1, 0}), "0, 1");
  EXPECT_EQ(compress_ranks({3, 3}), "3");
  EXPECT_EQ(compress_ranks({}), "");
}

TEST(RankProgressRecord, JsonRoundTripKeepsEveryField) {
  RankProgressRecord r = in_allreduce(3, 412, 2, 5, 1, 2);
  r.pod = "j-r0-a1-trainer-0";
  r.node = "node-2";
  r.peer = 5;
  const RankProgressRecord back = rank_progress_from_json(to_json(r));
  EXPECT_EQ(to_json(back), to_json(r));
  EXPECT_THROW(rank_progress_from_json({{"rank", 1}}), std::runtime_error);
  nlohmann::json bad = to_json(r);
  bad["phase"] = "thinking";
  EXPECT_THROW(rank_progress_from_json(bad), std::runtime_error);
}

// 8 DDP ranks: rank 3 SIGSTOPped in the backward of step 41 (its heartbeat stopped with it),
// the others wait in bucket 3's all-reduce.
TEST(DetectHang, DdpStoppedRankIsNamedWithItsPhaseAndStaleHeartbeat) {
  const double now = kT0 + 130;
  std::vector<RankProgressRecord> rs;
  for (int r = 0; r < 8; ++r) {
    if (r == 3) {
      RankProgressRecord stopped = rec(3, ProgressPhase::kBackward, 5, 5.2);
      stopped.pod = "J-r1-a0-trainer-1";
      stopped.local_rank = 1;
      rs.push_back(stopped);
    } else {
      rs.push_back(in_allreduce(r, 412, 2, 5, 0 + r * 0.1, now));
    }
  }
  const auto v = detect_hang(rs, now, 120, {8, 8});
  ASSERT_TRUE(v);
  ASSERT_EQ(v->stuck.size(), 1u);
  EXPECT_EQ(v->stuck[0].rank, 3);
  EXPECT_EQ(v->waiting.size(), 7u);
  EXPECT_EQ(v->message,
            "hang: rank 3 (pod J-r1-a0-trainer-1, local 1) in backward of step 41 for 125 s (no heartbeat for 125 s); "
            "ranks 0-2, 4-7 wait in all-reduce #412 (bucket 3 of 5) since 14:02:10 UTC");
}

TEST(DetectHang, NothingBeforeTheTimeoutOrWhileARankAdvances) {
  const double now = kT0 + 100;
  std::vector<RankProgressRecord> rs = {rec(0, ProgressPhase::kBackward, 0, 4), in_allreduce(1, 9, 0, 1, 0, now)};
  EXPECT_FALSE(detect_hang(rs, now, 120, {2, 2}));  // 100 s < 120 s
  EXPECT_TRUE(detect_hang(rs, now + 30, 120, {2, 2}));
  rs.push_back(rec(1, ProgressPhase::kForward, 125, 129));  // rank 1 advanced 5 s ago: its newer record counts
  EXPECT_FALSE(detect_hang(rs, now + 30, 120, {2, 2}));
  EXPECT_FALSE(detect_hang(rs, now + 30, 0, {2, 2}));  // 0: off
}

TEST(DetectHang, NoVerdictUntilEveryRankPublishedOrWhenAllAreDone) {
  const double now = kT0 + 500;
  const std::vector<RankProgressRecord> two = {in_allreduce(0, 1, 0, 1, 0, now), in_allreduce(1, 1, 0, 1, 0, now)};
  EXPECT_FALSE(detect_hang(two, now, 120, {3, 3}));  // rank 2 has not started
  const std::vector<RankProgressRecord> done = {rec(0, ProgressPhase::kDone, 0, 1), rec(1, ProgressPhase::kDone, 0, 1)};
  EXPECT_FALSE(detect_hang(done, now, 120, {2, 2}));
}

// A rank stuck computing (its heartbeat alive: a stuck data loader thread) is named without
// "no heartbeat".
TEST(DetectHang, LiveRankOutsideTheCollectiveIsNamed) {
  const double now = kT0 + 200;
  std::vector<RankProgressRecord> rs = {in_allreduce(0, 7, 0, 2, 0, now), rec(1, ProgressPhase::kForward, 0, 199),
                                        in_allreduce(2, 7, 0, 2, 0, now), in_allreduce(3, 7, 0, 2, 0, now)};
  const auto v = detect_hang(rs, now, 120, {4, 4});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->message,
            "hang: rank 1 (pid 1001, local 1) in forward of step 41 for 200 s; ranks 0, 2, 3 wait in "
            "all-reduce #7 (bucket 1 of 2) since 14:02:10 UTC");
}

// Seen in CI: rank 3 stopped inside a ring all-reduce after rank 1 had what it needed, so rank 1
// finished #491 and waits in #492 while ranks 0 and 2 still wait in #491. They wait in the same
// bucket's all-reduce, so they are one group with the range of collectives.
TEST(DetectHang, OthersOneCollectiveApartAreOneGroup) {
  const double now = kT0 + 300;
  RankProgressRecord stopped = in_allreduce(3, 443, 0, 1, 9, now - 9);
  const std::vector<RankProgressRecord> rs = {in_allreduce(0, 491, 0, 1, 10, now), in_allreduce(1, 492, 0, 1, 10, now),
                                              in_allreduce(2, 491, 0, 1, 10, now), stopped};
  const auto v = detect_hang(rs, now, 5, {4, 4});
  ASSERT_TRUE(v);
  ASSERT_EQ(v->stuck.size(), 1u);
  EXPECT_EQ(v->stuck[0].rank, 3);
  EXPECT_NE(v->message.find("; ranks 0-2 wait in all-reduce #491-492 (bucket 1 of 1) since "), std::string::npos)
      << v->message;
}

// All ranks wait in an all-reduce, but rank 2 is still in the one before (it is missing from
// #412): it is the one named.
TEST(DetectHang, RankMissingFromTheCollectiveEveryoneElseWaitsIn) {
  const double now = kT0 + 300;
  std::vector<RankProgressRecord> rs = {in_allreduce(0, 412, 1, 2, 10, now), in_allreduce(1, 412, 1, 2, 10, now),
                                        in_allreduce(2, 411, 0, 2, 5, now), in_allreduce(3, 412, 1, 2, 10, now)};
  const auto v = detect_hang(rs, now, 120, {4, 4});
  ASSERT_TRUE(v);
  ASSERT_EQ(v->stuck.size(), 1u);
  EXPECT_EQ(v->stuck[0].rank, 2);
  EXPECT_EQ(v->message,
            "hang: rank 2 (pid 1002, local 2) in all-reduce #411 (bucket 1 of 2) of step 41 for 295 s; "
            "ranks 0, 1, 3 wait in all-reduce #412 (bucket 2 of 2) since 14:02:20 UTC");
  // Everyone in the same collective and alive: nobody to name, said so.
  rs[2] = in_allreduce(2, 412, 1, 2, 10, now);
  const auto none = detect_hang(rs, now, 120, {4, 4});
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->stuck.empty());
  EXPECT_EQ(none->message.rfind("hang: no rank advanced for 290 s and none is missing", 0), 0u) << none->message;
}

// Pipeline of 4 stages, stage 1 stopped: stage 0 waits to send to it, stages 2 and 3 receive.
TEST(DetectHang, PipelineStalledStage) {
  const double now = kT0 + 60;
  RankProgressRecord s0 = rec(0, ProgressPhase::kSend, 1, 59.5);
  s0.peer = 1;
  RankProgressRecord s2 = rec(2, ProgressPhase::kRecv, 1, 59.5);
  s2.peer = 1;
  RankProgressRecord s3 = rec(3, ProgressPhase::kRecv, 1, 59.5);
  s3.peer = 2;
  const std::vector<RankProgressRecord> rs = {s0, rec(1, ProgressPhase::kForward, 0.5, 1), s2, s3};
  const auto v = detect_hang(rs, now, 30, {4, 4});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->message,
            "hang: rank 1 (pid 1001, local 1) in forward of step 41 for 60 s (no heartbeat for 59 s); "
            "rank 0 waits in send to rank 1 since 14:02:11 UTC; rank 2 waits in recv from rank 1 since "
            "14:02:11 UTC; rank 3 waits in recv from rank 2 since 14:02:11 UTC");
}

// hybrid-ps with 2 trainers and 2 servers, server 1 (rank 3) stopped while serving: the
// trainers wait for its lookups, server 0 for the trainers.
TEST(DetectHang, ParameterServerStalled) {
  const double now = kT0 + 40;
  RankProgressRecord t0 = rec(0, ProgressPhase::kPsRequest, 2, 39.8);
  t0.peer = 3;
  RankProgressRecord t1 = t0;
  t1.rank = 1;
  t1.pid = 1001;
  RankProgressRecord server0 = rec(2, ProgressPhase::kPsWaiting, 2, 39.8);
  server0.role = Role::kParameterServer;
  RankProgressRecord server1 = rec(3, ProgressPhase::kPsServing, 1, 1.5);
  server1.role = Role::kParameterServer;
  const auto v = detect_hang({t0, t1, server0, server1}, now, 10, {4, 2});
  ASSERT_TRUE(v);
  ASSERT_EQ(v->stuck.size(), 1u);
  EXPECT_EQ(v->message,
            "hang: rank 3 (parameter server 1, pid 1003, local 3) in serving lookups of step 41 for 39 s (no heartbeat "
            "for 39 s); ranks 0, 1 wait for a lookup from parameter server 1 (rank 3) since 14:02:12 UTC; rank 2 waits "
            "for the trainers' requests since 14:02:12 UTC");
}

TEST(DetectHang, ManyStuckRanksAreListedAfterTheFirstEight) {
  const double now = kT0 + 300;
  std::vector<RankProgressRecord> rs;
  for (int r = 0; r < 12; ++r) rs.push_back(rec(r, ProgressPhase::kForward, 0, 1));
  rs.push_back(in_allreduce(12, 3, 0, 1, 0, now));
  const auto v = detect_hang(rs, now, 120, {13, 13});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->stuck.size(), 12u);
  EXPECT_NE(v->message.find(", and ranks 8-11; rank 12 waits in all-reduce #3"), std::string::npos) << v->message;
}

// A 12-stage pipeline: each stage waits on its own neighbour, so the places are many; the
// message describes eight and lists the rest by rank.
TEST(DetectHang, ManyPlacesAreCutAfterTheFirstEight) {
  const double now = kT0 + 300;
  std::vector<RankProgressRecord> rs = {rec(0, ProgressPhase::kForward, 0, 1)};
  for (int r = 1; r < 12; ++r) {
    RankProgressRecord w = rec(r, ProgressPhase::kRecv, 0, 299.5);
    w.peer = r - 1;
    rs.push_back(w);
  }
  const auto v = detect_hang(rs, now, 120, {12, 12});
  ASSERT_TRUE(v);
  EXPECT_NE(v->message.find("rank 8 waits in recv from rank 7 since 14:02:10 UTC; ranks 9-11 wait elsewhere"),
            std::string::npos)
      << v->message;
  EXPECT_EQ(v->message.find("rank 9 waits"), std::string::npos) << v->message;
}

}  // namespace
}  // namespace trainbench
