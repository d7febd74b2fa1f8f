#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <set>

#include "core/api/crd.hpp"
#include "core/api/job_status.hpp"
#include "core/plan/run_config.hpp"
#include "core/report/rank_summary.hpp"
#include "core/report/report.hpp"
#include "core/report/report_format.hpp"
#include "operator/controller/kueue_workload.hpp"
#include "operator/controller/naming.hpp"
#include "operator/controller/reconciler.hpp"

namespace trainbench::op {
namespace {

using nlohmann::json;

json job_object(json spec_extra = json::object()) {
  json spec = {{"benchmark", {{"model", "mlp"}, {"batchSizePerDevice", 8}, {"warmupSteps", 1}, {"measureSteps", 4},
                              {"repeats", 1}}},
               {"sweep", json::array({{{"nodes", 1}, {"devicesPerNode", 1}, {"paradigm", "none"}},
                                      {{"nodes", 2}, {"devicesPerNode", 2}}})},
               {"runPolicy", {{"backoffLimit", 1}, {"schedulingTimeoutSeconds", 60}}}};
  spec.update(spec_extra, true);
  return {{"apiVersion", "trainbench.dev/v1alpha1"},
          {"kind", "BenchmarkJob"},
          {"metadata", {{"name", "bj"}, {"namespace", "ns1"}, {"uid", "uid-1"}, {"generation", 1}}},
          {"spec", spec}};
}

Clock::time_point t0() { return *parse_time("2026-11-22T10:00:00Z"); }

std::vector<const Action*> of(const Decision& d, Action::Verb v, const std::string& resource = "") {
  std::vector<const Action*> out;
  for (const auto& a : d.actions) {
    if (a.verb == v && (resource.empty() || a.resource == resource)) out.push_back(&a);
  }
  return out;
}

json status_of(const Decision& d) {
  auto p = of(d, Action::Verb::PatchStatus);
  return p.empty() ? json() : p.back()->body["status"];
}

/// A label selector of "k=v" and "k!=v" terms, as the API server evaluates it.
bool matches(const std::string& selector, const json& obj) {
  const json labels = obj["metadata"].value("labels", json::object());
  std::size_t start = 0;
  while (start <= selector.size()) {
    const std::size_t end = std::min(selector.find(',', start), selector.size());
    const std::string term = selector.substr(start, end - start);
    const bool negated = term.find("!=") != std::string::npos;
    const std::size_t op = negated ? term.find("!=") : term.find('=');
    const std::string key = term.substr(0, op), value = term.substr(op + (negated ? 2 : 1));
    const bool equal = labels.contains(key) && labels[key] == value;
    if (equal == negated) return false;
    start = end + 1;
  }
  return true;
}

/// Pod names a decision deletes, one by one or by a collection delete.
std::vector<std::string> deleted_pods(const Decision& d) {
  std::vector<std::string> out;
  for (const auto& a : d.actions) {
    if (a.resource != "pods") continue;
    if (a.verb == Action::Verb::Delete) out.push_back(a.name);
    if (a.verb == Action::Verb::DeleteCollection) out.insert(out.end(), a.names.begin(), a.names.end());
  }
  return out;
}

/// Applies a decision the way the cluster would: creates appear (pods Pending), deletes vanish,
/// the status patch (a JSON merge patch) lands.
void apply(Observed& o, const Decision& d) {
  for (const auto& a : d.actions) {
    if (a.verb == Action::Verb::Create) {
      if (a.resource == "pods") o.pods.push_back(a.body);
      if (a.resource == "services") o.services.push_back(a.body);
      if (a.resource == "configmaps") o.configmaps.push_back(a.body);
      if (a.resource == "serviceaccounts") o.reporter_service_account = true;
      if (a.resource == "roles") o.reporter_role = true;
      if (a.resource == "rolebindings") o.reporter_role_binding = true;
      if (a.resource == "workloads") o.workload = a.body;
    } else if (a.verb == Action::Verb::DeleteCollection && a.resource == "pods") {
      o.pods.erase(
          std::remove_if(o.pods.begin(), o.pods.end(), [&](const json& p) { return matches(a.label_selector, p); }),
          o.pods.end());
    } else if ((a.verb == Action::Verb::Delete || a.verb == Action::Verb::ForceDelete) && a.resource == "pods") {
      o.pods.erase(
          std::remove_if(o.pods.begin(), o.pods.end(), [&](const json& p) { return p["metadata"]["name"] == a.name; }),
          o.pods.end());
    } else if (a.verb == Action::Verb::PatchStatus && a.resource == "benchmarkjobs") {
      o.job["status"].merge_patch(a.body["status"]);  // as the API server: RFC 7386
    } else if (a.verb == Action::Verb::PatchStatus && a.resource == "workloads") {
      o.workload->merge_patch(a.body);
    } else if (a.verb == Action::Verb::Patch && a.resource == "benchmarkjobs") {
      o.job.merge_patch(a.body);
      o.job["metadata"]["generation"] = o.job["metadata"]["generation"].get<int>() + 1;
    }
  }
}

void set_phase(Observed& o, const std::string& pod, const std::string& phase, int exit_code = 0) {
  for (auto& p : o.pods) {
    if (p["metadata"]["name"] != pod) continue;
    p["status"]["phase"] = phase;
    if (phase == "Failed" || phase == "Succeeded") {
      p["status"]["containerStatuses"] = json::array(
          {{{"name", "trainer"},
            {"state", {{"terminated", {{"exitCode", exit_code}, {"reason", "Error"}, {"message", "trainbench-worker rank 1: boom"}}}}}}});
    }
  }
}

void all_running(Observed& o) {
  for (auto& p : o.pods) p["status"]["phase"] = "Running";
}

std::string env(const json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0]["env"]) {
    if (e["name"] == name) return e.contains("value") ? e["value"].get<std::string>() : "<ref>";
  }
  return "<unset>";
}

/// Delivers run `run`'s result: every rank's step times per repeat are `steps`; with `compute`
/// (one per rank), each step's compute is that and the rest of it communication.
void deliver_result(Observed& o, int run, int attempt, int world,
                    const std::vector<std::vector<double>>& steps = {{0.1, 0.2, 0.3}},
                    const std::vector<double>& compute = {}) {
  RunConfig cfg;
  cfg.index = run;
  cfg.nodes = 1;
  cfg.devices_per_node = world;
  cfg.paradigm = world == 1 ? Paradigm::kNone : Paradigm::kDdp;
  cfg.batch_size_per_device = 8;
  RunResult r;
  r.world_size = world;
  r.environment.backend = "gloo";
  for (int k = 0; k < world; ++k) r.ranks.push_back({k, 0, k, steps, 1000, 1.0});
  for (std::size_t k = 0; k < compute.size(); ++k) {
    for (const auto& rep : steps) {
      r.ranks[k].compute_seconds.emplace_back(rep.size(), compute[k]);
      r.ranks[k].communication_seconds.emplace_back();
      for (double sec : rep) r.ranks[k].communication_seconds.back().push_back(sec - compute[k]);
    }
  }
  json payload = {{"attempt", attempt}, {"run", to_json(summarize_run(cfg, r))}, {"environment", to_json(r.environment)}};
  for (auto& cm : o.configmaps) {
    if (cm["metadata"]["name"] == result_configmap_name("bj", run)) cm["data"]["result"] = payload.dump();
  }
}

