#include <gtest/gtest.h>

#include "core/report/report.hpp"
#include "core/report/rank_summary.hpp"
#include "core/report/report_format.hpp"

namespace trainbench {
namespace {

BenchmarkJob job() {
  return parse_benchmark_job(R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: report-test}
spec:
  benchmark: {model: mlp, batchSizePerDevice: 10, measureSteps: 4, repeats: 3, warmupSteps: 1}
  sweep:
    - {nodes: 1, devicesPerNode: 1, paradigm: none}
    - {nodes: 1, devicesPerNode: 2}
    - {nodes: 2, devicesPerNode: 1}
)");
}

RunResult result(int world, double base) {
  RunResult r;
  r.world_size = world;
  r.parameter_count = 1234;
  r.ddp_bucket_count = world > 1 ? 2 : 0;
  r.environment.trainbench_version = "0.1.0";
  r.environment.libtorch_version = "1.13.1";
  r.environment.backend = "gloo";
  r.environment.device = "cpu";
  r.environment.threads_per_process = 1;
  if (world > 1) r.environment.ddp = "pytorch";  // as the worker says it: DDP runs only
  for (int k = 0; k < world; ++k) {
    RankResult rk;
    rk.rank = k;
    rk.local_rank = k;
    // three repeats of four steps; repeat r is base * (1, 2, 3, 4) + r * 0.01, rank k adds k * 0.001
    for (int rep = 0; rep < 3; ++rep) {
      std::vector<double> steps;
      for (int s = 1; s <= 4; ++s) steps.push_back(base * s + rep * 0.01 + k * 0.001);
      rk.step_seconds.push_back(steps);
    }
    rk.peak_memory_bytes = (100 + k) * 1024 * 1024;
    r.ranks.push_back(rk);
  }
  return r;
}

TEST(Report, BuildsPercentilesSpeedupAndEfficiency) {
  const auto j = job();
  const auto runs = plan_runs(j, 2);
  const Report rep = build_report(j, runs, {{result(1, 0.1), ""}, {result(2, 0.1), ""}, {std::nullopt, "rank 1 died"}});
  ASSERT_EQ(rep.runs.size(), 3u);
  ASSERT_TRUE(rep.baseline_run.has_value());
  EXPECT_EQ(*rep.baseline_run, 0);
  const RunReport& none = rep.runs[0];
  // steps 0.1 0.2 0.3 0.4 (+0.01 * repeat): p50 per repeat = 0.25 + 0.01 r, median over r -> 0.26
  EXPECT_NEAR(none.sec_per_iter.p50, 0.26, 1e-12);
  EXPECT_NEAR(none.sec_per_iter.p75, 0.325 + 0.01, 1e-12);  // h = 2.25
  EXPECT_NEAR(none.examples_per_sec.p50, 10 / 0.26, 1e-9);
  EXPECT_NEAR(*none.speedup, 1.0, 1e-12);
  EXPECT_NEAR(*none.efficiency, 1.0, 1e-12);
  const RunReport& two = rep.runs[1];
  EXPECT_EQ(two.label, "1M/2G");
  // pooled ranks: 8 samples per repeat, {0.1,0.101,0.2,0.201,0.3,0.301,0.4,0.401}+0.01r: p50 h=3.5 -> 0.2505+0.01
  EXPECT_NEAR(two.sec_per_iter.p50, 0.2605, 1e-12);
  EXPECT_NEAR(two.examples_per_sec.p50, 20 / 0.2605, 1e-9);
  EXPECT_NEAR(*two.speedup, (20 / 0.2605) / (10 / 0.26), 1e-9);
  EXPECT_NEAR(*two.efficiency, *two.speedup / 2, 1e-12);
  ASSERT_EQ(two.ranks.size(), 2u);
  EXPECT_NEAR(two.ranks[1].sec_per_iter.p50, 0.261, 1e-12);
  EXPECT_EQ(two.max_peak_memory_bytes, 101 * 1024 * 1024);
  EXPECT_EQ(rep.runs[2].phase, "Failed");
  EXPECT_EQ(rep.runs[2].error, "rank 1 died");
  EXPECT_FALSE(rep.runs[2].speedup.has_value());
}

TEST(Report, NoSingleDeviceRunMeansNoSpeedup) {
  const auto j = job();
  const auto runs = plan_runs(j, 2);
  const Report rep = build_report(j, runs, {{std::nullopt, "x"}, {result(2, 0.1), ""}, {result(2, 0.1), ""}});
  EXPECT_FALSE(rep.baseline_run.has_value());
  EXPECT_FALSE(rep.runs[1].speedup.has_value());
}

TEST(Report, SummarizeThenAssembleEqualsBuildReport) {
  const auto j = job();
  const auto runs = plan_runs(j, 2);
  const RunResult r0 = result(1, 0.1), r1 = result(2, 0.1);
  const Report whole = build_report(j, runs, {{r0, ""}, {r1, ""}, {std::nullopt, "rank 1 died"}});
  // The operator's path: each run summarised where it ended, shipped as JSON, assembled later.
  std::vector<RunReport> parts;
  parts.push_back(run_report_from_json(to_json(summarize_run(runs[0], r0)), "runs[0]"));
  parts.push_back(run_report_from_json(to_json(summarize_run(runs[1], r1)), "runs[1]"));
  parts.push_back(failed_run(runs[2], "rank 1 died"));
  std::optional<EnvironmentInfo> env;  // folded as the operator folds its runs' environments
  fold_environment(env, r0.environment);
  fold_environment(env, r1.environment);
  const Report assembled = assemble_report(j, parts, *env);
  EXPECT_EQ(to_json(assembled), to_json(whole));
}

// The report path holds 1024 ranks: the summary the master writes into the run's result
// ConfigMap (its data is limited to 1 MiB) keeps per-rank percentiles, not raw step times.
TEST(Report, SummaryOf1024RanksFitsAConfigMap) {
  const auto runs = plan_runs(job(), 2);
  RunConfig big = runs[1];
  big.nodes = 128;
  big.devices_per_node = 8;
  RunResult r = result(1024, 0.05);
  const std::string text = to_json(summarize_run(big, r)).dump();
  EXPECT_EQ(summarize_run(big, r).ranks.size(), 1024u);
  EXPECT_LT(text.size(), 512u * 1024u) << "bytes per rank: " << text.size() / 1024;
  RecordProperty("bytes", static_cast<int>(text.size()));
}

TEST(Report, JsonRoundTrip) {
  const auto j = job();
  const Report rep = build_report(j, plan_runs(j, 2), {{result(1, 0.1), ""}, {result(2, 0.2), ""}, {std::nullopt, "boom"}});
  const nlohmann::json js = to_json(rep);
  EXPECT_EQ(js.at("schemaVersion"), kReportSchemaVersion);
  const Report back = report_from_json(js);
  EXPECT_EQ(to_json(back), js);
}

TEST(Report, BadReportNamesTheField) {
  const auto j = job();
  nlohmann::json js = to_json(build_report(j, plan_runs(j, 2), {{result(1, 0.1), ""}, {result(2, 0.2), ""}, {result(2, 0.2), ""}}));
  auto expect_error = [](const nlohmann::json& doc, const std::string& field) {
    try {
      report_from_json(doc);
      ADD_FAILURE() << "accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  auto a = js;
  a["runs"][1]["secPerIter"]["p95"] = "slow";
  expect_error(a, "runs[1].secPerIter.p95: must be a number");
  auto b = js;
  b["schemaVersion"] = 99;
  expect_error(b, "schemaVersion: unsupported version 99");
  auto c = js;
  c["runs"][0].erase("label");
  expect_error(c, "runs[0].label: is required");
  auto d = js;
  d["runs"][2]["phase"] = "Running";
  expect_error(d, "runs[2].phase");
  expect_error(nlohmann::json::array(), "must be an object");
}

TEST(Report, RunResultFromJsonValidates) {
  nlohmann::json r = to_json(result(2, 0.1));
  EXPECT_NO_THROW(run_result_from_json(r));
  r["ranks"][1]["stepSeconds"][0][2] = -1;
  try {
    run_result_from_json(r);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ranks[1].stepSeconds[0][2]"), std::string::npos) << e.what();
  }
  nlohmann::json short_ranks = to_json(result(2, 0.1));
  short_ranks["ranks"].erase(1);
  EXPECT_THROW(run_result_from_json(short_ranks), std::runtime_error);
}

TEST(ReportFormat, SeedStyleRows) {
  const auto j = job();
  const Report rep = build_report(j, plan_runs(j, 2), {{result(1, 0.1), ""}, {result(2, 0.1), ""}, {std::nullopt, "rank 1 exited with code 1"}});
  const std::string text = format_report(rep);
  EXPECT_NE(text.find("* libtorch version: 1.13.1"), std::string::npos) << text;
  EXPECT_NE(text.find("Benchmark: mlp with batch size 10"), std::string::npos);
  EXPECT_NE(text.find("1 CPUs -- no ddp:  p50:    0.260s"), std::string::npos) << text;
  EXPECT_NE(text.find("2 CPUs -- 1M/2G:  p50:"), std::string::npos) << text;
  EXPECT_NE(text.find("2 CPUs -- 2M/1G:  FAILED: rank 1 exited with code 1"), std::string::npos) << text;
  EXPECT_NE(text.find("1.00x"), std::string::npos);
  EXPECT_NE(text.find("rank   1 (node 0, local 1)"), std::string::npos) << text;
}

TEST(ReportFormat, HeaderNamesTheDdpOfTheRunsThatHadOne) {
  const auto j = job();
  // The first run is the single-device baseline, without DDP: the header takes the next run's.
  const Report rep = build_report(j, plan_runs(j, 2), {{result(1, 0.1), ""}, {result(2, 0.1), ""}, {result(2, 0.1), ""}});
  EXPECT_EQ(rep.environment.ddp, "pytorch");
  EXPECT_EQ(rep.environment.libtorch_version, "1.13.1");  // the rest from the first run
  const std::string text = format_report(rep);
  EXPECT_NE(text.find("* DDP: pytorch (PyTorch's c10d::Reducer, as DistributedDataParallel drives it)\n"),
            std::string::npos)
      << text;
  // Round trip through the report's JSON, and a report without DDP runs has no such line.
  EXPECT_EQ(report_from_json(to_json(rep)).environment.ddp, "pytorch");
  const Report single = build_report(j, plan_runs(j, 2), {{result(1, 0.1), ""}, {std::nullopt, "x"}, {std::nullopt, "x"}});
  EXPECT_EQ(format_report(single).find("* DDP:"), std::string::npos);
}

/// `r` with a topology: its ranks on `hosts` hosts (rank k on host k % hosts), 2 CPUs each.
RunResult with_topology(RunResult r, int hosts) {
  std::vector<std::pair<RankLocation, HostTopology>> readings;
  for (const auto& rk : r.ranks) {
    HostTopology h;
    h.host = "host-" + std::to_string(rk.rank % hosts);
    h.numa_nodes = {{0, {0, 1, 2, 3}, 8LL << 30}};
    readings.push_back({{rk.rank, h.host, {2 * (rk.rank % 2), 2 * (rk.rank % 2) + 1}, {0}, -1}, h});
  }
  r.topology = merge_topology(readings);
  return r;
}

// The header shows where the ranks of the largest run ran; the report's JSON keeps every run's
// topology; a job's status copy of a run too large for it leaves it out, as it leaves the ranks.
TEST(ReportFormat, HeaderShowsTheLargestRunsTopology) {
  const auto j = job();
  const Report rep = build_report(j, plan_runs(j, 2),
                                  {{with_topology(result(1, 0.1), 1), ""},
                                   {with_topology(result(2, 0.1), 1), ""},
                                   {with_topology(result(2, 0.1), 2), ""}});
  const std::string text = format_report(rep);
  EXPECT_NE(text.find("Topology (2 CPUs -- 1M/2G, 2 ranks on 1 host):\n  host host-0:\n"
                      "    NUMA node 0: CPUs 0-3, 8.0 GiB\n  rank 0 on host-0: CPUs 0-1 (NUMA node 0)\n"
                      "  rank 1 on host-0: CPUs 2-3 (NUMA node 0)\n\nBenchmark:"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("Topology ("), text.rfind("Topology (")) << "once";
  const Report back = report_from_json(to_json(rep));
  ASSERT_TRUE(back.runs[2].topology);
  EXPECT_EQ(back.runs[2].topology->hosts.size(), 2U);
  const Report none = build_report(j, plan_runs(j, 2), {{result(1, 0.1), ""}, {std::nullopt, "x"}, {std::nullopt, "x"}});
  EXPECT_EQ(format_report(none).find("Topology"), std::string::npos) << "no run recorded one";
  RunConfig big = plan_runs(j, 2)[1];
  big.nodes = 128;
  big.devices_per_node = 8;
  EXPECT_FALSE(compact_for_status(summarize_run(big, with_topology(result(1024, 0.05), 128)), "cm").topology);
}

TEST(ReportFormat, DiffNamesEachSidesDdp) {
  const auto j = job();
  const auto runs = plan_runs(j, 2);
  const Report base = build_report(j, runs, {{result(1, 0.1), ""}, {result(2, 0.1), ""}, {result(2, 0.1), ""}});
  Report test = base;
  test.environment.ddp = "trainbench";
  const std::string text = format_diff(base, test);
  const auto row = text.find("\nddp:");
  ASSERT_NE(row, std::string::npos) << text;
  const std::string line = text.substr(row + 1, text.find('\n', row + 1) - row - 1);
  EXPECT_NE(line.find(" pytorch "), std::string::npos) << line;
  EXPECT_NE(line.find(" vs trainbench"), std::string::npos) << line;
}

TEST(ReportFormat, DiffShowsPercentChangeOfThroughput) {
  const auto j = job();
  const auto runs = plan_runs(j, 2);
  const Report base = build_report(j, runs, {{result(1, 0.1), ""}, {result(2, 0.1), ""}, {result(2, 0.1), ""}});
  Report test = build_report(j, runs, {{result(1, 0.1), ""}, {result(2, 0.2), ""}, {std::nullopt, "x"}});
  test.bucket_cap_mb = 1;
  const std::string text = format_diff(base, test);
  EXPECT_NE(text.find("bucket_cap_mb:"), std::string::npos) << text;
  EXPECT_NE(text.find("25"), std::string::npos);
  EXPECT_NE(text.find(" vs 1\n"), std::string::npos) << text;
  // p75 of run 1: base pooled {.1,.101,.2,.201,.3,.301,.4,.401}+.01r, test doubled base values: ex/sec falls.
  EXPECT_NE(text.find("1 CPUs -- no ddp:  p75:"), std::string::npos) << text;
  EXPECT_NE(text.find("+0.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("2 CPUs -- 2M/1G:  failed in test"), std::string::npos) << text;
  EXPECT_NE(text.find("-4"), std::string::npos) << text;  // about -48% on the slowed configuration
}

}  // namespace
}  // namespace trainbench
