// The pods of a run (operator/controller/reconciler_pods.cpp): their images, ranks and GPUs, and
// the gang's scheduling timeout.

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tests/operator/reconciler_test_support.hpp"

namespace trainbench::op::reconcile_test {
namespace {

/// The image of every pod a first reconcile of `job` creates ("" when they differ or none).
std::string pod_image(const json& job, const WorkerImages& images = {}) {
  Observed o{job, {}, {}, {}, false, false, false, t0()};
  o.worker_images = images;
  const Decision d = reconcile(o);
  std::set<std::string> seen;
  for (const auto* a : of(d, Action::Verb::Create, "pods")) {
    seen.insert(a->body["spec"]["containers"][0]["image"].get<std::string>());
  }
  return seen.size() == 1 ? *seen.begin() : "";
}

TEST(Reconciler, PodsRunTheWorkerImageOfTheJobsDevice) {
  // Unset spec.template.image: the CPU worker image, or its CUDA build for device cuda.
  EXPECT_EQ(pod_image(job_object()), "trainbench/worker:0.1.0");
  EXPECT_EQ(pod_image(job_object({{"device", "cpu"}})), "trainbench/worker:0.1.0");
  EXPECT_EQ(pod_image(job_object({{"device", "cuda"}})), "trainbench/worker:0.1.0-cuda");
  // The operator's --worker-image / --worker-cuda-image (the chart's workerImage) replace them.
  const WorkerImages mirror{"registry.example/tb/worker:1", "registry.example/tb/worker:1-cuda"};
  EXPECT_EQ(pod_image(job_object(), mirror), "registry.example/tb/worker:1");
  EXPECT_EQ(pod_image(job_object({{"device", "cuda"}}), mirror), "registry.example/tb/worker:1-cuda");
  // The job's own image wins, whatever the device.
  for (const char* device : {"cpu", "cuda"}) {
    EXPECT_EQ(pod_image(job_object({{"device", device}, {"template", {{"image", "mine:2"}}}}), mirror), "mine:2");
  }
  // A job whose image is not a string is refused (Invalid), never a crash.
  Observed bad{job_object({{"template", {{"image", 5}}}}), {}, {}, {}, false, false, false, t0()};
  Decision d;
  ASSERT_NO_THROW(d = reconcile(bad));
  EXPECT_EQ(status_of(d)["phase"], "Invalid");
}

TEST(Reconciler, HybridPsRunGetsParameterServerPodsWithTheirRanks) {
  // 1 node x 2 trainers + 3 parameter servers: c10d world 5, servers ranks 2..4 in pods of their own.
  json spec = {{"benchmark",
                {{"model", "hybrid-embedding"}, {"paradigm", "hybrid-ps"}, {"batchSizePerDevice", 8},
                 {"warmupSteps", 1}, {"measureSteps", 4}, {"repeats", 1}, {"hybridPs", {{"parameterServers", 3}}}}},
               {"sweep", json::array({{{"nodes", 1}, {"devicesPerNode", 2}}})}};
  json job = job_object();
  job["spec"] = spec;
  Observed o{job, {}, {}, {}, false, false, false, t0()};
  const Decision d = reconcile(o);
  const auto pods = of(d, Action::Verb::Create, "pods");
  ASSERT_EQ(pods.size(), 5u) << status_of(d).dump();  // master + 1 trainer pod + 3 servers
  std::map<std::string, const json*> by_role;
  std::set<std::string> server_ranks;
  for (const auto* a : pods) {
    const json& pod = a->body;
    EXPECT_EQ(env(pod, "WORLD_SIZE"), "5");
    const std::string role = pod["metadata"]["labels"]["trainbench.dev/role"];
    EXPECT_EQ(env(pod, "TRAINBENCH_ROLE"), role);
    if (role == "parameter-server") {
      server_ranks.insert(env(pod, "RANK"));
      EXPECT_EQ(env(pod, "LOCAL_WORLD_SIZE"), "1");
      EXPECT_EQ(env(pod, "LOCAL_RANK"), "0");
      EXPECT_EQ(env(pod, "NPROC_PER_NODE"), "<unset>");
      EXPECT_EQ(pod["spec"]["containers"][0]["command"], json::array({"trainbench-worker"}));
      EXPECT_EQ(pod["spec"]["automountServiceAccountToken"], false);
      EXPECT_EQ(pod["spec"]["securityContext"]["runAsNonRoot"], true);
      EXPECT_EQ(pod["metadata"]["name"].get<std::string>().rfind("bj-r0-a0-ps-", 0), 0u);
    } else {
      by_role[role] = &pod;
    }
  }
  EXPECT_EQ(server_ranks, (std::set<std::string>{"2", "3", "4"}));
  ASSERT_TRUE(by_role.count("trainer"));
  EXPECT_EQ(env(*by_role["trainer"], "NPROC_PER_NODE"), "2");
  EXPECT_EQ(env(*by_role["trainer"], "TRAINBENCH_ROLE"), "trainer");
  ASSERT_TRUE(by_role.count("master"));
}

TEST(Reconciler, PodsNotRunningInTimeFailTheRunNamingThem) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  set_phase(o, master_pod_name("bj", 0, 0), "Running");
  o.now = t0() + std::chrono::seconds(30);
  Decision d = reconcile(o);
  ASSERT_TRUE(d.requeue_after.has_value());
  EXPECT_LE(d.requeue_after->count(), 31200);  // the second after attemptStartTime's, plus 60 s
  o.now = t0() + std::chrono::seconds(61);
  d = reconcile(o);
  apply(o, d);
  EXPECT_EQ(o.job["status"]["phase"], "Failed");
  const std::string msg = o.job["status"]["runs"][0]["message"];
  EXPECT_NE(msg.find("1 of 2 pods not running after 60 s: 1 Pending (" + trainer_pod_name("bj", 0, 0, 0) + ")"),
            std::string::npos)
      << msg;
  EXPECT_TRUE(o.pods.empty());
}

TEST(Reconciler, SchedulingTimeoutNamesAContainersWaitingReason) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  set_phase(o, master_pod_name("bj", 0, 0), "Running");
  const std::string trainer = trainer_pod_name("bj", 0, 0, 0);
  for (auto& p : o.pods) {
    if (p["metadata"]["name"] != trainer) continue;
    p["status"]["containerStatuses"] = json::array(
        {{{"name", "trainer"},
          {"state", {{"waiting", {{"reason", "ImagePullBackOff"}, {"message", "Back-off pulling image \"x:1\""}}}}}}});
  }
  // attemptStartTime has whole seconds (the attempt started in [t0, t0 + 1 s)): not a second early.
  o.now = t0() + std::chrono::milliseconds(60500);
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["phase"], "Running");
  o.now = t0() + std::chrono::seconds(61);
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["phase"], "Failed");
  const std::string msg = o.job["status"]["runs"][0]["message"];
  EXPECT_EQ(msg, "1 of 2 pods not running after 60 s: 1 Pending: container trainer ImagePullBackOff: Back-off "
                 "pulling image \"x:1\" (" + trainer + ")");
}

