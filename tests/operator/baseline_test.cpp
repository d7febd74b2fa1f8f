// spec.baseline in the operator: reconcile sets the Regressed condition of an ended job from the
// baseline the controller observed (a BenchmarkJob's status.report or a ConfigMap's key), and a
// missing, unfinished or invalid baseline gives a condition that says so.
#include <gtest/gtest.h>

#include "core/api/job_status.hpp"
#include "core/report/report.hpp"
#include "operator/controller/baseline.hpp"
#include "operator/controller/reconciler.hpp"

namespace trainbench::op {
namespace {

using nlohmann::json;

/// A report of one ddp run whose five repeats are about 1% apart, `scale` times 0.1 s.
Report report(double scale) {
  Report rep;
  rep.job_name = "bj";
  rep.model = "mlp";
  rep.batch_size_per_device = 8;
  rep.repeats = 5;
  RunReport r;
  r.label = "2M/2G";
  r.devices_label = "4 CPUs";
  r.world_size = 4;
  for (double f : {0.990, 1.005, 1.000, 1.010, 0.995}) {
    const double p = 0.1 * f * scale;
    r.repeats.push_back({p, p, p, p});
  }
  r.sec_per_iter = median_of(r.repeats);
  r.examples_per_sec = throughput(r.sec_per_iter, 32);
  rep.runs.push_back(r);
  return rep;
}

/// A BenchmarkJob named `name` in ns1 that ended (or is `phase`) with `rep` as its report.
json job(const std::string& name, const json& baseline, const std::optional<Report>& rep,
         JobPhase phase = JobPhase::kSucceeded) {
  BenchmarkJobStatus st;
  st.phase = phase;
  st.report = rep;
  json spec = {{"benchmark", {{"model", "mlp"}, {"batchSizePerDevice", 8}, {"repeats", 5}}},
               {"sweep", json::array({{{"nodes", 2}, {"devicesPerNode", 2}}})}};
  if (!baseline.is_null()) spec["baseline"] = baseline;
  return {{"apiVersion", "trainbench.dev/v1alpha1"},
          {"kind", "BenchmarkJob"},
          {"metadata", {{"name", name}, {"namespace", "ns1"}, {"uid", "uid-" + name}, {"generation", 1}}},
          {"spec", spec},
          {"status", to_json(st)}};
}

Observed observed(const json& j, std::optional<json> baseline_object, const std::string& error = "") {
  Observed o;
  o.job = j;
  o.baseline.object = std::move(baseline_object);
  o.baseline.error = error;
  o.baseline.looked_up = baseline_to_look_up(j).has_value();
  o.now = *parse_time("2026-11-24T13:00:00Z");
  return o;
}

json config_map(const json& data) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", "reports"}, {"namespace", "ns1"}}},
          {"data", data}};
}

/// The Regressed condition the decision writes (null if none) and the reasons of its Events.
json regressed(const Decision& d) {
  for (const auto& a : d.actions) {
    if (a.verb != Action::Verb::PatchStatus) continue;
    for (const auto& c : a.body["status"].value("conditions", json::array())) {
      if (c["type"] == "Regressed") return c;
    }
  }
  return nullptr;
}

json status_of_patch(const Decision& d) {
  for (const auto& a : d.actions) {
    if (a.verb == Action::Verb::PatchStatus) return a.body["status"];
  }
  return nullptr;
}

std::vector<std::string> events(const Decision& d) {
  std::vector<std::string> out;
  for (const auto& a : d.actions) {
    if (a.verb == Action::Verb::Event)
      out.push_back(a.body["type"].get<std::string>() + " " + a.body["reason"].get<std::string>());
  }
  return out;
}

const json kBaseJob = {{"benchmarkJob", "base"}};

TEST(Baseline, SameNumbersAsTheBaselineJobAreNoRegression) {
  const Decision d = reconcile(observed(job("bj", kBaseJob, report(1.0)), job("base", nullptr, report(1.0))));
  const json c = regressed(d);
  ASSERT_TRUE(c.is_object()) << "no Regressed condition";
  EXPECT_EQ(c["status"], "False");
  EXPECT_EQ(c["reason"], "NoRegression");
  EXPECT_EQ(c["message"],
            "against BenchmarkJob base: no row significantly slower by more than 5% (p50 ex/sec; 1 row "
            "compared)");
  EXPECT_EQ(events(d), std::vector<std::string>{"Normal NoRegression"});
}

TEST(Baseline, TenPercentSlowerThanTheBaselineJobRegressedNamingTheRow) {
  const Decision d = reconcile(observed(job("bj", kBaseJob, report(1.1)), job("base", nullptr, report(1.0))));
  const json c = regressed(d);
  ASSERT_TRUE(c.is_object());
  EXPECT_EQ(c["status"], "True");
  EXPECT_EQ(c["reason"], "Regressed");
  const std::string msg = c["message"];
  EXPECT_EQ(msg.rfind("against BenchmarkJob base: 1 of 1 compared rows significantly slower by more than 5% (p50 "
                      "ex/sec): 4 CPUs -- 2M/2G: ex/sec -9.1% [",
                      0),
            0u)
      << msg;
  EXPECT_EQ(events(d), std::vector<std::string>{"Warning Regressed"});
  // A threshold above the drop: significantly slower, but not a regression.
  const Decision lenient =
      reconcile(observed(job("bj", {{"benchmarkJob", "base"}, {"regressionThresholdPercent", 10}}, report(1.1)),
                         job("base", nullptr, report(1.0))));
  EXPECT_EQ(regressed(lenient)["reason"], "NoRegression");
  EXPECT_NE(regressed(lenient)["message"].get<std::string>().find("slower (p=0.000 n=5+5)"), std::string::npos);
}

