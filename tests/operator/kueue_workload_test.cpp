// Kueue (operator/controller/kueue_workload.hpp): the job's Workload, admission, eviction.

#include <gtest/gtest.h>

#include "operator/controller/kueue_workload.hpp"
#include "tests/operator/reconciler_test_support.hpp"

namespace trainbench::op::reconcile_test {
namespace {

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
}  // namespace trainbench::op::reconcile_test
