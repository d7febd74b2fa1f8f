// The Controller carrying out reconcile's decisions against an in-memory API server
// (fake_cluster.hpp): creates, deletes and the status patch are sent; AlreadyExists and NotFound
// answers count as done; a transient error requeues the job with per-key exponential backoff
// (measured on a fake clock, so the test controls when the retry may come).

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/api/job_status.hpp"
#include "fake_api_server.hpp"
#include "fake_clock.hpp"
#include "fake_cluster.hpp"
#include "operator/controller/controller.hpp"
#include "operator/controller/naming.hpp"
#include "operator/controller/reconciler.hpp"
#include "test_util.hpp"

namespace trainbench::op {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Outcome = ControllerMetrics::Outcome;
using test::FakeCluster;

/// One run of one pod: the smallest job.
json job_object() {
  return {{"apiVersion", "trainbench.dev/v1alpha1"},
          {"kind", "BenchmarkJob"},
          {"metadata", {{"name", "bj"}, {"namespace", "ns1"}, {"uid", "uid-1"}, {"generation", 1}}},
          {"spec",
           {{"benchmark",
             {{"model", "mlp"}, {"batchSizePerDevice", 8}, {"warmupSteps", 1}, {"measureSteps", 4}, {"repeats", 1}}},
            {"sweep", json::array({{{"nodes", 1}, {"devicesPerNode", 1}, {"paradigm", "none"}}})},
            {"runPolicy", {{"backoffLimit", 1}, {"schedulingTimeoutSeconds", 60}}}}}};
}

/// Records each reconcile's outcome; waits for them.
class RecordingMetrics : public ControllerMetrics {
 public:
  void reconciled(Outcome outcome, double /*seconds*/) override {
    std::lock_guard<std::mutex> lock(mutex_);
    outcomes_.push_back(outcome);
    cv_.notify_all();
  }
  /// The outcomes once there are at least `n` (or after 20 s, whatever there are).
  std::vector<Outcome> wait_for(std::size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait_for(lock, 20s, [&] { return outcomes_.size() >= n; });
    return outcomes_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Outcome> outcomes_;
};

/// A Controller (one worker, no node informer, work queue on a fake clock) running against a
/// FakeCluster until the fixture ends or stop() is called.
struct ControllerOnFakeCluster {
  FakeCluster cluster;
  kubetest::FakeApiServer server{cluster.handler()};
  std::shared_ptr<kubetest::FakeClock> clock = std::make_shared<kubetest::FakeClock>();
  std::shared_ptr<RecordingMetrics> metrics = std::make_shared<RecordingMetrics>();
  std::atomic<bool> stopping{false};
  std::unique_ptr<Controller> controller;
  std::thread runner;
  int pod_create_parallelism = 32;

  void start() {
    ControllerOptions options;
    options.pod_create_parallelism = pod_create_parallelism;
    options.watch_namespace = "ns1";
    options.workers = 1;
    options.metrics = metrics;
    options.node_lost_after = 0s;
    options.clock = clock;
    controller = std::make_unique<Controller>(std::make_shared<const kube::Client>(kubetest::fake_config(server.url())),
                                              options);
    stopping = false;
    runner = std::thread([this] { controller->run(stopping); });
  }
  void stop() {
    stopping = true;
    runner.join();
    controller.reset();
  }
  ~ControllerOnFakeCluster() {
    if (runner.joinable()) stop();
    server.stop();
  }

