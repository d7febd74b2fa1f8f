// `trainbench run` with scripted fake workers (no libtorch): the local executor's protocol,
// failure handling and process cleanup.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "core/plan/run_config.hpp"
#include "core/results/run_result.hpp"

namespace trainbench::test {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const std::string kTwoRuns =
    "    - {nodes: 1, devicesPerNode: 1, paradigm: none}\n"
    "    - {nodes: 1, devicesPerNode: 2}\n";

/// A plausible RunResult for run `index` with `world` ranks, as the worker would write it; every
/// rank's step times per repeat are `steps`.
std::string fake_result(int index, int world,
                        const std::vector<std::vector<double>>& steps = {{0.010, 0.011, 0.012, 0.013},
                                                                         {0.011, 0.012, 0.013, 0.014}},
                        std::optional<int> cpu_cores = std::nullopt) {
  RunResult r;
  r.run_index = index;
  r.world_size = world;
  r.parameter_count = 9610;
  r.ddp_bucket_count = world > 1 ? 1 : 0;
  r.environment.trainbench_version = "0.1.0";
  r.environment.libtorch_version = "fake";
  r.environment.backend = "gloo";
  r.environment.device = "cpu";
  r.environment.device_name = "fake cpu";
  r.environment.hostname = "localhost";
  r.environment.cpu_cores = cpu_cores;
  for (int k = 0; k < world; ++k) {
    RankResult rk;
    rk.rank = k;
    rk.local_rank = k;
    rk.step_seconds = steps;
    rk.peak_memory_bytes = 1 << 20;
    r.ranks.push_back(rk);
  }
  return to_json(r).dump();
}

/// Processes of this test's runs still alive (the marker is only in their environment).
std::vector<pid_t> leftovers(const std::string& marker) {
  std::vector<pid_t> left;
  wait_until(5, [&] {
    left = processes_with_env(marker);
    return left.empty();
  });
  return left;
}

/// Waits until the CLI has `n` children that have exec'd the worker (RANK in their env).
std::map<int, pid_t> wait_for_ranks(pid_t cli, int n, double timeout_s = 20) {
  std::map<int, pid_t> ranks;
  wait_until(timeout_s, [&] {
    ranks.clear();
    for (pid_t c : children_of(cli)) {
      auto env = environ_of(c);
      if (env.count("RANK")) ranks[std::stoi(env["RANK"])] = c;
    }
    return static_cast<int>(ranks.size()) == n;
  });
  return ranks;
}

class FakeWorkerTest : public ::testing::Test {
 protected:
  TempDir dir;
  std::string marker = unique_marker();

  std::string worker(const std::string& body) {
    const std::string path = dir.file("fake-worker.sh");
    write_file(path, "#!/bin/sh\n" + body, /*executable=*/true);
    return path;
  }
  EnvChanges env(const std::string& worker_path) {
    return {{"TRAINBENCH_WORKER", worker_path}, {"TRAINBENCH_TEST_MARKER", marker}, {"TMPDIR", dir.path()},
            {"FAKE_DIR", dir.path()}};
  }
  std::string job(const std::string& sweep, const std::string& spec_extra = "") {
    const std::string path = dir.file("job.yaml");
    write_file(path, mlp_job_yaml("fake-job", 2, 4, 2, sweep, spec_extra));
    return path;
  }
  /// run-* directories left in the temporary base directories under dir.
  int kept_run_dirs() {
    int n = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path())) {
      if (e.is_directory() && e.path().filename().string().rfind("run-", 0) == 0) ++n;
    }
    return n;
  }
};

