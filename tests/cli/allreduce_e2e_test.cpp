// `trainbench run` of a paradigm-allreduce job with the real worker (2 ranks, gloo, a few sizes):
// the table and the JSON are there, busbw is positive and a sane fraction of the measured copy
// limit, `trainbench diff` compares it, and a rank that contributes a wrong value fails the run
// (the workers verify the sums). Skipped when the build has no trainbench-worker.
#include <fstream>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace trainbench::test {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string allreduce_job(const std::string& name) {
  return "apiVersion: trainbench.dev/v1alpha1\n"
         "kind: BenchmarkJob\n"
         "metadata: {name: " + name + "}\n"
         "spec:\n"
         "  benchmark:\n"
         "    paradigm: allreduce\n"
         "    warmupSteps: 2\n"
         "    measureSteps: 5\n"
         "    repeats: 3\n"
         "    allreduce: {minBytes: 1024, maxBytes: 65536}\n"
         "  sweep:\n"
         "    - {nodes: 1, devicesPerNode: 2}\n";
}

class AllreduceE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    if (real_worker_exe().empty()) GTEST_SKIP() << "this build has no trainbench-worker";
  }
  TempDir dir;
  std::string marker = unique_marker();
  EnvChanges env() { return {{"TRAINBENCH_TEST_MARKER", marker}, {"TMPDIR", dir.path()}}; }
};

TEST_F(AllreduceE2e, TwoRanksReportBusbwAgainstTheCopyLimit) {
  const std::string job = dir.file("ar.yaml");
  write_file(job, allreduce_job("cli-e2e-allreduce"));
  const CliResult r = run_cli({"run", job, "--json", dir.file("ar.json")}, env(), dir.path(), 120);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "Benchmark: all-reduce (communication only)")) << r.out;
  EXPECT_TRUE(contains(r.out, "2 CPUs -- 1M/2G allreduce: all-reduce, fp32, 2 ranks (busbw = algbw x 1)")) << r.out;
  EXPECT_TRUE(contains(r.out, "size       count    time (us)  algbw GB/s  busbw GB/s  busbw/limit")) << r.out;
  EXPECT_TRUE(contains(r.out, "limit: host memcpy")) << r.out;
  EXPECT_TRUE(contains(r.out, "sums verified")) << r.out;
  for (const char* size : {"   1 KiB", "  64 KiB"}) EXPECT_TRUE(contains(r.out, size)) << size << "\n" << r.out;

  const auto rep = nlohmann::json::parse(read_file(dir.file("ar.json")));
  ASSERT_EQ(rep["runs"].size(), 1u);
  const auto& run = rep["runs"][0];
  ASSERT_EQ(run["phase"], "Succeeded") << run.dump();
  EXPECT_EQ(run["paradigm"], "allreduce");
  EXPECT_EQ(run["label"], "1M/2G allreduce");
  EXPECT_FALSE(run.contains("stragglers")) << "pure communication: nothing to score";
  EXPECT_FALSE(run["ranks"][0].contains("computeSeconds"));
  const auto& ar = run["allreduce"];
  EXPECT_EQ(ar["worldSize"], 2);
  EXPECT_EQ(ar["busbwFactor"], 1.0);
  EXPECT_EQ(ar["verified"], true);
  EXPECT_EQ(ar["opsPerRepeat"], 5);
  EXPECT_EQ(ar["repeats"], 3);
  EXPECT_EQ(ar["limit"]["kind"], "hostMemcpy");
  const double limit = ar["limit"]["bytesPerSec"].get<double>();
  EXPECT_GT(limit, 1e8) << "a host copies more than 100 MB/s";
  EXPECT_GE(ar["limit"]["bufferBytes"].get<std::int64_t>(), 256LL << 20);
  ASSERT_EQ(ar["sizes"].size(), 7u);  // 1 KiB .. 64 KiB
  std::int64_t bytes = 1024;
  for (const auto& s : ar["sizes"]) {
    SCOPED_TRACE(s.dump());
    EXPECT_EQ(s["bytes"], bytes);
    EXPECT_EQ(s["elements"], bytes / 4);
    const double t = s["timeUs"].get<double>();
    EXPECT_GT(t, 0);
    EXPECT_NEAR(s["algbwGBps"].get<double>(), static_cast<double>(bytes) / (t * 1e-6) / 1e9, 1e-9);
    EXPECT_DOUBLE_EQ(s["busbwGBps"].get<double>(), s["algbwGBps"].get<double>());  // n = 2
    EXPECT_GT(s["busbwGBps"].get<double>(), 0);
    const double fraction = s["busbwFractionOfLimit"].get<double>();
    EXPECT_NEAR(fraction, s["busbwGBps"].get<double>() * 1e9 / limit, 1e-9);
    // Over loopback every byte is copied at least twice (into and out of the kernel), so busbw
    // stays well below the copy bandwidth; 4 leaves room for cache effects on small messages.
    EXPECT_GT(fraction, 0);
    EXPECT_LE(fraction, 4.0);
    bytes *= 2;
  }
  // The common fields: seconds per all-reduce of the largest size, no throughput, no speedup.
  EXPECT_NEAR(run["secPerIter"]["p50"].get<double>(), ar["sizes"][6]["timeUs"].get<double>() * 1e-6, 1e-12);
  EXPECT_EQ(run["examplesPerSec"]["p50"], 0.0);
  EXPECT_TRUE(run["speedup"].is_null());

  // diff compares busbw per size.
  const CliResult d = run_cli({"diff", dir.file("ar.json"), dir.file("ar.json")}, env(), dir.path(), 30);
  ASSERT_EQ(d.code, 0) << d.out << d.err;
  EXPECT_TRUE(contains(d.out, "all-reduce busbw (GB/s), baseline fp32 vs test fp32")) << d.out;
  EXPECT_TRUE(contains(d.out, "+0.0%")) << d.out;
}

TEST_F(AllreduceE2e, AWrongSumFailsTheRun) {
  const std::string job = dir.file("bad.yaml");
  write_file(job, allreduce_job("cli-e2e-allreduce-bad"));
  EnvChanges e = env();
  e["TRAINBENCH_WORKER"] = worker_with_test_options(dir, R"({"allreduceFaultRank":1})");
  const CliResult r = run_cli({"run", job, "--json", dir.file("bad.json")}, e, dir.path(), 120);
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_TRUE(contains(r.out + r.err, "all-reduce of 1 KiB (fp32) summed wrongly on 2 of 2 ranks")) << r.out << r.err;
  const auto rep = nlohmann::json::parse(read_file(dir.file("bad.json")));
  EXPECT_EQ(rep["runs"][0]["phase"], "Failed");
}

}  // namespace
}  // namespace trainbench::test