TEST(Baseline, ConfigMapHoldingAReport) {
  const json ref = {{"configMap", {{"name", "reports"}, {"key", "base.json"}}}};
  const json j = job("bj", ref, report(1.1));
  json c = regressed(reconcile(observed(j, config_map({{"base.json", to_json(report(1.0)).dump()}}))));
  EXPECT_EQ(c["reason"], "Regressed");
  EXPECT_NE(c["message"].get<std::string>().find("against ConfigMap reports (key base.json): 1 of 1"),
            std::string::npos);

  c = regressed(reconcile(observed(j, config_map({{"other", "{}"}}))));
  EXPECT_EQ(c["status"], "Unknown");
  EXPECT_EQ(c["reason"], "BaselineInvalid");
  EXPECT_EQ(c["message"], "ConfigMap reports (key base.json): no such key");

  c = regressed(reconcile(observed(j, config_map({{"base.json", "not json"}}))));
  EXPECT_EQ(c["reason"], "BaselineInvalid");
  EXPECT_EQ(c["message"], "ConfigMap reports (key base.json): not a JSON report");

  json future = to_json(report(1.0));
  future["schemaVersion"] = 99;
  c = regressed(reconcile(observed(j, config_map({{"base.json", future.dump()}}))));
  EXPECT_EQ(c["reason"], "BaselineInvalid");
  EXPECT_NE(c["message"].get<std::string>().find("not a report: schemaVersion: unsupported version 99"),
            std::string::npos)
      << c["message"];
}

TEST(Baseline, MissingUnreadableOrUnfinishedBaselineSaysSo) {
  const json j = job("bj", kBaseJob, report(1.0));
  json c = regressed(reconcile(observed(j, std::nullopt)));
  EXPECT_EQ(c["status"], "Unknown");
  EXPECT_EQ(c["reason"], "BaselineNotFound");
  EXPECT_EQ(c["message"], "BenchmarkJob base not found in the job's namespace");

  c = regressed(reconcile(observed(job("bj", {{"configMap", {{"name", "reports"}}}}, report(1.0)), std::nullopt,
                                   "configmaps \"reports\" is forbidden")));
  EXPECT_EQ(c["reason"], "BaselineNotFound");
  EXPECT_EQ(c["message"], "cannot read ConfigMap reports (key report): configmaps \"reports\" is forbidden");

  c = regressed(reconcile(observed(j, job("base", nullptr, std::nullopt, JobPhase::kRunning))));
  EXPECT_EQ(c["reason"], "BaselinePending");
  EXPECT_EQ(c["message"], "BenchmarkJob base has not ended (phase Running); compared when it does");

  c = regressed(reconcile(observed(j, job("base", nullptr, std::nullopt, JobPhase::kFailed))));
  EXPECT_EQ(c["reason"], "BaselineInvalid");
  EXPECT_EQ(c["message"], "BenchmarkJob base ended without a report");

  c = regressed(
      reconcile(observed(job("bj", kBaseJob, std::nullopt, JobPhase::kFailed), job("base", nullptr, report(1)))));
  EXPECT_EQ(c["reason"], "NoReport");

  // A report whose every row is a failed run (the operator writes those) compares nothing either.
  Report failed = report(1);
  failed.runs[0].phase = "Failed";
  failed.runs[0].error = "pod bj-r0-a0-trainer-0 failed";
  c = regressed(reconcile(observed(job("bj", kBaseJob, failed, JobPhase::kFailed), job("base", nullptr, report(1)))));
  EXPECT_EQ(c["reason"], "NoReport");
  c = regressed(reconcile(observed(j, job("base", nullptr, failed, JobPhase::kFailed))));
  EXPECT_EQ(c["reason"], "BaselineInvalid");
  EXPECT_EQ(c["message"], "BenchmarkJob base ended without a run that succeeded");
}

TEST(Baseline, LookedUpOnlyOnceTheJobEndedAndUntilDecided) {
  EXPECT_FALSE(baseline_to_look_up(job("bj", nullptr, report(1.0))));
  EXPECT_FALSE(baseline_to_look_up(job("bj", kBaseJob, std::nullopt, JobPhase::kRunning)));
  const auto ref = baseline_to_look_up(job("bj", {{"configMap", {{"name", "reports"}}}}, report(1.0)));
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->kind, BaselineRef::Kind::kConfigMap);
  EXPECT_EQ(ref->key, "report");

  // Not found first (Unknown: looked for again), then found: one Event per reason, then decided.
  Observed o = observed(job("bj", kBaseJob, report(1.0)), std::nullopt);
  Decision d = reconcile(o);
  EXPECT_EQ(events(d), std::vector<std::string>{"Warning BaselineNotFound"});
  o.job["status"] = status_of_patch(d);
  EXPECT_TRUE(baseline_to_look_up(o.job));
  EXPECT_TRUE(events(reconcile(o)).empty()) << "the same reason again: no second Event";
  o.baseline.object = job("base", nullptr, report(1.0));
  d = reconcile(o);
  EXPECT_EQ(events(d), std::vector<std::string>{"Normal NoRegression"});
  o.job["status"] = status_of_patch(d);
  EXPECT_FALSE(baseline_to_look_up(o.job)) << "decided: no more reads";
  o.baseline = {};
  EXPECT_EQ(regressed(reconcile(o)), nullptr) << "nothing looked up: the condition stays as it is";
}

}  // namespace
}  // namespace trainbench::op
