// The worker's progress record (worker/rank_progress.hpp, no libtorch): what the steps' phase
// updates leave in the record, and the heartbeat that publishes it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "worker/progress_server.hpp"
#include "worker/rank_progress.hpp"

namespace trainbench::worker {
namespace {

RankProgressRecord identity() {
  RankEnv env;
  env.rank = 3;
  env.node_rank = 1;
  env.local_rank = 1;
  return progress_identity(env, Role::kTrainer);
}

TEST(RankProgress, RecordsStepPhaseCollectiveAndSince) {
  RankProgress p(identity());
  RankProgressRecord r = p.snapshot();
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.pid, static_cast<int>(::getpid()));
  EXPECT_EQ(r.step, -1);
  EXPECT_EQ(r.phase, ProgressPhase::kStarting);

  // Setup's collectives keep the phase, count as progress.
  p.enter_collective(ProgressPhase::kBroadcast, p.next_collective());
  r = p.snapshot();
  EXPECT_EQ(r.phase, ProgressPhase::kStarting);
  EXPECT_EQ(r.collective, 1u);

  p.begin_step(40);
  p.enter(ProgressPhase::kBackward);
  const std::uint64_t seq = p.next_collective();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  p.enter_collective(ProgressPhase::kAllReduce, seq, 2, 5);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  r = p.snapshot();
  EXPECT_EQ(r.step, 40);
  EXPECT_EQ(r.phase, ProgressPhase::kAllReduce);
  EXPECT_EQ(r.collective, 2u);
  EXPECT_EQ(r.bucket, 2);
  EXPECT_EQ(r.buckets, 5);
  EXPECT_GE(r.phase_seconds, 0.03);
  EXPECT_LT(r.phase_seconds, 0.05 + 1.0);
  EXPECT_NEAR(r.since + r.phase_seconds, r.published, 1e-3);

  p.enter(ProgressPhase::kRecv, 2);
  r = p.snapshot();
  EXPECT_EQ(r.phase, ProgressPhase::kRecv);
  EXPECT_EQ(r.peer, 2);
  EXPECT_EQ(r.bucket, -1);

  // The final gather keeps saying so through its collectives.
  p.enter(ProgressPhase::kGather);
  p.enter_collective(ProgressPhase::kAllGather, p.next_collective());
  EXPECT_EQ(p.snapshot().phase, ProgressPhase::kGather);
}

TEST(ProgressHeartbeat, PublishesAtOnceEveryIntervalAndLast) {
  RankProgress p(identity());
  std::mutex m;
  std::vector<RankProgressRecord> seen;
  {
    ProgressHeartbeat beat(
        p,
        [&](const std::string& json) {
          std::lock_guard<std::mutex> lock(m);
          seen.push_back(rank_progress_from_json(nlohmann::json::parse(json)));
        },
        std::chrono::milliseconds(20));
    {
      std::lock_guard<std::mutex> lock(m);
      ASSERT_EQ(seen.size(), 1u);  // from the constructor on
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    p.enter(ProgressPhase::kDone);
  }
  ASSERT_GE(seen.size(), 4u);
  EXPECT_EQ(seen.back().phase, ProgressPhase::kDone);
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i].published, seen[i - 1].published);
}

TEST(ProgressHeartbeat, AFailingPublishNeverThrows) {
  RankProgress p(identity());
  std::atomic<int> calls{0};
  {
    ProgressHeartbeat beat(
        p,
        [&](const std::string&) {
          ++calls;
          throw std::runtime_error("store gone");
        },
        std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(calls.load(), 3);  // retried at every beat
}

// What a phase update costs the step (docs/performance.md, "Hang watch"): printed, not asserted.
TEST(RankProgress, CostOfAPhaseUpdate) {
  RankProgress p(identity());
  ProgressHeartbeat beat(
      p, [](const std::string&) {}, std::chrono::milliseconds(1000));
  constexpr int kCalls = 1000000;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) {
    p.enter(i % 2 == 0 ? ProgressPhase::kForward : ProgressPhase::kBackward);
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kCalls;
  std::cout << "RankProgress::enter: " << ns << " ns per call\n";
  RecordProperty("ns_per_enter", std::to_string(ns));
  EXPECT_EQ(p.snapshot().phase, ProgressPhase::kBackward);
}

TEST(ProgressServer, TurnsRankZerosRecordsIntoTheRunsSampleWithItsRate) {
  RunConfig run;
  run.index = 2;
  run.warmup_steps = 2;
  run.repeats = 2;
  run.measure_steps = 10;  // 22 steps
  ProgressServer server(run, /*attempt=*/1, /*port=*/0);
  RunProgressSample s = server.sample();
  EXPECT_EQ(s.run, 2);
  EXPECT_EQ(s.attempt, 1);
  EXPECT_EQ(s.steps_total, 22);
  EXPECT_EQ(s.steps_done, -1);
  RankProgressRecord r;
  r.step = -1;
  r.published = 1000;
  server.observe(r);  // setup
  EXPECT_EQ(server.sample().steps_done, -1);
  r.step = 0;  // step 0 begun: none done
  r.phase = ProgressPhase::kForward;
  r.published = 1001;
  server.observe(r);
  EXPECT_EQ(server.sample().steps_done, 0);
  EXPECT_FALSE(server.sample().seconds_per_step);
  r.step = 8;  // step 8 runs: 8 done, 1 s for 8 steps
  r.published = 1002;
  server.observe(r);
  s = server.sample();
  EXPECT_EQ(s.steps_done, 8);
  ASSERT_TRUE(s.seconds_per_step);
  EXPECT_DOUBLE_EQ(*s.seconds_per_step, 0.125);
  EXPECT_DOUBLE_EQ(s.updated, 1002);
  r.phase = ProgressPhase::kGather;  // the loop is over: every step done
  server.observe(r);
  EXPECT_EQ(server.sample().steps_done, 22);
  EXPECT_EQ(run_progress_sample_from_json(to_json(server.sample())).steps_done, 22);
}

}  // namespace
}  // namespace trainbench::worker