TEST(Reconciler, InvalidSpecGetsConditionWithFieldAndNoPods) {
  Observed o{job_object({{"sweep", json::array({{{"nodes", 1}, {"devicesPerNode", 0}}})}}), {}, {}, {}, false, false, false, t0()};
  const Decision d = reconcile(o);
  EXPECT_TRUE(of(d, Action::Verb::Create, "pods").empty());
  const json st = status_of(d);
  EXPECT_EQ(st["phase"], "Invalid");
  EXPECT_EQ(st["observedGeneration"], 1);
  bool found = false;
  for (const auto& c : st["conditions"]) {
    if (c["type"] == "Invalid") {
      EXPECT_EQ(c["status"], "True");
      EXPECT_NE(c["message"].get<std::string>().find("spec.sweep[0].devicesPerNode"), std::string::npos);
      found = true;
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(of(d, Action::Verb::Event).size(), 1u);
}

/// What any user with create rights on BenchmarkJobs can write (issue 11): huge strings, quoted
/// numbers, hundreds of bad keys. Each job gets condition Invalid with a message the CRD takes
/// and no pods; a good job reconciled after them (the same operator process) starts its run.
TEST(Reconciler, HostileSpecsAreInvalidAndOtherJobsStillRun) {
  json bad_labels = json::object();
  for (int i = 0; i < 64; ++i)
    bad_labels["bad key " + std::to_string(i) + std::string(300, 'k')] = std::string(300, 'v');
  const std::vector<json> hostile = {
      job_object({{"benchmark", {{"model", std::string(100000, 'm')}}}}),
      job_object({{"benchmark", {{"repeats", std::string(100000, '1')}}}}),
      job_object({{"benchmark", {{"repeats", "5"}}}}),
      job_object({{"template", {{"resources", {{"limits", {{"cpu", std::string(100000, '1')}}}}}}}}),
      job_object({{"template", {{"labels", bad_labels}, {"annotations", bad_labels}, {"nodeSelector", bad_labels}}},
                  {"nccl", {{"extraEnv", bad_labels}}}}),
      job_object({{"template", {{"image", "worker:\u00e9" + std::string(2000, 'i')}}}}),
  };
  for (const json& job : hostile) {
    Observed o{job, {}, {}, {}, false, false, false, t0()};
    Decision d;
    ASSERT_NO_THROW(d = reconcile(o));
    EXPECT_TRUE(of(d, Action::Verb::Create, "pods").empty());
    const json st = status_of(d);
    EXPECT_EQ(st["phase"], "Invalid");
    for (const auto& c : st["conditions"]) {
      EXPECT_LE(c["message"].get<std::string>().size(), static_cast<std::size_t>(kMaxConditionMessageLength));
    }
  }
  Observed good{job_object(), {}, {}, {}, false, false, false, t0()};
  const Decision d = reconcile(good);
  EXPECT_FALSE(of(d, Action::Verb::Create, "pods").empty());
  EXPECT_EQ(status_of(d)["phase"], "Running");
}

TEST(Reconciler, FirstReconcileCreatesTheFirstRunWithRanksAndOwners) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  const Decision d = reconcile(o);
  const auto pods = of(d, Action::Verb::Create, "pods");
  ASSERT_EQ(pods.size(), 2u);  // run 0: master + one trainer
  EXPECT_EQ(of(d, Action::Verb::Create, "services").size(), 1u);
  EXPECT_EQ(of(d, Action::Verb::Create, "configmaps").size(), 1u);
  EXPECT_EQ(of(d, Action::Verb::Create, "roles").size(), 1u);
  for (const auto* a : pods) {
    EXPECT_EQ(a->body["metadata"]["ownerReferences"][0]["uid"], "uid-1");
    EXPECT_EQ(a->body["metadata"]["labels"]["app.kubernetes.io/managed-by"], "trainbench-operator");
    EXPECT_EQ(env(a->body, "MASTER_ADDR"), "bj-r0.ns1.svc");
    EXPECT_EQ(env(a->body, "WORLD_SIZE"), "1");
    EXPECT_EQ(a->body["spec"]["restartPolicy"], "Never");
    if (a->body["metadata"]["labels"]["trainbench.dev/role"] == "trainer") {
      // One metrics port per worker process of the node (run 0 has one device per node).
      EXPECT_EQ(env(a->body, "TRAINBENCH_METRICS_PORT"), "9400");
      const json ports = a->body["spec"]["containers"][0]["ports"];
      ASSERT_EQ(ports.size(), 1u);
      EXPECT_EQ(ports[0]["name"], "metrics-0");
      EXPECT_EQ(ports[0]["containerPort"], 9400);
    }
  }
  const json st = status_of(d);
  EXPECT_EQ(st["phase"], "Running");
  EXPECT_EQ(st["runsTotal"], 2);
  EXPECT_EQ(st["runs"][0]["phase"], "Starting");
  EXPECT_TRUE(d.requeue_after.has_value());
}

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

TEST(Reconciler, WholeSweepSucceedsWithReport) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["runs"][0]["phase"], "Running");
  deliver_result(o, 0, 0, 1);
  Decision d = reconcile(o);
  apply(o, d);
  EXPECT_EQ(o.job["status"]["runsDone"], 1);
  EXPECT_EQ(o.job["status"]["progress"], "1/2");
  // run 1: 2 nodes x 2 devices -> master + 2 trainers with their NODE_RANK
  const auto pods = of(d, Action::Verb::Create, "pods");
  ASSERT_EQ(pods.size(), 3u);
  std::set<std::string> node_ranks;
  for (const auto* a : pods) {
    EXPECT_EQ(env(a->body, "WORLD_SIZE"), "4");
    EXPECT_EQ(env(a->body, "MASTER_ADDR"), "bj-r1.ns1.svc");
    if (a->body["metadata"]["labels"]["trainbench.dev/role"] == "trainer") {
      node_ranks.insert(env(a->body, "NODE_RANK"));
      EXPECT_EQ(env(a->body, "NPROC_PER_NODE"), "2");
    }
  }
  EXPECT_EQ(node_ranks, (std::set<std::string>{"0", "1"}));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 1, 0, 4);
  d = reconcile(o);
  apply(o, d);
  const json st = o.job["status"];
  EXPECT_EQ(st["phase"], "Succeeded");
  EXPECT_EQ(st["report"]["runs"].size(), 2u);
  EXPECT_DOUBLE_EQ(st["report"]["runs"][0]["speedup"].get<double>(), 1.0);
  EXPECT_GT(st["bestExamplesPerSec"].get<double>(), 0);
  EXPECT_EQ(st["lowestEfficiency"], 1.0);
  EXPECT_EQ(st["noisyRuns"], 0);
  EXPECT_EQ(st["report"]["runs"][1]["noise"]["verdict"], "unjudged");  // one repeat
  for (const auto* e : of(d, Action::Verb::Event)) {
    EXPECT_NE(e->body["reason"], "BelowTarget");
    EXPECT_NE(e->body["reason"], "Noisy");
  }
  EXPECT_TRUE(o.pods.empty()) << "cleanPodPolicy All leaves no pod";
}

/// Runs both steps of a two-run job (2 repeats), delivering `steps0` then `steps1` (4 ranks).
Decision finish_two_runs(Observed& o, const std::vector<std::vector<double>>& steps0,
                         const std::vector<std::vector<double>>& steps1) {
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 0, 0, 1, steps0);
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 1, 0, 4, steps1);
  Decision d = reconcile(o);
  apply(o, d);
  return d;
}

TEST(Reconciler, FinishedJobFlagsRunsBelowTargetAndNoisyRunsWithEvents) {
  Observed o{job_object({{"benchmark", {{"repeats", 2}}}}), {}, {}, {}, false, false, false, t0()};
  // run 0: 0.1 s steps, 8 ex/step -> 80 ex/s. run 1: repeats at 0.2 and 0.3 s (spread 40%), 32
  // ex/step at the median 0.25 s -> 128 ex/s: speedup 1.6, efficiency 0.4.
  const Decision d = finish_two_runs(o, {{0.1, 0.1, 0.1}, {0.1, 0.1, 0.1}}, {{0.2, 0.2, 0.2}, {0.3, 0.3, 0.3}});
  const json st = o.job["status"];
  ASSERT_EQ(st["phase"], "Succeeded");
  EXPECT_EQ(st["lowestEfficiency"], 0.4);
  EXPECT_EQ(st["noisyRuns"], 1);
  EXPECT_EQ(st["bestSpeedup"], 1.6);
  const json& run1 = st["report"]["runs"][1];
  EXPECT_EQ(run1["belowTarget"], true);
  EXPECT_EQ(run1["noise"]["verdict"], "noisy");
  EXPECT_NEAR(run1["noise"]["repeatSpreadPercent"].get<double>(), 40, 1e-9);
  EXPECT_EQ(st["report"]["runs"][0]["belowTarget"], false);
  EXPECT_EQ(st["report"]["runs"][0]["noise"]["verdict"], "quiet");
  std::map<std::string, json> events;
  for (const auto* e : of(d, Action::Verb::Event)) events[e->body["reason"]] = e->body;
  ASSERT_TRUE(events.count("BelowTarget") && events.count("Noisy"));
  EXPECT_EQ(events["BelowTarget"]["type"], "Warning");
  EXPECT_EQ(events["BelowTarget"]["message"], "1 of 2 runs below the efficiency target 80%: 4 CPUs -- 1M/4G 40.0%");
  EXPECT_EQ(events["Noisy"]["type"], "Warning");
  const std::string noisy = events["Noisy"]["message"];
  EXPECT_EQ(noisy.rfind(
                "1 of 2 runs noisy (repeats' p50 spread above 10%): 4 CPUs -- 1M/4G (repeats differ by 40.0%; try ", 0),
            0u)
      << noisy;
  // Decided once: the finished job's next reconcile emits nothing.
  EXPECT_TRUE(of(reconcile(o), Action::Verb::Event).empty());
}

TEST(Reconciler, TargetAndThresholdAreTheSpecs) {
  Observed o{job_object({{"benchmark", {{"repeats", 2}, {"efficiencyTarget", 0.3}, {"noiseThresholdPercent", 50}}}}),
             {},
             {},
             {},
             false,
             false,
             false,
             t0()};
  const Decision d = finish_two_runs(o, {{0.1, 0.1, 0.1}, {0.1, 0.1, 0.1}}, {{0.2, 0.2, 0.2}, {0.3, 0.3, 0.3}});
  EXPECT_EQ(o.job["status"]["noisyRuns"], 0);
  EXPECT_EQ(o.job["status"]["report"]["runs"][1]["belowTarget"], false);
  for (const auto* e : of(d, Action::Verb::Event)) {
    EXPECT_NE(e->body["reason"], "BelowTarget");
    EXPECT_NE(e->body["reason"], "Noisy");
  }
}