  /// The write requests sent, each as "METHOD resource name" (without its answer).
  std::vector<std::string> sent() const {
    std::vector<std::string> out;
    for (const auto& w : cluster.writes()) out.push_back(w.method + " " + w.resource + " " + w.name);
    return out;
  }
  /// Waits until the job is back in the work queue (a requeue is added after the reconcile's
  /// outcome is counted), so that advancing the clock after it counts toward its delay.
  void wait_requeued() const {
    for (int i = 0; i < 500 && controller->snapshot().queue_depth == 0; ++i) std::this_thread::sleep_for(10ms);
    ASSERT_EQ(controller->snapshot().queue_depth, 1u);
  }
  json job_status() const { return cluster.get("benchmarkjobs", "ns1", "bj").value()["status"]; }
};

/// The requests a decision's actions make, in order, as ControllerOnFakeCluster::sent() names them.
std::vector<std::string> requests_of(const Decision& d) {
  std::vector<std::string> out;
  for (const auto& a : d.actions) {
    switch (a.verb) {
      case Action::Verb::Create:
      case Action::Verb::Event:
        out.push_back("POST " + a.resource + " " + a.body["metadata"].value("name", ""));
        break;
      case Action::Verb::Delete:
      case Action::Verb::ForceDelete:
        out.push_back("DELETE " + a.resource + " " + a.name);
        break;
      case Action::Verb::DeleteCollection:
        out.push_back("DELETE " + a.resource + " ");
        break;
      case Action::Verb::Patch:
      case Action::Verb::PatchStatus:
        out.push_back("PATCH " + a.resource + " " + a.name);
        break;
    }
  }
  return out;
}

TEST(Controller, CarriesOutTheDecisionForANewJob) {
  ControllerOnFakeCluster f;
  f.cluster.seed("benchmarkjobs", job_object());
  Observed observed;
  observed.job = f.cluster.get("benchmarkjobs", "ns1", "bj").value();
  observed.now = Clock::now();
  const Decision expected = reconcile(observed);
  ASSERT_FALSE(expected.actions.empty());
  f.start();
  EXPECT_EQ(f.metrics->wait_for(1), std::vector<Outcome>{Outcome::kSuccess});
  EXPECT_EQ(f.sent(), requests_of(expected));
  EXPECT_EQ(f.job_status()["phase"], "Running");
  EXPECT_TRUE(f.cluster.get("pods", "ns1", master_pod_name("bj", 0, 0)).has_value());
  EXPECT_TRUE(f.cluster.get("serviceaccounts", "ns1", reporter_name("bj")).has_value());
}

TEST(Controller, AlreadyExistsIsDone) {
  ControllerOnFakeCluster f;
  f.cluster.seed("benchmarkjobs", job_object());
  // Made by an earlier reconcile whose watch events have not arrived yet (names are deterministic).
  f.cluster.fail_next("POST", "serviceaccounts", 409, "AlreadyExists");
  f.cluster.fail_next("POST", "pods", 409, "AlreadyExists");
  f.start();
  EXPECT_EQ(f.metrics->wait_for(1), std::vector<Outcome>{Outcome::kSuccess});
  EXPECT_EQ(f.cluster.count("POST", "pods"), 2u) << "master and trainer, each once: not retried";
  EXPECT_EQ(f.cluster.count("PATCH", "benchmarkjobs"), 1u) << "the status is written after it";
  EXPECT_EQ(f.job_status()["phase"], "Running");
}

TEST(Controller, NotFoundIsDone) {
  ControllerOnFakeCluster f;
  f.cluster.seed("benchmarkjobs", job_object());
  f.start();  // an earlier operator starts the run, then stops
  ASSERT_EQ(f.metrics->wait_for(1), std::vector<Outcome>{Outcome::kSuccess});
  f.stop();
  // The run's master pod failed; its trainer is already terminating (so the master is deleted
  // on its own, not by a collection delete).
  const std::string pod = master_pod_name("bj", 0, 0);
  json failed = f.cluster.get("pods", "ns1", pod).value();
  failed["status"] = {
      {"phase", "Failed"},
      {"containerStatuses",
       json::array({{{"name", "trainer"}, {"state", {{"terminated", {{"exitCode", 1}, {"reason", "Error"}}}}}}})}};
  f.cluster.seed("pods", failed);
  json terminating = f.cluster.get("pods", "ns1", trainer_pod_name("bj", 0, 0, 0)).value();
  terminating["metadata"]["deletionTimestamp"] = "2026-11-24T04:00:00Z";
  f.cluster.seed("pods", terminating);
  // The pod is deleted by someone else between this operator's list and its delete.
  f.cluster.fail_next("DELETE", "pods", 404, "NotFound");
  f.start();
  EXPECT_EQ(f.metrics->wait_for(2), (std::vector<Outcome>{Outcome::kSuccess, Outcome::kSuccess}));
  const auto writes = f.cluster.writes();
  const auto deleted = std::find_if(writes.begin(), writes.end(), [&](const FakeCluster::Write& w) {
    return w.method == "DELETE" && w.resource == "pods" && w.name == pod;
  });
  ASSERT_NE(deleted, writes.end()) << "the failed attempt's pod is deleted";
  EXPECT_EQ(deleted->status, 404);
  EXPECT_EQ(writes.back().method + " " + writes.back().resource, "PATCH benchmarkjobs") << "then the status";
  EXPECT_EQ(f.job_status()["runs"][0]["restarts"], 1);
}

TEST(Controller, AStatusPatchOfADeletedJobIsDone) {
  ControllerOnFakeCluster f;
  f.cluster.seed("benchmarkjobs", job_object());
  f.cluster.fail_next("PATCH", "benchmarkjobs", 404, "NotFound");
  f.start();
  EXPECT_EQ(f.metrics->wait_for(1), std::vector<Outcome>{Outcome::kSuccess});
  EXPECT_EQ(f.cluster.count("PATCH", "benchmarkjobs"), 1u);
}

TEST(Controller, AForbiddenEventIsTriedAgainForAWhile) {
  // A kube-apiserver that has just started may refuse what RBAC grants (its informers unsynced):
  // the Event's 403 fails the reconcile before its status write, and the next records it.
  ControllerOnFakeCluster f;
  f.cluster.seed("benchmarkjobs", job_object());
  f.cluster.fail_next("POST", "events", 403, "Forbidden");
  f.start();
  ASSERT_EQ(f.metrics->wait_for(1), std::vector<Outcome>{Outcome::kError});
  EXPECT_EQ(f.cluster.count("PATCH", "benchmarkjobs"), 0u) << "no status before its Event";
  f.wait_requeued();
  f.clock->advance(100ms);
  EXPECT_EQ(f.metrics->wait_for(2), (std::vector<Outcome>{Outcome::kError, Outcome::kSuccess}));
  EXPECT_EQ(f.cluster.count("POST", "events"), 2u);
  EXPECT_EQ(f.job_status()["phase"], "Running");
}

TEST(Controller, AnEventForbiddenForLongIsSkippedButTheStatusIsWritten) {
  ControllerOnFakeCluster f;  // Events are best effort: a 403 that lasts 30 s is a missing grant
  f.cluster.seed("benchmarkjobs", job_object());
  f.cluster.fail_next("POST", "events", 403, "Forbidden");
  f.cluster.fail_next("POST", "events", 403, "Forbidden");
  f.start();
  ASSERT_EQ(f.metrics->wait_for(1), std::vector<Outcome>{Outcome::kError});
  f.wait_requeued();
  f.clock->advance(30s);
  EXPECT_EQ(f.metrics->wait_for(2), (std::vector<Outcome>{Outcome::kError, Outcome::kSuccess}));
  EXPECT_EQ(f.cluster.count("POST", "events"), 2u) << "not recorded, not tried again";
  EXPECT_EQ(f.job_status()["phase"], "Running");
}

TEST(Controller, ATransientErrorRequeuesWithExponentialBackoff) {
  ControllerOnFakeCluster f;  // the queue's backoff: 100 ms, then 200 ms, ...
  f.cluster.seed("benchmarkjobs", job_object());
  f.cluster.fail_next("POST", "pods", 500, "InternalError");
  f.cluster.fail_next("POST", "pods", 503, "ServiceUnavailable");
  f.start();
  ASSERT_EQ(f.metrics->wait_for(1), std::vector<Outcome>{Outcome::kError});
  EXPECT_EQ(f.cluster.count("PATCH", "benchmarkjobs"), 0u) << "no status for a decision not carried out";
  f.wait_requeued();
  f.clock->advance(99ms);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(f.cluster.count("POST", "pods"), 1u) << "not before the backoff";
  f.clock->advance(1ms);
  ASSERT_EQ(f.metrics->wait_for(2), (std::vector<Outcome>{Outcome::kError, Outcome::kError}));
  f.wait_requeued();
  f.clock->advance(199ms);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(f.cluster.count("POST", "pods"), 2u) << "the second backoff is twice the first";
  f.clock->advance(1ms);
  EXPECT_EQ(f.metrics->wait_for(3), (std::vector<Outcome>{Outcome::kError, Outcome::kError, Outcome::kSuccess}));
  EXPECT_EQ(f.cluster.count("POST", "pods"), 4u) << "the master twice in vain, then the master and its trainer";
  EXPECT_EQ(f.cluster.count("POST", "serviceaccounts"), 1u) << "what was made is not made again";
  EXPECT_EQ(f.job_status()["phase"], "Running");
}

TEST(Controller, AGangsPodsAreCreatedInSlowStartBatchesThatAFailureStops) {
  ControllerOnFakeCluster f;
  json job = job_object();
  job["spec"]["sweep"][0] = {{"nodes", 40}, {"devicesPerNode", 1}};  // 41 pods: batches of 1, 2, 4, 8, 16, then 10
  f.cluster.seed("benchmarkjobs", job);
  f.cluster.fail_next("POST", "pods", 500, "InternalError");
  f.start();
  ASSERT_EQ(f.metrics->wait_for(1), std::vector<Outcome>{Outcome::kError});
  EXPECT_EQ(f.cluster.count("POST", "pods"), 1u) << "the first batch is one pod: a refused gang costs one request";
  EXPECT_EQ(f.cluster.count("PATCH", "benchmarkjobs"), 0u);
  f.wait_requeued();
  f.clock->advance(100ms);
  ASSERT_EQ(f.metrics->wait_for(2), (std::vector<Outcome>{Outcome::kError, Outcome::kSuccess}));
  EXPECT_EQ(f.cluster.count("POST", "pods"), 42u) << "then every pod of the gang, each once";
  for (int n = 0; n < 40; ++n) EXPECT_TRUE(f.cluster.get("pods", "ns1", trainer_pod_name("bj", 0, 0, n)).has_value());
  EXPECT_EQ(f.job_status()["runs"][0]["phase"], "Starting");
}

TEST(Controller, PodCreatesOneAtATimeCreateTheWholeGang) {
  ControllerOnFakeCluster f;  // --pod-create-parallelism=1: more batches than a size_t has bits
  f.pod_create_parallelism = 1;
  json job = job_object();
  job["spec"]["sweep"][0] = {{"nodes", 70}, {"devicesPerNode", 1}};
  f.cluster.seed("benchmarkjobs", job);
  f.start();
  ASSERT_EQ(f.metrics->wait_for(1), std::vector<Outcome>{Outcome::kSuccess});
  EXPECT_EQ(f.cluster.count("POST", "pods"), 71u);
}

TEST(Controller, AConflictingStatusWriteIsDecidedAgain) {
  ControllerOnFakeCluster f;
  f.cluster.seed("benchmarkjobs", job_object());
  f.cluster.fail_next("PATCH", "benchmarkjobs", 409, "Conflict");
  f.start();
  ASSERT_EQ(f.metrics->wait_for(1), std::vector<Outcome>{Outcome::kRequeue});
  f.wait_requeued();
  f.clock->advance(100ms);
  EXPECT_EQ(f.metrics->wait_for(2), (std::vector<Outcome>{Outcome::kRequeue, Outcome::kSuccess}));
  EXPECT_EQ(f.cluster.count("PATCH", "benchmarkjobs"), 2u);
  EXPECT_EQ(f.job_status()["phase"], "Running");
}

/// A job that ended with a report of one run whose two repeats took `p50` and 1.01 x `p50`.
json ended_job(const std::string& name, double p50, const json& baseline) {
  Report rep;
  RunReport run;
  run.label = "no ddp";
  run.devices_label = "1 CPUs";
  run.repeats = {{p50, p50, p50, p50}, {p50 * 1.01, p50, p50, p50}};
  run.sec_per_iter = run.repeats[0];
  rep.runs.push_back(run);
  BenchmarkJobStatus st;
  st.phase = JobPhase::kSucceeded;
  st.report = rep;
  json j = job_object();
  j["metadata"]["name"] = name;
  if (!baseline.is_null()) j["spec"]["baseline"] = baseline;
  j["status"] = to_json(st);
  return j;
}

json regressed_condition(const json& status) {
  for (const auto& c : status.value("conditions", json::array())) {
    if (c["type"] == "Regressed") return c;
  }
  return nullptr;
}

TEST(Controller, AnEndedJobIsComparedWithItsBaselineJobFromTheCache) {
  ControllerOnFakeCluster f;
  f.cluster.seed("benchmarkjobs", ended_job("base", 0.1, nullptr));
  f.cluster.seed("benchmarkjobs", ended_job("bj", 0.2, {{"benchmarkJob", "base"}}));
  f.start();
  for (int i = 0; i < 500 && regressed_condition(f.job_status()).is_null(); ++i) std::this_thread::sleep_for(10ms);
  const json c = regressed_condition(f.job_status());
  ASSERT_TRUE(c.is_object()) << f.job_status().dump();
  EXPECT_EQ(c["status"], "True");
  EXPECT_EQ(c["reason"], "Regressed");
  EXPECT_EQ(f.cluster.count("POST", "events"), 1u);
}

TEST(Controller, AnEndedJobReadsItsBaselineConfigMap) {
  ControllerOnFakeCluster f;
  const json base = ended_job("base", 0.1, nullptr);
  f.cluster.seed("configmaps", {{"apiVersion", "v1"},
                                {"kind", "ConfigMap"},
                                {"metadata", {{"name", "reports"}, {"namespace", "ns1"}}},
                                {"data", {{"report", base["status"]["report"].dump()}}}});
  f.cluster.seed("benchmarkjobs", ended_job("bj", 0.1, {{"configMap", {{"name", "reports"}}}}));
  f.start();
  for (int i = 0; i < 500 && regressed_condition(f.job_status()).is_null(); ++i) std::this_thread::sleep_for(10ms);
  const json c = regressed_condition(f.job_status());
  ASSERT_TRUE(c.is_object()) << f.job_status().dump();
  EXPECT_EQ(c["status"], "False");
  EXPECT_EQ(c["message"],
            "against ConfigMap reports (key report): no row significantly slower by more than 5% (p50 "
            "ex/sec; 1 row compared)");
}

json finished_pod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "ns1"},
            {"labels", {{kJobLabel, "bj"}, {"app.kubernetes.io/managed-by", kManagedBy}, {kRunLabel, "0"}}}}},
          {"status", {{"phase", "Failed"}}}};
}