// The verdicts end to end: run 1's two repeats disagree (p50 0.020 vs 0.030 s: 40%) on a host of
// one core, and its 2 ranks at a median 0.025 s/step scale to 48% of the one-rank run.
TEST_F(FakeWorkerTest, ReportCarriesNoiseAndEfficiencyVerdicts) {
  write_file(dir.file("result-ws1.json"),
             fake_result(0, 1, {{0.012, 0.012, 0.012, 0.012}, {0.012, 0.012, 0.012, 0.012}}));
  write_file(dir.file("result-ws2.json"),
             fake_result(1, 2, {{0.019, 0.020, 0.020, 0.021}, {0.029, 0.030, 0.030, 0.031}}, 1));
  const std::string w =
      worker("if [ \"$RANK\" = 0 ]; then cp \"$FAKE_DIR/result-ws$WORLD_SIZE.json\" \"$TRAINBENCH_RESULT_FILE\"; fi\n");
  const CliResult r = run_cli({"run", job(kTwoRuns), "--json", dir.file("out.json")}, env(w), dir.path());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  // text: the row's marks, one summary line per verdict, a footnote per mark
  EXPECT_TRUE(contains(r.out, "48.0%  below target [1]  noisy [2]\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "efficiency target 80%: 1 of 2 runs below it\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "threshold 10%): 1 of 2 runs noisy, the others' repeats agree within 0.0%\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "[1] 2 CPUs -- 1M/2G: scaling efficiency 48.0% is below the target 80%")) << r.out;
  EXPECT_TRUE(
      contains(r.out, "[2] 2 CPUs -- 1M/2G is noisy: the repeats' p50 sec/iter differ by 40.0% (threshold 10%)"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "    what would help: fewer processes than cores: 2 processes x 1 thread share 1 core"))
      << r.out;
  // JSON: the same verdicts, typed
  const auto report = nlohmann::json::parse(read_file(dir.file("out.json")));
  EXPECT_EQ(report["benchmark"]["efficiencyTarget"], 0.8);
  EXPECT_EQ(report["benchmark"]["noiseThresholdPercent"], 10);
  const auto& run1 = report["runs"][1];
  EXPECT_EQ(run1["belowTarget"], true);
  EXPECT_EQ(run1["noise"]["verdict"], "noisy");
  EXPECT_NEAR(run1["noise"]["repeatSpreadPercent"].get<double>(), 40, 1e-9);
  EXPECT_EQ(run1["noise"]["hostCores"], 1);
  EXPECT_EQ(run1["noise"]["processesPerHost"], 2);
  EXPECT_GE(run1["noise"]["advice"].size(), 2u);
  EXPECT_EQ(report["runs"][0]["noise"]["verdict"], "quiet");
  EXPECT_EQ(report["runs"][0]["belowTarget"], false);
  EXPECT_TRUE(leftovers(marker).empty());
  // `trainbench report` prints the saved JSON exactly as `run` printed it.
  const CliResult again = run_cli({"report", dir.file("out.json")}, {}, dir.path());
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out, r.out);
}

TEST_F(FakeWorkerTest, SucceedsPassesEnvironmentAndWritesReport) {
  write_file(dir.file("result-ws1.json"), fake_result(0, 1));
  write_file(dir.file("result-ws2.json"), fake_result(1, 2));
  const std::string w = worker(
      "env > \"$FAKE_DIR/env-$MASTER_PORT-rank-$RANK\"\n"
      "if [ \"$RANK\" = 0 ]; then\n"
      "  printf '{\"phase\":\"measure\",\"repeat\":1,\"repeats\":2,\"step\":4,\"steps\":4,\"secPerIter\":0.01}' "
      "> \"$TRAINBENCH_PROGRESS_FILE.tmp\" && mv \"$TRAINBENCH_PROGRESS_FILE.tmp\" \"$TRAINBENCH_PROGRESS_FILE\"\n"
      "  sleep 0.3\n"
      "  cp \"$FAKE_DIR/result-ws$WORLD_SIZE.json\" \"$TRAINBENCH_RESULT_FILE\"\n"
      "fi\n"
      "echo \"fake worker rank $RANK done\"\n");
  auto e = env(w);
  e["TRAINBENCH_DUMP_PARAMS"] = "test-hook-value";
  const CliResult r = run_cli({"run", job(kTwoRuns), "--json", dir.file("out.json")}, e, dir.path());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "1 CPUs -- no ddp:  p50:")) << r.out;
  EXPECT_TRUE(contains(r.out, "2 CPUs -- 1M/2G:  p50:")) << r.out;
  EXPECT_TRUE(contains(r.err, "run 2/2 [1M/2G mlp] done")) << r.err;

  const auto report = nlohmann::json::parse(read_file(dir.file("out.json")));
  EXPECT_EQ(report["schemaVersion"], 1);
  ASSERT_EQ(report["runs"].size(), 2u);
  EXPECT_EQ(report["runs"][0]["phase"], "Succeeded");
  EXPECT_EQ(report["runs"][1]["phase"], "Succeeded");
  EXPECT_EQ(report["runs"][1]["ranks"].size(), 2u);

  // Every rank got the parent's environment plus its torchrun variables.
  int dumps = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
    const std::string name = f.path().filename().string();
    if (name.rfind("env-", 0) != 0) continue;
    ++dumps;
    const std::string text = read_file(f.path().string());
    EXPECT_TRUE(contains(text, "TRAINBENCH_DUMP_PARAMS=test-hook-value\n")) << name;
    EXPECT_TRUE(contains(text, "TRAINBENCH_TEST_MARKER=" + marker + "\n")) << name;
    EXPECT_TRUE(contains(text, "MASTER_ADDR=127.0.0.1\n")) << name;
    EXPECT_TRUE(contains(text, "TRAINBENCH_RESULT_FILE=")) << name;
    EXPECT_TRUE(contains(text, "TRAINBENCH_PROGRESS_FILE=")) << name;
    EXPECT_TRUE(contains(text, "TRAINBENCH_RUN_CONFIG=")) << name;
    const std::string rank = name.substr(name.rfind('-') + 1);
    EXPECT_TRUE(contains(text, "\nRANK=" + rank + "\n")) << name;
    EXPECT_TRUE(contains(text, "\nLOCAL_RANK=" + rank + "\n")) << name;
  }
  EXPECT_EQ(dumps, 3);  // 1 rank + 2 ranks
  EXPECT_EQ(kept_run_dirs(), 0) << "successful runs' directories are removed";
  EXPECT_TRUE(leftovers(marker).empty());
}

