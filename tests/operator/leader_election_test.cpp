// Leader election against a scripted Lease endpoint (fake_api_server), on a fake clock: a free
// lease is taken; the leader renews with one update of the lease it last wrote, every retry
// period; a renewal whose write went through but whose answer was lost (the re-sent request gets
// 409) does not lose the lease; a real takeover does, and so does failing to renew for the renew
// deadline; another replica's lease is taken over only once it went unrenewed for its duration.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "fake_api_server.hpp"
#include "fake_clock.hpp"
#include "operator/controller/leader_election.hpp"
#include "test_util.hpp"

namespace kube = trainbench::kube;
using namespace std::chrono_literals;
using kubetest::FakeApiServer;
using kubetest::FakeClock;
using kubetest::FakeConnection;
using kubetest::FakeRequest;
using nlohmann::json;

namespace {

/// One Lease, with resourceVersion checks on update as the API server does.
class LeaseEndpoint {
 public:
  /// Called for a PUT before it is answered; returning true means the hook answered it.
  std::function<bool(FakeConnection&)> after_put;
  /// Non-zero: every request is answered with this status (an API server that is unreachable).
  std::atomic<int> fail_with{0};
  /// The holder renews the lease each time before it is read (a live leader elsewhere).
  std::atomic<bool> holder_renews{false};

  void serve(const FakeRequest& req, FakeConnection& c) {
    std::unique_lock<std::mutex> lock(mu_);
    if (const int status = fail_with) {
      log_.push_back(req.method + " " + std::to_string(status));
      c.respond(status, kubetest::status_json(status, "InternalError", "etcd is away"));
      return;
    }
    if (req.method == "GET") {
      if (holder_renews && !lease_.is_null()) renew_locked();
      log_.push_back(lease_.is_null() ? "GET 404" : "GET 200");
      if (lease_.is_null()) {
        c.respond(404, kubetest::status_json(404, "NotFound", "leases \"l\" not found"));
      } else {
        c.respond(200, lease_.dump());
      }
      return;
    }
    json obj = json::parse(req.body);
    if (req.method == "POST") {
      lease_ = obj;
      lease_["metadata"]["resourceVersion"] = std::to_string(++rv_);
      log_.push_back("POST 201");
      c.respond(201, lease_.dump());
      return;
    }
    if (obj["metadata"].value("resourceVersion", "") != std::to_string(rv_)) {
      log_.push_back("PUT 409");
      c.respond(409, kubetest::status_json(409, "Conflict", "the object has been modified"));
      return;
    }
    lease_ = obj;
    lease_["metadata"]["resourceVersion"] = std::to_string(++rv_);
    const std::string written = lease_.dump();
    auto hook = after_put;
    after_put = nullptr;
    lock.unlock();
    if (hook && hook(c)) {
      record("PUT applied, answer lost");
      return;
    }
    record("PUT 200");
    c.respond(200, written);
  }

  /// Another replica takes the lease (it is written, so its resourceVersion changes).
  void taken_by(const std::string& holder) {
    std::lock_guard<std::mutex> lock(mu_);
    lease_["spec"]["holderIdentity"] = holder;
    lease_["metadata"]["resourceVersion"] = std::to_string(++rv_);
  }
  /// A lease that already exists, held by `holder` ("" for a released one).
  void held_by(const std::string& holder, int transitions = 3) {
    std::lock_guard<std::mutex> lock(mu_);
    lease_ = {{"apiVersion", "coordination.k8s.io/v1"},
              {"kind", "Lease"},
              {"metadata", {{"name", "l"}, {"namespace", "default"}, {"resourceVersion", std::to_string(++rv_)}}},
              {"spec",
               {{"holderIdentity", holder},
                {"leaseDurationSeconds", 15},
                {"acquireTime", "2026-11-24T04:00:00.000000Z"},
                {"renewTime", "2026-11-24T04:00:00.000000Z"},
                {"leaseTransitions", transitions}}}};
  }
  /// Its holder renews it (only renewTime changes).
  void renewed_by_holder() {
    std::lock_guard<std::mutex> lock(mu_);
    renew_locked();
  }
  json lease() {
    std::lock_guard<std::mutex> lock(mu_);
    return lease_;
  }
  std::size_t count(const std::string& entry) {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<std::size_t>(std::count(log_.begin(), log_.end(), entry));
  }
  std::vector<std::string> take_log() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(log_, {});
  }

