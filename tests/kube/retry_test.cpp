// kube::call_with_retries: which failures are retried, the backoff between attempts, the deadline.
// On a fake clock: nothing sleeps.

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "kube/errors.hpp"
#include "kube/retry.hpp"

namespace kube = trainbench::kube;
using namespace std::chrono_literals;

namespace {

class RecordingClock : public kube::Clock {
 public:
  time_point now() override { return now_; }
  bool sleep_for(std::chrono::nanoseconds d, const kube::StopToken&) override {
    sleeps.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(d));
    now_ += d;
    return false;
  }
  std::vector<std::chrono::milliseconds> sleeps;

 private:
  time_point now_{};
};

[[noreturn]] void throw_api(int code) {
  std::rethrow_exception(kube::make_api_error(code, "{}", "", "PATCH /api/v1/namespaces/ns/configmaps/r"));
}

kube::RetryOptions on(const std::shared_ptr<RecordingClock>& clock, std::chrono::milliseconds give_up = 10min) {
  kube::RetryOptions o;
  o.clock = clock;
  o.give_up_after = give_up;
  return o;
}

}  // namespace

TEST(Retry, TransientFailuresAreRetriedWithGrowingDelays) {
  auto clock = std::make_shared<RecordingClock>();
  int calls = 0;
  std::vector<std::string> told;
  kube::RetryOptions o = on(clock);
  o.on_retry = [&](const std::exception& e, std::chrono::milliseconds) { told.emplace_back(e.what()); };
  kube::call_with_retries(
      [&] {
        ++calls;
        if (calls == 1) throw kube::TransportError(kube::TransportError::Kind::kConnect, "connection refused");
        if (calls == 2) throw_api(503);
        if (calls == 3) throw_api(429);
      },
      o);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(clock->sleeps, (std::vector<std::chrono::milliseconds>{250ms, 500ms, 1000ms}));
  ASSERT_EQ(told.size(), 3U);
  EXPECT_NE(told[0].find("connection refused"), std::string::npos);
}

TEST(Retry, DelaysAreCappedAtTenSeconds) {
  auto clock = std::make_shared<RecordingClock>();
  int calls = 0;
  kube::call_with_retries(
      [&] {
        if (++calls < 10) throw_api(500);
      },
      on(clock));
  ASSERT_EQ(clock->sleeps.size(), 9U);
  EXPECT_EQ(clock->sleeps[5], 8000ms);
  EXPECT_EQ(clock->sleeps[6], 10000ms);
  EXPECT_EQ(clock->sleeps[8], 10000ms);
}

TEST(Retry, PermanentFailuresAreThrownAtOnce) {
  for (int code : {400, 401, 403, 404, 409, 422}) {
    auto clock = std::make_shared<RecordingClock>();
    int calls = 0;
    EXPECT_THROW(kube::call_with_retries(
                     [&] {
                       ++calls;
                       throw_api(code);
                     },
                     on(clock)),
                 kube::ApiError)
        << code;
    EXPECT_EQ(calls, 1) << code;
    EXPECT_TRUE(clock->sleeps.empty()) << code;
  }
  auto clock = std::make_shared<RecordingClock>();
  EXPECT_THROW(kube::call_with_retries([] { throw std::logic_error("bug"); }, on(clock)), std::logic_error);
  EXPECT_TRUE(clock->sleeps.empty());
}

TEST(Retry, TheLastTransientFailureIsThrownPastTheDeadline) {
  auto clock = std::make_shared<RecordingClock>();
  int calls = 0;
  try {
    kube::call_with_retries(
        [&] {
          ++calls;
          throw_api(502);
        },
        on(clock, 2s));
    FAIL() << "no exception";
  } catch (const kube::ApiError& e) {
    EXPECT_EQ(e.code(), 502);
  }
  // 250 + 500 + 1000 ms pass before the 4th attempt; 2000 more before the 5th, past 2 s.
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(clock->sleeps.size(), 4U);
}

TEST(Retry, WhatIsTransient) {
  EXPECT_TRUE(kube::is_transient(kube::TransportError(kube::TransportError::Kind::kTimeout, "t")));
  for (int code : {429, 500, 502, 503, 504}) {
    try {
      throw_api(code);
    } catch (const std::exception& e) {
      EXPECT_TRUE(kube::is_transient(e)) << code;
    }
  }
  for (int code : {400, 401, 403, 404, 409, 410, 422}) {
    try {
      throw_api(code);
    } catch (const std::exception& e) {
      EXPECT_FALSE(kube::is_transient(e)) << code;
    }
  }
  EXPECT_FALSE(kube::is_transient(kube::ConfigError("kubeconfig: bad")));
  EXPECT_FALSE(kube::is_transient(std::runtime_error("other")));
}
