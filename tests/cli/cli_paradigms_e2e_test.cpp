// `trainbench run` with every training paradigm in one sweep (the DistributedTest comparison):
// none, ddp, zero, model-parallel and pipeline on the small mlp, with the real worker; the report
// carries the optimizer, per-rank optimizer state and parameters, the pipeline's stages and
// bubble, and the text report has the side-by-side table.
// (examples/paradigms.yaml is checked with the other examples by tests/crd.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace trainbench::test {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string paradigms_yaml() {
  return "apiVersion: trainbench.dev/v1alpha1\n"
         "kind: BenchmarkJob\n"
         "metadata:\n"
         "  name: cli-e2e-paradigms\n"
         "spec:\n"
         "  benchmark:\n"
         "    model: mlp\n"
         "    batchSizePerDevice: 8\n"
         "    warmupSteps: 1\n"
         "    measureSteps: 4\n"
         "    repeats: 1\n"
         "    threadsPerProcess: 1\n"
         "    optimizer: adam\n"
         "    learningRate: 0.001\n"
         "    pipeline: {microBatches: 4}\n"
         "    mlp: {inputSize: 64, hiddenSizes: [128], numClasses: 10}\n"
         "  sweep:\n"
         "    - {nodes: 1, devicesPerNode: 1, paradigm: none}\n"
         "    - {nodes: 1, devicesPerNode: 2, paradigm: ddp}\n"
         "    - {nodes: 1, devicesPerNode: 2, paradigm: zero}\n"
         "    - {nodes: 1, devicesPerNode: 2, paradigm: model-parallel}\n"
         "    - {nodes: 1, devicesPerNode: 2, paradigm: pipeline}\n";
}

TEST(CliParadigms, EveryParadigmSideBySide) {
  if (real_worker_exe().empty()) GTEST_SKIP() << "this build has no trainbench-worker";
  TempDir dir;
  const std::string job = dir.file("paradigms.yaml");
  write_file(job, paradigms_yaml());
  const CliResult r = run_cli({"run", job, "--json", dir.file("report.json")},
                              {{"TMPDIR", dir.path()}, {"TRAINBENCH_WORKER", std::nullopt}}, dir.path(), 150);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const char* row : {"1 CPUs -- no ddp:", "2 CPUs -- 1M/2G:", "2 CPUs -- 1M/2G zero:",
                          "2 CPUs -- 1M/2G model-parallel:", "2 CPUs -- 1M/2G pipeline:", "Paradigms side by side",
                          "pipeline x4", "optimizer state per device"}) {
    EXPECT_TRUE(contains(r.out, row)) << row << "\n" << r.out;
  }

  const auto rep = nlohmann::json::parse(read_file(dir.file("report.json")));
  ASSERT_EQ(rep["runs"].size(), 5u);
  const std::int64_t params = 64 * 128 + 128 + 128 * 10 + 10;
  for (const auto& run : rep["runs"]) {
    SCOPED_TRACE(run.dump());
    ASSERT_EQ(run["phase"], "Succeeded");
    EXPECT_EQ(run["optimizer"], "adam");
    EXPECT_EQ(run["parameterCount"], params);
    EXPECT_TRUE(run["lossStart"].is_number());
    EXPECT_TRUE(run["lossEnd"].is_number());
    EXPECT_LT(run["lossEnd"].get<double>(), run["lossStart"].get<double>()) << "training must lower the loss";
    const std::string paradigm = run["paradigm"];
    const bool staged = paradigm == "pipeline" || paradigm == "model-parallel";
    // A pipeline trains one batch per step over all its stages.
    const double batch = staged ? 8.0 : 8.0 * run["worldSize"].get<double>();
    EXPECT_NEAR(run["examplesPerSec"]["p50"].get<double>(), batch / run["secPerIter"]["p50"].get<double>(), 1e-6);
    std::int64_t state = 0, held = 0;
    for (const auto& rk : run["ranks"]) {
      state += rk["optimizerStateBytes"].get<std::int64_t>();
      held += rk["parameterCount"].get<std::int64_t>();
      EXPECT_GT(rk["peakMemoryBytes"].get<std::int64_t>(), 0);
      EXPECT_EQ(rk.contains("bubbleFraction"), staged);
      EXPECT_EQ(rk.contains("stage"), staged);
      // Every paradigm splits its steps: waiting on other ranks (none has no one to wait for).
      EXPECT_GT(rk["computeSeconds"].get<double>(), 0);
      if (paradigm == "none") {
        EXPECT_EQ(rk["communicationSeconds"].get<double>(), 0);
      } else {
        EXPECT_GT(rk["communicationSeconds"].get<double>(), 0);
      }
      EXPECT_EQ(rk.contains("stragglerScore"), !staged) << "stages do different work: not scored";
    }
    EXPECT_EQ(run.contains("stragglers"), !staged);
    if (paradigm == "ddp") {
      EXPECT_EQ(state, 2 * 2 * 4 * params) << "each rank holds Adam's whole state";
    } else {
      EXPECT_EQ(state, 2 * 4 * params) << "state held once";
    }
    EXPECT_EQ(held, staged || paradigm == "none" ? params : 2 * params);
    EXPECT_EQ(run.contains("pipeline"), staged);
    if (staged) {
      const int m = paradigm == "pipeline" ? 4 : 1;
      EXPECT_EQ(run["pipeline"]["stages"], 2);
      EXPECT_EQ(run["pipeline"]["microBatches"], m);
      EXPECT_EQ(run["pipeline"]["blockCount"], 2);
      EXPECT_EQ(run["pipeline"]["stageStarts"], nlohmann::json::array({0, 1}));
      EXPECT_DOUBLE_EQ(run["pipeline"]["theoreticalBubble"].get<double>(), 1.0 / (m + 1));
      EXPECT_EQ(run["ranks"][1]["stage"], 1);
    }
  }
  const auto& zero = rep["runs"][2]["ranks"];
  EXPECT_EQ(zero[0]["optimizerStateBytes"].get<std::int64_t>() + zero[1]["optimizerStateBytes"].get<std::int64_t>(),
            rep["runs"][1]["ranks"][0]["optimizerStateBytes"].get<std::int64_t>())
      << "zero's shards together hold what one ddp rank holds";
}

}  // namespace
}  // namespace trainbench::test
