// The allreduce paradigm's core: nccl-tests' algbw/busbw arithmetic, the size list, the spec
// fields and their validation, and its way through RunResult -> RunReport -> Report (JSON, text
// table, diff).
#include <gtest/gtest.h>

#include "core/plan/run_config.hpp"
#include "core/report/allreduce_run.hpp"
#include "core/report/report.hpp"
#include "core/report/report_format.hpp"
#include "core/results/run_result.hpp"
#include "core/spec/allreduce.hpp"
#include "core/spec/spec.hpp"

namespace trainbench {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string job_yaml(const std::string& benchmark, const std::string& sweep) {
  return "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata: {name: ar}\nspec:\n  benchmark: " +
         benchmark + "\n  sweep:\n" + sweep;
}

std::string errors_of(const std::string& yaml) {
  try {
    parse_benchmark_job(yaml);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(AllreduceMath, AlgbwIsBytesPerSecond) {
  EXPECT_DOUBLE_EQ(allreduce_algbw(1000000000, 1.0), 1e9);
  EXPECT_DOUBLE_EQ(allreduce_algbw(1 << 20, 0.001), 1048576.0 / 0.001);
  EXPECT_DOUBLE_EQ(allreduce_algbw(1024, 0.0), 0.0);  // no division by zero
}

TEST(AllreduceMath, BusbwFactorIsNcclTests) {
  // nccl-tests doc/PERFORMANCE.md: busbw = algbw * 2(n-1)/n for all-reduce.
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(1), 0.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(4), 1.5);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(8), 1.75);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(16), 1.875);
  EXPECT_DOUBLE_EQ(allreduce_busbw(64 << 20, 0.02, 8), (64 << 20) / 0.02 * 1.75);
  EXPECT_DOUBLE_EQ(allreduce_busbw(64 << 20, 0.02, 2), allreduce_algbw(64 << 20, 0.02));
}

TEST(AllreduceSizes, DoublesFromMinToMax) {
  EXPECT_EQ(allreduce_sizes(1024, 8192), (std::vector<std::int64_t>{1024, 2048, 4096, 8192}));
  EXPECT_EQ(allreduce_sizes(4, 4), (std::vector<std::int64_t>{4}));
  EXPECT_EQ(allreduce_sizes(1024, 64LL << 20).size(), 17u);  // 2^10 .. 2^26
  EXPECT_THROW(allreduce_sizes(1000, 8192), std::invalid_argument);
  EXPECT_THROW(allreduce_sizes(8192, 1024), std::invalid_argument);
  const auto all = allreduce_size_values();
  ASSERT_EQ(all.size(), 29u);  // 2^2 .. 2^30
  EXPECT_EQ(all.front(), kAllreduceMinBytes);
  EXPECT_EQ(all.back(), kAllreduceMaxBytes);
  EXPECT_TRUE(is_power_of_two(1));
  EXPECT_FALSE(is_power_of_two(0));
  EXPECT_FALSE(is_power_of_two(-4));
  EXPECT_FALSE(is_power_of_two(96));
  EXPECT_EQ(allreduce_element_bytes("fp32"), 4);
  EXPECT_EQ(allreduce_element_bytes("bf16"), 2);
  EXPECT_EQ(format_byte_size(1024), "1 KiB");
  EXPECT_EQ(format_byte_size(64LL << 20), "64 MiB");
  EXPECT_EQ(format_byte_size(1LL << 30), "1 GiB");
  EXPECT_EQ(format_byte_size(512), "512 B");
}

TEST(AllreduceSpec, DefaultsAndNoModelNeeded) {
  const BenchmarkJob job =
      parse_benchmark_job(job_yaml("{paradigm: allreduce}", "    - {nodes: 1, devicesPerNode: 2}\n"));
  EXPECT_TRUE(job.benchmark.model.empty());
  EXPECT_EQ(job.benchmark.allreduce.min_bytes, 1024);
  EXPECT_EQ(job.benchmark.allreduce.max_bytes, 64LL << 20);
  EXPECT_EQ(job.benchmark.allreduce.dtype, "fp32");
  // The document form leaves the model out and round-trips.
  const nlohmann::json doc = to_json(job);
  EXPECT_FALSE(doc["spec"]["benchmark"].contains("model"));
  EXPECT_EQ(doc["spec"]["benchmark"]["allreduce"]["maxBytes"], 64LL << 20);
  EXPECT_EQ(to_json(parse_benchmark_job(doc.dump())), doc);
}

