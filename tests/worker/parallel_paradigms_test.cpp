// zero, pipeline and model-parallel against single-process references from the same seed:
//  - zero (ZeRO-1, Adam state sharded): parameters after k steps equal unsharded torch::optim::Adam's,
//    on one process over the ranks' batches (TRAINBENCH_REFERENCE_WORLD_SIZE) and under DDP;
//  - pipeline / model-parallel: the stages' parameters after k SGD (momentum) steps, concatenated
//    in rank order, equal the unsplit model's on one process training on the same batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <ostream>

#include <nlohmann/json.hpp>

#include "core/results/run_result.hpp"
#include "worker_launcher.hpp"

namespace {

using trainbench::Optimizer;
using trainbench::Paradigm;
using trainbench::parse_paradigm;
using trainbench::RunConfig;
using trainbench::RunResult;
using trainbench::test::ProcessOutcome;
using trainbench::test::read_file;
using trainbench::test::read_float32_file;
using trainbench::test::run_ranks;
using trainbench::test::TempDir;

constexpr int kSteps = 4;

RunConfig mlp_run(const std::string& paradigm, int world) {
  RunConfig c;
  c.job_name = "worker-parallel-test";
  c.paradigm = parse_paradigm(paradigm).value();
  c.nodes = 1;
  c.devices_per_node = world;
  c.model = "mlp";
  c.mlp.input_size = 32;
  c.mlp.hidden_sizes = {64, 48, 40};  // 4 blocks of 2112, 3120, 1960, 410 parameters
  c.mlp.num_classes = 10;
  c.batch_size_per_device = 16;
  c.warmup_steps = 0;
  c.measure_steps = kSteps;
  c.repeats = 1;
  c.seed = 4321;
  c.learning_rate = 0.01;
  c.threads_per_process = 1;
  c.collective_timeout_seconds = 60;
  return c;
}

constexpr std::int64_t kMlpParameters = 32 * 64 + 64 + 64 * 48 + 48 + 48 * 40 + 40 + 40 * 10 + 10;

void expect_all_ok(const std::vector<ProcessOutcome>& outs) {
  for (std::size_t r = 0; r < outs.size(); ++r) {
    ASSERT_EQ(outs[r].exit_code, 0) << "rank " << r << (outs[r].timed_out ? " timed out" : "") << ":\n"
                                    << outs[r].output;
  }
}

/// Runs `c` with parameter dumps; returns the result and fills `dumps` (one per rank).
RunResult run_and_dump(const RunConfig& c, const TempDir& dir, const std::string& name,
                       std::vector<std::vector<float>>& dumps, std::map<std::string, std::string> env = {}) {
  const std::string prefix = dir.file(name);
  env["TRAINBENCH_DUMP_PARAMS"] = prefix;
  env["TRAINBENCH_RESULT_FILE"] = dir.file(name + "-result.json");
  const auto outs = run_ranks(c, env);
  expect_all_ok(outs);
  dumps.clear();
  for (int r = 0; r < c.world_size(); ++r) dumps.push_back(read_float32_file(prefix + ".rank" + std::to_string(r) + ".bin"));
  return trainbench::run_result_from_json(nlohmann::json::parse(read_file(dir.file(name + "-result.json"))));
}

struct Diff {
  double max_abs = 0;
  double max_rel = 0;  ///< |a - b| / max(|b|, 1e-2)
  double moved = 0;    ///< max |reference - initial|
};

Diff compare(const std::vector<float>& got, const std::vector<float>& reference, const std::vector<float>& initial) {
  Diff d;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(double(got[i]) - double(reference[i]));
    d.max_abs = std::max(d.max_abs, e);
    d.max_rel = std::max(d.max_rel, e / std::max(std::fabs(double(reference[i])), 1e-2));
    d.moved = std::max(d.moved, std::fabs(double(reference[i]) - double(initial[i])));
  }
  return d;
}

// ---------------------------------------------------------------- zero

/// Parameters after the same steps with unsharded torch::optim::Adam: `ddp` runs DDP with Adam on
/// `world` ranks; `one-process` runs a single process over the `world` ranks' batches, their
/// gradients accumulated one batch at a time (a one-stage pipeline with `world` micro-batches:
/// each micro-batch's loss is weighted 1/world).
std::vector<float> unsharded_adam(const std::string& how, int world, double learning_rate, const TempDir& dir) {
  RunConfig ref = how == "ddp" ? mlp_run("ddp", world) : mlp_run("pipeline", 1);
  ref.optimizer = Optimizer::kAdam;
  ref.learning_rate = learning_rate;
  ref.ddp.bucket_cap_mb = 0.005;
  std::map<std::string, std::string> env;
  if (how != "ddp") {
    ref.pipeline.micro_batches = world;
    env["TRAINBENCH_REFERENCE_WORLD_SIZE"] = std::to_string(world);
  }
  std::vector<std::vector<float>> dumps;
  run_and_dump(ref, dir, how + std::to_string(learning_rate), dumps, env);
  return dumps[0];
}