TEST(Reconciler, FailedPodRestartsTheWholeRunThenFailsAfterBackoff) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  set_phase(o, trainer_pod_name("bj", 0, 0, 0), "Failed", 1);
  Decision d = reconcile(o);
  EXPECT_EQ(deleted_pods(d).size(), 2u) << "the whole run is restarted";
  const auto collection = of(d, Action::Verb::DeleteCollection, "pods");
  ASSERT_EQ(collection.size(), 1u) << "one request for the run's pods";
  EXPECT_EQ(collection[0]->label_selector,
            "trainbench.dev/job=bj,app.kubernetes.io/managed-by=trainbench-operator,trainbench.dev/run=0");
  apply(o, d);
  EXPECT_TRUE(o.pods.empty()) << "the selector matches every pod of the run";
  EXPECT_EQ(o.job["status"]["runs"][0]["attempt"], 1);
  EXPECT_EQ(o.job["status"]["phase"], "Running");
  d = reconcile(o);  // attempt 1's pods
  apply(o, d);
  ASSERT_EQ(of(d, Action::Verb::Create, "pods").size(), 2u);
  EXPECT_EQ(of(d, Action::Verb::Create, "pods")[0]->body["metadata"]["labels"]["trainbench.dev/attempt"], "1");
  all_running(o);
  apply(o, reconcile(o));
  set_phase(o, trainer_pod_name("bj", 0, 1, 0), "Failed", 1);
  d = reconcile(o);
  apply(o, d);
  const json st = o.job["status"];
  EXPECT_EQ(st["phase"], "Failed");
  const std::string msg = st["conditions"].back()["message"];
  EXPECT_NE(msg.find("exited with code 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("trainbench-worker rank 1: boom"), std::string::npos) << msg;
  EXPECT_TRUE(o.pods.empty()) << "the running master must not outlive a failed job";
  // The report has the failed run as a row, as `trainbench run` reports one: its error, no timings.
  ASSERT_TRUE(st.contains("report")) << st.dump();
  ASSERT_EQ(st["report"]["runs"].size(), 1u) << st["report"].dump();
  EXPECT_EQ(st["report"]["runs"][0]["phase"], "Failed");
  EXPECT_EQ(st["report"]["runs"][0]["error"], st["runs"][0]["message"]);
  EXPECT_FALSE(st["report"]["runs"][0].contains("speedup"));
}

/// The master of run 0's attempt `attempt` ends as it does on seeing its run hang: exit code 3,
/// the hang message as its termination message.
void master_saw_hang(Observed& o, int attempt, const std::string& message) {
  for (auto& p : o.pods) {
    if (p["metadata"]["name"] != master_pod_name("bj", 0, attempt)) continue;
    p["status"]["phase"] = "Failed";
    p["status"]["containerStatuses"] =
        json::array({{{"name", "master"},
                      {"state", {{"terminated", {{"exitCode", 3}, {"reason", "Error"}, {"message", message}}}}}}});
  }
}

std::vector<json> events_with_reason(const Decision& d, const std::string& reason) {
  std::vector<json> out;
  for (const auto* a : of(d, Action::Verb::Event, "events")) {
    if (a->body["reason"] == reason) out.push_back(a->body);
  }
  return out;
}

TEST(Reconciler, HangRestartsTheRunWithReasonHangThenFailsWithIt) {
  const std::string hang = "hang: rank 1 (pod bj-r0-a0-trainer-0 on node n1, local 1) in backward of step 41 for 125 s";
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  master_saw_hang(o, 0, "trainbench-worker master: " + hang + "\n");
  Decision d = reconcile(o);
  const auto hang_events = events_with_reason(d, "Hang");
  ASSERT_EQ(hang_events.size(), 1u);
  EXPECT_EQ(hang_events[0]["message"], "run 0 attempt 0: " + hang);
  EXPECT_EQ(hang_events[0]["type"], "Warning");
  apply(o, d);
  EXPECT_EQ(o.job["status"]["runs"][0]["attempt"], 1) << "restarted under backoffLimit";
  EXPECT_EQ(o.job["status"]["runs"][0]["message"], hang);
  auto running = [&] {
    for (const auto& c : o.job["status"]["conditions"]) {
      if (c["type"] == "Running") return c;
    }
    return json();
  };
  EXPECT_EQ(running()["reason"], "Hang");
  EXPECT_EQ(running()["status"], "True");
  apply(o, reconcile(o));  // attempt 1's pods; the condition keeps saying why the run restarted
  EXPECT_EQ(running()["reason"], "Hang");
  all_running(o);
  apply(o, reconcile(o));
  master_saw_hang(o, 1, hang);
  d = reconcile(o);
  EXPECT_EQ(events_with_reason(d, "Hang").size(), 1u);
  apply(o, d);
  EXPECT_EQ(o.job["status"]["phase"], "Failed");
  const json& failed = o.job["status"]["conditions"].back();
  EXPECT_EQ(failed["type"], "Failed");
  EXPECT_EQ(failed["reason"], "Hang");
  EXPECT_NE(failed["message"].get<std::string>().find(hang), std::string::npos) << failed.dump();
  EXPECT_TRUE(o.pods.empty());
}

TEST(Reconciler, MasterExitCode3WithoutAHangMessageIsAPlainFailure) {
  Observed o{job_object({{"runPolicy", {{"backoffLimit", 0}}}}), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  master_saw_hang(o, 0, "something else");
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["conditions"].back()["reason"], "BackoffLimitExceeded");
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

TEST(Reconciler, OnlyTheSpecIsParsedNotTheStatus) {
  // A status beyond the spec's document bound (1 MiB; a report can be big) is not the spec's: the
  // job is not Invalid for it, and each reconcile parses the spec alone.
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  o.job["status"]["runs"][0]["message"] = std::string(1100000, 'x');
  const Decision d = reconcile(o);
  EXPECT_TRUE(of(d, Action::Verb::PatchStatus).empty() || status_of(d).value("phase", "") != "Invalid")
      << status_of(d).dump().substr(0, 300);
  EXPECT_NE(o.job["status"]["phase"], "Invalid");
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

TEST(Reconciler, ActiveDeadlineFailsTheJob) {
  Observed o{job_object({{"runPolicy", {{"activeDeadlineSeconds", 100}}}}), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  o.now = t0() + std::chrono::seconds(101);
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["phase"], "Failed");
  EXPECT_EQ(o.job["status"]["conditions"].back()["reason"], "DeadlineExceeded");
  EXPECT_TRUE(o.pods.empty());
}

TEST(Reconciler, RestartedOperatorCreatesNoDuplicates) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  Decision d = reconcile(o);
  // The pods were created but the status patch was lost (the operator died in between).
  for (const auto& a : d.actions) {
    if (a.verb == Action::Verb::Create && a.resource == "pods") {
      o.pods.push_back(a.body);
      break;  // only the first pod made it
    }
  }
  o.services.push_back(json{{"metadata", {{"name", "bj-r0"}}}});
  d = reconcile(o);
  const auto creates = of(d, Action::Verb::Create, "pods");
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_NE(creates[0]->name, o.pods[0]["metadata"]["name"]);
  EXPECT_TRUE(of(d, Action::Verb::Create, "services").empty());
}

std::vector<std::string> event_names(const Decision& d) {
  std::vector<std::string> out;
  for (const auto* a : of(d, Action::Verb::Event)) out.push_back(a->body["metadata"]["name"]);
  return out;
}

/// A leader killed after recording a transition's Event but before the status write: the next
/// leader decides the same transition again and must name its Event the same (the create is
/// then AlreadyExists), while different transitions, attempts and jobs get different names.
TEST(Reconciler, TransitionEventsHaveOneNamePerTransition) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  const Decision first = reconcile(o);
  o.now = t0() + std::chrono::seconds(7);  // another leader, later
  const Decision again = reconcile(o);
  ASSERT_EQ(event_names(first).size(), 1u);
  EXPECT_EQ(event_names(first), event_names(again));
  EXPECT_EQ(event_names(first)[0], "bj.runstarted.r0.a0.uid-1");
  EXPECT_EQ(of(first, Action::Verb::Event)[0]->body["count"], 1);

  apply(o, first);
  all_running(o);
  apply(o, reconcile(o));
  set_phase(o, trainer_pod_name("bj", 0, 0, 0), "Failed", 1);
  Decision d = reconcile(o);
  EXPECT_EQ(event_names(d), std::vector<std::string>{"bj.runrestarted.r0.a0.uid-1"});
  apply(o, d);
  d = reconcile(o);
  EXPECT_EQ(event_names(d), std::vector<std::string>{"bj.runstarted.r0.a1.uid-1"}) << "a new attempt, a new Event";

  Observed recreated{job_object(), {}, {}, {}, false, false, false, t0()};
  recreated.job["metadata"]["uid"] = "0123456789abcdef";
  EXPECT_EQ(event_names(reconcile(recreated)), std::vector<std::string>{"bj.runstarted.r0.a0.01234567"});
}

std::vector<const Action*> events_of(const Decision& d, const std::string& reason) {
  std::vector<const Action*> out;
  for (const auto* a : of(d, Action::Verb::Event)) {
    if (a->body["reason"] == reason) out.push_back(a);
  }
  return out;
}

// A run whose ranks' compute differs beyond spec.benchmark.stragglerThreshold ends with a
// Warning Event naming the slow rank (once), and its copy in status names it too.
TEST(Reconciler, ARunWithStragglersEndsWithAWarningNamingThem) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 0, 0, 1, {{0.1, 0.2, 0.3}}, {0.05});
  Decision d = reconcile(o);
  EXPECT_TRUE(events_of(d, "Stragglers").empty()) << "one rank: no straggler";
  apply(o, d);
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 1, 0, 4, {{0.1, 0.2, 0.3}}, {0.02, 0.021, 0.06, 0.02});
  d = reconcile(o);
  const auto warnings = events_of(d, "Stragglers");
  ASSERT_EQ(warnings.size(), 1u) << d.actions.size();
  EXPECT_EQ(warnings[0]->body["type"], "Warning");
  EXPECT_EQ(warnings[0]->body["metadata"]["name"], "bj.stragglers.r1.uid-1");
  EXPECT_EQ(warnings[0]->body["message"],
            "run 1 (4 CPUs -- 2M/2G): stragglers (score < 0.70): rank 2 (node 0, local 2) 0.33: compute 0.060s/step "
            "vs fastest "
            "0.020s (rank 0)");
  apply(o, d);
  const json& summary = o.job["status"]["runs"][1]["summary"];
  EXPECT_EQ(summary["stragglers"]["ranks"][0]["rank"], 2);
  EXPECT_EQ(o.job["status"]["report"]["runs"][1]["stragglers"]["count"], 1);
  EXPECT_TRUE(events_of(reconcile(o), "Stragglers").empty()) << "the run's end is recorded once";
}

TEST(Reconciler, ABalancedRunEndsWithoutAStragglersEvent) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 0, 0, 1, {{0.1, 0.2, 0.3}}, {0.05});
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 1, 0, 4, {{0.1, 0.2, 0.3}}, {0.02, 0.021, 0.022, 0.02});
  const Decision d = reconcile(o);
  EXPECT_EQ(events_of(d, "RunSucceeded").size(), 1u);
  EXPECT_TRUE(events_of(d, "Stragglers").empty());
  apply(o, d);
  EXPECT_EQ(o.job["status"]["runs"][1]["summary"]["stragglers"]["count"], 0);
}