TEST(AllreduceSpec, FieldsAreReadAndPlanned) {
  const BenchmarkJob job = parse_benchmark_job(
      job_yaml("{model: mlp, allreduce: {minBytes: 4096, maxBytes: 1048576, dtype: fp16}, warmupSteps: 2}",
               "    - {nodes: 1, devicesPerNode: 2, paradigm: allreduce}\n    - {nodes: 1, devicesPerNode: 2}\n"));
  const auto runs = plan_runs(job, 2);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].paradigm, Paradigm::kAllreduce);
  EXPECT_EQ(runs[0].allreduce.min_bytes, 4096);
  EXPECT_EQ(runs[0].allreduce.max_bytes, 1048576);
  EXPECT_EQ(runs[0].allreduce.dtype, "fp16");
  EXPECT_EQ(runs[0].label(), "1M/2G allreduce");
  EXPECT_EQ(runs[1].label(), "1M/2G");
  const RunConfig back = run_config_from_json(to_json(runs[0]));
  EXPECT_EQ(back.allreduce.min_bytes, 4096);
  EXPECT_EQ(back.allreduce.dtype, "fp16");
  // A config without the section (an older planner) reads with the defaults.
  nlohmann::json old = to_json(runs[1]);
  old.erase("allreduce");
  EXPECT_EQ(run_config_from_json(old).allreduce.max_bytes, 64LL << 20);
}

TEST(AllreduceSpec, RefusesBadSizesAndDtypes) {
  const std::string sweep = "    - {nodes: 1, devicesPerNode: 2}\n";
  std::string e = errors_of(job_yaml("{paradigm: allreduce, allreduce: {minBytes: 1000}}", sweep));
  EXPECT_TRUE(contains(e, "spec.benchmark.allreduce.minBytes: must be a power of two")) << e;
  EXPECT_TRUE(contains(e, "use 512 or 1024")) << e;
  e = errors_of(job_yaml("{paradigm: allreduce, allreduce: {minBytes: 4096, maxBytes: 2048}}", sweep));
  EXPECT_TRUE(contains(e, "spec.benchmark.allreduce.minBytes: must be <= maxBytes (2048), got 4096")) << e;
  e = errors_of(job_yaml("{paradigm: allreduce, allreduce: {maxBytes: 2147483648}}", sweep));
  EXPECT_TRUE(contains(e, "spec.benchmark.allreduce.maxBytes: must be a power of two from 4 to 1073741824")) << e;
  e = errors_of(job_yaml("{paradigm: allreduce, allreduce: {minBytes: 2}}", sweep));
  EXPECT_TRUE(contains(e, "spec.benchmark.allreduce.minBytes")) << e;
  e = errors_of(job_yaml("{paradigm: allreduce, allreduce: {dtype: int8}}", sweep));
  EXPECT_TRUE(contains(e, "spec.benchmark.allreduce.dtype: must be one of [fp32, fp16, bf16]")) << e;
  e = errors_of(job_yaml("{paradigm: allreduce, allreduce: {size: 4}}", sweep));
  EXPECT_TRUE(contains(e, "spec.benchmark.allreduce.size: unknown field")) << e;
  // A training run in the sweep needs the model again.
  e = errors_of(job_yaml("{paradigm: allreduce}", sweep + "    - {nodes: 1, devicesPerNode: 2, paradigm: ddp}\n"));
  EXPECT_TRUE(contains(e, "spec.benchmark.model: is required")) << e;
}

AllreduceRunInfo info_2_sizes(double limit_bytes_per_sec) {
  AllreduceRunInfo i;
  i.dtype = "fp32";
  i.sizes_bytes = {1024, 1 << 20};
  i.limit.bytes_per_sec = limit_bytes_per_sec;
  i.limit.buffer_bytes = 256 << 20;
  i.limit.copies = 5;
  i.warmup_ops = 2;
  i.ops_per_repeat = 10;
  i.verified = true;
  return i;
}