TEST(Controller, ADeleteTheServerDidNotCarryOutIsMadeAgainWhenItsRecordExpires) {
  ControllerOnFakeCluster f;  // an ended job whose two pods are still there (cleanPodPolicy All)
  f.cluster.seed("benchmarkjobs", ended_job("bj", 0.1, nullptr));
  f.cluster.seed("pods", finished_pod("bj-r0-a0-master-0"));
  f.cluster.seed("pods", finished_pod("bj-r0-a0-trainer-1"));
  // Answered as done but not carried out (its list missed them, say): no watch event will come.
  f.cluster.fail_next("DELETE", "pods", 200, "");
  f.start();
  ASSERT_EQ(f.metrics->wait_for(1), std::vector<Outcome>{Outcome::kSuccess});
  EXPECT_EQ(f.cluster.count("DELETE", "pods"), 1u);
  // The overlay hides them as being deleted for its ttl (10 s); the job comes back after it.
  f.wait_requeued();
  f.clock->advance(9s);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(f.metrics->wait_for(0).size(), 1u) << "not looked at again while the record may yet be confirmed";
  f.clock->advance(1200ms);
  ASSERT_EQ(f.metrics->wait_for(2).size(), 2u);
  EXPECT_EQ(f.cluster.count("DELETE", "pods"), 2u) << "deleted again";
  EXPECT_FALSE(f.cluster.get("pods", "ns1", "bj-r0-a0-master-0").has_value());
  EXPECT_FALSE(f.cluster.get("pods", "ns1", "bj-r0-a0-trainer-1").has_value());
}

}  // namespace
}  // namespace trainbench::op