/// The chaos soak's one missing Event (issue 12, soak-015: no RunStarted for run 1 attempt 1): a
/// leader created an attempt's pods and died before its RunStarted Event and status write; a pod
/// of the attempt was killed before the next leader's first reconcile, which restarted the run
/// at once. The attempt did run: its RunStarted Event comes first, under its own name (a no-op
/// AlreadyExists had the dead leader recorded it), then the RunRestarted.
TEST(Reconciler, AnAttemptThatFailedBeforeItsStartWasRecordedStillGetsItsStartEvent) {
  for (const int backoff_limit : {1, 0}) {  // restarted, or failed for good
    Observed o{job_object({{"runPolicy", {{"backoffLimit", backoff_limit}}}}), {}, {}, {}, false, false, false, t0()};
    const Decision first = reconcile(o);
    for (const auto* a : of(first, Action::Verb::Create, "pods")) o.pods.push_back(a->body);  // no Event, no status
    all_running(o);
    set_phase(o, trainer_pod_name("bj", 0, 0, 0), "Failed", 137);
    o.now = t0() + std::chrono::seconds(4);  // the next leader
    const Decision d = reconcile(o);
    const std::string end = backoff_limit > 0 ? "bj.runrestarted.r0.a0.uid-1" : "bj.runfailed.r0.a0.uid-1";
    const std::vector<std::string> names = event_names(d);
    ASSERT_GE(names.size(), 2u) << "backoffLimit " << backoff_limit;
    EXPECT_EQ(names[0], "bj.runstarted.r0.a0.uid-1") << "backoffLimit " << backoff_limit;
    EXPECT_EQ(names[1], end);
    EXPECT_EQ(of(d, Action::Verb::Event)[0]->body["message"], "run 0 (1 CPUs -- no ddp) attempt 0: created 2 pods");
    EXPECT_EQ(status_of(d)["runs"][0]["startTime"], "2026-11-22T10:00:04Z");
  }
}

/// n2 not Ready since t0 + 10 s, lost after 60 s.
NodeHealth n2_unknown() {
  NodeHealth h;
  h.unready["n2"] = {"Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.",
                     t0() + std::chrono::seconds(10)};
  h.lost_after = std::chrono::seconds(60);
  return h;
}

/// Run 0 running with its master on n1 and its trainer on n2.
Observed running_with_lost_node(int backoff_limit) {
  Observed o{job_object({{"runPolicy", {{"backoffLimit", backoff_limit}}}}), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  for (auto& p : o.pods) {
    p["spec"]["nodeName"] = p["metadata"]["labels"]["trainbench.dev/role"] == "master" ? "n1" : "n2";
  }
  return o;
}

std::vector<const Action*> forced_deletes(const Decision& d) { return of(d, Action::Verb::ForceDelete, "pods"); }

TEST(Reconciler, LostNodeRestartsTheRunNamingTheNodeAndForceDeletesItsPods) {
  Observed o = running_with_lost_node(1);
  o.now = t0() + std::chrono::seconds(40);  // not Ready for 30 s: not lost yet
  Decision d = reconcile(o, n2_unknown());
  EXPECT_TRUE(forced_deletes(d).empty());
  EXPECT_TRUE(of(d, Action::Verb::DeleteCollection).empty());
  ASSERT_TRUE(d.requeue_after.has_value());
  EXPECT_LE(d.requeue_after->count(), 30200) << "reconciled again when the node would be lost";

  o.now = t0() + std::chrono::seconds(71);
  d = reconcile(o, n2_unknown());
  const auto forced = forced_deletes(d);
  ASSERT_EQ(forced.size(), 1u);
  EXPECT_EQ(forced[0]->name, trainer_pod_name("bj", 0, 0, 0));
  EXPECT_EQ(d.actions.front().verb, Action::Verb::ForceDelete) << "forced before the run's collection delete";
  apply(o, d);
  const json& rs = o.job["status"]["runs"][0];
  EXPECT_EQ(rs["attempt"], 1);
  const std::string msg = rs["message"];
  EXPECT_NE(msg.find("node n2 lost: Ready=Unknown for 61 s (NodeStatusUnknown: Kubelet stopped posting node status."),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("pods on it: " + trainer_pod_name("bj", 0, 0, 0)), std::string::npos) << msg;
  ASSERT_EQ(of(d, Action::Verb::Event).size(), 1u);
  EXPECT_EQ(of(d, Action::Verb::Event)[0]->body["reason"], "RunRestarted");
  EXPECT_EQ(o.job["status"]["phase"], "Running");
}

TEST(Reconciler, LostNodeWithBackoffSpentFailsTheJobWithReasonNodeLost) {
  Observed o = running_with_lost_node(0);
  o.now = t0() + std::chrono::seconds(71);
  apply(o, reconcile(o, n2_unknown()));
  EXPECT_EQ(o.job["status"]["phase"], "Failed");
  const json& failed = o.job["status"]["conditions"].back();
  EXPECT_EQ(failed["type"], "Failed");
  EXPECT_EQ(failed["reason"], "NodeLost");
  EXPECT_NE(failed["message"].get<std::string>().find("node n2 lost"), std::string::npos);
  EXPECT_TRUE(o.pods.empty());
}

TEST(Reconciler, PodStuckTerminatingOnALostNodeIsForceDeletedAfterTheJobEnds) {
  Observed o = running_with_lost_node(1);
  o.job["status"]["phase"] = "Succeeded";
  for (auto& p : o.pods) p["metadata"]["deletionTimestamp"] = "2026-11-22T10:00:05Z";
  o.now = t0() + std::chrono::seconds(71);
  const Decision d = reconcile(o, n2_unknown());
  const auto forced = forced_deletes(d);
  ASSERT_EQ(forced.size(), 1u) << "only the pod on the lost node; the other one's kubelet confirms";
  EXPECT_EQ(forced[0]->name, trainer_pod_name("bj", 0, 0, 0));
}

TEST(Reconciler, LostNodesAreIgnoredWhenTheBoundIsZero) {
  Observed o = running_with_lost_node(1);
  NodeHealth off = n2_unknown();
  off.lost_after = std::chrono::seconds(0);
  o.now = t0() + std::chrono::seconds(1000);
  const Decision d = reconcile(o, off);
  EXPECT_TRUE(forced_deletes(d).empty());
  EXPECT_TRUE(of(d, Action::Verb::Delete).empty());
  EXPECT_TRUE(of(d, Action::Verb::Event).empty());
}

TEST(Reconciler, ResultOfAnOlderAttemptIsIgnored) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  o.job["status"]["runs"][0]["attempt"] = 1;
  deliver_result(o, 0, 0, 1);
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["runsDone"], 0);
}

TEST(Reconciler, FinishedJobKeepsNothingRunning) {
  Observed o{job_object({{"runPolicy", {{"cleanPodPolicy", "None"}}}}), {}, {}, {}, false, false, false, t0()};
  o.job["status"] = {{"phase", "Failed"}, {"observedGeneration", 1}};
  o.pods.push_back({{"metadata", {{"name", "bj-r0-a0-master"}, {"labels", {{"trainbench.dev/run", "0"}}}}}, {"status", {{"phase", "Running"}}}});
  o.pods.push_back({{"metadata", {{"name", "bj-r0-a0-trainer-0"}, {"labels", {{"trainbench.dev/run", "0"}}}}}, {"status", {{"phase", "Failed"}}}});
  const Decision d = reconcile(o);
  const auto dels = of(d, Action::Verb::Delete, "pods");
  ASSERT_EQ(dels.size(), 1u);
  EXPECT_EQ(dels[0]->name, "bj-r0-a0-master");
  EXPECT_TRUE(of(d, Action::Verb::PatchStatus).empty()) << "nothing changed";
}

TEST(Reconciler, TimesRoundTrip) {
  EXPECT_EQ(format_time(t0()), "2026-11-22T10:00:00Z");
  EXPECT_EQ(*parse_time("2026-11-22T11:00:00.123+01:00"), t0());
  EXPECT_FALSE(parse_time("yesterday").has_value());
}

// ---- status at scale (seed 004: 1, 2, 4, ... 1024 ranks) ----

/// Seed 004's sweep: one device without DDP, then 1, 2, 4, 8 devices on one node and 2 .. 128
/// nodes of 8, repeats and steps as the evaluation plan (skip 20, measure 100, 5 repeats).
json seed004_job() {
  json sweep = json::array({{{"nodes", 1}, {"devicesPerNode", 1}, {"paradigm", "none"}}});
  for (int world = 1; world <= 1024; world *= 2) {
    sweep.push_back({{"nodes", std::max(1, world / 8)}, {"devicesPerNode", std::min(world, 8)}});
  }
  return job_object({{"sweep", sweep}, {"benchmark", {{"warmupSteps", 20}, {"measureSteps", 100}, {"repeats", 5}}}});
}