 private:
  void renew_locked() {
    lease_["spec"]["renewTime"] = "renewed " + std::to_string(++renewals_);
    lease_["metadata"]["resourceVersion"] = std::to_string(++rv_);
  }
  void record(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(s);
  }
  std::mutex mu_;
  json lease_;
  int rv_ = 0;
  int renewals_ = 0;
  std::vector<std::string> log_;
};

/// Lease duration 15 s, renew deadline 10 s, retry period 2 s, on a fake clock.
struct Fixture {
  LeaseEndpoint api;
  FakeApiServer server{[this](const FakeRequest& r, FakeConnection& c) { api.serve(r, c); }};
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  trainbench::op::LeaderElector elector{std::make_shared<const kube::Client>(kubetest::fake_config(server.url())),
                                        {"default", "l", "me", 15s, 10s, 2s},
                                        clock};

  /// Fake time since `start`.
  std::chrono::nanoseconds since(kube::Clock::time_point start) { return clock->now() - start; }
};

/// Waits (real time, bounded) until `done` holds.
bool eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 500 && !done(); ++i) std::this_thread::sleep_for(10ms);
  return done();
}

}  // namespace

TEST(LeaderElection, TheLeaderRenewsWithOneUpdate) {
  Fixture f;
  ASSERT_TRUE(f.elector.try_acquire_or_renew());
  EXPECT_EQ(f.api.take_log(), (std::vector<std::string>{"GET 404", "POST 201"}));
  ASSERT_TRUE(f.elector.try_acquire_or_renew());
  ASSERT_TRUE(f.elector.try_acquire_or_renew());
  EXPECT_EQ(f.api.take_log(), (std::vector<std::string>{"PUT 200", "PUT 200"}));
  EXPECT_TRUE(f.elector.is_leader());
}

TEST(LeaderElection, ARenewalWrittenButUnansweredKeepsTheLease) {
  Fixture f;
  ASSERT_TRUE(f.elector.try_acquire_or_renew());
  // The renewal is applied, then the answer is lost and the client's re-sent copy meets the
  // new resourceVersion: 409, as with a connection reset after the write.
  f.api.after_put = [](FakeConnection& c) {
    c.respond(409, kubetest::status_json(409, "Conflict", "the object has been modified"));
    return true;
  };
  EXPECT_TRUE(f.elector.try_acquire_or_renew()) << "the lease is still ours: read it and renew";
  EXPECT_TRUE(f.elector.is_leader());
  EXPECT_EQ(f.api.take_log(),
            (std::vector<std::string>{"GET 404", "POST 201", "PUT applied, answer lost", "GET 200", "PUT 200"}));
  EXPECT_TRUE(f.elector.try_acquire_or_renew());
  EXPECT_EQ(f.api.take_log(), (std::vector<std::string>{"PUT 200"})) << "back on the fast path";
}

TEST(LeaderElection, AnotherHolderIsALostLease) {
  Fixture f;
  ASSERT_TRUE(f.elector.try_acquire_or_renew());
  f.api.taken_by("other");
  EXPECT_FALSE(f.elector.try_acquire_or_renew());
  EXPECT_FALSE(f.elector.is_leader());
  EXPECT_EQ(f.api.take_log(), (std::vector<std::string>{"GET 404", "POST 201", "PUT 409", "GET 200"}));
}

TEST(LeaderElection, AFreeLeaseIsTaken) {
  Fixture f;
  ASSERT_TRUE(f.elector.try_acquire_or_renew());
  const json spec = f.api.lease()["spec"];
  EXPECT_EQ(spec["holderIdentity"], "me");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec["leaseTransitions"], 0);
  EXPECT_EQ(spec["acquireTime"], spec["renewTime"]);
}

TEST(LeaderElection, AReleasedLeaseIsTakenAtOnce) {
  Fixture f;
  f.api.held_by("");  // its last holder released it (release() clears the holder)
  ASSERT_TRUE(f.elector.try_acquire_or_renew());
  EXPECT_EQ(f.api.lease()["spec"]["holderIdentity"], "me");
  EXPECT_EQ(f.api.lease()["spec"]["leaseTransitions"], 4);
}

TEST(LeaderElection, AnExpiredLeaseOfAnotherReplicaIsTakenOver) {
  Fixture f;
  f.api.held_by("other");
  EXPECT_FALSE(f.elector.try_acquire_or_renew());
  f.clock->advance(14s);
  EXPECT_FALSE(f.elector.try_acquire_or_renew()) << "unrenewed for 14 s of its 15";
  f.clock->advance(1s);
  ASSERT_TRUE(f.elector.try_acquire_or_renew()) << "unrenewed for its whole duration";
  const json spec = f.api.lease()["spec"];
  EXPECT_EQ(spec["holderIdentity"], "me");
  EXPECT_EQ(spec["leaseTransitions"], 4);
  EXPECT_NE(spec["acquireTime"], "2026-11-24T04:00:00.000000Z");
  EXPECT_TRUE(f.elector.is_leader());
}

