// paradigm hybrid-ps with real worker processes (T trainers + P parameter servers):
//  - equivalence: after k steps the embedding rows (gathered from the servers' dumps) and the
//    dense parameters (every trainer's) equal one process holding the whole HybridEmbeddingModel
//    and training on the trainers' concatenated batches (TRAINBENCH_REFERENCE_WORLD_SIZE), tables
//    with plain SGD and the dense part with SGD momentum 0.9, within 1e-6;
//  - the RunResult: T ranks and P servers with their rows, lookups and per-request times;
//  - a server that dies fails every process (no hang: the collective timeout bounds every
//    receive), and a WORLD_SIZE without the servers is a clear configuration error.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <ostream>

#include <nlohmann/json.hpp>

#include "core/results/run_result.hpp"
#include "worker_launcher.hpp"

namespace {

using trainbench::Optimizer;
using trainbench::Paradigm;
using trainbench::RankPlacement;
using trainbench::RunConfig;
using trainbench::RunResult;
using trainbench::test::ProcessOutcome;
using trainbench::test::read_file;
using trainbench::test::read_float32_file;
using trainbench::test::run_process;
using trainbench::test::run_ranks;
using trainbench::test::TempDir;
using trainbench::test::worker_path;

constexpr int kSteps = 3;
constexpr int kTables = 3;
constexpr int kRows = 11;  // uneven shards: 5/6 rows for 2 servers, 3/4/4 for 3
constexpr int kDim = 4;
constexpr int kBag = 3;

RunConfig hybrid_run(int trainers, int servers) {
  RunConfig c;
  c.job_name = "worker-hybrid-ps-test";
  c.paradigm = Paradigm::kHybridPs;
  c.model = "hybrid-embedding";
  c.devices_per_node = trainers;
  c.parameter_servers = servers;
  c.hybrid_embedding.num_tables = kTables;
  c.hybrid_embedding.num_embeddings = kRows;
  c.hybrid_embedding.embedding_dim = kDim;
  c.hybrid_embedding.bag_size = kBag;
  c.hybrid_embedding.dense_sizes = {16, 8};
  c.hybrid_embedding.num_classes = 5;
  c.batch_size_per_device = 6;
  c.warmup_steps = 0;
  c.measure_steps = kSteps;
  c.repeats = 1;
  c.seed = 2024;
  c.learning_rate = 0.1;
  c.optimizer = Optimizer::kSgd;
  c.threads_per_process = 1;
  c.collective_timeout_seconds = 30;
  return c;
}

constexpr std::int64_t kDenseParameters = (kTables * kDim) * 16 + 16 + 16 * 8 + 8 + 8 * 5 + 5;
constexpr std::int64_t kTableParameters = static_cast<std::int64_t>(kTables) * kRows * kDim;

std::int64_t shard_begin(int s, int servers) { return static_cast<std::int64_t>(s) * kRows / servers; }
std::int64_t shard_rows(int s, int servers) { return shard_begin(s + 1, servers) - shard_begin(s, servers); }

void expect_all_ok(const std::vector<ProcessOutcome>& outs) {
  for (std::size_t r = 0; r < outs.size(); ++r) {
    ASSERT_EQ(outs[r].exit_code, 0) << "rank " << r << (outs[r].timed_out ? " timed out" : "") << ":\n"
                                    << outs[r].output;
  }
}

/// One process holding the whole model, trained on the batches of trainers 0..T-1 (the
/// worker's test hook); returns its parameters (tables, then the dense part) and its result.
std::vector<float> reference(const RunConfig& c, double learning_rate, const TempDir& dir, const std::string& name,
                             RunResult* result = nullptr) {
  RunConfig ref = c;
  ref.learning_rate = learning_rate;
  auto env = trainbench::rank_environment(ref, RankPlacement{}, "127.0.0.1", trainbench::test::free_port());
  env["WORLD_SIZE"] = "1";
  env["LOCAL_WORLD_SIZE"] = "1";
  env["TRAINBENCH_REFERENCE_WORLD_SIZE"] = std::to_string(c.world_size());
  env["TRAINBENCH_DUMP_PARAMS"] = dir.file(name);
  env["TRAINBENCH_RESULT_FILE"] = dir.file(name + "-result.json");
  const ProcessOutcome out = run_process({worker_path()}, env);
  EXPECT_EQ(out.exit_code, 0) << out.output;
  if (result)
    *result = trainbench::run_result_from_json(nlohmann::json::parse(read_file(dir.file(name + "-result.json"))));
  return read_float32_file(dir.file(name) + ".rank0.bin");
}

struct Case {
  int trainers;
  int servers;
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << c.trainers << " trainers, " << c.servers << " servers";
}

class HybridPsEquivalence : public ::testing::TestWithParam<Case> {};

TEST_P(HybridPsEquivalence, MatchesOneProcessOnTheConcatenatedBatches) {
  const Case tc = GetParam();
  const int T = tc.trainers, P = tc.servers;
  TempDir dir;
  const RunConfig c = hybrid_run(T, P);
  const auto outs = run_ranks(
      c, {{"TRAINBENCH_DUMP_PARAMS", dir.file("hps")}, {"TRAINBENCH_RESULT_FILE", dir.file("hps-result.json")}});
  expect_all_ok(outs);
  ASSERT_EQ(outs.size(), static_cast<std::size_t>(T + P));

  // The servers' rows, put back together table by table; the trainers' dense parameters.
  std::vector<float> got(static_cast<std::size_t>(kTableParameters));
  for (int s = 0; s < P; ++s) {
    const auto shard = read_float32_file(dir.file("hps") + ".rank" + std::to_string(T + s) + ".bin");
    const std::int64_t rows = shard_rows(s, P);
    ASSERT_EQ(static_cast<std::int64_t>(shard.size()), kTables * rows * kDim) << "server " << s;
    for (int t = 0; t < kTables; ++t) {
      std::copy_n(shard.begin() + t * rows * kDim, rows * kDim,
                  got.begin() + (static_cast<std::int64_t>(t) * kRows + shard_begin(s, P)) * kDim);
    }
  }
  const auto dense = read_float32_file(dir.file("hps") + ".rank0.bin");
  ASSERT_EQ(static_cast<std::int64_t>(dense.size()), kDenseParameters);
  for (int t = 1; t < T; ++t) {
    const auto other = read_float32_file(dir.file("hps") + ".rank" + std::to_string(t) + ".bin");
    EXPECT_EQ(std::memcmp(other.data(), dense.data(), dense.size() * sizeof(float)), 0)
        << "trainer " << t << "'s dense part differs from trainer 0's (DDP keeps them identical)";
  }
  got.insert(got.end(), dense.begin(), dense.end());

  RunResult ref_result;
  const auto want = reference(c, c.learning_rate, dir, "ref", &ref_result);
  const auto initial = reference(c, 1e-30, dir, "initial");
  ASSERT_EQ(want.size(), got.size());
  double max_diff = 0, moved_tables = 0, moved_dense = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(double(got[i]) - double(want[i])));
    const double moved = std::fabs(double(want[i]) - double(initial[i]));
    if (static_cast<std::int64_t>(i) < kTableParameters) {
      moved_tables = std::max(moved_tables, moved);
    } else {
      moved_dense = std::max(moved_dense, moved);
    }
  }
  std::cout << tc << ": max |hybrid-ps - one process| = " << max_diff << " (tables moved up to " << moved_tables
            << ", dense up to " << moved_dense << ")\n";
  // Stated tolerance: 1e-6 absolute. The same arithmetic in a different order: partial bag sums
  // added server by server, gradients averaged by DDP's all-reduce and summed per row on the
  // servers instead of over the global batch at once.
  EXPECT_LE(max_diff, 1e-6);
  EXPECT_GT(moved_tables, 1e-3) << "the tables did not move: the test could not fail";
  EXPECT_GT(moved_dense, 1e-3) << "the dense part did not move: the test could not fail";

  const RunResult r = trainbench::run_result_from_json(nlohmann::json::parse(read_file(dir.file("hps-result.json"))));
  ASSERT_EQ(r.world_size, T);
  ASSERT_EQ(r.ranks.size(), static_cast<std::size_t>(T));
  ASSERT_EQ(r.servers.size(), static_cast<std::size_t>(P));
  EXPECT_EQ(r.parameter_count, kTableParameters + kDenseParameters);
  EXPECT_EQ(r.optimizer, "sgd");
  EXPECT_GE(r.ddp_bucket_count, 1);
  double mean_initial = 0;
  for (int t = 0; t < T; ++t) {
    const auto& rk = r.ranks[static_cast<std::size_t>(t)];
    EXPECT_EQ(rk.rank, t);
    EXPECT_EQ(rk.parameter_count, kDenseParameters);
    EXPECT_EQ(rk.optimizer_state_bytes, 4 * kDenseParameters);  // momentum of the dense part
    ASSERT_EQ(rk.step_seconds.size(), 1u);
    EXPECT_EQ(rk.step_seconds[0].size(), static_cast<std::size_t>(kSteps));
    EXPECT_GT(rk.peak_memory_bytes, 0);
    mean_initial += rk.initial_loss / T;
  }
  // Equal batches per trainer: the global batch's mean loss is the mean of the trainers' losses.
  EXPECT_NEAR(mean_initial, ref_result.ranks[0].initial_loss, 1e-5);
  for (int s = 0; s < P; ++s) {
    const auto& sv = r.servers[static_cast<std::size_t>(s)];
    EXPECT_EQ(sv.rank, T + s);
    EXPECT_EQ(sv.server, s);
    EXPECT_EQ(sv.rows, kTables * shard_rows(s, P));
    EXPECT_EQ(sv.lookups, static_cast<std::int64_t>(kSteps) * T);
    ASSERT_EQ(sv.lookup_service_seconds.size(), 1u);
    EXPECT_EQ(sv.lookup_service_seconds[0].size(), static_cast<std::size_t>(kSteps * T));
    EXPECT_EQ(sv.lookup_queue_seconds[0].size(), static_cast<std::size_t>(kSteps * T));
    EXPECT_EQ(sv.update_seconds[0].size(), static_cast<std::size_t>(kSteps));
    for (double v : sv.lookup_service_seconds[0]) EXPECT_GT(v, 0);
    EXPECT_GT(sv.peak_memory_bytes, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Worker, HybridPsEquivalence, ::testing::Values(Case{2, 2}, Case{1, 3}, Case{3, 1}),
                         [](const auto& case_info) {
                           return "T" + std::to_string(case_info.param.trainers) + "_P" +
                                  std::to_string(case_info.param.servers);
                         });

TEST(HybridPsFaults, DeadServerFailsEveryRankWithoutHanging) {
  TempDir dir;
  RunConfig c = hybrid_run(2, 2);
  c.warmup_steps = 1;
  c.measure_steps = 50;
  c.collective_timeout_seconds = 5;
  c.test.sigkill_rank_at_first_measured_step = 3;
  const auto t0 = std::chrono::steady_clock::now();
  const auto outs = run_ranks(c, {{"TRAINBENCH_RESULT_FILE", dir.file("result.json")}}, std::chrono::seconds(60));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(outs.size(), 4u);
  for (std::size_t r = 0; r < outs.size(); ++r) {
    EXPECT_FALSE(outs[r].timed_out) << "rank " << r << " hung:\n" << outs[r].output;
    EXPECT_NE(outs[r].exit_code, 0) << "rank " << r << " succeeded without its server:\n" << outs[r].output;
  }
  EXPECT_EQ(outs[3].exit_code, -1) << "rank 3 kills itself (SIGKILL)";
  for (int r : {0, 1, 2}) {
    EXPECT_NE(outs[static_cast<std::size_t>(r)].output.find("trainbench-worker rank " + std::to_string(r) + ":"),
              std::string::npos)
        << outs[static_cast<std::size_t>(r)].output;
  }
  EXPECT_LT(took, 40.0);
  EXPECT_TRUE(read_file(dir.file("result.json")).empty());
}

TEST(HybridPsFaults, WorldSizeMustCountTheServers) {
  const RunConfig c = hybrid_run(2, 2);
  auto env = trainbench::rank_environment(c, RankPlacement{}, "127.0.0.1", trainbench::test::free_port());
  env["WORLD_SIZE"] = "2";
  env["LOCAL_WORLD_SIZE"] = "2";
  const ProcessOutcome out = run_process({worker_path()}, env, std::chrono::seconds(60));
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("world size 2 but paradigm hybrid-ps has 2 trainer(s)"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("+ 2 parameter server(s)"), std::string::npos) << out.output;
}

}  // namespace
