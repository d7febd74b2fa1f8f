// `trainbench run` of a paradigm hybrid-ps job with the real worker: the local executor starts
// the trainers and the parameter servers (T + P processes), the RunResult carries both, and a
// server that dies fails the run naming its rank and role, with nothing left running.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace trainbench::test {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string hybrid_job(const std::string& name, int measure) {
  return "apiVersion: trainbench.dev/v1alpha1\n"
         "kind: BenchmarkJob\n"
         "metadata:\n"
         "  name: " +
         name +
         "\n"
         "spec:\n"
         "  benchmark:\n"
         "    model: hybrid-embedding\n"
         "    paradigm: hybrid-ps\n"
         "    batchSizePerDevice: 8\n"
         "    warmupSteps: 1\n"
         "    measureSteps: " +
         std::to_string(measure) +
         "\n"
         "    repeats: 2\n"
         "    threadsPerProcess: 1\n"
         "    hybridEmbedding: {numTables: 2, numEmbeddings: 20, embeddingDim: 4, bagSize: 3, denseSizes: [16, 8], "
         "numClasses: 4}\n"
         "    hybridPs: {parameterServers: 2}\n"
         "  sweep:\n"
         "    - {nodes: 1, devicesPerNode: 2}\n"
         "  runPolicy: {collectiveTimeoutSeconds: 20}\n";
}

class HybridPsRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (real_worker_exe().empty()) GTEST_SKIP() << "this build has no trainbench-worker";
  }
  TempDir dir;
  std::string marker = unique_marker();

  EnvChanges env() {
    return {{"TRAINBENCH_TEST_MARKER", marker}, {"TMPDIR", dir.path()}, {"TRAINBENCH_WORKER", real_worker_exe()}};
  }
  std::vector<pid_t> leftovers() {
    std::vector<pid_t> left;
    wait_until(5, [&] {
      left = processes_with_env(marker);
      return left.empty();
    });
    return left;
  }
};

TEST_F(HybridPsRun, TrainersAndServersReportTogether) {
  const std::string job = dir.file("hybrid.yaml");
  write_file(job, hybrid_job("cli-e2e-hybrid-ps", 4));
  const std::string logs = dir.file("logs");
  const CliResult r =
      run_cli({"run", job, "--keep-logs", logs, "--json", dir.file("report.json")}, env(), dir.path(), 120);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "starting 4 ranks")) << r.err;
  EXPECT_TRUE(contains(r.out, "2 CPUs -- 1M/2G hybrid-ps:")) << r.out;

  std::string run_dir;
  for (const auto& e : std::filesystem::directory_iterator(logs)) run_dir = e.path().string();
  ASSERT_FALSE(run_dir.empty()) << "no run directory under " << logs;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_TRUE(std::filesystem::exists(run_dir + "/rank-" + std::to_string(rank) + ".log")) << rank;
  }
  const auto result = nlohmann::json::parse(read_file(run_dir + "/result.json"));
  EXPECT_EQ(result["worldSize"], 2);
  ASSERT_EQ(result["ranks"].size(), 2u);
  ASSERT_EQ(result["servers"].size(), 2u);
  for (const auto& trainer : result["ranks"]) {
    // Each step split: a trainer waits for the servers' sums and the dense all-reduce.
    ASSERT_EQ(trainer["computeSeconds"].size(), 2u) << trainer.dump();
    ASSERT_EQ(trainer["communicationSeconds"][1].size(), 4u) << trainer.dump();
    for (const auto& v : trainer["communicationSeconds"][1]) EXPECT_GT(v.get<double>(), 0);
  }
  for (int s = 0; s < 2; ++s) {
    const auto& server = result["servers"][s];
    SCOPED_TRACE(server.dump());
    EXPECT_EQ(server["rank"], 2 + s);
    EXPECT_EQ(server["server"], s);
    EXPECT_EQ(server["rows"], 2 * 10);        // 2 tables x 10 of their 20 rows
    EXPECT_EQ(server["lookups"], 2 * 4 * 2);  // repeats x measured steps x trainers
    ASSERT_EQ(server["lookupServiceSeconds"].size(), 2u);
    ASSERT_EQ(server["lookupQueueSeconds"].size(), 2u);
    ASSERT_EQ(server["updateSeconds"].size(), 2u);
    for (int rep = 0; rep < 2; ++rep) {
      EXPECT_EQ(server["lookupServiceSeconds"][rep].size(), 8u);
      EXPECT_EQ(server["lookupQueueSeconds"][rep].size(), 8u);
      EXPECT_EQ(server["updateSeconds"][rep].size(), 4u);
      for (const auto& v : server["lookupServiceSeconds"][rep]) EXPECT_GT(v.get<double>(), 0);
    }
    EXPECT_GT(server["peakMemoryBytes"].get<std::int64_t>(), 0);
  }

  const auto rep = nlohmann::json::parse(read_file(dir.file("report.json")));
  ASSERT_EQ(rep["runs"].size(), 1u);
  const auto& run = rep["runs"][0];
  EXPECT_EQ(run["phase"], "Succeeded") << run.dump();
  EXPECT_EQ(run["paradigm"], "hybrid-ps");
  EXPECT_EQ(run["worldSize"], 2);
  EXPECT_NEAR(run["examplesPerSec"]["p50"].get<double>(), 16.0 / run["secPerIter"]["p50"].get<double>(), 1e-6);
  EXPECT_TRUE(leftovers().empty());
}

TEST_F(HybridPsRun, DeadServerFailsTheRunNamingIt) {
  const std::string job = dir.file("hybrid.yaml");
  write_file(job, hybrid_job("cli-e2e-hybrid-ps-fault", 200));
  EnvChanges e = env();
  // Parameter server 1 dies at its first measured step.
  e["TRAINBENCH_WORKER"] = worker_with_test_options(dir, R"({"sigkillRankAtFirstMeasuredStep":3})");
  const CliResult r = run_cli({"run", job, "--json", dir.file("report.json")}, e, dir.path(), 90);
  ASSERT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "rank 3 (parameter-server 1) was killed by SIGKILL")) << r.out;
  EXPECT_TRUE(contains(r.err, "rank 3 (parameter-server 1) was killed by SIGKILL")) << r.err;
  const auto rep = nlohmann::json::parse(read_file(dir.file("report.json")));
  EXPECT_EQ(rep["runs"][0]["phase"], "Failed");
  EXPECT_TRUE(leftovers().empty());
}

}  // namespace
}  // namespace trainbench::test
