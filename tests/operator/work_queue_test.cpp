// WorkQueue: de-duplication, order, the processing/dirty hand-over, delays and per-key
// exponential backoff on a fake clock (no sleeps), and shutdown waking a blocked get().

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fake_clock.hpp"
#include "operator/controller/work_queue.hpp"

namespace {

using namespace std::chrono_literals;
using kubetest::FakeClock;
using trainbench::op::WorkQueue;

struct QueueOnFakeClock {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  WorkQueue queue{100ms, 1s, clock};

  /// Every key ready now, each marked done.
  std::vector<std::string> drain() {
    std::vector<std::string> keys;
    while (auto key = queue.try_get()) {
      keys.push_back(*key);
      queue.done(*key);
    }
    return keys;
  }
};

TEST(WorkQueue, AKeyAddedWhileQueuedIsQueuedOnce) {
  QueueOnFakeClock q;
  q.queue.add("ns/a");
  q.queue.add("ns/a");
  q.queue.add("ns/b");
  q.queue.add("ns/a");
  EXPECT_EQ(q.queue.depth(), 2u);
  EXPECT_EQ(q.drain(), (std::vector<std::string>{"ns/a", "ns/b"}));
  EXPECT_EQ(q.queue.depth(), 0u);
}

TEST(WorkQueue, ReadyKeysComeInKeyOrder) {
  QueueOnFakeClock q;  // a set, as the reconcile of one key does not depend on another's
  for (const char* key : {"ns/c", "ns/a", "other/a", "ns/b"}) q.queue.add(key);
  EXPECT_EQ(q.drain(), (std::vector<std::string>{"ns/a", "ns/b", "ns/c", "other/a"}));
}

TEST(WorkQueue, AKeyAddedWhileProcessedIsRequeuedOnceAfterDone) {
  QueueOnFakeClock q;
  q.queue.add("ns/a");
  ASSERT_EQ(q.queue.try_get(), "ns/a");
  q.queue.add("ns/a");
  q.queue.add("ns/a");
  EXPECT_EQ(q.queue.try_get(), std::nullopt) << "not handed to a second worker while processed";
  q.queue.done("ns/a");
  EXPECT_EQ(q.drain(), (std::vector<std::string>{"ns/a"}));
  EXPECT_EQ(q.drain(), (std::vector<std::string>{}));
}

TEST(WorkQueue, DoneWithoutAnAddDoesNotRequeue) {
  QueueOnFakeClock q;
  q.queue.add("ns/a");
  ASSERT_EQ(q.queue.try_get(), "ns/a");
  q.queue.done("ns/a");
  EXPECT_EQ(q.queue.try_get(), std::nullopt);
}

TEST(WorkQueue, AddAfterWaitsForTheDelay) {
  QueueOnFakeClock q;
  q.queue.add_after("ns/a", 5s);
  q.queue.add_after("ns/b", 0ms);  // no delay: ready at once
  EXPECT_EQ(q.drain(), (std::vector<std::string>{"ns/b"}));
  EXPECT_EQ(q.queue.depth(), 1u) << "the delayed key counts in the depth";
  q.clock->advance(4999ms);
  EXPECT_EQ(q.queue.try_get(), std::nullopt);
  q.clock->advance(1ms);
  EXPECT_EQ(q.drain(), (std::vector<std::string>{"ns/a"}));
}

TEST(WorkQueue, ADelayedKeyAlreadyQueuedComesOnce) {
  QueueOnFakeClock q;
  q.queue.add("ns/a");
  q.queue.add_after("ns/a", 1s);
  q.clock->advance(1s);
  ASSERT_EQ(q.queue.try_get(), "ns/a");
  EXPECT_EQ(q.queue.try_get(), std::nullopt);
}

/// How long a rate-limited re-add of `key` waits: the fake time until it is ready.
std::chrono::milliseconds backoff_of(QueueOnFakeClock& q, const std::string& key) {
  q.queue.add_rate_limited(key);
  std::chrono::milliseconds waited{0};
  while (!q.queue.try_get()) {
    q.clock->advance(1ms);
    waited += 1ms;
  }
  q.queue.done(key);
  return waited;
}

TEST(WorkQueue, RateLimitedReAddsBackOffExponentiallyPerKeyUpToTheCap) {
  QueueOnFakeClock q;  // base 100 ms, cap 1 s
  EXPECT_EQ(backoff_of(q, "ns/a"), 100ms);
  EXPECT_EQ(backoff_of(q, "ns/a"), 200ms);
  EXPECT_EQ(backoff_of(q, "ns/a"), 400ms);
  EXPECT_EQ(backoff_of(q, "ns/b"), 100ms) << "failures are counted per key";
  EXPECT_EQ(backoff_of(q, "ns/a"), 800ms);
  EXPECT_EQ(backoff_of(q, "ns/a"), 1000ms);
  EXPECT_EQ(backoff_of(q, "ns/a"), 1000ms);
}

TEST(WorkQueue, ForgetResetsTheBackoff) {
  QueueOnFakeClock q;
  EXPECT_EQ(backoff_of(q, "ns/a"), 100ms);
  EXPECT_EQ(backoff_of(q, "ns/a"), 200ms);
  q.queue.forget("ns/a");
  EXPECT_EQ(backoff_of(q, "ns/a"), 100ms);
}

TEST(WorkQueue, ManyFailuresDoNotOverflowTheBackoff) {
  QueueOnFakeClock q;
  for (int i = 0; i < 70; ++i) backoff_of(q, "ns/a");  // base * 2^70 would overflow
  EXPECT_EQ(backoff_of(q, "ns/a"), 1000ms);
}

TEST(WorkQueue, GetBlocksUntilAKeyIsAdded) {
  WorkQueue queue;  // the real clock
  auto got = std::async(std::launch::async, [&] { return queue.get(); });
  EXPECT_EQ(got.wait_for(50ms), std::future_status::timeout);
  queue.add("ns/a");
  EXPECT_EQ(got.get(), "ns/a");
}

TEST(WorkQueue, GetWakesWhenADelayedKeyIsDue) {
  WorkQueue queue;  // the real clock
  queue.add_after("ns/a", 30ms);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(queue.get(), "ns/a");
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 30ms);
}