struct ZeroCase {
  int world;
  std::string reference;  ///< one-process | ddp
};

std::ostream& operator<<(std::ostream& os, const ZeroCase& c) {
  return os << "world " << c.world << " vs " << c.reference;
}

class ZeroCorrectness : public ::testing::TestWithParam<ZeroCase> {};

TEST_P(ZeroCorrectness, MatchesUnshardedAdam) {
  const ZeroCase& tc = GetParam();
  const int world = tc.world;
  TempDir dir;
  RunConfig c = mlp_run("zero", world);
  c.optimizer = Optimizer::kAdam;
  c.ddp.bucket_cap_mb = 0.005;  // several buckets: shard edges fall inside parameters and buckets
  std::vector<std::vector<float>> zero;
  const RunResult result = run_and_dump(c, dir, "zero", zero);
  ASSERT_EQ(static_cast<std::int64_t>(zero[0].size()), kMlpParameters);
  for (int r = 1; r < world; ++r) {
    EXPECT_EQ(std::memcmp(zero[static_cast<std::size_t>(r)].data(), zero[0].data(), zero[0].size() * sizeof(float)), 0)
        << "rank " << r << " differs from rank 0 after the all-gather";
  }
  const auto reference = unsharded_adam(tc.reference, world, c.learning_rate, dir);
  const auto initial = unsharded_adam(tc.reference, world, 1e-30, dir);  // Adam moves by ~lr
  ASSERT_EQ(reference.size(), zero[0].size());
  const Diff d = compare(zero[0], reference, initial);
  std::cout << "zero " << tc << ": max |zero - adam| = " << d.max_abs << ", max relative " << d.max_rel
            << ", max |adam - initial| = " << d.moved << "\n";
  // Stated tolerance: 1e-6 relative to max(|reference|, 1e-2). The sharded update runs
  // torch::optim::Adam's element-wise operations on slices of the same gradients (the
  // one-process reference adds the ranks' gradients in the same order as the all-reduce of 2
  // ranks, and scales by 1/2 exactly), so only vectorisation may differ in the last bit.
  // (Against one process on the concatenated global batch the difference is ~1e-3 relative:
  // Adam divides by sqrt(v), which magnifies the rounding of near-zero gradients.)
  EXPECT_LE(d.max_rel, 1e-6);
  EXPECT_GT(d.moved, kSteps * c.learning_rate / 2) << "Adam did not move the parameters: the test could not fail";

  // Optimizer state: each rank holds Adam's two moments for its shard only.
  const std::int64_t shard = (kMlpParameters + world - 1) / world;
  std::int64_t total = 0;
  ASSERT_EQ(result.ranks.size(), static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    const auto& rk = result.ranks[static_cast<std::size_t>(r)];
    const std::int64_t mine = std::min(kMlpParameters, shard * (r + 1)) - std::min(kMlpParameters, shard * r);
    EXPECT_EQ(rk.optimizer_state_bytes, 2 * 4 * mine) << "rank " << r;
    EXPECT_EQ(rk.parameter_count, kMlpParameters);
    total += rk.optimizer_state_bytes;
  }
  EXPECT_EQ(total, 2 * 4 * kMlpParameters);
  EXPECT_EQ(result.optimizer, "adam");
  EXPECT_GT(result.ddp_bucket_count, 1);
}

// One process for 2 ranks (its gradient sums are the all-reduce's, bit for bit); DDP + Adam for
// 3 ranks (gloo's ring adds 3 ranks' chunks in a rank-dependent order that one process would not
// reproduce bit for bit) and for 2.
INSTANTIATE_TEST_SUITE_P(Worker, ZeroCorrectness,
                         ::testing::Values(ZeroCase{2, "one-process"}, ZeroCase{2, "ddp"}, ZeroCase{3, "ddp"}),
                         [](const auto& tc_info) {
                           return "World" + std::to_string(tc_info.param.world) +
                                  (tc_info.param.reference == "ddp" ? "_VsDdpAdam" : "_VsOneProcessAdam");
                         });

