// Runs and attempts (operator/controller/reconciler_runs.cpp): a failed pod, a hang or a lost node
// restarts the run until the backoff is spent; results of older attempts and late results; a
// failed run's message.

#include <gtest/gtest.h>

#include "tests/operator/reconciler_test_support.hpp"

namespace trainbench::op::reconcile_test {
namespace {

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

}  // namespace
}  // namespace trainbench::op::reconcile_test
