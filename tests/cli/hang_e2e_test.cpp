// Hang detection through `trainbench run` with the real worker: one rank stops itself (SIGSTOP,
// as a hung driver or a stuck data loader looks) and the local executor names it, where it
// stood and where the others wait, within hangTimeoutSeconds + 10 s of the stop, fails the run
// and leaves nothing running (the stopped rank included). DDP, a parameter server, a pipeline
// stage.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace trainbench::test {
namespace {

namespace fs = std::filesystem;

constexpr int kHangTimeout = 5;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

double wall_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

const std::string kRunPolicy =
    "  runPolicy: {collectiveTimeoutSeconds: 90, hangTimeoutSeconds: " + std::to_string(kHangTimeout) + "}\n";

class HangRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (real_worker_exe().empty()) GTEST_SKIP() << "this build has no trainbench-worker";
  }

  /// Runs `yaml` with rank `rank` stopping itself at loop step `step`; checks what every hang
  /// must show and returns the hang message.
  std::string run_hung(const std::string& yaml, int rank, int step) {
    const std::string job = dir.file("job.yaml");
    write_file(job, yaml);
    EnvChanges e{{"TRAINBENCH_TEST_MARKER", marker}, {"TMPDIR", dir.path()}};
    e["TRAINBENCH_WORKER"] = worker_with_test_options(
        dir, R"({"sigstopRank":)" + std::to_string(rank) + R"(,"sigstopAtStep":)" + std::to_string(step) + "}");
    const CliResult r = run_cli({"run", job, "--json", dir.file("report.json")}, e, dir.path(), 110);
    const double ended = wall_now();
    EXPECT_EQ(r.code, 3) << r.out << r.err;
    const auto rep = nlohmann::json::parse(read_file(dir.file("report.json")));
    const auto& run = rep["runs"][0];
    EXPECT_EQ(run["phase"], "Failed") << run.dump();
    const std::string error = run.value("error", "");
    std::cout << "hang message: " << error << "\n";
    EXPECT_TRUE(contains(error, "hang: rank " + std::to_string(rank) + " (")) << error;
    EXPECT_TRUE(contains(error, "(no heartbeat for ")) << error;
    EXPECT_TRUE(contains(r.err, "hang: rank " + std::to_string(rank))) << r.err;
    // The stopped rank published its record just before it stopped: detection (and the stop of
    // every rank, 3 s of grace included) within hangTimeoutSeconds + 10 s of that.
    const std::string record = kept_file("rank-" + std::to_string(rank) + ".progress.json");
    EXPECT_FALSE(record.empty()) << "no progress record of rank " << rank << " kept";
    if (!record.empty()) {
      const double stopped = nlohmann::json::parse(record)["published"].get<double>();
      EXPECT_LE(ended - stopped, kHangTimeout + 10.0) << error;
      EXPECT_GE(ended - stopped, kHangTimeout - 1.0) << error;
    }
    EXPECT_TRUE(processes_left(marker).empty()) << "processes left running";
    return error;
  }

  /// A file of the run directory the failed run kept under TMPDIR ("" if none).
  std::string kept_file(const std::string& name) {
    for (const auto& entry : fs::recursive_directory_iterator(dir.path())) {
      if (entry.path().filename() == name) return read_file(entry.path().string());
    }
    return "";
  }

  TempDir dir;
  std::string marker = unique_marker();
};

// 4-rank DDP, rank 2 stopped at the start of step 4: the others wait in its all-reduce. PyTorch's
// reducer (the default) waits for all its buckets at once, at the end of backward: the step's
// all-reduce is named; trainbench's names the bucket.
TEST_F(HangRun, DdpStoppedRankIsNamedAndEverythingStops) {
  const std::string error =
      run_hung(mlp_job_yaml("cli-e2e-hang-ddp", 2, 200, 1, "    - {nodes: 1, devicesPerNode: 4}\n", kRunPolicy), 2, 3);
  EXPECT_TRUE(contains(error, "in forward of step 4 for ")) << error;
  EXPECT_TRUE(contains(error, "; ranks 0, 1, 3 wait in all-reduce #")) << error;
  EXPECT_TRUE(contains(error, "all ranks were stopped")) << error;
}

