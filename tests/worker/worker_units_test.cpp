// The worker's pieces in-process (linking trainbench_worker, no spawned workers): models,
// the DDP reducer's bucketing, ZeRO's sharding, the pipeline's stage split, hybrid-ps's row
// ownership, and a whole paradigm-none run through the one training loop.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/plan/run_config.hpp"
#include "core/results/run_result.hpp"
#include "file_io.hpp"
#include "temp_dir.hpp"
#include "worker/ddp_reducer.hpp"
#include "worker/hybrid_ps.hpp"
#include "worker/models.hpp"
#include "worker/models_lm.hpp"
#include "worker/pipeline.hpp"
#include "worker/process_group.hpp"
#include "worker/train_loop.hpp"
#include "worker/worker_error.hpp"
#include "worker/zero_optimizer.hpp"

namespace trainbench::worker {
namespace {

using test::read_file;
using test::TempDir;

/// A TCP port nobody listens on right now (for a one-rank rendezvous).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("no free port");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

RankEnv one_rank() {
  RankEnv env;
  env.master_addr = "127.0.0.1";
  env.master_port = free_port();
  return env;
}

RunConfig small_mlp() {
  RunConfig c;
  c.paradigm = Paradigm::kNone;
  c.model = "mlp";
  c.mlp = {16, {32, 24}, 5};
  c.batch_size_per_device = 4;
  c.warmup_steps = 2;
  c.measure_steps = 3;
  c.repeats = 2;
  c.collective_timeout_seconds = 30;
  return c;
}

TEST(Models, MlpHasItsLayersParametersAndShape) {
  const RunConfig c = small_mlp();
  const auto model = build_model("mlp", c);
  std::int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  EXPECT_EQ(n, (16 * 32 + 32) + (32 * 24 + 24) + (24 * 5 + 5));
  at::Generator gen = at::detail::createCPUGenerator(7);
  const SyntheticBatch b = model->synthetic_batch(4, gen);
  EXPECT_EQ(model->forward(b.inputs).sizes(), (std::vector<std::int64_t>{4, 5}));
  EXPECT_THROW(build_model("no-such-model", c), ConfigError);
}

TEST(Models, HybridEmbeddingIsItsSparsePartThenItsDensePart) {
  RunConfig c = small_mlp();
  c.hybrid_embedding = {2, 20, 4, 3, {16, 8}, 4};
  auto model = std::dynamic_pointer_cast<HybridEmbeddingModel>(build_model("hybrid-embedding", c));
  ASSERT_TRUE(model);
  at::Generator gen = at::detail::createCPUGenerator(3);
  const SyntheticBatch b = model->synthetic_batch(5, gen);
  const torch::Tensor whole = model->forward(b.inputs);
  const torch::Tensor split = model->dense_forward(model->sparse_forward(b.inputs));
  EXPECT_TRUE(torch::allclose(whole, split));
}

TEST(Reducer, BucketsCloseAtOneMiBFirstThenAtTheCap) {
  const RankEnv env = one_rank();
  const RunConfig c = small_mlp();
  auto comm = Communicator::create(env, c);
  // Four 1.2 MB parameters, bucketed in reverse order: the first bucket closes at 1 MiB (one
  // parameter), the others at the cap.
  std::vector<torch::Tensor> params;
  for (int i = 0; i < 4; ++i) params.push_back(torch::ones({300000}).requires_grad_(true));
  EXPECT_EQ(DdpReducer(params, *comm, 25.0, GradientCompression::kNone).bucket_count(), 2u);
  EXPECT_EQ(DdpReducer(params, *comm, 1.0, GradientCompression::kNone).bucket_count(), 4u);
  const DdpReducer reducer(params, *comm, 25.0, GradientCompression::kNone);
  EXPECT_EQ(reducer.bytes_per_step(), 4 * 300000 * 4);
}

TEST(Reducer, OneRanksGradientsAreAutogradsOwn) {
  const RankEnv env = one_rank();
  const RunConfig c = small_mlp();
  auto comm = Communicator::create(env, c);
  torch::manual_seed(1);
  const auto model = build_model("mlp", c);
  const std::vector<torch::Tensor> params = model->parameters();
  at::Generator gen = at::detail::createCPUGenerator(5);
  const SyntheticBatch b = model->synthetic_batch(4, gen);
  model->loss(b.inputs, b.targets).backward();
  std::vector<torch::Tensor> plain;
  for (const auto& p : params) plain.push_back(p.grad().clone());
  DdpReducer reducer(params, *comm, 0.001, GradientCompression::kNone);
  reducer.zero_grad();
  reducer.prepare_for_backward();
  model->loss(b.inputs, b.targets).backward();
  reducer.finish_backward();
  for (std::size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::allclose(params[i].grad(), plain[i])) << i;
}

// A long run's result JSON (every step's time: 12 MB for 40,000 steps x 2 repeats in
// controlplane.kueue.benchmarkjob) through the run's store: TCPStore's libuv server drops a client
// that sends a value over 8 MiB, so RunStore stores it in parts; the master reads it whole.
TEST(RunStoreValues, AValueOverTheStoresLimitArrivesWhole) {
  const int port = free_port();
  auto server = RunStore::serve(port, std::chrono::seconds(10));
  auto client = RunStore::connect("127.0.0.1", port, std::chrono::seconds(10));
  std::string big(12u << 20, 'x');
  for (std::size_t i = 0; i < big.size(); i += 4093) big[i] = static_cast<char>('a' + i % 26);
  client->set("result", big);
  EXPECT_EQ(server->get("result", std::chrono::seconds(10)), big);
  EXPECT_EQ(server->try_get("result").value_or(""), big);
  client->set("small", "{}");
  EXPECT_EQ(server->get("small", std::chrono::seconds(10)), "{}");
  // A value that merely looks like the parts marker is stored as it is.
  client->set("odd", "trainbench-store-parts:3");
  EXPECT_EQ(server->get("odd", std::chrono::seconds(10)), "trainbench-store-parts:3");
}

TEST(Zero, ShardsCoverTheParametersOnceEach) {
  for (std::int64_t total : {1, 2, 10, 11, 1000}) {
    for (int ranks : {1, 2, 3, 4, 7}) {
      std::int64_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const ZeroShard z = zero_shard(total, ranks, r);
        EXPECT_EQ(z.shard_size, (total + ranks - 1) / ranks);
        EXPECT_EQ(z.begin, next) << total << " / " << ranks << " rank " << r;
        EXPECT_LE(z.end - z.begin, z.shard_size);
        next = z.end;
      }
      EXPECT_EQ(next, total) << total << " / " << ranks;
    }
  }
  const ZeroShard last = zero_shard(2, 4, 3);
  EXPECT_EQ(last.begin, last.end);  // more ranks than elements: an empty shard
}

TEST(Pipeline, StagesSplitTheBlocksContiguously) {
  EXPECT_EQ(stage_starts({10, 10, 10, 10}, 2, {}), (std::vector<int>{0, 2}));
  EXPECT_EQ(stage_starts({1, 1, 1, 10}, 2, {}), (std::vector<int>{0, 3}));      // the largest stage minimised
  EXPECT_EQ(stage_starts({10, 10, 10, 10}, 2, {1}), (std::vector<int>{0, 1}));  // the spec's boundaries
  EXPECT_EQ(stage_starts({5, 5, 5}, 3, {}), (std::vector<int>{0, 1, 2}));
  EXPECT_THROW(stage_starts({1, 1}, 3, {}), ConfigError);
}

TEST(HybridPs, EveryRowHasOneOwnerAndTheOwnerHoldsIt) {
  for (std::int64_t rows : {1, 5, 20, 301}) {
    for (std::int64_t servers = 1; servers <= std::min<std::int64_t>(rows, 6); ++servers) {
      const RowSharding s{rows, servers};
      EXPECT_EQ(s.begin(0), 0);
      EXPECT_EQ(s.end(servers - 1), rows);
      const torch::Tensor owner = s.owner(torch::arange(rows, torch::kLong));
      for (std::int64_t id = 0; id < rows; ++id) {
        const std::int64_t o = owner[id].item<std::int64_t>();
        ASSERT_TRUE(o >= 0 && o < servers) << rows << "/" << servers << " id " << id;
        EXPECT_TRUE(s.begin(o) <= id && id < s.end(o)) << rows << "/" << servers << " id " << id;
      }
    }
  }
  const RowSharding s{10, 3};
  EXPECT_EQ(s.count(0) + s.count(1) + s.count(2), 10);
}

TEST(TrainingLoop, AParadigmNoneRunInProcess) {
  TempDir dir;
  const RunConfig c = small_mlp();
  WorkerOptions o;
  o.result_file = dir.file("result.json");
  o.progress_file = dir.file("progress.json");
  run_worker(one_rank(), c, o);
  const RunResult r = run_result_from_json(nlohmann::json::parse(read_file(o.result_file)));
  EXPECT_EQ(r.world_size, 1);
  EXPECT_EQ(r.parameter_count, (16 * 32 + 32) + (32 * 24 + 24) + (24 * 5 + 5));
  ASSERT_EQ(r.ranks.size(), 1u);
  ASSERT_EQ(r.ranks[0].step_seconds.size(), 2u);
  for (const auto& rep : r.ranks[0].step_seconds) EXPECT_EQ(rep.size(), 3u);
  EXPECT_GT(r.ranks[0].initial_loss, 0);
  EXPECT_LT(r.ranks[0].final_loss, r.ranks[0].initial_loss);  // 5 steps of SGD on one batch
  EXPECT_EQ(r.ranks[0].parameter_count, r.parameter_count);
  const auto progress = nlohmann::json::parse(read_file(o.progress_file));
  EXPECT_EQ(progress["phase"], "measure");
  EXPECT_EQ(progress["repeat"], 2);
  EXPECT_EQ(progress["step"], 3);
}

TEST(TrainingLoop, ANonFiniteLossFailsTheRunNamingTheStep) {
  TempDir dir;
  RunConfig c = small_mlp();
  c.learning_rate = 1e30;
  WorkerOptions o;
  o.result_file = dir.file("result.json");
  try {
    run_worker(one_rank(), c, o);
    FAIL() << "a learning rate of 1e30 trained finitely";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("loss is not finite"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trainbench::worker
