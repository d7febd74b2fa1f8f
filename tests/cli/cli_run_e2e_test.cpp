// `trainbench run` end to end with the real libtorch worker: a small mlp sweep, a rank killed
// mid-run and an interrupted run. Skipped when the build has no trainbench-worker.
#include <signal.h>

#include <chrono>
#include <cmath>
#include <fstream>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/progress.hpp"
#include "cli_test_util.hpp"

namespace trainbench::test {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

class RealWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (real_worker_exe().empty()) GTEST_SKIP() << "this build has no trainbench-worker";
  }
  TempDir dir;
  std::string marker = unique_marker();

  /// The environment for the CLI: the worker found next to trainbench (no TRAINBENCH_WORKER),
  /// unless `explicit_worker`.
  EnvChanges env(bool explicit_worker = false) {
    EnvChanges e{{"TRAINBENCH_TEST_MARKER", marker}, {"TMPDIR", dir.path()}};
    e["TRAINBENCH_WORKER"] = explicit_worker ? std::optional<std::string>(real_worker_exe()) : std::nullopt;
    return e;
  }

  std::vector<pid_t> leftovers() {
    std::vector<pid_t> left;
    wait_until(5, [&] {
      left = processes_with_env(marker);
      return left.empty();
    });
    return left;
  }

  /// Starts a long 2-rank run and waits until rank 0 reports measuring; returns the CLI and
  /// the ranks' pids.
  std::pair<Spawned, std::map<int, pid_t>> start_long_run() {
    const std::string job = dir.file("long.yaml");
    write_file(job, mlp_job_yaml("cli-e2e-long", 2, 100000, 1, "    - {nodes: 1, devicesPerNode: 2}\n"));
    Spawned cli = spawn(trainbench_exe(), {"run", job, "--json", dir.file("long.json")}, env(true), dir.path());
    std::map<int, pid_t> ranks;
    std::string progress_file;
    wait_until(30, [&] {
      ranks.clear();
      for (pid_t c : children_of(cli.pid)) {
        auto e = environ_of(c);
        if (e.count("RANK")) {
          ranks[std::stoi(e["RANK"])] = c;
          progress_file = e["TRAINBENCH_PROGRESS_FILE"];
        }
      }
      return ranks.size() == 2;
    });
    EXPECT_EQ(ranks.size(), 2u) << read_file(cli.err_path);
    const bool measuring = wait_until(45, [&] {
      auto p = parse_progress(read_file(progress_file));
      return p && p->phase == "measure" && p->step >= 2;
    });
    EXPECT_TRUE(measuring) << "no measure progress in " << progress_file << "\n" << read_file(cli.err_path);
    return {cli, ranks};
  }
};

void expect_ordered(const nlohmann::json& p, const std::string& what) {
  for (const char* k : {"p50", "p75", "p90", "p95"}) EXPECT_GT(p[k].get<double>(), 0) << what << " " << k;
  EXPECT_LE(p["p50"].get<double>(), p["p75"].get<double>()) << what;
  EXPECT_LE(p["p75"].get<double>(), p["p90"].get<double>()) << what;
  EXPECT_LE(p["p90"].get<double>(), p["p95"].get<double>()) << what;
}