TEST_F(FakeWorkerTest, KeepLogsKeepsEveryRunDirectory) {
  write_file(dir.file("result-ws1.json"), fake_result(0, 1));
  const std::string w = worker(
      "echo \"hello from rank $RANK\"\n"
      "[ \"$RANK\" = 0 ] && cp \"$FAKE_DIR/result-ws$WORLD_SIZE.json\" \"$TRAINBENCH_RESULT_FILE\"\n"
      "exit 0\n");
  const std::string logs = dir.file("logs");
  const CliResult r = run_cli({"run", job("    - {nodes: 1, devicesPerNode: 1}\n"), "--keep-logs", logs}, env(w),
                              dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_file(logs + "/run-0-1M-1G/rank-0.log"), "hello from rank 0\n");
  EXPECT_TRUE(std::ifstream(logs + "/run-0-1M-1G/result.json").good());
}

TEST_F(FakeWorkerTest, QuickShortensStepsAndRepeatsOnly) {
  write_file(dir.file("result-ws1.json"), fake_result(0, 1));
  const std::string w = worker(
      "printf '%s' \"$TRAINBENCH_RUN_CONFIG\" > \"$FAKE_DIR/config.json\"\n"
      "cp \"$FAKE_DIR/result-ws$WORLD_SIZE.json\" \"$TRAINBENCH_RESULT_FILE\"\n");
  const std::string path = dir.file("quick.yaml");
  write_file(path, mlp_job_yaml("fake-quick", 5, 40, 3, "    - {nodes: 1, devicesPerNode: 1}\n"));
  const CliResult r = run_cli({"run", path, "--quick", "--json", dir.file("out.json")}, env(w), dir.path());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto config = nlohmann::json::parse(read_file(dir.file("config.json")));
  EXPECT_EQ(config["warmupSteps"], 1);
  EXPECT_EQ(config["measureSteps"], 2);
  EXPECT_EQ(config["repeats"], 1);
  EXPECT_EQ(config["batchSizePerDevice"], 8) << "--quick leaves the model and batch alone";
  const auto report = nlohmann::json::parse(read_file(dir.file("out.json")));
  EXPECT_EQ(report["benchmark"]["measureSteps"], 2) << "the report records the shortened job";
}

