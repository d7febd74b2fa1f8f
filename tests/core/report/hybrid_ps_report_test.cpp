// The report of a hybrid-ps run: the servers' timings summarised (percentiles per repeat, median
// over repeats), the seed's per-trainer table with its "All" row, JSON round trip, and a clear
// error for an inconsistent result or a bad report.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "core/report/hybrid_ps_report.hpp"
#include "core/report/report.hpp"
#include "core/report/report_format.hpp"

namespace trainbench {
namespace {

BenchmarkJob hybrid_job() {
  return parse_benchmark_job(R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: hybrid-report-test}
spec:
  benchmark: {model: hybrid-embedding, paradigm: hybrid-ps, batchSizePerDevice: 10, measureSteps: 4,
              repeats: 2, warmupSteps: 0, hybridPs: {parameterServers: 2}}
  sweep:
    - {nodes: 1, devicesPerNode: 2}
)");
}

RunResult fake_result() {
  RunResult r;
  r.world_size = 2;
  r.parameter_count = 500;
  r.optimizer = "sgd";
  for (int k = 0; k < 2; ++k) {
    RankResult rk;
    rk.rank = k;
    rk.local_rank = k;
    // Trainer 0 steps at 0.1 s, trainer 1 at 0.2 s, in both repeats.
    const double s = 0.1 * (k + 1);
    rk.step_seconds = {{s, s, s, s}, {s, s, s, s}};
    rk.initial_loss = 2.0;
    rk.final_loss = 1.0;
    r.ranks.push_back(rk);
  }
  for (int j = 0; j < 2; ++j) {
    ServerResult sv;
    sv.rank = 2 + j;
    sv.server = j;
    sv.rows = 150;
    sv.lookups = 16;
    // Repeat 0: service 1..8 ms, repeat 1: 3..10 ms -> p50 4.5 and 6.5 ms, median 5.5 ms.
    sv.lookup_service_seconds = {{}, {}};
    for (int i = 1; i <= 8; ++i) {
      sv.lookup_service_seconds[0].push_back(i * 1e-3);
      sv.lookup_service_seconds[1].push_back((i + 2) * 1e-3);
    }
    sv.lookup_queue_seconds = {{0.0, 0.002}, {0.0, 0.004}};
    sv.update_seconds = {{0.01, 0.01, 0.01, 0.01}, {0.03, 0.03, 0.03, 0.03}};
    sv.peak_memory_bytes = 64 << 20;
    r.servers.push_back(sv);
  }
  return r;
}

TEST(HybridPsReport, SummarisesServersAndPrintsTheSeedTable) {
  const BenchmarkJob job = hybrid_job();
  const auto runs = plan_runs(job, 2);
  ASSERT_EQ(runs[0].parameter_servers, 2);
  const Report rep = build_report(job, runs, {{fake_result(), ""}});
  const RunReport& run = rep.runs.at(0);
  ASSERT_EQ(run.phase, "Succeeded") << run.error;
  ASSERT_TRUE(run.hybrid_ps.has_value());
  EXPECT_EQ(run.hybrid_ps->trainers, 2);
  EXPECT_EQ(run.hybrid_ps->parameter_servers, 2);
  ASSERT_EQ(run.hybrid_ps->servers.size(), 2u);
  const ServerReport& s1 = run.hybrid_ps->servers[1];
  EXPECT_EQ(s1.rank, 3);
  EXPECT_EQ(s1.rows, 150);
  EXPECT_NEAR(s1.lookup_service_seconds.p50, 5.5e-3, 1e-12);
  EXPECT_NEAR(s1.lookup_queue_seconds.p50, 1.5e-3, 1e-12);  // medians 1 ms and 2 ms
  EXPECT_NEAR(s1.update_seconds.p95, 0.02, 1e-12);
  // The run's examples/sec counts the trainers only: 2 x 10 examples per step.
  EXPECT_NEAR(run.examples_per_sec.p50, 20.0 / run.sec_per_iter.p50, 1e-9);

  const std::string text = format_report(rep);
  EXPECT_NE(text.find("DDP + parameter servers, 2 CPUs -- 1M/2G hybrid-ps: 2 trainers, 2 parameter servers"),
            std::string::npos)
      << text;
  // Per trainer: its own sec/iter and batch / sec/iter (10 / 0.1 = 100/s, 10 / 0.2 = 50.0/s).
  EXPECT_NE(text.find("Trainer0:   p50:   0.100s    100/s"), std::string::npos) << text;
  EXPECT_NE(text.find("Trainer1:   p50:   0.200s   50.0/s"), std::string::npos) << text;
  // All: both trainers' steps pooled (p50 0.15 s), 20 examples per step -> 133/s.
  EXPECT_NE(text.find("All:        p50:   0.150s    133/s"), std::string::npos) << text;
  EXPECT_NE(text.find("Server1:  rank 3, 150 rows, 16 lookups;  service p50 5.500 ms"), std::string::npos) << text;

  // JSON round trip keeps the servers.
  const Report back = report_from_json(to_json(rep));
  ASSERT_TRUE(back.runs.at(0).hybrid_ps.has_value());
  EXPECT_EQ(format_report(back), text);
}

TEST(HybridPsReport, InconsistentResultIsAnError) {
  const BenchmarkJob job = hybrid_job();
  const auto runs = plan_runs(job, 2);
  RunResult missing = fake_result();
  missing.servers.pop_back();
  try {
    summarize_run(runs[0], missing);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("1 parameter servers, the run has 2"), std::string::npos) << e.what();
  }
  RunResult short_repeats = fake_result();
  short_repeats.servers[0].update_seconds.pop_back();
  EXPECT_THROW(summarize_run(runs[0], short_repeats), std::runtime_error);
  RunResult empty = fake_result();
  empty.servers[1].lookup_queue_seconds[1].clear();
  try {
    summarize_run(runs[0], empty);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("servers[1].lookupQueueSeconds[1] is empty"), std::string::npos) << e.what();
  }
}

TEST(HybridPsReport, BadReportJsonNamesTheField) {
  const BenchmarkJob job = hybrid_job();
  const Report rep = build_report(job, plan_runs(job, 2), {{fake_result(), ""}});
  nlohmann::json j = to_json(rep);
  j["runs"][0]["hybridPs"]["servers"][1]["lookupQueueSeconds"]["p95"] = "slow";
  try {
    report_from_json(j);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("runs[0].hybridPs.servers[1].lookupQueueSeconds"), std::string::npos)
        << e.what();
  }
  j = to_json(rep);
  j["runs"][0]["hybridPs"]["servers"].erase(1);
  EXPECT_THROW(report_from_json(j), std::runtime_error);
}

}  // namespace
}  // namespace trainbench