/// A run's utilization (docs/report.md, "Hardware utilization"): every rank kept its one compute
/// thread busy part of the time, holds more than a few MiB, and sends nothing alone or, in DDP
/// over 2 ranks, its gradients once per step (the ring's 2(p-1)/p = 1): the model's fp32 bytes.
void expect_plausible_utilization(const nlohmann::json& run, const std::string& paradigm) {
  const int world = run["worldSize"].get<int>();
  const auto& u = run["utilization"];
  EXPECT_EQ(u["ranks"], world);
  EXPECT_EQ(u["threadsPerProcess"], 1);
  const double gradient_bytes = 4.0 * run["parameterCount"].get<double>();
  const double sent = paradigm == "ddp" && world > 1 ? gradient_bytes * 2 * (world - 1) / world : 0.0;
  double cores = 0;
  for (const auto& rank : run["ranks"]) {
    const auto& ru = rank["utilization"];
    SCOPED_TRACE(ru.dump());
    EXPECT_GT(ru["cpuCores"].get<double>(), 0);
    EXPECT_LE(ru["cpuCores"].get<double>(), 1.0);  // threadsPerProcess: 1
    EXPECT_GT(ru["peakRssBytes"].get<double>(), 8.0 * 1024 * 1024);
    EXPECT_DOUBLE_EQ(ru["networkBytesPerStep"].get<double>(), sent);
    EXPECT_FALSE(ru.contains("gpuUtilization"));  // a CPU run
    cores += ru["cpuCores"].get<double>() / world;
  }
  EXPECT_NEAR(u["cpuCoresMean"].get<double>(), cores, 1e-9);
  EXPECT_DOUBLE_EQ(u["networkBytesPerStepMean"].get<double>(), sent);
}