TEST_F(FakeWorkerTest, WorkerFailingImmediatelyFailsRunsAndStillWritesReport) {
  const std::string w = worker(
      "echo \"loading model...\"\n"
      "echo \"trainbench-worker rank $RANK: simulated failure: unknown layer\" >&2\n"
      "exit 1\n");
  const CliResult r = run_cli({"run", job(kTwoRuns), "--json", dir.file("out.json")}, env(w), dir.path());
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(contains(r.out, "1 CPUs -- no ddp:  FAILED: rank 0 exited with code 1: trainbench-worker rank 0: "
                              "simulated failure: unknown layer"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "2 CPUs -- 1M/2G:  FAILED: rank ")) << r.out;
  EXPECT_TRUE(contains(r.err, "logs kept in ")) << r.err;
  EXPECT_TRUE(contains(r.err, "simulated failure")) << r.err;

  const auto report = nlohmann::json::parse(read_file(dir.file("out.json")));
  ASSERT_EQ(report["runs"].size(), 2u);
  for (const auto& run : report["runs"]) {
    EXPECT_EQ(run["phase"], "Failed");
    EXPECT_TRUE(contains(run["error"].get<std::string>(), "simulated failure: unknown layer")) << run.dump();
  }
  EXPECT_EQ(kept_run_dirs(), 2) << "failed runs keep their logs";
  EXPECT_TRUE(leftovers(marker).empty());
}

TEST_F(FakeWorkerTest, OneRankFailingStopsTheOthers) {
  const std::string w = worker(
      "if [ \"$RANK\" = 1 ]; then sleep 0.5; echo \"trainbench-worker rank 1: connection reset\" >&2; exit 1; fi\n"
      "exec sleep 300\n");
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r = run_cli({"run", job("    - {nodes: 1, devicesPerNode: 3}\n")}, env(w), dir.path(), 30);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_LT(took, 10.0);
  EXPECT_TRUE(contains(r.out, "FAILED: rank 1 exited with code 1: trainbench-worker rank 1: connection reset"))
      << r.out;
  EXPECT_TRUE(leftovers(marker).empty());
}

TEST_F(FakeWorkerTest, RankKilledBySignalIsNamed) {
  const std::string w = worker("[ \"$RANK\" = 1 ] && kill -SEGV $$\nexec sleep 300\n");
  const CliResult r = run_cli({"run", job("    - {nodes: 1, devicesPerNode: 2}\n")}, env(w), dir.path(), 30);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(contains(r.out, "FAILED: rank 1 was killed by SIGSEGV")) << r.out;
  EXPECT_TRUE(leftovers(marker).empty());
}

TEST_F(FakeWorkerTest, DeadlineStopsRanksThatIgnoreSigterm) {
  // The shell and its `sleep` child both ignore SIGTERM: only the SIGKILL to the process group
  // after the grace period ends them.
  const std::string w = worker("trap '' TERM\nsleep 300\necho unreachable\n");
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r = run_cli({"run", job("    - {nodes: 1, devicesPerNode: 2}\n", "  runPolicy: {activeDeadlineSeconds: 1}\n"),
                               "--json", dir.file("out.json")},
                              env(w), dir.path(), 30);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_GE(took, 1.0);
  EXPECT_LT(took, 10.0);
  EXPECT_TRUE(contains(r.out, "FAILED: run exceeded spec.runPolicy.activeDeadlineSeconds (1 s)")) << r.out;
  const auto report = nlohmann::json::parse(read_file(dir.file("out.json")));
  EXPECT_EQ(report["runs"][0]["phase"], "Failed");
  EXPECT_TRUE(leftovers(marker).empty());
}