/// A run's result as its master writes it: every rank with full-precision timings (rank 7 of
/// each run is the slowest), summarised as the master does.
json synthetic_result(const RunConfig& cfg, int attempt) {
  RunResult r;
  r.world_size = cfg.world_size();
  r.environment.backend = "gloo";
  for (int k = 0; k < r.world_size; ++k) {
    RankResult rk{k, k / cfg.devices_per_node, k % cfg.devices_per_node, {}, 9'876'543'210 + k, 6.1 + 1e-3 * k, 6.9};
    for (int rep = 0; rep < 5; ++rep) {
      std::vector<double> steps;
      std::vector<double> compute, communication;
      for (int s = 0; s < 100; ++s) {
        const double noise = 1e-4 * std::sin(k * 131.0 + s + rep);
        steps.push_back(0.2 + noise + (k == 7 ? 0.05 : 0));
        compute.push_back(0.08 + noise + (k == 7 ? 0.05 : 0));  // rank 7 scores 0.08 / 0.13
        communication.push_back(steps.back() - compute.back());
      }
      rk.step_seconds.push_back(steps);
      rk.compute_seconds.push_back(compute);
      rk.communication_seconds.push_back(communication);
    }
    rk.optimizer_state_bytes = 102'228'128;
    rk.parameter_count = 25'557'032;
    r.ranks.push_back(rk);
  }
  return {{"attempt", attempt}, {"run", to_json(summarize_run(cfg, r))}, {"environment", to_json(r.environment)}};
}

TEST(Reconciler, StatusOfA1024RankSweepFitsEtcdWithRoomToSpare) {
  Observed o{seed004_job(), {}, {}, {}, false, false, false, t0()};
  const std::vector<RunConfig> runs = plan_runs(parse_benchmark_job(o.job.dump()), 1, ServerPlacement::OwnPods);
  ASSERT_EQ(runs.size(), 12u);
  std::size_t largest_result = 0;
  for (const auto& run : runs) {
    apply(o, reconcile(o));
    all_running(o);
    apply(o, reconcile(o));
    for (auto& cm : o.configmaps) {
      if (cm["metadata"]["name"] != result_configmap_name("bj", run.index)) continue;
      cm["data"]["result"] = synthetic_result(run, 0).dump();
      largest_result = std::max(largest_result, cm.dump().size());
    }
  }
  apply(o, reconcile(o));
  const json st = o.job["status"];
  ASSERT_EQ(st["phase"], "Succeeded") << st.dump(1).substr(0, 2000);
  const std::size_t status_bytes = st.dump().size();
  std::cout << "status of the 1..1024-rank sweep: " << status_bytes
            << " bytes; largest result ConfigMap: " << largest_result << " bytes\n";
  // etcd refuses objects over 1.5 MiB; a ConfigMap holds at most 1 MiB.
  EXPECT_LT(status_bytes, 512u * 1024) << "a third of etcd's limit";
  EXPECT_LT(largest_result, 1024u * 1024 / 2) << "half a ConfigMap's limit";
  for (const auto& run : runs) {
    const json& summary = st["runs"][static_cast<std::size_t>(run.index)]["summary"];
    const json& in_report = st["report"]["runs"][static_cast<std::size_t>(run.index)];
    for (const json* r : {&summary, &in_report}) {
      if (run.world_size() <= kMaxRanksInStatus) {
        EXPECT_EQ((*r)["ranks"].size(), static_cast<std::size_t>(run.world_size()));
        EXPECT_FALSE(r->contains("rankSummary"));
        continue;
      }
      EXPECT_TRUE((*r)["ranks"].empty());
      const json& rs = (*r)["rankSummary"];
      EXPECT_EQ(rs["count"], run.world_size());
      EXPECT_EQ(rs["slowest"].size(), static_cast<std::size_t>(kSlowestRanksKept));
      EXPECT_EQ(rs["slowest"][0]["rank"], 7) << "the slow rank comes first";
      EXPECT_GT(rs["secPerIterP50"]["max"].get<double>(), rs["secPerIterP50"]["median"].get<double>() + 0.04);
      EXPECT_EQ(rs["detail"]["configMap"], result_configmap_name("bj", run.index));
    }
    for (const json* r : {&summary, &in_report}) {
      if (run.world_size() < 8) continue;  // rank 7 is the straggler
      EXPECT_EQ((*r)["stragglers"]["count"], 1) << run.index;
      EXPECT_EQ((*r)["stragglers"]["ranks"][0]["rank"], 7) << run.index;
    }
  }
  // The report in status still reads back and prints, naming the slow rank of the largest run.
  const std::string text = format_report(report_from_json(st["report"]));
  EXPECT_NE(text.find("1024 ranks, p50"), std::string::npos) << text.substr(text.size() - 3000);
  EXPECT_NE(text.find("ConfigMap " + result_configmap_name("bj", 11)), std::string::npos);
  EXPECT_NE(text.find("stragglers (score < 0.70): rank 7 (node 0, local 7) 0.62"), std::string::npos);
  EXPECT_TRUE(o.pods.empty());
}

/// The master pod ended at `at` (its container's finishedAt), as the kubelet reports it.
void master_ended(Observed& o, const std::string& pod, Clock::time_point at) {
  set_phase(o, pod, "Succeeded");
  for (auto& p : o.pods) {
    if (p["metadata"]["name"] == pod)
      p["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = format_time(at);
  }
}

/// Run 0's pods running, then its master ended without a result; `later` has passed since.
Observed master_ended_without_result(std::chrono::seconds later) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  master_ended(o, "bj-r0-a0-master", o.now);
  o.now += later;
  return o;
}

// The pods' watch can bring the master's end before the ConfigMaps' watch brings its result (a
// cut stream being resumed): the run waits for the result, then fails only past the grace.
TEST(Reconciler, MastersResultMayArriveAfterItsEnd) {
  Observed o = master_ended_without_result(std::chrono::seconds(5));
  Decision d = reconcile(o);
  apply(o, d);
  EXPECT_EQ(o.job["status"]["runs"][0]["attempt"], 0) << "not restarted while the result may be on its way";
  ASSERT_TRUE(d.requeue_after.has_value());
  EXPECT_LE(*d.requeue_after, std::chrono::milliseconds(25'100));
  deliver_result(o, 0, 0, 1);
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["runs"][0]["phase"], "Succeeded");

  Observed late = master_ended_without_result(std::chrono::seconds(31));
  apply(late, reconcile(late));
  EXPECT_EQ(late.job["status"]["runs"][0]["attempt"], 1);
  EXPECT_NE(late.job["status"]["runs"][0]["message"].get<std::string>().find("ended without delivering a result"),
            std::string::npos);
}

// ---- the status as a typed value (core/api/job_status.hpp) ----

/// Reads the job's status as the next reconcile will, and checks it writes back the same JSON.
BenchmarkJobStatus typed_status(const Observed& o) {
  const BenchmarkJobStatus st = job_status_from_json(o.job["status"]);
  EXPECT_EQ(to_json(st), o.job["status"]) << "the status reads back typed and serialises unchanged";
  return st;
}

TEST(Reconciler, StatusReadsBackTypedAndUnchanged) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  EXPECT_EQ(typed_status(o).runs.at(0).phase, RunPhase::kStarting);
  all_running(o);
  apply(o, reconcile(o));
  set_phase(o, trainer_pod_name("bj", 0, 0, 0), "Failed", 1);
  apply(o, reconcile(o));
  BenchmarkJobStatus st = typed_status(o);
  EXPECT_EQ(st.runs.at(0).phase, RunPhase::kRestarting);
  EXPECT_EQ(st.runs.at(0).pods_created, false);
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  EXPECT_TRUE(of(reconcile(o), Action::Verb::PatchStatus).empty()) << "nothing changed: no status write";
  deliver_result(o, 0, 1, 1);
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 1, 0, 4);
  apply(o, reconcile(o));
  st = typed_status(o);
  EXPECT_EQ(st.phase, JobPhase::kSucceeded);
  EXPECT_EQ(st.runs_done, 2);
  ASSERT_NE(st.condition(ConditionType::kSucceeded), nullptr);
  EXPECT_EQ(st.condition(ConditionType::kSucceeded)->status, ConditionStatus::kTrue);
  ASSERT_TRUE(st.report.has_value());
  EXPECT_EQ(st.report->runs.size(), 2u);
  EXPECT_EQ(st.runs.at(0).restarts, 1);
  ASSERT_TRUE(st.runs.at(1).environment.has_value());
  EXPECT_EQ(st.runs.at(1).environment->backend, "gloo");
}

// A status only another program could have written (the CRD's schema refuses it) is not acted
// on: the reconcile fails naming the field and is retried, and the status is left as it is.
TEST(Reconciler, UnreadableStatusFailsTheReconcileNamingTheField) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  o.job["status"]["runs"][1]["phase"] = "Done";
  try {
    reconcile(o);
    ADD_FAILURE() << "reconciled a status it cannot read";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "status.runs[1].phase: unknown run phase \"Done\"");
  }
  o.job["metadata"]["deletionTimestamp"] = "2026-11-22T10:00:05Z";
  EXPECT_TRUE(reconcile(o).actions.empty()) << "a job being deleted is left to garbage collection";
}

// The master's result is the run's; an environment this operator cannot read is left out of
// status (the report takes another run's), and the run still succeeds.
TEST(Reconciler, ResultWithAnUnreadableEnvironmentStillSucceeds) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 0, 0, 1);
  for (auto& cm : o.configmaps) {
    if (cm["metadata"]["name"] != result_configmap_name("bj", 0)) continue;
    json result = json::parse(cm["data"]["result"].get<std::string>());
    result["environment"] = "gloo on cpu";
    cm["data"]["result"] = result.dump();
  }
  apply(o, reconcile(o));
  const BenchmarkJobStatus st = typed_status(o);
  EXPECT_EQ(st.runs.at(0).phase, RunPhase::kSucceeded);
  EXPECT_FALSE(st.runs.at(0).environment.has_value());
  EXPECT_EQ(st.runs_done, 1);
}

// ---- progress (docs/operator.md, "Progress") ----

/// A job of two runs (1 warm-up + 4 measured steps each) with progress written at most every 10 s.
Observed progress_job() {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  o.progress_interval = std::chrono::seconds(10);
  return o;
}

json detail(const Observed& o) { return o.job["status"].value("progressDetail", json()); }

