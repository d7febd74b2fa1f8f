// core/api/job_status: the BenchmarkJob status the operator writes, to and from JSON.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/api/job_status.hpp"
#include "core/report/rank_summary.hpp"
#include "core/report/report.hpp"
#include "core/spec/paradigm.hpp"

namespace trainbench {
namespace {

using nlohmann::json;

RunReport succeeded_run(int index, int world) {
  RunReport r;
  r.index = index;
  r.label = world == 1 ? "no ddp" : "1M/" + std::to_string(world) + "G";
  r.devices_label = std::to_string(world) + " CPUs";
  r.world_size = world;
  r.devices_per_node = world;
  r.paradigm = world == 1 ? Paradigm::kNone : Paradigm::kDdp;
  r.sec_per_iter = {0.1, 0.2, 0.3, 0.4};
  r.examples_per_sec = {80, 40, 26.5, 20};
  r.repeats = {r.sec_per_iter};
  r.loss_start = 2.5;
  r.loss_end = 1.25;
  NoiseReport noise;  // as summarize_run measures it: no verdict until the report is assembled
  noise.step_cv_percent = 4;
  noise.host_cores = 8;
  r.noise = noise;
  r.optimizer = "sgd";
  for (int k = 0; k < world; ++k) {
    RankReport rk;
    rk.rank = k;
    rk.local_rank = k;
    rk.sec_per_iter = {0.1 + 0.01 * k, 0.2, 0.3, 0.4};
    rk.peak_memory_bytes = 1000 + k;
    r.ranks.push_back(rk);
  }
  return r;
}

EnvironmentInfo environment() {
  EnvironmentInfo e;
  e.trainbench_version = "1.2.3";
  e.backend = "gloo";
  e.device = "cpu";
  e.hostname = "node-1";
  e.threads_per_process = 2;
  return e;
}

/// Every field set, as a finished two-run job's status (the second run compacted to a rank summary).
BenchmarkJobStatus full_status() {
  BenchmarkJobStatus s;
  s.phase = JobPhase::kSucceeded;
  s.conditions = {{ConditionType::kRunning, ConditionStatus::kFalse, "JobSucceeded", "all 2 runs succeeded",
                   "2026-11-22T10:05:00Z", 3},
                  {ConditionType::kSucceeded, ConditionStatus::kTrue, "JobSucceeded", "all 2 runs succeeded",
                   "2026-11-22T10:05:00Z", 3}};
  s.observed_generation = 3;
  s.runs_total = 2;
  s.runs_done = 2;
  s.progress = "2/2";
  for (int i = 0; i < 2; ++i) {
    RunStatus r;
    r.index = i;
    r.label = "run " + std::to_string(i);
    r.phase = RunPhase::kSucceeded;
    r.attempt = i;
    r.restarts = i;
    if (i == 1) r.interruptions = 2;  // attempts ended by spec.suspend; absent on run 0
    r.pods_created = true;
    r.start_time = "2026-11-22T10:00:00Z";
    r.attempt_start_time = "2026-11-22T10:01:00Z";
    r.completion_time = "2026-11-22T10:02:00Z";
    r.message = "pod bj-r1-a0-trainer-0 failed";
    r.summary = compact_for_status(succeeded_run(i, i == 0 ? 1 : kMaxRanksInStatus + 1), "bj-r1-result");
    r.environment = environment();
    s.runs.push_back(std::move(r));
  }
  BenchmarkJob job;
  job.metadata.name = "bj";
  job.metadata.namespace_ = "ns1";
  s.report = assemble_report(job, {*s.runs[0].summary, *s.runs[1].summary}, environment());
  s.start_time = "2026-11-22T10:00:00Z";
  s.completion_time = "2026-11-22T10:05:00Z";
  s.best_examples_per_sec = 40;
  s.best_speedup = 1.5;
  s.lowest_efficiency = 0.75;
  s.noisy_runs = 0;
  return s;
}

std::string read_error(const json& j) {
  try {
    job_status_from_json(j);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "<read>";
}

TEST(JobStatus, EveryFieldRoundTripsUnderItsApiName) {
  const BenchmarkJobStatus s = full_status();
  const json j = to_json(s);
  for (const char* key :
       {"phase", "conditions", "observedGeneration", "runsTotal", "runsDone", "progress", "runs", "report", "startTime",
        "completionTime", "bestExamplesPerSec", "bestSpeedup", "lowestEfficiency", "noisyRuns"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j.size(), 14u);
  EXPECT_EQ(j["lowestEfficiency"], 0.75);
  EXPECT_EQ(j["noisyRuns"], 0);
  // The noise measurement travels with a run's summary (compacted or not); the report judges it
  // (one repeat here: unjudged) and flags efficiency against the target.
  EXPECT_FALSE(j["runs"][1]["summary"]["noise"].contains("verdict"));
  EXPECT_EQ(j["runs"][1]["summary"]["noise"]["hostCores"], 8);
  EXPECT_EQ(j["report"]["runs"][1]["noise"]["verdict"], "unjudged");
  EXPECT_EQ(j["report"]["runs"][0]["belowTarget"], false);
  EXPECT_EQ(j["phase"], "Succeeded");
  EXPECT_FALSE(j["runs"][0].contains("interruptions"));
  EXPECT_EQ(j["runs"][1]["interruptions"], 2);
  EXPECT_EQ(j["conditions"][1], json({{"type", "Succeeded"},
                                      {"status", "True"},
                                      {"reason", "JobSucceeded"},
                                      {"message", "all 2 runs succeeded"},
                                      {"lastTransitionTime", "2026-11-22T10:05:00Z"},
                                      {"observedGeneration", 3}}));
  const json& run = j["runs"][1];
  for (const char* key : {"index", "label", "phase", "attempt", "restarts", "interruptions", "podsCreated", "startTime",
                          "attemptStartTime", "completionTime", "message", "summary", "environment"}) {
    EXPECT_TRUE(run.contains(key)) << key;
  }
  EXPECT_EQ(run.size(), 13u);
  EXPECT_EQ(run["summary"]["rankSummary"]["detail"]["configMap"], "bj-r1-result");
  EXPECT_EQ(run["environment"]["hostname"], "node-1");
  EXPECT_EQ(j["report"]["kind"], "BenchmarkReport");

  const BenchmarkJobStatus back = job_status_from_json(j);
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(back.phase, JobPhase::kSucceeded);
  EXPECT_EQ(back.runs[1].phase, RunPhase::kSucceeded);
  EXPECT_EQ(back.runs[1].pods_created, true);
  EXPECT_EQ(back.runs[1].attempt_start_time, "2026-11-22T10:01:00Z");
  ASSERT_TRUE(back.runs[1].summary && back.runs[1].summary->rank_summary);
  EXPECT_EQ(back.runs[1].summary->rank_summary->count, kMaxRanksInStatus + 1);
  ASSERT_TRUE(back.report.has_value());
  EXPECT_EQ(back.report->runs.size(), 2u);
  EXPECT_EQ(back.conditions[0].observed_generation, 3);
  // Through text too, as the API server stores it.
  EXPECT_EQ(to_json(job_status_from_json(json::parse(j.dump()))), j);
}

TEST(JobStatus, WhatIsNotKnownYetIsLeftOut) {
  EXPECT_EQ(to_json(BenchmarkJobStatus{}), json::object());
  const BenchmarkJobStatus empty = job_status_from_json(json::object());
  EXPECT_FALSE(empty.phase.has_value());
  EXPECT_TRUE(empty.conditions.empty());
  EXPECT_TRUE(empty.runs.empty());
  EXPECT_FALSE(empty.observed_generation || empty.runs_total || empty.runs_done || empty.progress || empty.report ||
               empty.start_time || empty.completion_time || empty.best_examples_per_sec || empty.best_speedup ||
               empty.lowest_efficiency || empty.noisy_runs);

  // A run not started yet: what init writes, and no more.
  RunStatus pending;
  pending.index = 1;
  pending.label = "2 CPUs -- 1M/2G";
  const json pj = to_json(pending);
  EXPECT_EQ(pj,
            json({{"index", 1}, {"label", "2 CPUs -- 1M/2G"}, {"phase", "Pending"}, {"attempt", 0}, {"restarts", 0}}));
  const RunStatus back = run_status_from_json(pj, "runs[1]");
  EXPECT_FALSE(back.pods_created || back.start_time || back.attempt_start_time || back.completion_time ||
               back.message || back.summary || back.environment);
  EXPECT_EQ(to_json(back), pj);

  // A restarted run's podsCreated false is written, not dropped.
  RunStatus restarting = pending;
  restarting.pods_created = false;
  EXPECT_EQ(to_json(run_status_from_json(to_json(restarting), "runs[1]"))["podsCreated"], false);

  Condition c{ConditionType::kInvalid, ConditionStatus::kUnknown, "Checking", "", "2026-11-22T10:00:00Z", std::nullopt};
  EXPECT_FALSE(to_json(c).contains("observedGeneration"));
  EXPECT_EQ(to_json(condition_from_json(to_json(c), "c")), to_json(c));
}

TEST(JobStatus, UnknownPhaseTextIsRejected) {
  EXPECT_EQ(read_error({{"phase", "Done"}}), "status.phase: unknown job phase \"Done\"");
  EXPECT_EQ(read_error({{"phase", "running"}}), "status.phase: unknown job phase \"running\"");
  json j = to_json(full_status());
  j["runs"][1]["phase"] = "Finished";
  EXPECT_EQ(read_error(j), "status.runs[1].phase: unknown run phase \"Finished\"");
  j = to_json(full_status());
  j["conditions"][0]["type"] = "Ready";
  EXPECT_EQ(read_error(j), "status.conditions[0].type: unknown condition type \"Ready\"");
  j = to_json(full_status());
  j["conditions"][1]["status"] = "Yes";
  EXPECT_EQ(read_error(j), "status.conditions[1].status: unknown condition status \"Yes\"");
}

TEST(JobStatus, ReaderNamesTheMissingOrMistypedField) {
  const json good = to_json(full_status());
  const auto error_with = [&](const std::function<void(json&)>& edit) {
    json j = good;
    edit(j);
    return read_error(j);
  };
  EXPECT_EQ(read_error(json::array()), "status: must be an object");
  EXPECT_EQ(error_with([](json& j) { j["phase"] = 3; }), "status.phase: must be a string");
  EXPECT_EQ(error_with([](json& j) { j["runsDone"] = "2"; }), "status.runsDone: must be an integer");
  EXPECT_EQ(error_with([](json& j) { j["observedGeneration"] = 1.5; }),
            "status.observedGeneration: must be an integer");
  EXPECT_EQ(error_with([](json& j) { j["bestSpeedup"] = "fast"; }), "status.bestSpeedup: must be a number");
  EXPECT_EQ(error_with([](json& j) { j["lowestEfficiency"] = "low"; }), "status.lowestEfficiency: must be a number");
  EXPECT_EQ(error_with([](json& j) { j["noisyRuns"] = 0.5; }), "status.noisyRuns: must be an integer");
  EXPECT_EQ(error_with([](json& j) { j["report"]["runs"][1]["noise"]["verdict"] = "loud"; }),
            "status.report.runs[1].noise.verdict: must be one of [quiet, noisy, unjudged], got \"loud\"");
  EXPECT_EQ(error_with([](json& j) { j["conditions"] = json::object(); }), "status.conditions: must be an array");
  EXPECT_EQ(error_with([](json& j) { j["conditions"][0].erase("reason"); }),
            "status.conditions[0].reason: is required");
  EXPECT_EQ(error_with([](json& j) { j["runs"][1].erase("index"); }), "status.runs[1].index: is required");
  EXPECT_EQ(error_with([](json& j) { j["runs"][0]["podsCreated"] = "yes"; }),
            "status.runs[0].podsCreated: must be a boolean");
  EXPECT_EQ(error_with([](json& j) { j["runs"][0]["summary"].erase("secPerIter"); }),
            "status.runs[0].summary.secPerIter: is required");
  EXPECT_EQ(error_with([](json& j) { j["runs"][1]["environment"].erase("hostname"); }),
            "status.runs[1].environment.hostname: is required");
  EXPECT_EQ(error_with([](json& j) { j["runs"][1]["environment"] = "cpu"; }),
            "status.runs[1].environment: must be an object");
  EXPECT_EQ(error_with([](json& j) { j["report"]["runs"][0].erase("label"); }),
            "status.report.runs[0].label: is required");
  EXPECT_EQ(error_with([](json& j) { j["report"] = 1; }), "status.report: must be an object");
}

TEST(JobStatus, SetConditionKeepsTheTransitionTimeWhileTheStatusHolds) {
  BenchmarkJobStatus s;
  s.set_condition({ConditionType::kRunning, ConditionStatus::kTrue, "RunsInProgress", "a", "2026-11-22T10:00:00Z", 1});
  s.set_condition({ConditionType::kInvalid, ConditionStatus::kFalse, "SpecValid", "ok", "2026-11-22T10:00:00Z", 1});
  s.set_condition({ConditionType::kRunning, ConditionStatus::kTrue, "RunsInProgress", "b", "2026-11-22T10:01:00Z", 2});
  ASSERT_EQ(s.conditions.size(), 2u);
  EXPECT_EQ(s.conditions[0].last_transition_time, "2026-11-22T10:00:00Z") << "status unchanged: time kept";
  EXPECT_EQ(s.conditions[0].message, "b");
  EXPECT_EQ(s.conditions[0].observed_generation, 2);
  s.set_condition({ConditionType::kRunning, ConditionStatus::kFalse, "JobSucceeded", "c", "2026-11-22T10:02:00Z", 2});
  EXPECT_EQ(s.conditions[0].last_transition_time, "2026-11-22T10:02:00Z") << "status changed: time moves";
  ASSERT_NE(s.condition(ConditionType::kInvalid), nullptr);
  EXPECT_EQ(s.condition(ConditionType::kInvalid)->reason, "SpecValid");
  EXPECT_EQ(s.condition(ConditionType::kFailed), nullptr);
}

/// Every value of E round-trips through its one text, in the order `texts` gives (the CRD's).
template <typename E>
void expect_texts(const std::vector<E>& values, const std::vector<std::string>& texts) {
  ASSERT_EQ(Spellings<E>::table.size(), values.size()) << "a value is missing from the test or the table";
  EXPECT_EQ(allowed_texts<E>(), texts);
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(to_string(values[i]), texts.at(i));
    EXPECT_EQ(parse_enum<E>(texts.at(i)), values[i]);
  }
  EXPECT_FALSE(parse_enum<E>("").has_value());
}

TEST(JobStatus, EachValueHasOneText) {
  expect_texts<JobPhase>({JobPhase::kPending, JobPhase::kRunning, JobPhase::kSucceeded, JobPhase::kFailed,
                          JobPhase::kInvalid, JobPhase::kSuspended},
                         {"Pending", "Running", "Succeeded", "Failed", "Invalid", "Suspended"});
  expect_texts<RunPhase>({RunPhase::kPending, RunPhase::kStarting, RunPhase::kRunning, RunPhase::kRestarting,
                          RunPhase::kSucceeded, RunPhase::kFailed},
                         {"Pending", "Starting", "Running", "Restarting", "Succeeded", "Failed"});
  expect_texts<ConditionType>({ConditionType::kInvalid, ConditionType::kRunning, ConditionType::kSucceeded,
                               ConditionType::kFailed, ConditionType::kRegressed, ConditionType::kSuspended},
                              {"Invalid", "Running", "Succeeded", "Failed", "Regressed", "Suspended"});
  expect_texts<ConditionStatus>({ConditionStatus::kTrue, ConditionStatus::kFalse, ConditionStatus::kUnknown},
                                {"True", "False", "Unknown"});
  EXPECT_FALSE(parse_enum<RunPhase>("succeeded").has_value()) << "case-sensitive, as the API server's enum";
}

}  // namespace
}  // namespace trainbench