TEST_F(FakeWorkerTest, SuccessWithoutResultFileFails) {
  const std::string w = worker("exit 0\n");
  const CliResult r = run_cli({"run", job("    - {nodes: 1, devicesPerNode: 1}\n")}, env(w), dir.path());
  EXPECT_EQ(r.code, 3);
  EXPECT_TRUE(contains(r.out, "FAILED: all ranks exited 0 but rank 0 wrote no result")) << r.out;
}

TEST_F(FakeWorkerTest, InvalidResultFileFails) {
  const std::string w = worker("[ \"$RANK\" = 0 ] && echo '{\"runIndex\": 0}' > \"$TRAINBENCH_RESULT_FILE\"\nexit 0\n");
  const CliResult r = run_cli({"run", job("    - {nodes: 1, devicesPerNode: 1}\n")}, env(w), dir.path());
  EXPECT_EQ(r.code, 3);
  EXPECT_TRUE(contains(r.out, "FAILED: invalid result ")) << r.out;
  EXPECT_TRUE(contains(r.out, "worldSize")) << r.out;
}

TEST_F(FakeWorkerTest, MissingWorkerIsAnError) {
  const CliResult r = run_cli({"run", job(kTwoRuns)}, env(dir.file("no-such-worker")), dir.path());
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, "TRAINBENCH_WORKER=" + dir.file("no-such-worker") + " is not an executable file"))
      << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(FakeWorkerTest, SigintAndSigtermStopAllRanks) {
  for (int sig : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(sig);
    const std::string w = worker("exec sleep 300\n");
    const Spawned cli = spawn(trainbench_exe(), {"run", job("    - {nodes: 1, devicesPerNode: 2}\n"), "--json",
                                                 dir.file("out.json")},
                              env(w), dir.path());
    const auto ranks = wait_for_ranks(cli.pid, 2);
    ASSERT_EQ(ranks.size(), 2u) << read_file(cli.err_path);
    EXPECT_GE(processes_with_env(marker).size(), 3u) << "the leftover check must see the CLI and its ranks";
    ASSERT_EQ(::kill(cli.pid, sig), 0);
    const auto code = wait_exit(cli.pid, 15);
    ASSERT_TRUE(code.has_value());
    EXPECT_EQ(*code, 128 + sig) << read_file(cli.err_path);
    EXPECT_TRUE(contains(read_file(cli.err_path), "interrupted by")) << read_file(cli.err_path);
    EXPECT_FALSE(std::ifstream(dir.file("out.json")).good());
    for (const auto& [rank, pid] : ranks) EXPECT_FALSE(process_exists(pid)) << "rank " << rank;
    EXPECT_TRUE(leftovers(marker).empty());
  }
}

TEST_F(FakeWorkerTest, RanksDieWithASigkilledCli) {
  const std::string w = worker("exec sleep 300\n");
  const Spawned cli = spawn(trainbench_exe(), {"run", job("    - {nodes: 1, devicesPerNode: 2}\n")}, env(w),
                            dir.path());
  const auto ranks = wait_for_ranks(cli.pid, 2);
  ASSERT_EQ(ranks.size(), 2u) << read_file(cli.err_path);
  ASSERT_EQ(::kill(cli.pid, SIGKILL), 0);
  EXPECT_EQ(wait_exit(cli.pid, 10), 128 + SIGKILL);
  // PR_SET_PDEATHSIG(SIGKILL): the ranks go with their parent.
  EXPECT_TRUE(leftovers(marker).empty());
}

/// A one-rank result with five repeats about 1% apart (p50 0.0115 s x 0.990 .. 1.010).
std::string five_repeat_result() {
  RunResult r = run_result_from_json(nlohmann::json::parse(fake_result(0, 1)));
  r.ranks[0].step_seconds.clear();
  for (double f : {0.990, 1.005, 1.000, 1.010, 0.995}) {
    r.ranks[0].step_seconds.push_back({0.010 * f, 0.011 * f, 0.012 * f, 0.013 * f});
  }
  return to_json(r).dump();
}