TEST(ZeroState, DdpWithAdamHoldsTheWholeState) {
  TempDir dir;
  RunConfig c = mlp_run("ddp", 2);
  c.optimizer = Optimizer::kAdam;
  std::vector<std::vector<float>> dumps;
  const RunResult result = run_and_dump(c, dir, "ddp-adam", dumps);
  for (const auto& rk : result.ranks) EXPECT_EQ(rk.optimizer_state_bytes, 2 * 4 * kMlpParameters);
  c.optimizer = Optimizer::kSgd;
  const RunResult sgd = run_and_dump(c, dir, "ddp-sgd", dumps);
  for (const auto& rk : sgd.ranks) EXPECT_EQ(rk.optimizer_state_bytes, 4 * kMlpParameters);
}

// ---------------------------------------------------------------- pipeline / model-parallel

struct StageCase {
  std::string paradigm;
  std::string model;
  int stages;
  int micro_batches;
  std::vector<int> boundaries;
  double tolerance;  ///< max |split - unsplit|
};

std::ostream& operator<<(std::ostream& os, const StageCase& c) {
  return os << c.paradigm << " " << c.model << " " << c.stages << " stages x " << c.micro_batches << " micro-batches";
}

class StageCorrectness : public ::testing::TestWithParam<StageCase> {};

TEST_P(StageCorrectness, MatchesTheUnsplitModel) {
  const StageCase& tc = GetParam();
  TempDir dir;
  RunConfig c = mlp_run(tc.paradigm, tc.stages);
  c.pipeline.micro_batches = tc.micro_batches;
  c.pipeline.boundaries = tc.boundaries;
  std::int64_t expected_total = kMlpParameters;
  if (tc.model == "resnet18") {
    c.model = tc.model;
    c.image_size = 32;
    c.batch_size_per_device = 4;
    c.measure_steps = 2;
    expected_total = 11689512;
  } else if (tc.model == "hybrid-embedding") {
    c.model = tc.model;  // the seed's HybridModel at its defaults
    expected_total = 328424;
  } else if (tc.model == "mlstm") {
    c.model = tc.model;
    c.mlstm.hidden_size = 64;
    c.mlstm.embedding_size = 16;
    c.sequence_length = 8;
    c.batch_size_per_device = 4;
    // embedding 256x16, w_mx 16x64, w_mh 64x64, w_x 16x256 + 256, w_m 64x256, decoder 64x256 + 256
    expected_total = 4096 + 1024 + 4096 + 4352 + 16384 + 16640;
  } else if (tc.model == "gpt2-small") {
    c.model = tc.model;
    c.transformer = {2, 32, 2, 64, 100, 16};  // layers, hidden, heads, intermediate, vocab, positions
    c.sequence_length = 8;
    c.batch_size_per_device = 6;
    // wte 100x32 (also the LM head, counted once), wpe 16x32, 2 layers of 8544, ln_f 64
    expected_total = 3200 + 512 + 2 * 8544 + 64;
  } else if (tc.model == "bert-base") {
    c.model = tc.model;
    c.transformer = {2, 32, 2, 64, 120, 16};
    c.sequence_length = 8;
    c.batch_size_per_device = 6;
    // embeddings 120x32 + 16x32 + 2x32 + LayerNorm 64 (the word embedding is also the MLM
    // decoder, counted once), 2 layers of 8544, pooler 1056, heads: bias 120, transform 1056,
    // LayerNorm 64, next sentence 66
    expected_total = 3840 + 512 + 64 + 64 + 2 * 8544 + 1056 + 120 + 1056 + 64 + 66;
  }
  // The split model's stages draw dropout masks from their own generators: compare without it.
  c.test.no_dropout = true;
  const std::map<std::string, std::string> env;
  std::vector<std::vector<float>> stages;
  const RunResult result = run_and_dump(c, dir, "split", stages, env);
  std::vector<float> joined;
  for (const auto& s : stages) joined.insert(joined.end(), s.begin(), s.end());
  ASSERT_EQ(static_cast<std::int64_t>(joined.size()), expected_total);

  RunConfig ref = c;
  ref.paradigm = Paradigm::kNone;
  ref.devices_per_node = 1;
  ref.pipeline = {};
  std::vector<std::vector<float>> reference, initial;
  run_and_dump(ref, dir, "ref", reference, env);
  ref.learning_rate = 1e-30;
  run_and_dump(ref, dir, "init", initial, env);
  const Diff d = compare(joined, reference[0], initial[0]);
  std::cout << tc << ": max |split - unsplit| = " << d.max_abs << ", max relative " << d.max_rel
            << ", max |unsplit - initial| = " << d.moved << "\n";
  EXPECT_LE(d.max_abs, tc.tolerance);
  EXPECT_GT(d.moved, 100 * std::max(d.max_abs, 1e-7)) << "parameters hardly moved: the test could not fail";

  // Result: one stage per rank, contiguous blocks, the bubble measured, parameters split.
  EXPECT_EQ(result.parameter_count, expected_total);
  EXPECT_EQ(result.micro_batches, tc.micro_batches);
  ASSERT_EQ(static_cast<int>(result.stage_starts.size()), tc.stages);
  EXPECT_EQ(result.stage_starts[0], 0);
  for (std::size_t i = 0; i < tc.boundaries.size(); ++i) EXPECT_EQ(result.stage_starts[i + 1], tc.boundaries[i]);
  std::int64_t held = 0;
  for (int r = 0; r < tc.stages; ++r) {
    const auto& rk = result.ranks[static_cast<std::size_t>(r)];
    EXPECT_EQ(rk.stage, r);
    EXPECT_EQ(rk.parameter_count, static_cast<std::int64_t>(stages[static_cast<std::size_t>(r)].size()));
    EXPECT_GE(rk.bubble_fraction, 0.0);
    EXPECT_LT(rk.bubble_fraction, 1.0);
    // The last stage also steps its copy of the tied word embedding (counted on stage 0).
    std::int64_t tied_copy = 0;
    if (r == tc.stages - 1 && tc.model == "gpt2-small") tied_copy = 100 * 32;
    if (r == tc.stages - 1 && tc.model == "bert-base") tied_copy = 120 * 32;
    EXPECT_EQ(rk.optimizer_state_bytes, 4 * (rk.parameter_count + tied_copy))
        << "SGD momentum of the stage's parameters";
    EXPECT_GT(rk.final_loss, 0);
    EXPECT_EQ(rk.final_loss, result.ranks[0].final_loss) << "every stage reports the last stage's loss";
    held += rk.parameter_count;
  }
  EXPECT_EQ(held, expected_total);
  // Stage 0 waits for the gradients of everything after it.
  if (tc.stages > 1) {
    EXPECT_GT(result.ranks[0].bubble_fraction, 0.0);
  }
}