TEST(AllreduceSummary, MeanOverRanksThenMedianOverRepeats) {
  // [rank][repeat][size]
  const std::vector<std::vector<std::vector<double>>> secs = {
      {{10e-6, 1.0e-3}, {30e-6, 3.0e-3}, {20e-6, 2.0e-3}},
      {{12e-6, 1.2e-3}, {32e-6, 3.2e-3}, {22e-6, 2.2e-3}},
  };
  const AllreduceReport r = summarize_allreduce(info_2_sizes(4e9), secs, 2);
  ASSERT_EQ(r.sizes.size(), 2u);
  EXPECT_NEAR(r.sizes[0].time_us, 21.0, 1e-9);  // repeats' rank means 11, 31, 21 -> p50 21
  EXPECT_NEAR(r.sizes[1].time_us, 2100.0, 1e-9);
  EXPECT_EQ(r.sizes[1].elements, (1 << 20) / 4);
  const double algbw = (1 << 20) / 2.1e-3;
  EXPECT_NEAR(r.sizes[1].algbw_gbps, algbw / 1e9, 1e-12);
  EXPECT_NEAR(r.sizes[1].busbw_gbps, algbw / 1e9, 1e-12);  // n = 2: factor 1
  EXPECT_NEAR(r.sizes[1].busbw_fraction, algbw / 4e9, 1e-12);
  EXPECT_EQ(r.repeats, 3);
  EXPECT_TRUE(r.verified);
  // Four ranks: busbw = 1.5 algbw.
  const auto secs4 = std::vector<std::vector<std::vector<double>>>(4, {{1e-3, 1e-3}});
  const AllreduceReport r4 = summarize_allreduce(info_2_sizes(0), secs4, 4);
  EXPECT_NEAR(r4.sizes[1].busbw_gbps, 1.5 * (1 << 20) / 1e-3 / 1e9, 1e-12);
  EXPECT_EQ(r4.sizes[1].busbw_fraction, 0.0);  // no limit measured
  // Shapes must agree.
  EXPECT_THROW(summarize_allreduce(info_2_sizes(1e9), {{{1e-3}}}, 1), std::runtime_error);
}

/// A job with a single-device ddp run (a would-be baseline) and a 2-rank allreduce run, and
/// their results.
struct Fixture {
  BenchmarkJob job = parse_benchmark_job(job_yaml(
      "{model: mlp, batchSizePerDevice: 4}",
      "    - {nodes: 1, devicesPerNode: 1}\n    - {nodes: 1, devicesPerNode: 2, paradigm: allreduce}\n"));
  std::vector<RunConfig> runs = plan_runs(job, 2);
  RunResult ddp() const {
    RunResult r;
    r.run_index = 0;
    r.world_size = 1;
    RankResult rk;
    rk.step_seconds = {{0.1, 0.1}};
    r.ranks.push_back(rk);
    return r;
  }
  RunResult allreduce() const {
    RunResult r;
    r.run_index = 1;
    r.world_size = 2;
    r.allreduce = info_2_sizes(5e9);
    for (int k = 0; k < 2; ++k) {
      RankResult rk;
      rk.rank = k;
      rk.local_rank = k;
      rk.step_seconds = {{20e-6, 1e-3}, {22e-6, 1.1e-3}, {21e-6, 0.9e-3}};
      r.ranks.push_back(rk);
    }
    return r;
  }
};

TEST(AllreduceReport, TravelsThroughResultReportAndJson) {
  Fixture f;
  // The result JSON (rank 0 -> executor / master pod) keeps the all-reduce part.
  const RunResult back = run_result_from_json(nlohmann::json::parse(to_json(f.allreduce()).dump()));
  ASSERT_TRUE(back.allreduce.has_value());
  EXPECT_EQ(back.allreduce->sizes_bytes, (std::vector<std::int64_t>{1024, 1 << 20}));
  EXPECT_DOUBLE_EQ(back.allreduce->limit.bytes_per_sec, 5e9);
  EXPECT_FALSE(run_result_from_json(to_json(f.ddp())).allreduce.has_value());

  const Report rep = build_report(f.job, f.runs, {RunOutcome{f.ddp(), ""}, RunOutcome{back, ""}});
  ASSERT_EQ(rep.runs.size(), 2u);
  const RunReport& ar = rep.runs[1];
  ASSERT_EQ(ar.phase, "Succeeded") << ar.error;
  ASSERT_TRUE(ar.allreduce.has_value());
  EXPECT_NEAR(ar.allreduce->sizes[1].time_us, 1000.0, 1e-9);
  EXPECT_NEAR(ar.allreduce->sizes[1].busbw_fraction, (1 << 20) / 1e-3 / 5e9, 1e-12);
  EXPECT_NEAR(ar.sec_per_iter.p50, 1e-3, 1e-15);  // seconds per all-reduce of the largest size
  EXPECT_EQ(ar.examples_per_sec.p50, 0.0);
  EXPECT_FALSE(ar.speedup.has_value());
  EXPECT_FALSE(ar.loss_start.has_value());
  EXPECT_EQ(rep.baseline_run, 0);
  EXPECT_TRUE(rep.runs[0].speedup.has_value());

  // The report JSON (--json, the ConfigMap's run summary, the job's status) round-trips.
  const nlohmann::json j = to_json(rep);
  EXPECT_EQ(j["runs"][1]["allreduce"]["sizes"][1]["bytes"], 1 << 20);
  EXPECT_EQ(j["runs"][1]["allreduce"]["limit"]["kind"], "hostMemcpy");
  EXPECT_FALSE(j["runs"][0].contains("allreduce"));
  const Report again = report_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(again.runs[1].allreduce.has_value());
  EXPECT_EQ(to_json(again), j);
  // The master pod's path: summarize_run alone, then run_report_from_json.
  const RunReport one = run_report_from_json(to_json(summarize_run(f.runs[1], back)), "run");
  ASSERT_TRUE(one.allreduce.has_value());
  EXPECT_EQ(one.allreduce->sizes.size(), 2u);
}