TEST_F(RealWorkerTest, MlpSweepProducesSeedStyleReport) {
  const std::string job = dir.file("mlp.yaml");
  write_file(job, mlp_job_yaml("cli-e2e-mlp", 2, 10, 2,
                               "    - {nodes: 1, devicesPerNode: 1, paradigm: none}\n"
                               "    - {nodes: 1, devicesPerNode: 1}\n"
                               "    - {nodes: 1, devicesPerNode: 2}\n"));
  const CliResult r = run_cli({"run", job, "--json", dir.file("report.json")}, env(), dir.path(), 120);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "1 CPUs -- no ddp:")) << r.out;
  EXPECT_TRUE(contains(r.out, "1 CPUs -- 1M/1G:")) << r.out;
  EXPECT_TRUE(contains(r.out, "2 CPUs -- 1M/2G:")) << r.out;
  EXPECT_TRUE(contains(r.out, "p50:")) << r.out;

  const auto rep = nlohmann::json::parse(read_file(dir.file("report.json")));
  EXPECT_EQ(rep["schemaVersion"], 1);
  ASSERT_EQ(rep["runs"].size(), 3u);
  const std::vector<std::string> labels{"no ddp", "1M/1G", "1M/2G"};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& run = rep["runs"][i];
    SCOPED_TRACE(run.dump());
    EXPECT_EQ(run["label"], labels[i]);
    ASSERT_EQ(run["phase"], "Succeeded");
    expect_ordered(run["secPerIter"], "secPerIter");
    const int world = run["worldSize"].get<int>();
    for (const char* k : {"p50", "p75", "p90", "p95"}) {
      const double expected = 8.0 * world / run["secPerIter"][k].get<double>();
      EXPECT_NEAR(run["examplesPerSec"][k].get<double>(), expected, expected * 1e-9) << k;
    }
    EXPECT_TRUE(run["speedup"].is_number());
    EXPECT_TRUE(run["efficiency"].is_number());
    ASSERT_EQ(run["ranks"].size(), static_cast<std::size_t>(world));
    for (int k = 0; k < world; ++k) {
      EXPECT_EQ(run["ranks"][k]["rank"], k);
      expect_ordered(run["ranks"][k]["secPerIter"], "rank " + std::to_string(k));
    }
    // The verdicts (2 repeats: judged): the spread is the repeats' own, the row carries its marks.
    EXPECT_EQ(run["belowTarget"], run["efficiency"].get<double>() < 0.8);
    const auto& noise = run["noise"];
    const double a = run["repeats"][0]["p50"], b = run["repeats"][1]["p50"];
    EXPECT_NEAR(noise["repeatSpreadPercent"].get<double>(), std::abs(a - b) / ((a + b) / 2) * 100, 1e-9);
    const bool noisy = noise["repeatSpreadPercent"].get<double>() > 10;
    EXPECT_EQ(noise["verdict"], noisy ? "noisy" : "quiet");
    EXPECT_EQ(noise["advice"].empty(), !noisy);
    EXPECT_EQ(noise["processesPerHost"], world);
    EXPECT_EQ(noise["hostCores"], rep["environment"]["cpuCores"]);
    const std::string row = r.out.substr(r.out.find(std::to_string(world) + " CPUs -- " + labels[i].c_str() + ":"));
    const std::string line = row.substr(0, row.find('\n'));
    EXPECT_EQ(contains(line, "noisy ["), noisy) << line;
    EXPECT_EQ(contains(line, "below target ["), run["belowTarget"].get<bool>()) << line;
    expect_plausible_utilization(run, i == 0 ? "none" : "ddp");
    // MFU against the GEMM every worker timed at the start of the run (worker/peak_gemm).
    const auto& mfu = run["mfu"];
    const double flops = mfu["flopsPerExample"], achieved = mfu["achievedTFLOPS"], peak = mfu["peakTFLOPS"];
    EXPECT_NEAR(achieved, flops * run["examplesPerSec"]["p50"].get<double>() / world / 1e12, achieved * 1e-9);
    EXPECT_GT(peak, 0);
    EXPECT_EQ(mfu["peakSource"].get<std::string>().rfind("measured GEMM ", 0), 0U) << mfu;
    EXPECT_NEAR(mfu["mfu"].get<double>(), achieved / peak, 1e-9);
  }
  EXPECT_TRUE(contains(r.out, "Model FLOPs utilization (training FLOPs = 3 x forward")) << r.out;
  EXPECT_TRUE(contains(r.out, "Hardware utilization over the measured steps")) << r.out;
  EXPECT_GE(rep["environment"]["cpuCores"].get<int>(), 1);
  EXPECT_TRUE(contains(r.out, "noise (the spread of the repeats' p50 sec/iter, threshold 10%): ")) << r.out;
  EXPECT_TRUE(contains(r.out, "efficiency target 80%: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "* CPU cores usable: ")) << r.out;
  EXPECT_TRUE(leftovers().empty());
}

TEST_F(RealWorkerTest, KilledRankFailsTheRunAndNothingIsLeftBehind) {
  auto [cli, ranks] = start_long_run();
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_GE(processes_with_env(marker).size(), 3u) << "the leftover check must see the CLI and its ranks";
  ASSERT_EQ(::kill(ranks[1], SIGKILL), 0);
  const auto t0 = std::chrono::steady_clock::now();
  const auto code = wait_exit(cli.pid, 30);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(code.has_value()) << "the CLI did not exit";
  const std::string out = read_file(cli.out_path), err = read_file(cli.err_path);
  EXPECT_EQ(*code, 3) << out << err;
  EXPECT_LT(took, 15.0);
  EXPECT_TRUE(contains(out, "FAILED: rank 1 was killed by SIGKILL")) << out;
  EXPECT_TRUE(contains(err, "rank 1 was killed by SIGKILL")) << err;
  const auto rep = nlohmann::json::parse(read_file(dir.file("long.json")));
  EXPECT_EQ(rep["runs"][0]["phase"], "Failed");
  for (const auto& [rank, pid] : ranks) EXPECT_FALSE(process_exists(pid)) << "rank " << rank;
  EXPECT_TRUE(children_of(cli.pid).empty());
  EXPECT_TRUE(leftovers().empty());
}

TEST_F(RealWorkerTest, SigintStopsTheRunAndExits130) {
  auto [cli, ranks] = start_long_run();
  ASSERT_EQ(ranks.size(), 2u);
  ASSERT_EQ(::kill(cli.pid, SIGINT), 0);
  const auto code = wait_exit(cli.pid, 15);
  ASSERT_TRUE(code.has_value()) << "the CLI did not exit";
  EXPECT_EQ(*code, 130) << read_file(cli.err_path);
  for (const auto& [rank, pid] : ranks) EXPECT_FALSE(process_exists(pid)) << "rank " << rank;
  EXPECT_TRUE(leftovers().empty());
}

}  // namespace
}  // namespace trainbench::test