TEST(Reconciler, ProgressShowsTheStartingRunBeforeItsMasterServesAnything) {
  Observed o = progress_job();
  const Decision d = reconcile(o);
  apply(o, d);
  const json p = detail(o);
  ASSERT_TRUE(p.is_object()) << o.job["status"];
  EXPECT_EQ(p["percent"], 0);
  EXPECT_FALSE(p.contains("estimatedRemainingSeconds")) << "no rate and no ended run: no estimate";
  EXPECT_EQ(p["currentRun"]["index"], 0);
  EXPECT_EQ(p["currentRun"]["stage"], "Starting");
  EXPECT_EQ(p["currentRun"]["label"], o.job["status"]["runs"][0]["label"]);
  EXPECT_EQ(o.job["status"]["percentComplete"], "0%");
  ASSERT_TRUE(d.requeue_after);
  EXPECT_LE(*d.requeue_after, std::chrono::milliseconds(10100)) << "requeued to poll again";
  // Due again, but nothing changed (the pods still wait): no write.
  o.now = t0() + std::chrono::seconds(30);
  EXPECT_TRUE(of(reconcile(o), Action::Verb::PatchStatus).empty());
}

TEST(Reconciler, ProgressFromTheMastersSampleIsWrittenAtMostOncePerInterval) {
  Observed o = progress_job();
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  // 3 of 5 steps done at 0.5 s a step; the attempt's pods were created at t0.
  o.now = t0() + std::chrono::seconds(12);
  o.progress = RunProgressSample{0, 0, 3, 5, 0.5, 0};
  Decision d = reconcile(o);
  apply(o, d);
  json p = detail(o);
  EXPECT_EQ(p["percent"], 30);  // (0 + 3/5) / 2
  EXPECT_EQ(p["currentRun"]["stage"], "Measure");
  EXPECT_EQ(p["currentRun"]["repeat"], 1);
  EXPECT_EQ(p["currentRun"]["step"], 2);
  EXPECT_EQ(p["currentRun"]["steps"], 4);
  EXPECT_EQ(p["currentRun"]["secondsPerStep"], 0.5);
  EXPECT_EQ(p["currentRun"]["estimatedRemainingSeconds"], 1);  // 2 steps at 0.5 s
  EXPECT_EQ(p["estimatedRemainingSeconds"], 1 + 13);           // the next run as long as this one: 12 + 1 s
  EXPECT_EQ(p["lastUpdateTime"], "2026-11-22T10:00:12Z");
  EXPECT_EQ(o.job["status"]["percentComplete"], "30%");

  // A step later, 4 s after the last write: nothing else changed, so no write, and a requeue
  // for when it is due.
  o.now = t0() + std::chrono::seconds(16);
  o.progress = RunProgressSample{0, 0, 4, 5, 0.5, 0};
  d = reconcile(o);
  EXPECT_TRUE(of(d, Action::Verb::PatchStatus).empty()) << status_of(d);
  ASSERT_TRUE(d.requeue_after);
  EXPECT_LE(*d.requeue_after, std::chrono::milliseconds(6100));
  // Due: written.
  o.now = t0() + std::chrono::seconds(22);
  d = reconcile(o);
  apply(o, d);
  EXPECT_EQ(detail(o)["percent"], 40);
  EXPECT_EQ(detail(o)["lastUpdateTime"], "2026-11-22T10:00:22Z");
}

TEST(Reconciler, ProgressRidesAlongAWriteThatHappensAnyway) {
  Observed o = progress_job();
  apply(o, reconcile(o));
  o.now = t0() + std::chrono::seconds(1);  // within the interval of the first write
  o.progress = RunProgressSample{0, 0, 2, 5, 0.25, 0};
  all_running(o);  // the run turns Running: status is written, with the new progress
  const Decision d = reconcile(o);
  apply(o, d);
  EXPECT_EQ(o.job["status"]["runs"][0]["phase"], "Running");
  EXPECT_EQ(detail(o)["percent"], 20);
  EXPECT_EQ(detail(o)["currentRun"]["stage"], "Measure");
}

TEST(Reconciler, ProgressOfAnotherAttemptOrRunIsIgnored) {
  Observed o = progress_job();
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  o.now = t0() + std::chrono::seconds(20);
  o.progress = RunProgressSample{0, 1, 3, 5, 0.5, 0};  // attempt 1: not this one's
  apply(o, reconcile(o));
  EXPECT_EQ(detail(o)["currentRun"]["stage"], "Starting");
  EXPECT_EQ(detail(o)["percent"], 0);
  o.now = t0() + std::chrono::seconds(40);
  o.progress = RunProgressSample{1, 0, 3, 5, 0.5, 0};  // run 1's, while run 0 runs
  apply(o, reconcile(o));
  EXPECT_EQ(detail(o)["percent"], 0);
}

TEST(Reconciler, ProgressNeverGoesBackAcrossRunsAndIsHundredWhenTheJobSucceeds) {
  Observed o = progress_job();
  int last = 0;
  auto step = [&](int seconds, std::optional<RunProgressSample> s) {
    o.now = t0() + std::chrono::seconds(seconds);
    o.progress = s;
    apply(o, reconcile(o));
    const int percent = detail(o)["percent"].get<int>();
    EXPECT_GE(percent, last) << "at " << seconds << " s: " << detail(o);
    last = percent;
  };
  step(0, std::nullopt);
  all_running(o);
  step(1, RunProgressSample{0, 0, 1, 5, 1.0, 0});
  step(12, RunProgressSample{0, 0, 5, 5, 1.0, 0});
  deliver_result(o, 0, 0, 1);
  step(13, RunProgressSample{0, 0, 5, 5, 1.0, 0});  // run 0's last sample after its result
  EXPECT_EQ(detail(o)["currentRun"]["index"], 1);
  EXPECT_EQ(last, 50);
  ASSERT_TRUE(detail(o).contains("estimatedRemainingSeconds")) << "an ended run gives an estimate";
  EXPECT_EQ(detail(o)["estimatedRemainingSeconds"], 13) << "run 1 as long as run 0 (t0 to 13 s)";
  all_running(o);
  step(30, RunProgressSample{1, 0, 4, 5, 1.0, 0});
  deliver_result(o, 1, 0, 4);
  step(31, std::nullopt);
  EXPECT_EQ(o.job["status"]["phase"], "Succeeded");
  EXPECT_EQ(detail(o)["percent"], 100);
  EXPECT_EQ(detail(o)["estimatedRemainingSeconds"], 0);
  EXPECT_FALSE(detail(o).contains("currentRun"));
  EXPECT_EQ(o.job["status"]["percentComplete"], "100%");
}

TEST(Reconciler, ProgressOfAFailedJobKeepsItsPercentWithoutAnEstimate) {
  Observed o = progress_job();
  o.job["spec"]["runPolicy"]["backoffLimit"] = 0;
  apply(o, reconcile(o));
  all_running(o);
  o.now = t0() + std::chrono::seconds(20);
  o.progress = RunProgressSample{0, 0, 3, 5, 0.5, 0};
  apply(o, reconcile(o));
  set_phase(o, "bj-r0-a0-trainer-0", "Failed", 1);
  o.now = t0() + std::chrono::seconds(21);
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["phase"], "Failed");
  EXPECT_EQ(detail(o)["percent"], 30);
  EXPECT_FALSE(detail(o).contains("estimatedRemainingSeconds"));
  EXPECT_FALSE(detail(o).contains("currentRun"));
}

TEST(Reconciler, NoProgressWhenTheIntervalIsZero) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  o.progress = RunProgressSample{0, 0, 3, 5, 0.5, 0};
  apply(o, reconcile(o));
  EXPECT_FALSE(o.job["status"].contains("progressDetail"));
  EXPECT_FALSE(o.job["status"].contains("percentComplete"));
}

// ---- spec.suspend (docs/operator.md, "Suspend and queueing") ----

/// Sets spec.suspend as a user or Kueue would (a spec change: a new generation).
void set_suspend(Observed& o, bool suspend) {
  o.job["spec"]["suspend"] = suspend;
  o.job["metadata"]["generation"] = o.job["metadata"]["generation"].get<int>() + 1;
}

