// Program workloads through the real `trainbench run` (docs/workloads.md): small Python programs
// that use the probe library (python/trainbench_probe, pure Python: these need no PyTorch) or
// misuse it. A program that measures itself gets the report's rows, straggler scores and its
// communication split; a hostile one (never calls the probe, exits 0 without a record, prints
// 100 MB, writes a malformed record, hangs before its first step or inside one, outlives the
// deadline) gets a failed run naming the rank and what was missing, within the hang or deadline
// bound, with nothing left running.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace trainbench::test {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

class ProgramRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  }

  /// Runs `program` (Python source) as every rank of a job of `ranks` ranks, `measure` x
  /// `repeats` measured steps; `extra` goes under spec. Returns the CLI's result; the report
  /// is report.json, the run directories under keep/.
  CliResult run(const std::string& program, int ranks, int measure = 4, int repeats = 2,
                const std::string& extra = "", double timeout = 90) {
    write_file(dir.file("train.py"), program);
    const std::string job = dir.file("job.yaml");
    write_file(job, "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata: {name: mine}\nspec:\n"
                    "  benchmark: {batchSizePerDevice: 8, warmupSteps: 1, measureSteps: " +
                        std::to_string(measure) + ", repeats: " + std::to_string(repeats) +
                        "}\n  sweep: [{nodes: 1, devicesPerNode: " + std::to_string(ranks) +
                        "}]\n  workloads:\n    - name: mine\n      program: {command: [/usr/bin/python3, " +
                        dir.file("train.py") + "]}\n" + extra);
    // A job of programs only needs no trainbench-worker: the one named here does not exist.
    EnvChanges e{{"TRAINBENCH_TEST_MARKER", marker}, {"TMPDIR", dir.path()},
                 {"PYTHONPATH", std::string(TRAINBENCH_SOURCE_DIR) + "/python"},
                 {"TRAINBENCH_WORKER", dir.file("no-such-worker")}};
    return run_cli({"run", job, "--json", dir.file("report.json"), "--keep-logs", dir.file("keep")}, e, dir.path(),
                   timeout);
  }

  nlohmann::json first_run() { return nlohmann::json::parse(read_file(dir.file("report.json")))["runs"][0]; }

  /// The kept file `name` of the run (rank-R.log, ...); "" when absent.
  std::string kept_path(const std::string& name) {
    if (!fs::exists(dir.file("keep"))) return "";
    for (const auto& d : fs::directory_iterator(dir.file("keep"))) {
      if (fs::exists(d.path() / name)) return (d.path() / name).string();
    }
    return "";
  }

  void expect_failed(const CliResult& r, const std::string& fragment) {
    EXPECT_EQ(r.code, 3) << r.out << r.err;
    const auto run = first_run();
    EXPECT_EQ(run["phase"], "Failed") << run.dump();
    EXPECT_TRUE(contains(run.value("error", ""), fragment)) << run.value("error", "");
    EXPECT_TRUE(processes_left(marker).empty()) << "a rank was left running";
  }

  TempDir dir;
  std::string marker = unique_marker();
};

// Rank 1 computes twice as long; both wait 5 ms in an all-reduce phase each step.
const char* kMeasured = R"(
import os, time
from trainbench_probe import Probe
with Probe() as probe:
    for i in probe.steps():
        with probe.step():
            time.sleep(0.01 * (1 + probe.rank))
            with probe.phase("all-reduce"):
                time.sleep(0.005)
            probe.loss(2.0 / (i + 1))
)";

TEST_F(ProgramRun, ReportsAProgramThatUsesTheProbe) {
  const CliResult r = run(kMeasured, 2);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "workload mine:")) << r.out;
  EXPECT_TRUE(contains(r.out, "mine 1M/2G")) << r.out;
  EXPECT_TRUE(contains(r.err, "1 run of workloads mine\n")) << r.err;  // the banner names no worker
  const auto run = first_run();
  EXPECT_EQ(run["workload"], "mine");
  EXPECT_EQ(run["program"], true);
  ASSERT_EQ(run["ranks"].size(), 2u);
  const double comm = run["ranks"][0]["communicationSeconds"].get<double>();
  EXPECT_GT(comm, 0.004);
  EXPECT_LT(comm, 0.05);
  // rank 1's compute is twice rank 0's: it is the straggler, scored about 0.5
  EXPECT_LT(run["ranks"][1]["stragglerScore"].get<double>(), 0.7) << run["ranks"].dump();
  EXPECT_NEAR(run["lossStart"].get<double>(), 1.0, 1e-9);  // the first measured step is loop step 1
  EXPECT_TRUE(contains(run.value("framework", ""), "Python 3")) << run.dump();
  const double p50 = run["secPerIter"]["p50"].get<double>();
  EXPECT_GT(p50, 0.015);
  EXPECT_LT(p50, 0.2);
}

TEST_F(ProgramRun, NeverCallsTheProbe) {
  const CliResult r = run("print('training without a probe')\n", 2);
  expect_failed(r, "rank 0 exited 0 without its rank record");
  EXPECT_TRUE(contains(first_run().value("error", ""), "does not use the probe")) << first_run().dump();
}