TEST(WorkQueue, ShutDownWakesEveryBlockedGet) {
  QueueOnFakeClock q;
  q.queue.add_after("ns/late", 1h);  // one waiter waits on the delay, the others on nothing
  std::vector<std::future<std::optional<std::string>>> waiters;
  for (int i = 0; i < 3; ++i) waiters.push_back(std::async(std::launch::async, [&] { return q.queue.get(); }));
  std::this_thread::sleep_for(20ms);
  q.queue.shut_down();
  for (auto& w : waiters) {
    ASSERT_EQ(w.wait_for(5s), std::future_status::ready);
    EXPECT_EQ(w.get(), std::nullopt);
  }
}

TEST(WorkQueue, AfterShutDownNothingIsHandedOut) {
  QueueOnFakeClock q;
  q.queue.add("ns/a");
  q.queue.shut_down();
  q.queue.add("ns/b");
  EXPECT_EQ(q.queue.get(), std::nullopt);
  EXPECT_EQ(q.queue.try_get(), std::nullopt);
}

TEST(WorkQueue, NoKeyIsHandedToTwoWorkersAtOnce) {
  WorkQueue queue;
  std::atomic<int> in_flight{0}, overlaps{0}, handled{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto key = queue.get()) {
        if (in_flight.fetch_add(1) != 0) ++overlaps;
        std::this_thread::sleep_for(100us);
        --in_flight;
        ++handled;
        queue.done(*key);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) queue.add("ns/a");
  while (queue.depth() != 0) std::this_thread::sleep_for(1ms);
  queue.shut_down();
  for (auto& t : workers) t.join();
  EXPECT_EQ(overlaps, 0);
  EXPECT_GE(handled, 1);
}

}  // namespace