// Micro-batches of 16 examples: 3 -> 6, 5, 5 (uneven on purpose). ResNet-18 with BatchNorm is
// exact only without micro-batches (BatchNorm statistics are per micro-batch): model-parallel.
INSTANTIATE_TEST_SUITE_P(
    Worker, StageCorrectness,
    ::testing::Values(StageCase{"model-parallel", "mlp", 2, 1, {}, 1e-6},
                      StageCase{"pipeline", "mlp", 2, 3, {}, 1e-5},
                      StageCase{"pipeline", "mlp", 3, 4, {1, 3}, 1e-5},
                      StageCase{"pipeline", "mlp", 4, 16, {}, 1e-5},
                      StageCase{"model-parallel", "resnet18", 2, 1, {5}, 1e-5},
                      // ids in, token loss out (mlstm); ids in, the tables a stage of their own
                      StageCase{"model-parallel", "mlstm", 2, 1, {}, 1e-5},
                      StageCase{"pipeline", "hybrid-embedding", 2, 2, {1}, 1e-5},
                      // the token embedding tied to the LM head across the first and last stage
                      StageCase{"model-parallel", "gpt2-small", 2, 1, {}, 1e-5},
                      StageCase{"pipeline", "gpt2-small", 3, 2, {}, 1e-5},
                      // bert: one micro-batch (the masked-LM loss is a mean over the batch's
                      // masked tokens, which micro-batches would weight differently)
                      StageCase{"model-parallel", "bert-base", 3, 1, {}, 1e-5}),
    [](const auto& tc_info) {
      std::string name = tc_info.param.paradigm == "pipeline" ? "Pipeline" : "ModelParallel";
      std::string model = tc_info.param.model;
      std::replace(model.begin(), model.end(), '-', '_');
      return name + "_" + model + "_" + std::to_string(tc_info.param.stages) + "Stages" +
             std::to_string(tc_info.param.micro_batches) + "Micro";
    });

TEST(StageErrors, MoreStagesThanBlocksExits2) {
  RunConfig c = mlp_run("pipeline", 5);  // 4 blocks
  const auto outs = run_ranks(c, {});
  for (const auto& o : outs) {
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_NE(o.output.find("only 4 blocks"), std::string::npos) << o.output;
  }
}

}  // namespace
