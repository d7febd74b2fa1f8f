// The language models and the HybridModel (parameter counts against the reference
// implementations and against formulas), and the worker's precision machinery: dynamic loss
// scaling (driven on the CPU through the test option RunConfig::test.loss_scale) and bf16 gradient compression
// against fp32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/results/run_result.hpp"
#include "worker_launcher.hpp"

namespace {

using trainbench::Attention;
using trainbench::EnvironmentInfo;
using trainbench::parse_gradient_compression;
using trainbench::parse_precision;
using trainbench::Precision;
using trainbench::RunConfig;
using trainbench::test::read_file;
using trainbench::test::read_float32_file;
using trainbench::test::run_process;
using trainbench::test::run_ranks;
using trainbench::test::TempDir;
using trainbench::test::worker_path;

nlohmann::json describe(const std::string& model) {
  const auto out = run_process({worker_path(), "--describe-model", model}, {}, std::chrono::seconds(300));
  EXPECT_EQ(out.exit_code, 0) << out.output;
  return nlohmann::json::parse(out.output);
}

// ---- formulas (h hidden, I intermediate, V vocab, P positions, L layers) ----

/// One transformer layer: fused q/k/v + output projection (4h^2 + 4h), two LayerNorms (4h),
/// feed-forward (2hI + I + h).
std::int64_t transformer_layer(std::int64_t h, std::int64_t i) { return 4 * h * h + 9 * h + 2 * h * i + i; }

/// BERT encoder with pooler: word/position/2 token-type embeddings + LayerNorm, layers, pooler.
std::int64_t bert_encoder(std::int64_t v, std::int64_t p, std::int64_t l, std::int64_t h, std::int64_t i) {
  return (v + p + 2) * h + 2 * h + l * transformer_layer(h, i) + h * h + h;
}
/// BERT's pre-training heads: MLM transform (h^2 + h) + LayerNorm (2h) + decoder bias (V, the
/// decoder weight is the tied word embedding) + next-sentence classifier (2h + 2).
std::int64_t bert_heads(std::int64_t v, std::int64_t h) { return h * h + h + 2 * h + v + 2 * h + 2; }

/// GPT-2: token + position embeddings, layers, final LayerNorm; the LM head is the tied wte.
std::int64_t gpt2(std::int64_t v, std::int64_t p, std::int64_t l, std::int64_t h, std::int64_t i) {
  return (v + p) * h + l * transformer_layer(h, i) + 2 * h;
}

/// mLSTM (E embedding, H hidden, 256 bytes): embedding, W_mx, W_mh, W_x + bias, W_m, decoder.
std::int64_t mlstm(std::int64_t e, std::int64_t hh) {
  return 256 * e + hh * e + hh * hh + 4 * hh * e + 4 * hh + 4 * hh * hh + 256 * hh + 256;
}

/// HybridModel: T tables of N x D, then Linear layers (T*D) -> dense... -> classes.
std::int64_t hybrid(std::int64_t t, std::int64_t n, std::int64_t d, const std::vector<std::int64_t>& dense,
                    std::int64_t classes) {
  std::int64_t total = t * n * d;
  std::int64_t in = t * d;
  for (auto w : dense) {
    total += in * w + w;
    in = w;
  }
  return total + in * classes + classes;
}

TEST(ModelParameters, BertBaseWithPoolerIs109482240) {
  const auto j = describe("bert-base");
  EXPECT_EQ(bert_encoder(30522, 512, 12, 768, 3072), 109482240);
  const std::int64_t heads = j.at("headParameters").get<std::int64_t>();
  EXPECT_EQ(j.at("parameters").get<std::int64_t>() - heads, 109482240) << j.dump();
  EXPECT_EQ(heads, bert_heads(30522, 768)) << j.dump();
  EXPECT_EQ(heads, 624188);
  EXPECT_EQ(j.at("parameters").get<std::int64_t>(), 110106428);
}

TEST(ModelParameters, Gpt2SmallIs124439808) {
  const auto j = describe("gpt2-small");
  EXPECT_EQ(gpt2(50257, 1024, 12, 768, 3072), 124439808);
  EXPECT_EQ(j.at("parameters").get<std::int64_t>(), 124439808) << j.dump();
  EXPECT_EQ(j.at("headParameters").get<std::int64_t>(), 0);
  EXPECT_EQ(j.at("buffers").get<std::int64_t>(), 0);
}

TEST(ModelParameters, MlstmDefaultIsTheScalingNotes4096) {
  const auto j = describe("mlstm");
  EXPECT_EQ(j.at("parameters").get<std::int64_t>(), mlstm(64, 4096)) << j.dump();
  EXPECT_EQ(mlstm(64, 4096), 86278400);
}

TEST(ModelParameters, HybridEmbeddingDefaultIsTheSeeds) {
  // 8 parameter servers x EmbeddingBag(300, 64), then 512-256-128-64-32-8.
  const auto j = describe("hybrid-embedding");
  EXPECT_EQ(j.at("parameters").get<std::int64_t>(), hybrid(8, 300, 64, {256, 128, 64, 32}, 8)) << j.dump();
  EXPECT_EQ(j.at("parameters").get<std::int64_t>(), 153600 + 174824);
}

// ---- small versions train (paradigm none and ddp on 2 ranks) through the worker ----

RunConfig small_run(const std::string& model, const std::string& paradigm, int world) {
  RunConfig c = trainbench::test::tiny_mlp_run("worker-models-test", paradigm, world);
  c.model = model;
  c.batch_size_per_device = 4;
  c.sequence_length = 12;
  c.warmup_steps = 1;
  c.measure_steps = 3;
  c.repeats = 1;
  c.learning_rate = 0.01;
  c.transformer.layers = 2;
  c.transformer.hidden = 32;
  c.transformer.heads = 4;
  c.transformer.intermediate = 64;
  c.transformer.vocab_size = 300;
  c.transformer.max_positions = 32;
  c.mlstm.hidden_size = 48;
  c.mlstm.embedding_size = 16;
  c.hybrid_embedding.num_tables = 3;
  c.hybrid_embedding.num_embeddings = 40;
  c.hybrid_embedding.embedding_dim = 8;
  c.hybrid_embedding.bag_size = 4;
  c.hybrid_embedding.dense_sizes = {16, 8};
  c.hybrid_embedding.num_classes = 4;
  return c;
}

std::int64_t small_count(const std::string& model) {
  if (model == "bert-base") return bert_encoder(300, 32, 2, 32, 64) + bert_heads(300, 32);
  if (model == "gpt2-small") return gpt2(300, 32, 2, 32, 64);
  if (model == "mlstm") return mlstm(16, 48);
  return hybrid(3, 40, 8, {16, 8}, 4);
}

class SmallModelTrains : public ::testing::TestWithParam<std::string> {};

TEST_P(SmallModelTrains, NoneAndDdpOnTwoRanksAndAmpBf16) {
  const std::pair<int, const char*> cases[] = {{1, "fp32"}, {2, "fp32"}, {1, "amp-bf16"}, {2, "amp-bf16"}};
  for (const auto& [world, precision] : cases) {
    SCOPED_TRACE("world " + std::to_string(world) + ", " + precision);
    TempDir dir;
    RunConfig c = small_run(GetParam(), world == 1 ? "none" : "ddp", world);
    c.precision = parse_precision(precision).value();
    const auto outs = run_ranks(c, {{"TRAINBENCH_RESULT_FILE", dir.file("r.json")}});
    for (const auto& o : outs) ASSERT_EQ(o.exit_code, 0) << o.output;
    const auto r = trainbench::run_result_from_json(nlohmann::json::parse(read_file(dir.file("r.json"))));
    EXPECT_EQ(r.parameter_count, small_count(GetParam()));
    ASSERT_EQ(static_cast<int>(r.ranks.size()), world);
    for (const auto& rk : r.ranks) {
      EXPECT_TRUE(std::isfinite(rk.initial_loss) && rk.initial_loss > 0) << rk.initial_loss;
      EXPECT_TRUE(std::isfinite(rk.final_loss) && rk.final_loss > 0) << rk.final_loss;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Worker, SmallModelTrains,
                         ::testing::Values("bert-base", "gpt2-small", "mlstm", "hybrid-embedding"),
                         [](const auto& tc_info) {
                           std::string n = tc_info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(Precision, AmpBf16LossIsCloseToFp32AtTheFirstStep) {
  double first[2] = {0, 0};
  const char* precisions[2] = {"fp32", "amp-bf16"};
  for (int k = 0; k < 2; ++k) {
    TempDir dir;
    RunConfig c = small_run("gpt2-small", "none", 1);
    c.precision = parse_precision(precisions[k]).value();
    c.warmup_steps = 0;
    c.measure_steps = 2;
    const auto outs = run_ranks(c, {{"TRAINBENCH_RESULT_FILE", dir.file("r.json")}});
    ASSERT_EQ(outs[0].exit_code, 0) << outs[0].output;
    const auto r = trainbench::run_result_from_json(nlohmann::json::parse(read_file(dir.file("r.json"))));
    first[k] = r.ranks[0].initial_loss;
    EXPECT_TRUE(std::isfinite(first[k])) << precisions[k];
    EXPECT_TRUE(std::isfinite(r.ranks[0].final_loss)) << precisions[k];
  }
  std::cout << std::setprecision(10) << "gpt2 (small) loss at step 1: fp32 " << first[0] << ", amp-bf16 "
            << first[1] << "\n";
  // Same initial model and batch: bf16 rounding (8-bit mantissa) moves the loss by well under 2%,
  // but it does move it (autocast really ran).
  EXPECT_NEAR(first[1], first[0], 0.02 * first[0]);
  EXPECT_NE(first[1], first[0]) << "amp-bf16 gave fp32's loss bit for bit: was autocast on?";
}

TEST(Precision, AmpFp16NeedsCuda) {
  RunConfig c = small_run("mlp", "none", 1);
  c.precision = Precision::kAmpFp16;
  const auto outs = run_ranks(c, {});
  EXPECT_EQ(outs[0].exit_code, 2) << outs[0].output;
  EXPECT_NE(outs[0].output.find("precision amp-fp16 needs device cuda"), std::string::npos) << outs[0].output;
}

TEST(Precision, LossScalingSkipsOverflowingStepsAndBacksOff) {
  // An initial scale of 2^140 overflows fp32 (max ~2^128): the first steps' gradients are inf,
  // are skipped and halve the scale until it fits; then training proceeds. Skipped steps leave
  // the parameters as they were, so with every step skipped the parameters would not move.
  TempDir dir;
  RunConfig c = small_run("mlp", "ddp", 2);
  c.warmup_steps = 0;
  c.measure_steps = 30;
  c.test.loss_scale = 1.3937965749081639e+42;
  const std::string prefix = dir.file("scaled");
  const auto outs = run_ranks(c, {{"TRAINBENCH_DUMP_PARAMS", prefix}, {"TRAINBENCH_RESULT_FILE", dir.file("r.json")}});
  for (const auto& o : outs) ASSERT_EQ(o.exit_code, 0) << o.output;
  const std::string& log = outs[0].output;
  const auto at = log.find("loss scaling skipped ");
  ASSERT_NE(at, std::string::npos) << log;
  const int skipped = std::stoi(log.substr(at + std::string("loss scaling skipped ").size()));
  EXPECT_GE(skipped, 13) << log;  // 2^140 ... 2^128 overflow fp32 whatever the loss
  EXPECT_LT(skipped, 30) << log;  // and then it trains
  // Both ranks took the same decisions: bitwise equal parameters.
  const auto p0 = read_float32_file(prefix + ".rank0.bin");
  const auto p1 = read_float32_file(prefix + ".rank1.bin");
  ASSERT_EQ(p0.size(), p1.size());
  EXPECT_TRUE(std::equal(p0.begin(), p0.end(), p1.begin()));
  for (float v : p0) ASSERT_TRUE(std::isfinite(v));
}

TEST(Precision, Bf16GradientCompressionStaysCloseToFp32) {
  // Parameters after 5 steps of a small mlp on 2 ranks with bf16 all-reduce vs fp32 all-reduce.
  // Tolerance: bf16 keeps 8 significant bits (relative rounding <= 2^-9 per gradient element);
  // after 5 SGD steps at lr 0.05 the parameters differ by far less than 5e-3 absolute.
  auto params_after = [](const std::string& compression, TempDir& dir, std::string* log) {
    RunConfig c = small_run("mlp", "ddp", 2);
    c.warmup_steps = 0;
    c.measure_steps = 5;
    c.learning_rate = 0.05;
    c.ddp.gradient_compression = parse_gradient_compression(compression).value();
    const std::string prefix = dir.file("p-" + compression);
    const auto outs = run_ranks(c, {{"TRAINBENCH_DUMP_PARAMS", prefix}, {"TRAINBENCH_RESULT_FILE", dir.file("r.json")}});
    std::vector<float> none;
    for (const auto& o : outs) {
      if (o.exit_code != 0) {
        *log = o.output;
        return none;
      }
    }
    return read_float32_file(prefix + ".rank0.bin");
  };
  TempDir dir;
  std::string log;
  const auto bf16 = params_after("bf16", dir, &log);
  ASSERT_FALSE(bf16.empty()) << log;
  const auto fp32 = params_after("none", dir, &log);
  ASSERT_EQ(fp32.size(), bf16.size()) << log;
  double worst = 0;
  for (std::size_t i = 0; i < fp32.size(); ++i) worst = std::max(worst, std::fabs(double(fp32[i]) - double(bf16[i])));
  std::cout << "max |bf16 - fp32| after 5 steps: " << worst << "\n";
  EXPECT_LE(worst, 5e-3);
}

// ---- spec.benchmark.transformer.attention ----

/// The first and the last measured loss of three steps of a small model run with `attention`,
/// dropout off (the fused kernel draws its dropout mask differently), and the environment the
/// worker reported.
struct AttentionRun {
  double first = 0;
  double last = 0;
  EnvironmentInfo env;
};
AttentionRun attention_run(const std::string& model, Attention attention) {
  TempDir dir;
  RunConfig c = small_run(model, "none", 1);
  c.transformer.attention = attention;
  c.test.no_dropout = true;
  c.warmup_steps = 0;
  c.measure_steps = 3;
  const auto outs = run_ranks(c, {{"TRAINBENCH_RESULT_FILE", dir.file("r.json")}});
  EXPECT_EQ(outs[0].exit_code, 0) << outs[0].output;
  if (outs[0].exit_code != 0) return {};
  const auto r = trainbench::run_result_from_json(nlohmann::json::parse(read_file(dir.file("r.json"))));
  return {r.ranks[0].initial_loss, r.ranks[0].final_loss, r.environment};
}

// libtorch 2.x computes `fused` attention with at::scaled_dot_product_attention (on the CPU its
// flash kernel), and `auto` resolves to it: the same maths in one kernel, so the loss of the
// first step (forward) and of the third (two updates through its backward) equal eager's.
TEST(Attention, FusedAndAutoGiveEagersLosses) {
  for (const std::string model : {"gpt2-small", "bert-base"}) {
    SCOPED_TRACE(model);
    const AttentionRun eager = attention_run(model, Attention::kEager);
    const AttentionRun fused = attention_run(model, Attention::kFused);
    const AttentionRun autor = attention_run(model, Attention::kAuto);
    EXPECT_EQ(eager.env.attention, "eager");
    EXPECT_EQ(fused.env.attention, "fused");
    EXPECT_EQ(autor.env.attention, "fused") << autor.env.libtorch_version;
    EXPECT_NEAR(fused.first, eager.first, 1e-4 * eager.first);
    EXPECT_NEAR(fused.last, eager.last, 1e-3 * eager.last);
    EXPECT_NEAR(autor.last, fused.last, 1e-6 * fused.last);  // the same kernel
    EXPECT_GT(std::fabs(eager.first - eager.last), 1e-3 * eager.first) << "training did not move the loss";
  }
}

TEST(Attention, OtherModelsReportNone) {
  TempDir dir;
  RunConfig c = small_run("mlp", "none", 1);
  const auto outs = run_ranks(c, {{"TRAINBENCH_RESULT_FILE", dir.file("r.json")}});
  ASSERT_EQ(outs[0].exit_code, 0) << outs[0].output;
  const auto r = trainbench::run_result_from_json(nlohmann::json::parse(read_file(dir.file("r.json"))));
  EXPECT_EQ(r.environment.attention, "");
}

}  // namespace