TEST_F(HangRun, DdpOfTrainbenchNamesTheBucket) {
  std::string yaml = mlp_job_yaml("cli-e2e-hang-ddp-tb", 2, 200, 1, "    - {nodes: 1, devicesPerNode: 4}\n", kRunPolicy);
  const auto sweep = yaml.find("  sweep:\n");
  ASSERT_NE(sweep, std::string::npos) << yaml;
  yaml.insert(sweep, "    ddp: {implementation: trainbench}\n");
  const std::string error = run_hung(yaml, 2, 3);
  EXPECT_TRUE(contains(error, "; ranks 0, 1, 3 wait in all-reduce #")) << error;
  EXPECT_TRUE(contains(error, "(bucket 1 of 1) since ")) << error;
}

// hybrid-ps with 2 trainers and 2 parameter servers; server 1 (rank 3) stops: the trainers wait
// for its lookups.
TEST_F(HangRun, StalledParameterServerIsNamed) {
  const std::string yaml =
      "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata:\n  name: cli-e2e-hang-ps\nspec:\n"
      "  benchmark:\n    model: hybrid-embedding\n    paradigm: hybrid-ps\n    batchSizePerDevice: 8\n"
      "    warmupSteps: 1\n    measureSteps: 200\n    repeats: 1\n    threadsPerProcess: 1\n"
      "    hybridEmbedding: {numTables: 2, numEmbeddings: 20, embeddingDim: 4, bagSize: 3, denseSizes: [16, 8], "
      "numClasses: 4}\n    hybridPs: {parameterServers: 2}\n  sweep:\n    - {nodes: 1, devicesPerNode: 2}\n" +
      kRunPolicy;
  const std::string error = run_hung(yaml, 3, 2);
  EXPECT_TRUE(contains(error, "hang: rank 3 (parameter server 1, pid ")) << error;
  EXPECT_TRUE(contains(error, "waiting for the trainers' requests of step 3")) << error;
  EXPECT_TRUE(contains(error, "ranks 0, 1 wait for a lookup from parameter server 1 (rank 3) since ")) << error;
}

// A 3-stage pipeline of the mlp, the middle stage stops: its neighbours wait on it.
TEST_F(HangRun, StalledPipelineStageIsNamed) {
  const std::string yaml =
      "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata:\n  name: cli-e2e-hang-pipe\nspec:\n"
      "  benchmark:\n    model: mlp\n    paradigm: pipeline\n    batchSizePerDevice: 8\n    warmupSteps: 1\n"
      "    measureSteps: 200\n    repeats: 1\n    threadsPerProcess: 1\n"
      "    mlp: {inputSize: 64, hiddenSizes: [32, 32], numClasses: 10}\n    pipeline: {microBatches: 2}\n"
      "  sweep:\n    - {nodes: 1, devicesPerNode: 3}\n" +
      kRunPolicy;
  const std::string error = run_hung(yaml, 1, 2);
  EXPECT_TRUE(contains(error, "hang: rank 1 (pid ")) << error;
  EXPECT_TRUE(contains(error, "in forward of step 3")) << error;
  // Stage 0 waits for its gradients, stage 2 for its activations: both from stage 1.
  EXPECT_TRUE(contains(error, "; ranks 0, 2 wait in recv from rank 1 since ")) << error;
}

// A healthy run ends with every rank's record saying "done"; hangTimeoutSeconds 0 turns the
// watch off and no rank writes a record.
TEST_F(HangRun, RecordsEndDoneAndZeroTimeoutWritesNone) {
  for (const int timeout : {30, 0}) {
    const std::string job = dir.file("job.yaml");
    write_file(job, mlp_job_yaml("cli-e2e-hang-off", 1, 3, 1, "    - {nodes: 1, devicesPerNode: 2}\n",
                                 "  runPolicy: {hangTimeoutSeconds: " + std::to_string(timeout) + "}\n"));
    const std::string keep = dir.file("kept-" + std::to_string(timeout));
    const CliResult r = run_cli({"run", job, "--keep-logs", keep},
                                {{"TMPDIR", dir.path()}, {"TRAINBENCH_WORKER", real_worker_exe()}}, dir.path(), 110);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    std::vector<std::string> phases;
    bool logs_kept = false;
    for (const auto& entry : fs::recursive_directory_iterator(keep)) {
      logs_kept = logs_kept || entry.path().filename() == "rank-1.log";
      if (entry.path().filename().string().find(".progress.json") == std::string::npos) continue;
      phases.push_back(nlohmann::json::parse(read_file(entry.path().string()))["phase"].get<std::string>());
    }
    EXPECT_TRUE(logs_kept);
    if (timeout == 0) {
      EXPECT_TRUE(phases.empty());
    } else {
      EXPECT_EQ(phases, (std::vector<std::string>{"done", "done"}));
    }
  }
}

}  // namespace
}  // namespace trainbench::test