TEST(Reconciler, ABigGangsTimeoutSaysHowManyPodsWaitedAndEachReasonOnce) {
  Observed o{job_object({{"sweep", json::array({{{"nodes", 125}, {"devicesPerNode", 8}}})}}), {}, {}, {}, false, false,
             false, t0()};
  apply(o, reconcile(o));
  ASSERT_EQ(o.pods.size(), 126u);
  const std::string unschedulable = "0/120 nodes are available: 120 Insufficient nvidia.com/gpu.";
  int pending = 0;
  for (auto& p : o.pods) {
    const std::string name = p["metadata"]["name"];
    if (name.find("trainer") != std::string::npos && pending < 7) {
      ++pending;
      p["status"] = {{"phase", "Pending"},
                     {"conditions", json::array({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"},
                                                  {"message", unschedulable}}})}};
    } else {
      p["status"]["phase"] = "Running";
    }
  }
  o.now = t0() + std::chrono::seconds(61);
  apply(o, reconcile(o));
  ASSERT_EQ(o.job["status"]["phase"], "Failed");
  const std::string msg = o.job["status"]["runs"][0]["message"];
  EXPECT_EQ(msg.rfind("7 of 126 pods not running after 60 s: 7 Pending: Unschedulable: " + unschedulable + " (", 0), 0u) << msg;
  EXPECT_NE(msg.find(", and 2 more)"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(unschedulable), msg.rfind(unschedulable)) << "the reason once";
  EXPECT_LT(msg.size(), 400u);
}

/// The pod a decision creates under `name` (null when none).
json o_pod(const Decision& d, const std::string& name) {
  for (const auto* a : of(d, Action::Verb::Create, "pods")) {
    if (a->body["metadata"]["name"] == name) return a->body;
  }
  return json();
}

TEST(Reconciler, ACudaJobsTrainerPodsAskForTheirRunsGpusUnlessTheTemplateSays) {
  // Run 0: 1 node x 1 device; run 1: 2 nodes x 2 devices.
  Observed o{job_object({{"device", "cuda"}}), {}, {}, {}, false, false, false, t0()};
  const Decision d = reconcile(o);
  const json trainer = o_pod(d, trainer_pod_name("bj", 0, 0, 0));
  EXPECT_EQ(trainer["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], 1);
  EXPECT_EQ(trainer["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"], 1);
  EXPECT_FALSE(o_pod(d, master_pod_name("bj", 0, 0))["spec"]["containers"][0]["resources"]["limits"].is_object())
      << "the master uses no GPU";
  // The template's own GPU count wins (the same for every run), and a cpu job asks for none.
  Observed t{job_object({{"device", "cuda"}, {"template", {{"resources", {{"limits", {{"nvidia.com/gpu", 8}}}}}}}}),
             {}, {}, {}, false, false, false, t0()};
  const Decision dt = reconcile(t);
  EXPECT_EQ(o_pod(dt, trainer_pod_name("bj", 0, 0, 0))["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], 8);
  Observed c{job_object(), {}, {}, {}, false, false, false, t0()};
  const Decision dc = reconcile(c);
  EXPECT_FALSE(o_pod(dc, trainer_pod_name("bj", 0, 0, 0))["spec"]["containers"][0].contains("resources"));
}

}  // namespace
}  // namespace trainbench::op::reconcile_test
