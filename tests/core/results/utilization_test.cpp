// A rank's hardware utilization over its measured steps and the run's summary of its ranks
// (core/results/utilization.hpp), through the report (JSON, text).
#include "core/results/utilization.hpp"

#include <gtest/gtest.h>

#include "core/report/report.hpp"
#include "core/report/report_format.hpp"

namespace trainbench {
namespace {

TEST(Utilization, SentBytesFollowTheRingAlgorithms) {
  EXPECT_DOUBLE_EQ(allreduce_sent_bytes(1000, 2), 1000);  // 2 (p-1)/p = 1
  EXPECT_DOUBLE_EQ(allreduce_sent_bytes(1200, 4), 1800);  // 1.5
  EXPECT_DOUBLE_EQ(allreduce_sent_bytes(1000, 1), 0);     // nothing leaves a single rank
  EXPECT_DOUBLE_EQ(allgather_sent_bytes(100, 4), 300);
  EXPECT_DOUBLE_EQ(allgather_sent_bytes(100, 1), 0);
}

TEST(Utilization, AWindowDividesByItsWallTimeAndSteps) {
  UtilizationWindow w;
  w.begin({10.0, 2.0, 1000});
  w.add_gpu_sample(0.5, 100);
  w.add_gpu_sample(0.7, 300);
  const RankUtilization u = w.end({12.0, 5.0, 5000}, 4, 1 << 30, std::int64_t{2} << 30);
  EXPECT_DOUBLE_EQ(u.cpu_cores, 1.5);  // 3 CPU seconds in 2 wall seconds
  EXPECT_DOUBLE_EQ(u.network_bytes_per_step, 1000);
  EXPECT_EQ(u.peak_rss_bytes, 1 << 30);
  EXPECT_EQ(u.gpu_peak_allocated_bytes, std::int64_t{2} << 30);
  ASSERT_TRUE(u.gpu_utilization.has_value());
  EXPECT_DOUBLE_EQ(*u.gpu_utilization, 0.6);  // mean of the samples
  EXPECT_EQ(u.gpu_memory_used_bytes, 300);    // max of the samples
}

TEST(Utilization, AnEmptyWindowHasNoRatesAndACpuRunNoGpuFields) {
  UtilizationWindow w;
  w.begin({5.0, 1.0, 0});
  const RankUtilization u = w.end({5.0, 1.0, 0}, 0, 4096, std::nullopt);
  EXPECT_EQ(u.cpu_cores, 0);
  EXPECT_EQ(u.network_bytes_per_step, 0);
  EXPECT_FALSE(u.gpu_peak_allocated_bytes || u.gpu_utilization || u.gpu_memory_used_bytes);
}

RankUtilization rank(double cores, std::int64_t rss, double sent) {
  RankUtilization u;
  u.cpu_cores = cores;
  u.peak_rss_bytes = rss;
  u.network_bytes_per_step = sent;
  return u;
}

TEST(Utilization, TheRunMeansCpuAndBytesAndTakesTheLargestPeaks) {
  EXPECT_FALSE(summarize_utilization({}, 1).has_value());
  RankUtilization gpu = rank(3.0, 300, 30);
  gpu.gpu_utilization = 0.8;
  gpu.gpu_memory_used_bytes = 7000;
  gpu.gpu_peak_allocated_bytes = 5000;
  const auto s = summarize_utilization({rank(1.0, 100, 10), gpu}, 2);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->ranks, 2);
  EXPECT_DOUBLE_EQ(s->cpu_cores_mean, 2.0);
  EXPECT_DOUBLE_EQ(s->cpu_per_thread, 1.0);
  EXPECT_EQ(s->peak_rss_bytes_max, 300);
  EXPECT_DOUBLE_EQ(s->network_bytes_per_step_mean, 20);
  EXPECT_DOUBLE_EQ(*s->gpu_utilization_mean, 0.8);  // over the ranks that have a GPU
  EXPECT_EQ(s->gpu_memory_used_bytes_max, 7000);
  EXPECT_EQ(s->gpu_peak_allocated_bytes_max, 5000);
  const auto cpu = summarize_utilization({rank(0.5, 100, 0)}, 1);
  EXPECT_FALSE(cpu->gpu_utilization_mean || cpu->gpu_memory_used_bytes_max || cpu->gpu_peak_allocated_bytes_max);
}

TEST(Utilization, TheTextLineNamesEachNumberWithItsUnit) {
  RunUtilization u;
  u.threads_per_process = 1;
  u.cpu_cores_mean = 0.984;
  u.cpu_per_thread = 0.984;
  u.peak_rss_bytes_max = 412 * 1024 * 1024;
  u.network_bytes_per_step_mean = 38440;
  EXPECT_EQ(utilization_line(u), "CPU 0.98 cores/rank (98% of 1 thread), peak RSS 412.0 MiB, sent 37.5 KiB/step/rank");
  u.network_bytes_per_step_mean = 0;
  u.threads_per_process = 4;
  u.gpu_utilization_mean = 0.873;
  u.gpu_memory_used_bytes_max = std::int64_t{3} << 30;
  u.gpu_peak_allocated_bytes_max = std::int64_t{2} << 30;
  EXPECT_EQ(utilization_line(u),
            "CPU 0.98 cores/rank (98% of 4 threads), peak RSS 412.0 MiB, sent 0 B/step/rank, GPU 87% busy, "
            "3.00 GiB used, 2.00 GiB allocated");
}

TEST(Utilization, JsonRoundTripsAndBadFieldsAreNamed) {
  RankUtilization r = rank(1.25, 1 << 20, 512.5);
  EXPECT_EQ(to_json(rank_utilization_from_json(to_json(r), "u")), to_json(r));
  EXPECT_FALSE(to_json(r).contains("gpuUtilization"));
  r.gpu_utilization = 0.5;
  r.gpu_memory_used_bytes = 10;
  r.gpu_peak_allocated_bytes = 20;
  EXPECT_EQ(to_json(rank_utilization_from_json(to_json(r), "u")), to_json(r));
  const RunUtilization s = *summarize_utilization({r}, 2);
  EXPECT_EQ(to_json(run_utilization_from_json(to_json(s), "u")), to_json(s));
  auto error_of = [](const nlohmann::json& j) {
    try {
      rank_utilization_from_json(j, "runs[0].ranks[1].utilization");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  nlohmann::json bad = to_json(r);
  bad["gpuUtilization"] = 1.5;
  EXPECT_EQ(error_of(bad), "runs[0].ranks[1].utilization.gpuUtilization: must be at most 1");
  bad = to_json(r);
  bad["cpuCores"] = -1;
  EXPECT_EQ(error_of(bad), "runs[0].ranks[1].utilization.cpuCores: must be >= 0");
  bad.erase("cpuCores");
  EXPECT_NE(error_of(bad).find("runs[0].ranks[1].utilization.cpuCores"), std::string::npos) << error_of(bad);
}

BenchmarkJob job() {
  return parse_benchmark_job(R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: utilization-test}
spec:
  benchmark: {model: mlp, batchSizePerDevice: 10, measureSteps: 2, repeats: 1, warmupSteps: 1, threadsPerProcess: 2}
  sweep:
    - {nodes: 1, devicesPerNode: 1, paradigm: none}
    - {nodes: 1, devicesPerNode: 2}
)");
}

RunResult result(int world, bool with_utilization) {
  RunResult r;
  r.world_size = world;
  r.environment.threads_per_process = 2;
  for (int k = 0; k < world; ++k) {
    RankResult rk;
    rk.rank = k;
    rk.step_seconds = {{0.1, 0.2}};
    rk.peak_memory_bytes = 1 << 20;
    if (with_utilization) rk.utilization = rank(1.0 + k, (100 + k) << 20, world > 1 ? 4096.0 : 0.0);
    r.ranks.push_back(rk);
  }
  return r;
}

TEST(Utilization, TheReportCarriesEachRankAndTheRunsSummary) {
  const BenchmarkJob j = job();
  const Report rep = build_report(j, plan_runs(j, 2), {{result(1, true), ""}, {result(2, true), ""}});
  const RunReport& two = rep.runs[1];
  ASSERT_TRUE(two.utilization.has_value());
  EXPECT_DOUBLE_EQ(two.utilization->cpu_cores_mean, 1.5);
  EXPECT_DOUBLE_EQ(two.utilization->cpu_per_thread, 0.75);
  EXPECT_EQ(two.utilization->peak_rss_bytes_max, std::int64_t{101} << 20);
  EXPECT_DOUBLE_EQ(two.utilization->network_bytes_per_step_mean, 4096);
  ASSERT_TRUE(two.ranks[1].utilization.has_value());
  EXPECT_DOUBLE_EQ(two.ranks[1].utilization->cpu_cores, 2.0);
  const nlohmann::json js = to_json(rep);
  EXPECT_DOUBLE_EQ(js["runs"][1]["utilization"]["networkBytesPerStepMean"].get<double>(), 4096);
  EXPECT_DOUBLE_EQ(js["runs"][1]["ranks"][1]["utilization"]["cpuCores"].get<double>(), 2.0);
  EXPECT_EQ(to_json(report_from_json(js)), js);
  const std::string text = format_report(rep);
  EXPECT_NE(text.find("Hardware utilization over the measured steps"), std::string::npos) << text;
  const std::string want = "  CPU 1.50 cores/rank (75% of 2 threads), peak RSS 101.0 MiB, sent 4.0 KiB/step/rank\n";
  const std::size_t at = text.find(want);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_NE(text.substr(text.rfind('\n', at) + 1, at - text.rfind('\n', at)).find("2 CPUs -- 1M/2G"), std::string::npos)
      << text;
  EXPECT_NE(text.find("sent 0 B/step/rank"), std::string::npos) << text;
}

// Results and reports of older workers have no utilization: they read, and the text has no block.
TEST(Utilization, OlderResultsHaveNone) {
  const BenchmarkJob j = job();
  const Report rep = build_report(j, plan_runs(j, 2), {{result(1, false), ""}, {result(2, false), ""}});
  EXPECT_FALSE(rep.runs[1].utilization.has_value());
  const nlohmann::json js = to_json(rep);
  EXPECT_FALSE(js["runs"][1].contains("utilization"));
  EXPECT_FALSE(js["runs"][1]["ranks"][0].contains("utilization"));
  EXPECT_EQ(format_report(report_from_json(js)).find("Hardware utilization"), std::string::npos);
}

}  // namespace
}  // namespace trainbench