const json* condition_of(const json& status, const std::string& type) {
  for (const auto& c : status["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

std::vector<std::string> event_reasons(const Decision& d) {
  std::vector<std::string> out;
  for (const auto* e : of(d, Action::Verb::Event)) out.push_back(e->body["reason"]);
  return out;
}

TEST(Reconciler, ARunThatEndedBeforeAnyReconcileRecordedItsStartGetsItsRunStarted) {
  // A leader created run 0's pods and died before its Event and status; the run ended (its result
  // delivered) before the next leader reconciled.
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  const Decision first = reconcile(o);
  const json job_before = o.job;
  apply(o, first);
  o.job = job_before;  // its objects landed, not its status
  all_running(o);
  deliver_result(o, 0, 0, 1);
  const Decision d = reconcile(o);
  const auto reasons = event_reasons(d);
  const auto started = std::find(reasons.begin(), reasons.end(), "RunStarted");
  const auto succeeded = std::find(reasons.begin(), reasons.end(), "RunSucceeded");
  ASSERT_NE(started, reasons.end()) << "the start is recorded";
  ASSERT_NE(succeeded, reasons.end());
  EXPECT_LT(started, succeeded) << "before the end";
  apply(o, d);
  EXPECT_TRUE(o.job["status"]["runs"][0].contains("startTime"));
}

TEST(Reconciler, AJobCreatedSuspendedCreatesNothingAndSaysSo) {
  Observed o{job_object({{"suspend", true}}), {}, {}, {}, false, false, false, t0()};
  Decision d = reconcile(o);
  for (const auto& a : d.actions) {
    EXPECT_NE(a.verb, Action::Verb::Create) << a.resource << " " << a.name;  // no pod, service, role
  }
  EXPECT_EQ(event_reasons(d), std::vector<std::string>{"Suspended"});
  apply(o, d);
  const json st = o.job["status"];
  EXPECT_EQ(st["phase"], "Suspended");
  ASSERT_NE(condition_of(st, "Suspended"), nullptr);
  EXPECT_EQ((*condition_of(st, "Suspended"))["status"], "True");
  EXPECT_EQ((*condition_of(st, "Suspended"))["reason"], "Suspended");
  EXPECT_EQ((*condition_of(st, "Running"))["status"], "False");
  EXPECT_EQ(st["progress"], "0/2");
  EXPECT_FALSE(st.contains("startTime")) << "nothing started";
  // Reconciled again (a resync): nothing to do, nothing to write, no second Event.
  o.now += std::chrono::minutes(5);
  EXPECT_TRUE(reconcile(o).actions.empty());
}

TEST(Reconciler, ResumingAJobCreatedSuspendedStartsItThen) {
  Observed o{job_object({{"suspend", true}, {"runPolicy", {{"activeDeadlineSeconds", 100}}}}),
             {},
             {},
             {},
             false,
             false,
             false,
             t0()};
  apply(o, reconcile(o));
  o.now = t0() + std::chrono::hours(2);  // queued for two hours (longer than every timeout)
  set_suspend(o, false);
  Decision d = reconcile(o);
  apply(o, d);
  EXPECT_EQ(of(d, Action::Verb::Create, "pods").size(), 2u);  // run 0: master + one trainer
  const auto reasons = event_reasons(d);
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "Resumed"), reasons.end());
  const json st = o.job["status"];
  EXPECT_EQ(st["phase"], "Running");
  EXPECT_EQ((*condition_of(st, "Suspended"))["status"], "False");
  EXPECT_EQ((*condition_of(st, "Suspended"))["reason"], "Resumed");
  EXPECT_EQ(st["startTime"], format_time(o.now)) << "activeDeadlineSeconds counts from the resume";
  // Neither activeDeadlineSeconds (100 s) nor schedulingTimeoutSeconds (60 s) counted the queueing.
  o.now += std::chrono::seconds(30);
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["phase"], "Running");
  EXPECT_EQ(o.job["status"]["runs"][0]["phase"], "Starting");
}

TEST(Reconciler, SuspendingARunningJobInterruptsItsRunWithoutARestartAndResumeRunsItAgain) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 0, 0, 1);
  apply(o, reconcile(o));  // run 0 done; run 1's 3 pods
  all_running(o);
  apply(o, reconcile(o));
  ASSERT_EQ(o.pods.size(), 3u);

  // Suspended mid-run (Kueue preempts it): run 1's pods go, the run is interrupted, not failed.
  o.now += std::chrono::seconds(10);
  set_suspend(o, true);
  Decision d = reconcile(o);
  EXPECT_TRUE(of(d, Action::Verb::Create, "pods").empty());
  EXPECT_EQ(deleted_pods(d).size(), 3u);
  const auto reasons = event_reasons(d);
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "RunInterrupted"), reasons.end());
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "Suspended"), reasons.end());
  EXPECT_EQ(std::find(reasons.begin(), reasons.end(), "RunRestarted"), reasons.end());
  apply(o, d);
  EXPECT_TRUE(o.pods.empty());
  json st = o.job["status"];
  EXPECT_EQ(st["phase"], "Suspended");
  EXPECT_EQ(st["runs"][0]["phase"], "Succeeded") << "a finished run keeps its result";
  const json run1 = st["runs"][1];
  EXPECT_EQ(run1["phase"], "Pending");
  EXPECT_EQ(run1["restarts"], 0) << "no backoff used";
  EXPECT_EQ(run1["interruptions"], 1);
  EXPECT_EQ(run1["attempt"], 1);
  EXPECT_EQ(run1["podsCreated"], false);
  EXPECT_NE(run1["message"].get<std::string>().find("interrupted by spec.suspend"), std::string::npos);
  // The interrupted attempt's master delivers late: ignored, the run starts again on resume.
  deliver_result(o, 1, 0, 4);
  o.now += std::chrono::minutes(10);
  EXPECT_TRUE(reconcile(o).actions.empty()) << "nothing runs, nothing changes while suspended";

  set_suspend(o, false);
  d = reconcile(o);
  apply(o, d);
  const auto created = of(d, Action::Verb::Create, "pods");
  ASSERT_EQ(created.size(), 3u);
  for (const auto* a : created) EXPECT_EQ(a->body["metadata"]["labels"]["trainbench.dev/attempt"], "1");
  EXPECT_EQ(o.job["status"]["runsDone"], 1);
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 1, 1, 4);
  apply(o, reconcile(o));
  st = o.job["status"];
  EXPECT_EQ(st["phase"], "Succeeded");
  EXPECT_EQ(st["report"]["runs"].size(), 2u);
  EXPECT_EQ(st["runs"][1]["restarts"], 0);
  EXPECT_EQ(st["runs"][1]["interruptions"], 1);
}

TEST(Reconciler, ASuspendThatFindsTheRunsResultCountsTheRun) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 0, 0, 1);  // arrives in the same reconcile as the suspend
  set_suspend(o, true);
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["runs"][0]["phase"], "Succeeded");
  EXPECT_FALSE(o.job["status"]["runs"][0].contains("interruptions"));
  EXPECT_EQ(o.job["status"]["phase"], "Suspended");
  EXPECT_TRUE(o.pods.empty());
}

TEST(Reconciler, SuspendingAFinishedJobChangesNothing) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  finish_two_runs(o, {{0.1, 0.2}}, {{0.1, 0.2}});
  ASSERT_EQ(o.job["status"]["phase"], "Succeeded");
  set_suspend(o, true);
  const Decision d = reconcile(o);
  EXPECT_TRUE(of(d, Action::Verb::Event).empty());
  const json st = status_of(d);
  EXPECT_TRUE(st.is_null() || st["phase"] == "Succeeded") << st;
}

// ---- a failed run's message ----

/// A failed pod whose container's termination message is `message`.
void fail_with(Observed& o, const std::string& pod, const std::string& container, const std::string& message) {
  for (auto& p : o.pods) {
    if (p["metadata"]["name"] != pod) continue;
    p["status"]["phase"] = "Failed";
    p["status"]["containerStatuses"] =
        json::array({{{"name", container},
                      {"state", {{"terminated", {{"exitCode", 1}, {"reason", "Error"}, {"message", message}}}}}}});
  }
}

TEST(Reconciler, AFailedRunsMessageLeadsWithTheWorkersLineWithoutLibraryNoise) {
  Observed o{job_object({{"runPolicy", {{"backoffLimit", 0}}}}), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 0, 0, 1);
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  // The master's log tail (FallbackToLogsOnError) is glog noise and a line of its own; trainer
  // 1's termination message is node-launch's, with rank 3's own line.
  fail_with(o, master_pod_name("bj", 1, 0), "master",
            "WARNING: Logging before InitGoogleLogging() is written to STDERR\n"
            "W20261124 16:32:01.185420 17553 socket.cpp:601] [c10d] The client socket has failed to connect.\n"
            "trainbench-worker master: serving the store of run 1 (4 ranks) on port 29500\n");
  fail_with(o, trainer_pod_name("bj", 1, 0, 1), "trainer",
            "rank 3 exited with code 1: trainbench-worker rank 3: CUDA out of memory. Tried to allocate 2.00 GiB\n");
  const Decision d = reconcile(o);
  apply(o, d);
  const json st = o.job["status"];
  ASSERT_EQ(st["phase"], "Failed");
  const std::string expected =
      "trainbench-worker rank 3: CUDA out of memory. Tried to allocate 2.00 GiB (pod bj-r1-a0-trainer-1 failed: "
      "container trainer exited with code 1 (Error): rank 3 exited with code 1)";
  EXPECT_EQ(st["runs"][1]["message"], expected);
  EXPECT_EQ((*condition_of(st, "Failed"))["message"], "run 1 failed after 0 restarts: " + expected);
  bool event = false;
  for (const auto* e : of(d, Action::Verb::Event)) {
    if (e->body["reason"] == "RunFailed") event = e->body["message"] == "run 1 failed: " + expected;
  }
  EXPECT_TRUE(event);
}

TEST(Reconciler, AFailureWithoutAWorkerLineKeepsTheMessageWithoutNoise) {
  Observed o{job_object({{"runPolicy", {{"backoffLimit", 0}}}}), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  fail_with(o, trainer_pod_name("bj", 0, 0, 0), "trainer",
            "WARNING: Logging before InitGoogleLogging() is written to STDERR\n"
            "[W socket.cpp:601] [c10d] The client socket has failed to connect.\n"
            "trainbench node-launch: rank 0 was killed by SIGKILL\n");
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["runs"][0]["message"],
            "pod bj-r0-a0-trainer-0 failed: container trainer exited with code 1 (Error): "
            "trainbench node-launch: rank 0 was killed by SIGKILL");
}

// ---- Kueue (operator/controller/kueue_workload.hpp) ----

/// The pod a decision creates under `name` (null when none).
json o_pod(const Decision& d, const std::string& name) {
  for (const auto* a : of(d, Action::Verb::Create, "pods")) {
    if (a->body["metadata"]["name"] == name) return a->body;
  }
  return json();
}

/// A job queued in LocalQueue `team` (label kueue.x-k8s.io/queue-name), with --kueue on.
Observed queued_job(json spec_extra = json::object()) {
  Observed o{job_object(std::move(spec_extra)), {}, {}, {}, false, false, false, t0()};
  o.job["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", "team"}};
  o.kueue = true;
  return o;
}