TEST(LeaderElection, ALeaseItsHolderRenewsIsNotTakenOver) {
  Fixture f;
  f.api.held_by("other");
  EXPECT_FALSE(f.elector.try_acquire_or_renew());
  f.clock->advance(14s);
  f.api.renewed_by_holder();
  EXPECT_FALSE(f.elector.try_acquire_or_renew());
  // 28 s since it was first seen, but 14 s since it last changed: measured from the change.
  f.clock->advance(14s);
  EXPECT_FALSE(f.elector.try_acquire_or_renew());
  EXPECT_FALSE(f.elector.is_leader());
  EXPECT_EQ(f.api.lease()["spec"]["holderIdentity"], "other");
  f.clock->advance(1s);
  EXPECT_TRUE(f.elector.try_acquire_or_renew()) << "15 s without a change";
}

TEST(LeaderElection, AcquireWaitsForTheLeaseToExpire) {
  Fixture f;
  f.api.held_by("other");
  const auto start = f.clock->now();
  std::atomic<bool> stop{false};
  ASSERT_TRUE(f.elector.acquire(stop));
  EXPECT_GE(f.since(start), 15s);
  EXPECT_LE(f.since(start), 15s + 2s) << "tried again every retry period";
  for (const auto d : f.clock->sleeps()) EXPECT_LE(d, 50ms) << "sleeps in slices that see `stop` soon";
}

TEST(LeaderElection, AcquireReturnsFalseWhenStoppedWhileAnotherLeads) {
  Fixture f;
  f.api.held_by("other");
  f.api.holder_renews = true;
  std::atomic<bool> stop{false};
  auto acquired = std::async(std::launch::async, [&] { return f.elector.acquire(stop); });
  ASSERT_TRUE(eventually([&] { return f.api.count("GET 200") >= 20; }));  // 40 s of fake time
  stop = true;
  EXPECT_FALSE(acquired.get());
  EXPECT_FALSE(f.elector.is_leader());
  EXPECT_EQ(f.api.count("PUT 200"), 0u);
}

TEST(LeaderElection, TheLeaderRenewsEveryRetryPeriod) {
  Fixture f;
  ASSERT_TRUE(f.elector.try_acquire_or_renew());
  std::atomic<bool> lost{false};
  f.elector.keep_renewing([&] { lost = true; });
  ASSERT_TRUE(eventually([&] { return f.api.count("PUT 200") >= 5; }));
  f.elector.release();
  EXPECT_FALSE(lost);
  for (const auto d : f.clock->sleeps()) EXPECT_EQ(d, 2s) << "renewed well before the 15 s lease expires";
  EXPECT_EQ(f.api.lease()["spec"]["holderIdentity"], "") << "released";
  EXPECT_FALSE(f.elector.is_leader());
}

TEST(LeaderElection, ALeaderThatCannotRenewForTheRenewDeadlineStopsLeading) {
  Fixture f;
  ASSERT_TRUE(f.elector.try_acquire_or_renew());
  f.api.fail_with = 500;
  const auto start = f.clock->now();
  std::promise<kube::Clock::time_point> lost;
  f.elector.keep_renewing([&] { lost.set_value(f.clock->now()); });
  auto when = lost.get_future();
  ASSERT_EQ(when.wait_for(10s), std::future_status::ready);
  const auto led_for = when.get() - start;
  EXPECT_GT(led_for, 10s) << "kept leading through failures shorter than the renew deadline";
  EXPECT_LE(led_for, 10s + 2s) << "stopped at the first retry past the deadline";
  EXPECT_FALSE(f.elector.is_leader());
}

TEST(LeaderElection, ALeaderStopsAtOnceWhenAnotherHoldsTheLease) {
  Fixture f;
  ASSERT_TRUE(f.elector.try_acquire_or_renew());
  f.api.taken_by("other");
  const auto start = f.clock->now();
  std::promise<kube::Clock::time_point> lost;
  f.elector.keep_renewing([&] { lost.set_value(f.clock->now()); });
  auto when = lost.get_future();
  ASSERT_EQ(when.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(when.get() - start, 2s) << "at the first renewal";
  EXPECT_FALSE(f.elector.is_leader());
}
