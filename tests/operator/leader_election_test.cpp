// Leader election against a scripted Lease endpoint (fake_api_server): the leader renews with one
// update of the lease it last wrote, and a renewal whose write went through but whose answer was
// lost (the re-sent request gets 409) does not lose the lease; a real takeover does.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fake_api_server.hpp"
#include "operator/controller/leader_election.hpp"
#include "test_util.hpp"

namespace kube = trainbench::kube;
using kubetest::FakeApiServer;
using kubetest::FakeConnection;
using kubetest::FakeRequest;
using nlohmann::json;

namespace {

/// One Lease, with resourceVersion checks on update as the API server does.
class LeaseEndpoint {
 public:
  /// Called for a PUT before it is answered; returning true means the hook answered it.
  std::function<bool(FakeConnection&)> after_put;

  void serve(const FakeRequest& req, FakeConnection& c) {
    std::unique_lock<std::mutex> lock(mu_);
    if (req.method == "GET") {
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
  std::vector<std::string> take_log() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(log_, {});
  }

 private:
  void record(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(s);
  }
  std::mutex mu_;
  json lease_;
  int rv_ = 0;
  std::vector<std::string> log_;
};

struct Fixture {
  LeaseEndpoint api;
  FakeApiServer server{[this](const FakeRequest& r, FakeConnection& c) { api.serve(r, c); }};
  trainbench::op::LeaderElector elector{
      std::make_shared<const kube::Client>(kubetest::fake_config(server.url())),
      {"default", "l", "me", std::chrono::seconds(15), std::chrono::seconds(10), std::chrono::seconds(2)}};
};

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