TEST(AllreduceReport, AWorldOfOneIsNeverTheBaseline) {
  const BenchmarkJob job = parse_benchmark_job(job_yaml("{paradigm: allreduce}", "    - {}\n"));
  const auto runs = plan_runs(job, 2);
  RunResult r;
  r.world_size = 1;
  r.allreduce = info_2_sizes(5e9);
  RankResult rk;
  rk.step_seconds = {{1e-6, 1e-4}};
  r.ranks.push_back(rk);
  const Report rep = build_report(job, runs, {RunOutcome{r, ""}});
  EXPECT_FALSE(rep.baseline_run.has_value());
  EXPECT_EQ(rep.runs[0].allreduce->sizes[1].busbw_gbps, 0.0);  // one rank: nothing crosses a link
}

TEST(AllreduceReport, TextTableAndDiff) {
  Fixture f;
  const Report rep = build_report(f.job, f.runs, {RunOutcome{f.ddp(), ""}, RunOutcome{f.allreduce(), ""}});
  const std::string text = format_report(rep);
  EXPECT_TRUE(contains(text, "2 CPUs -- 1M/2G allreduce:  all-reduce: its table follows")) << text;
  EXPECT_TRUE(contains(text, "2 CPUs -- 1M/2G allreduce: all-reduce, fp32, 2 ranks (busbw = algbw x 1)")) << text;
  EXPECT_TRUE(contains(text, "limit: host memcpy 5.00 GB/s (256 MiB buffer, best of 5)")) << text;
  EXPECT_TRUE(contains(text, "size       count    time (us)  algbw GB/s  busbw GB/s  busbw/limit")) << text;
  EXPECT_TRUE(contains(text, "   1 MiB      262144       1000.0        1.05        1.05       0.2097")) << text;
  EXPECT_TRUE(contains(text, "sums verified")) << text;

  // Only allreduce runs: just the tables after the environment.
  const BenchmarkJob only = parse_benchmark_job(job_yaml("{paradigm: allreduce}", "    - {devicesPerNode: 2}\n"));
  RunResult ar = f.allreduce();
  ar.run_index = 0;
  const Report rep2 = build_report(only, plan_runs(only, 2), {RunOutcome{ar, ""}});
  const std::string text2 = format_report(rep2);
  EXPECT_TRUE(contains(text2, "Benchmark: all-reduce (communication only)")) << text2;
  EXPECT_FALSE(contains(text2, "ex/sec")) << text2;
  EXPECT_TRUE(contains(text2, "busbw/limit")) << text2;

  // diff: busbw per size; the training rows as before.
  Report test = rep;
  test.runs[1].allreduce->sizes[1].busbw_gbps *= 1.1;
  const std::string d = format_diff(rep, test);
  EXPECT_TRUE(contains(d, "1M/2G allreduce:  all-reduce: busbw compared below")) << d;
  EXPECT_TRUE(contains(d, "2 CPUs -- 1M/2G allreduce: all-reduce busbw (GB/s), baseline fp32 vs test fp32")) << d;
  EXPECT_TRUE(contains(d, "+10.0%")) << d;
  // An allreduce run on one side only is said so.
  const std::string d2 = format_diff(rep2, rep);
  EXPECT_TRUE(contains(d2, "only in")) << d2;
}

}  // namespace
}  // namespace trainbench