TEST_F(ProgramRun, ExitsZeroBeforeItsLastStep) {
  const CliResult r = run(R"(
from trainbench_probe import Probe
probe = Probe()
with probe.step():
    pass
)",
                          1);
  expect_failed(r, "rank 0 exited 0 without its rank record");
}

TEST_F(ProgramRun, FinishingEarlyNamesTheStepsMissing) {
  const CliResult r = run(R"(
from trainbench_probe import Probe
probe = Probe()
with probe.step():
    pass
probe.finish()
)",
                          1);
  expect_failed(r, "measured 0 of 8 steps");  // the probe's error, the rank's last line
}

TEST_F(ProgramRun, PrintsAHundredMegabytes) {
  const CliResult r = run(R"(
import sys
line = "x" * 1023 + "\n"
for _ in range(100 * 1024):
    sys.stdout.write(line)
sys.stdout.flush()
)",
                          1, 4, 2, "", 120);
  expect_failed(r, "rank 0 exited 0 without its rank record");
  const std::string log = kept_path("rank-0.log");
  ASSERT_FALSE(log.empty());
  struct stat st {};
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
  EXPECT_LT(st.st_size, 18LL << 20) << "the log kept 100 MB";
  EXPECT_TRUE(contains(read_file(log), "of this rank's output dropped here")) << "no note of what was dropped";
  EXPECT_LT(r.err.size(), 64u * 1024) << "the CLI echoed the flood";
}

TEST_F(ProgramRun, WritesAMalformedRecord) {
  const CliResult r = run(R"(
import os
open(os.environ["TRAINBENCH_RANK_RECORD_FILE"], "w").write("{not json")
)",
                          2);
  expect_failed(r, "rank 0 wrote a bad rank record");
  EXPECT_TRUE(contains(first_run().value("error", ""), "is not JSON")) << first_run().dump();
}

TEST_F(ProgramRun, WritesARecordOfTheWrongShape) {
  const CliResult r = run(R"(
import json, os
rank = int(os.environ["RANK"])
rec = {"kind": "trainbench.dev/rank-record", "version": 1, "rank": rank, "worldSize": 2,
       "stepSeconds": [[0.1], [0.1]]}
open(os.environ["TRAINBENCH_RANK_RECORD_FILE"], "w").write(json.dumps(rec))
)",
                          2);
  expect_failed(r, "stepSeconds[0]: has 1 steps, the run measures 4 per repeat");
}

TEST_F(ProgramRun, HangsBeforeItsFirstStep) {
  const double start = now_s();
  const CliResult r = run("import time\ntime.sleep(600)\n", 2, 4, 2,
                          "  runPolicy: {collectiveTimeoutSeconds: 60, hangTimeoutSeconds: 3}\n");
  expect_failed(r, "hang: ranks 0, 1 published no progress");
  EXPECT_TRUE(contains(first_run().value("error", ""), "never created its probe")) << first_run().dump();
  EXPECT_LT(now_s() - start, 3 + 20) << "not within the hang bound";
}

TEST_F(ProgramRun, HangsInsideAStepNamingTheRankAndItsPhase) {
  // At loop step 2 rank 1 stops in its backward pass; rank 0 waits for it in an all-reduce.
  const CliResult r = run(R"(
import time
from trainbench_probe import Probe
probe = Probe()
for i in probe.steps():
    with probe.step():
        if i == 2:
            probe.phase("backward" if probe.rank == 1 else "all-reduce")
            time.sleep(600)
        time.sleep(0.01)
probe.finish()
)",
                          2, 4, 2, "  runPolicy: {collectiveTimeoutSeconds: 60, hangTimeoutSeconds: 3}\n");
  expect_failed(r, "hang: rank 1 (");
  const std::string error = first_run().value("error", "");
  EXPECT_TRUE(contains(error, "backward of step 3")) << error;
  EXPECT_TRUE(contains(error, "all-reduce")) << error;
}

TEST_F(ProgramRun, TheDeadlineStopsAProgram) {
  const double start = now_s();
  const CliResult r = run(R"(
import time
from trainbench_probe import Probe
probe = Probe()
for _ in probe.steps():
    with probe.step():
        time.sleep(60)
)",
                          2, 4, 2, "  runPolicy: {activeDeadlineSeconds: 2}\n");
  expect_failed(r, "run exceeded spec.runPolicy.activeDeadlineSeconds (2 s); all ranks were stopped");
  EXPECT_LT(now_s() - start, 2 + 15) << "not within the deadline";
}

TEST_F(ProgramRun, ACommandThatIsNotThere) {
  write_file(dir.file("job.yaml"),
             "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata: {name: mine}\nspec:\n"
             "  benchmark: {batchSizePerDevice: 8}\n  sweep: [{}]\n  workloads:\n"
             "    - {name: mine, program: {command: [no-such-trainer-xyz]}}\n");
  const CliResult r =
      run_cli({"run", dir.file("job.yaml"), "--json", dir.file("report.json")}, {{"TMPDIR", dir.path()}}, dir.path());
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_TRUE(contains(first_run().value("error", ""), "no-such-trainer-xyz: no executable of that name on PATH"))
      << first_run().dump();
}

}  // namespace
}  // namespace trainbench::test