TEST_F(FakeWorkerTest, BaselineComparesAfterTheReportAndExitsAsDiffDoes) {
  write_file(dir.file("result-ws1.json"), five_repeat_result());
  const std::string w = worker("cp \"$FAKE_DIR/result-ws$WORLD_SIZE.json\" \"$TRAINBENCH_RESULT_FILE\"\n");
  const std::string one = "    - {nodes: 1, devicesPerNode: 1}\n";
  CliResult r = run_cli({"run", job(one), "--json", dir.file("base.json")}, env(w), dir.path());
  ASSERT_EQ(r.code, 0) << r.out << r.err;

  // The same numbers again: no significant change.
  r = run_cli({"run", job(one), "--baseline", dir.file("base.json")}, env(w), dir.path());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "\nCompared with the baseline " + dir.file("base.json") + ":\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "~ (p=1.000 n=5+5)")) << r.out;
  EXPECT_TRUE(contains(r.out, "regression check: ok: no row significantly slower by more than 5%")) << r.out;

  // A baseline 10% quicker per step: this run is significantly slower by 10% of ex/sec.
  nlohmann::json quicker = nlohmann::json::parse(read_file(dir.file("base.json")));
  for (auto& rep : quicker["runs"][0]["repeats"]) rep["p50"] = rep["p50"].get<double>() * 0.9;
  write_file(dir.file("quicker.json"), quicker.dump());
  r = run_cli({"run", job(one), "--baseline", dir.file("quicker.json"), "--json", dir.file("new.json")}, env(w),
              dir.path());
  EXPECT_EQ(r.code, 4) << r.out << r.err;
  const std::string verdict =
      "regression check: REGRESSED: 1 of 1 compared rows significantly slower by more than 5% "
      "(p50 ex/sec)\n  1 CPUs -- 1M/1G: ex/sec -10.0% [";
  EXPECT_TRUE(contains(r.out, verdict)) << r.out;
  const CliResult d =
      run_cli({"diff", dir.file("quicker.json"), dir.file("new.json"), "--fail-on-regression", "5"}, {}, dir.path());
  EXPECT_EQ(d.code, 4) << d.out;
  EXPECT_TRUE(contains(d.out, verdict)) << d.out;

  // The threshold comes from spec.baseline, and --fail-on-regression overrides it.
  const std::string lenient = dir.file("lenient.yaml");
  write_file(lenient, mlp_job_yaml("fake-job", 2, 4, 2, one,
                                   "  baseline: {benchmarkJob: earlier-job, regressionThresholdPercent: 20}\n"));
  r = run_cli({"run", lenient, "--baseline", dir.file("quicker.json")}, env(w), dir.path());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "regression check: ok: no row significantly slower by more than 20%")) << r.out;
  r = run_cli({"run", lenient, "--baseline", dir.file("quicker.json"), "--fail-on-regression", "5"}, env(w),
              dir.path());
  EXPECT_EQ(r.code, 4) << r.out << r.err;
  EXPECT_TRUE(leftovers(marker).empty());
}

TEST_F(FakeWorkerTest, BadBaselineFailsBeforeAnyRun) {
  const std::string w = worker("touch \"$FAKE_DIR/worker-ran\"\nexit 1\n");
  write_file(dir.file("junk.json"), "{\"schemaVersion\": 1}");
  CliResult r = run_cli({"run", job(kTwoRuns), "--baseline", dir.file("junk.json")}, env(w), dir.path());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "trainbench run: --baseline " + dir.file("junk.json") + ": kind")) << r.err;
  r = run_cli({"run", job(kTwoRuns), "--fail-on-regression", "5"}, env(w), dir.path());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "--fail-on-regression needs --baseline BASE.json")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("worker-ran")));
}

}  // namespace
}  // namespace trainbench::test
