// OwnWrites: the controller never acts on a cache that has not caught up with its own writes.
#include "operator/controller/own_writes.hpp"

#include <gtest/gtest.h>

using nlohmann::json;
using trainbench::op::OwnWrites;
using Freshness = OwnWrites::Freshness;

namespace {

const OwnWrites::Clock::time_point t0{};
constexpr auto kTtl = std::chrono::seconds(10);

json obj(const std::string& name) { return {{"metadata", {{"name", name}, {"namespace", "ns"}}}}; }

std::vector<std::string> names(const std::vector<json>& objs) {
  std::vector<std::string> out;
  for (const auto& o : objs) out.push_back(o["metadata"]["name"]);
  return out;
}

}  // namespace

TEST(OwnWrites, JobIsStaleUntilTheCacheHoldsTheStatusWrite) {
  OwnWrites w(kTtl);
  EXPECT_EQ(w.job_freshness("ns/j", "5", t0), Freshness::kCurrent) << "nothing written yet";
  w.wrote_status("ns/j", "7", t0);
  EXPECT_EQ(w.job_freshness("ns/j", "5", t0 + std::chrono::seconds(1)), Freshness::kWaiting);
  w.observe_job("ns/j", "7");
  EXPECT_EQ(w.job_freshness("ns/j", "7", t0 + std::chrono::seconds(1)), Freshness::kCurrent);
  EXPECT_EQ(w.pending(), 0u);
}

TEST(OwnWrites, WatchEventBeforeTheWriteReturnedDoesNotBlock) {
  OwnWrites w(kTtl);
  w.observe_job("ns/j", "7");  // the informer delivered the write before the PATCH answer came back
  w.observe_job("ns/j", "8");  // and a later edit by someone else
  w.wrote_status("ns/j", "7", t0);
  EXPECT_EQ(w.job_freshness("ns/j", "8", t0), Freshness::kCurrent);
}

TEST(OwnWrites, LaterVersionSeenByTheInformerClearsTheWait) {
  OwnWrites w(kTtl);
  w.wrote_status("ns/j", "7", t0);
  w.observe_job("ns/j", "7");
  w.observe_job("ns/j", "9");
  EXPECT_EQ(w.job_freshness("ns/j", "9", t0), Freshness::kCurrent);
}

TEST(OwnWrites, LostWriteExpiresToAnApiRead) {
  OwnWrites w(kTtl);
  w.wrote_status("ns/j", "7", t0);
  EXPECT_EQ(w.job_freshness("ns/j", "5", t0 + kTtl), Freshness::kExpired);
  EXPECT_EQ(w.job_freshness("ns/j", "5", t0 + kTtl), Freshness::kCurrent) << "expiry is reported once";
}

TEST(OwnWrites, CreatedObjectsAreSeenUntilTheCacheHasThem) {
  OwnWrites w(kTtl);
  w.created("ns/j", "pods", obj("p1"), t0);
  w.created("ns/j", "pods", obj("p2"), t0);
  EXPECT_EQ(names(w.overlay("ns/j", "pods", {}, t0)), (std::vector<std::string>{"p1", "p2"}));
  // The cache caught up with p1 (its own, newer copy is kept); p2 still comes from the record.
  json cached = obj("p1");
  cached["status"] = {{"phase", "Running"}};
  const auto seen = w.overlay("ns/j", "pods", {cached}, t0);
  ASSERT_EQ(names(seen), (std::vector<std::string>{"p1", "p2"}));
  EXPECT_EQ(seen[0]["status"]["phase"], "Running");
  EXPECT_EQ(w.pending(), 1u);
  // Other resources and jobs are untouched.
  EXPECT_TRUE(w.overlay("ns/j", "services", {}, t0).empty());
  EXPECT_TRUE(w.overlay("ns/other", "pods", {}, t0).empty());
}

TEST(OwnWrites, DeletedObjectsLookDeletedUntilTheCacheAgrees) {
  OwnWrites w(kTtl);
  w.deleted("ns/j", "pods", "p1", t0);
  const auto seen = w.overlay("ns/j", "pods", {obj("p1"), obj("p2")}, t0);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(seen[0]["metadata"].contains("deletionTimestamp"));
  EXPECT_FALSE(seen[1]["metadata"].contains("deletionTimestamp"));
  // Gone from the cache: the record is dropped.
  EXPECT_EQ(names(w.overlay("ns/j", "pods", {obj("p2")}, t0)), (std::vector<std::string>{"p2"}));
  EXPECT_EQ(w.pending(), 0u);
}

TEST(OwnWrites, RecordsExpireAndForgetDropsAJob) {
  OwnWrites w(kTtl);
  w.created("ns/j", "pods", obj("p1"), t0);
  EXPECT_TRUE(w.overlay("ns/j", "pods", {}, t0 + kTtl).empty()) << "a create the cache never showed expires";
  w.created("ns/j", "pods", obj("p1"), t0);
  w.wrote_status("ns/j", "3", t0);
  w.forget("ns/j");
  EXPECT_EQ(w.pending(), 0u);
  EXPECT_EQ(w.job_freshness("ns/j", "1", t0), Freshness::kCurrent);
}

TEST(OwnWrites, UnconfirmedDeletesExpireAtTheirFirstRecordsTtl) {
  OwnWrites w(kTtl);
  EXPECT_FALSE(w.unconfirmed_deletes_expire("ns/j").has_value());
  w.created("ns/j", "pods", obj("p0"), t0);  // a create: the cache shows it or the job's events come
  EXPECT_FALSE(w.unconfirmed_deletes_expire("ns/j").has_value());
  w.deleted("ns/j", "pods", "p2", t0 + std::chrono::seconds(3));
  w.deleted("ns/j", "services", "s1", t0 + std::chrono::seconds(1));
  EXPECT_EQ(w.unconfirmed_deletes_expire("ns/j"), t0 + std::chrono::seconds(1) + kTtl);
  // The cache shows both gone: nothing left to look again for.
  w.overlay("ns/j", "pods", {}, t0 + std::chrono::seconds(4));
  w.overlay("ns/j", "services", {}, t0 + std::chrono::seconds(4));
  EXPECT_FALSE(w.unconfirmed_deletes_expire("ns/j").has_value());
}
