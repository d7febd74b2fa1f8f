// Rate limiter, backoff and token refresh, all on an injected clock (no wall-clock asserts).

#include <gtest/gtest.h>

#include <vector>

#include "fake_clock.hpp"
#include "kube/backoff.hpp"
#include "kube/errors.hpp"
#include "kube/rate_limiter.hpp"
#include "kube/token_source.hpp"
#include "test_util.hpp"

namespace kube = trainbench::kube;
using namespace std::chrono_literals;

using kubetest::FakeClock;

TEST(TokenBucket, BurstIsAvailableAtOnceThenQps) {
  auto clock = std::make_shared<FakeClock>();
  kube::TokenBucket bucket(2.0, 3, clock);  // 2 QPS, burst 3
  EXPECT_EQ(bucket.reserve(), 0ns);
  EXPECT_EQ(bucket.reserve(), 0ns);
  EXPECT_EQ(bucket.reserve(), 0ns);
  // Empty: the next callers queue 0.5 s apart.
  EXPECT_EQ(bucket.reserve(), 500ms);
  EXPECT_EQ(bucket.reserve(), 1000ms);
  clock->advance(1000ms);  // two tokens refilled, both already promised
  EXPECT_EQ(bucket.reserve(), 500ms);
}

TEST(TokenBucket, RefillIsCappedAtBurst) {
  auto clock = std::make_shared<FakeClock>();
  kube::TokenBucket bucket(10.0, 5, clock);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(bucket.try_acquire());
  EXPECT_FALSE(bucket.try_acquire());
  clock->advance(150ms);  // 1.5 tokens
  EXPECT_TRUE(bucket.try_acquire());
  EXPECT_FALSE(bucket.try_acquire());
  clock->advance(std::chrono::hours(1));
  EXPECT_DOUBLE_EQ(bucket.available(), 5.0);
}

TEST(TokenBucket, AcquireSleepsOnTheClock) {
  auto clock = std::make_shared<FakeClock>();
  kube::TokenBucket bucket(4.0, 1, clock);
  EXPECT_TRUE(bucket.acquire());
  EXPECT_TRUE(bucket.acquire());
  EXPECT_TRUE(bucket.acquire());
  const auto sleeps = clock->sleeps();
  ASSERT_EQ(sleeps.size(), 2u);
  EXPECT_EQ(sleeps[0], 250ms);
  EXPECT_EQ(sleeps[1], 250ms);  // the first sleep advanced the clock
}

TEST(TokenBucket, AcquireStopsWhenStopped) {
  auto clock = std::make_shared<FakeClock>();
  kube::TokenBucket bucket(1.0, 1, clock);
  kube::StopSource stop;
  EXPECT_TRUE(bucket.acquire(stop.token()));
  stop.request_stop();
  EXPECT_FALSE(bucket.acquire(stop.token()));
  EXPECT_TRUE(clock->sleeps().empty());
}

TEST(TokenBucket, ZeroQpsIsUnlimited) {
  auto clock = std::make_shared<FakeClock>();
  kube::TokenBucket bucket(0, 1, clock);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(bucket.reserve(), 0ns);
}

TEST(Backoff, GrowsToTheCapWithJitterInRange) {
  kube::BackoffPolicy p;
  p.initial = 100ms;
  p.max = 1000ms;
  p.factor = 2;
  p.jitter = 0.5;
  kube::Backoff b(p, 42);
  const long long expected_base[] = {100, 200, 400, 800, 1000, 1000, 1000};
  for (long long base : expected_base) {
    const auto d = b.next().count();
    EXPECT_GE(d, base / 2) << base;
    EXPECT_LE(d, base) << base;
  }
  b.reset();
  EXPECT_LE(b.next().count(), 100);
}

TEST(Backoff, NoJitterIsExact) {
  kube::Backoff b({50ms, 400ms, 2.0, 0.0}, 1);
  EXPECT_EQ(b.next(), 50ms);
  EXPECT_EQ(b.next(), 100ms);
  EXPECT_EQ(b.next(), 200ms);
  EXPECT_EQ(b.next(), 400ms);
  EXPECT_EQ(b.next(), 400ms);
  for (int i = 0; i < 2000; ++i) b.next();  // no overflow
  EXPECT_EQ(b.next(), 400ms);
}

TEST(TokenSource, ReReadsTheFileAfterTheRefreshInterval) {
  kubetest::TempDir dir;
  const auto file = dir.write("token", "one\n");
  auto clock = std::make_shared<FakeClock>();
  kube::TokenSource tokens("", file, 60s, clock);
  EXPECT_EQ(tokens.token(), "one");
  dir.write("token", "two");
  clock->advance(30s);
  EXPECT_EQ(tokens.token(), "one");  // cached
  clock->advance(31s);
  EXPECT_EQ(tokens.token(), "two");
  dir.write("token", "three");
  tokens.invalidate();
  EXPECT_EQ(tokens.token(), "three");
}

TEST(TokenSource, KeepsTheLastTokenWhenTheFileDisappears) {
  kubetest::TempDir dir;
  const auto file = dir.write("token", "kept");
  auto clock = std::make_shared<FakeClock>();
  kube::TokenSource tokens("", file, 1s, clock);
  EXPECT_EQ(tokens.token(), "kept");
  std::remove(file.c_str());
  clock->advance(5s);
  EXPECT_EQ(tokens.token(), "kept");
  kube::TokenSource never("", dir.path() + "/none", 1s, clock);
  EXPECT_THROW(never.token(), kube::ConfigError);
}

TEST(StopToken, CallbacksAndWaits) {
  kube::StopSource source;
  auto token = source.token();
  int calls = 0;
  {
    kube::StopCallback cb(token, [&] { ++calls; });
    EXPECT_FALSE(token.wait_for(1ms));
    source.request_stop();
    source.request_stop();
  }
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(token.wait_for(std::chrono::hours(1)));  // returns at once
  kube::StopCallback late(token, [&] { ++calls; });    // already stopped: runs now
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(kube::StopToken().stop_requested());
}