/// Kueue's side: sets a Workload condition (as its scheduler and preemption do).
void set_workload_condition(Observed& o, const std::string& type, bool status, const std::string& reason) {
  json& conditions = (*o.workload)["status"]["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  json c = {{"type", type}, {"status", status ? "True" : "False"}, {"reason", reason}, {"message", reason + " by Kueue"}};
  for (auto& old : conditions) {
    if (old["type"] == type) {
      old = c;
      return;
    }
  }
  conditions.push_back(c);
}

void admit(Observed& o) {
  (*o.workload)["status"]["admission"] = {{"clusterQueue", "cq"}};
  set_workload_condition(o, "QuotaReserved", true, "QuotaReserved");
  set_workload_condition(o, "Admitted", true, "Admitted");
  set_workload_condition(o, "Evicted", false, "QuotaReserved");
}

TEST(Kueue, AQueuedJobGetsAWorkloadForItsLargestRunAndWaitsSuspended) {
  Observed o = queued_job({{"template", {{"resources", {{"limits", {{"nvidia.com/gpu", 2}}}}}}}});
  Decision d = reconcile(o);
  const auto made = of(d, Action::Verb::Create, "workloads");
  ASSERT_EQ(made.size(), 1u);
  const json& wl = made[0]->body;
  EXPECT_EQ(wl["apiVersion"], "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(wl["metadata"]["name"], workload_name("bj", "uid-1"));
  EXPECT_EQ(wl["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(wl["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(wl["spec"]["queueName"], "team");
  ASSERT_EQ(wl["spec"]["podSets"].size(), 2u);
  EXPECT_EQ(wl["spec"]["podSets"][0]["name"], "master");
  EXPECT_EQ(wl["spec"]["podSets"][0]["count"], 1);
  EXPECT_EQ(wl["spec"]["podSets"][1]["name"], "trainer");
  EXPECT_EQ(wl["spec"]["podSets"][1]["count"], 2) << "the sweep's largest run: 2 nodes";
  EXPECT_EQ(wl["spec"]["podSets"][1]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], 2);
  EXPECT_FALSE(wl["spec"].contains("priorityClassRef"));
  // spec.suspend is written, as Kueue's integrations do, and nothing else happens this time.
  const auto patched = of(d, Action::Verb::Patch, "benchmarkjobs");
  ASSERT_EQ(patched.size(), 1u);
  EXPECT_EQ(patched[0]->body, json({{"spec", {{"suspend", true}}}}));
  EXPECT_TRUE(of(d, Action::Verb::Create, "pods").empty());
  EXPECT_TRUE(of(d, Action::Verb::PatchStatus).empty()) << "no status onto the version the spec write replaces";
  apply(o, d);
  d = reconcile(o);  // suspended, waiting: says why
  apply(o, d);
  EXPECT_TRUE(of(d, Action::Verb::Create, "pods").empty());
  const json* c = condition_of(o.job["status"], "Suspended");
  ASSERT_NE(c, nullptr);
  EXPECT_NE((*c)["message"].get<std::string>().find("waits for Kueue's admission in LocalQueue team"), std::string::npos)
      << (*c)["message"];
  EXPECT_EQ(o.job["status"]["phase"], "Suspended");
  EXPECT_TRUE(reconcile(o).actions.empty()) << "queued: nothing to do until Kueue decides";
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

TEST(Kueue, ACudaJobsWorkloadAsksForItsLargestRunsGpus) {
  Observed o = queued_job({{"device", "cuda"}});
  const Decision d = reconcile(o);
  const auto made = of(d, Action::Verb::Create, "workloads");
  ASSERT_EQ(made.size(), 1u);
  const json& trainers = made[0]->body["spec"]["podSets"][1];
  EXPECT_EQ(trainers["count"], 2);
  EXPECT_EQ(trainers["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], 2);
}

TEST(Kueue, AdmissionStartsTheJobAndTheEndFinishesItsWorkload) {
  Observed o = queued_job();
  apply(o, reconcile(o));
  apply(o, reconcile(o));
  admit(o);
  Decision d = reconcile(o);
  ASSERT_EQ(of(d, Action::Verb::Patch, "benchmarkjobs").size(), 1u);
  EXPECT_EQ(of(d, Action::Verb::Patch, "benchmarkjobs")[0]->body, json({{"spec", {{"suspend", false}}}}));
  apply(o, d);
  d = reconcile(o);
  EXPECT_EQ(of(d, Action::Verb::Create, "pods").size(), 2u) << "admitted: run 0 starts";
  apply(o, d);
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 0, 0, 1);
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 1, 0, 4);
  all_running(o);  // the trainers serve their last metrics for a while
  d = reconcile(o);
  apply(o, d);
  EXPECT_EQ(o.job["status"]["phase"], "Succeeded");
  EXPECT_TRUE(of(d, Action::Verb::PatchStatus, "workloads").empty()) << "not while a pod may hold its GPUs";
  for (auto& p : o.pods) p["status"]["phase"] = "Succeeded";
  d = reconcile(o);
  apply(o, d);
  const auto finished = of(d, Action::Verb::PatchStatus, "workloads");
  ASSERT_EQ(finished.size(), 1u) << "the ended job's Workload is Finished: Kueue frees its quota";
  EXPECT_EQ(admission_of(*o.workload).admission, Admission::kFinished);
  EXPECT_TRUE(of(reconcile(o), Action::Verb::PatchStatus, "workloads").empty()) << "once";
}

TEST(Kueue, EvictionInterruptsTheRunThenGivesTheQuotaBackOnceItsPodsAreGone) {
  Observed o = queued_job();
  apply(o, reconcile(o));
  admit(o);
  apply(o, reconcile(o));  // spec.suspend false
  apply(o, reconcile(o));  // run 0's pods
  all_running(o);
  apply(o, reconcile(o));
  ASSERT_EQ(o.pods.size(), 2u);
  // Kueue preempts it.
  set_workload_condition(o, "Evicted", true, "Preempted");
  Decision d = reconcile(o);
  EXPECT_EQ(of(d, Action::Verb::Patch, "benchmarkjobs")[0]->body, json({{"spec", {{"suspend", true}}}}));
  apply(o, d);
  d = reconcile(o);  // spec.suspend's semantics: the run is interrupted, its pods go
  EXPECT_EQ(deleted_pods(d).size(), 2u);
  EXPECT_TRUE(of(d, Action::Verb::PatchStatus, "workloads").empty()) << "not while its pods may still hold GPUs";
  // The pods are deleted but still terminating: still no give-back.
  for (auto& p : o.pods) p["metadata"]["deletionTimestamp"] = "2026-11-22T10:01:00Z";
  apply(o, {{d.actions.back()}, {}});  // the job's status only
  EXPECT_TRUE(of(reconcile(o), Action::Verb::PatchStatus, "workloads").empty());
  o.pods.clear();  // gone
  d = reconcile(o);
  const auto back = of(d, Action::Verb::PatchStatus, "workloads");
  ASSERT_EQ(back.size(), 1u);
  apply(o, d);
  const json& st = (*o.workload)["status"];
  EXPECT_FALSE(st.contains("admission"));
  EXPECT_EQ(admission_of(*o.workload).admission, Admission::kEvicted);
  EXPECT_FALSE(admission_of(*o.workload).quota_reserved);
  EXPECT_EQ((*condition_of(st, "QuotaReserved"))["status"], "False");
  EXPECT_EQ((*condition_of(st, "Admitted"))["status"], "False");
  EXPECT_EQ((*condition_of(st, "Requeued"))["status"], "True") << "preempted: back in the queue";
  EXPECT_EQ(o.job["status"]["runs"][0]["interruptions"], 1);
  EXPECT_NE(condition_of(o.job["status"], "Suspended")->at("message").get<std::string>().find("evicted by Kueue"),
            std::string::npos);
  // Admitted again: the run starts again from its beginning.
  admit(o);
  apply(o, reconcile(o));
  d = reconcile(o);
  const auto created = of(d, Action::Verb::Create, "pods");
  ASSERT_EQ(created.size(), 2u);
  EXPECT_EQ(created[0]->body["metadata"]["labels"]["trainbench.dev/attempt"], "1");
}

TEST(Kueue, AJobWithoutTheQueueLabelOrWithoutKueueIsNotQueued) {
  Observed o = queued_job();
  o.kueue = false;
  EXPECT_EQ(of(reconcile(o), Action::Verb::Create, "pods").size(), 2u);
  Observed p{job_object(), {}, {}, {}, false, false, false, t0()};
  p.kueue = true;
  const Decision d = reconcile(p);
  EXPECT_TRUE(of(d, Action::Verb::Create, "workloads").empty());
  EXPECT_EQ(of(d, Action::Verb::Create, "pods").size(), 2u);
}

TEST(Kueue, APriorityClassGoesIntoTheWorkloadWithItsValue) {
  Observed o = queued_job();
  o.job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high";
  o.workload_priority = 1000;
  const Decision d = reconcile(o);
  const auto made = of(d, Action::Verb::Create, "workloads");
  ASSERT_EQ(made.size(), 1u);
  EXPECT_EQ(made[0]->body["spec"]["priorityClassRef"]["name"], "high");
  EXPECT_EQ(made[0]->body["spec"]["priorityClassRef"]["kind"], "WorkloadPriorityClass");
  EXPECT_EQ(made[0]->body["spec"]["priority"], 1000);
}

TEST(Kueue, WorkloadNamesAreStableAndFitALabel) {
  EXPECT_EQ(workload_name("bj", "u1"), workload_name("bj", "u1"));
  EXPECT_NE(workload_name("bj", "u1"), workload_name("bj", "u2"));
  const std::string long_name = workload_name(std::string(63, 'a'), "u1");
  EXPECT_LE(long_name.size(), 63u);
  EXPECT_EQ(long_name.rfind("benchmarkjob-aaa", 0), 0u);
}

}  // namespace
}  // namespace trainbench::op
