// The model-size fields of the spec (sequenceLength, transformer, mlstm, hybridEmbedding) through
// parse, run config and validation, and the loss at the start and end of the measured steps
// through the run result, the report and its text.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/plan/run_config.hpp"
#include "core/report/report.hpp"
#include "core/report/report_format.hpp"
#include "core/spec/model_sizes.hpp"
#include "core/spec/spec.hpp"

namespace trainbench {
namespace {

const char* kJob = R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: lm}
spec:
  benchmark:
    model: gpt2-small
    precision: amp-bf16
    sequenceLength: 64
    transformer: {layers: 2, hidden: 64, heads: 4}
    mlstm: {hiddenSize: 128}
    hybridEmbedding: {numTables: 2, denseSizes: [16]}
  sweep:
    - {nodes: 1, devicesPerNode: 1, paradigm: none}
    - {nodes: 1, devicesPerNode: 2}
)";

TEST(ModelSizes, ParsedIntoTheRunConfigAndBack) {
  const BenchmarkJob job = parse_benchmark_job(kJob);
  EXPECT_EQ(job.benchmark.sequence_length, 64);
  EXPECT_EQ(job.benchmark.transformer.layers, 2);
  EXPECT_EQ(job.benchmark.transformer.vocab_size, 0);  // preset
  EXPECT_EQ(job.benchmark.mlstm.hidden_size, 128);
  EXPECT_EQ(job.benchmark.mlstm.embedding_size, 64);
  EXPECT_EQ(job.benchmark.hybrid_embedding.dense_sizes, std::vector<int>{16});
  EXPECT_EQ(parse_benchmark_job(to_json(job).dump()).benchmark.hybrid_embedding.num_tables, 2);
  const auto runs = plan_runs(job, 2);
  const RunConfig back = run_config_from_json(to_json(runs[1]));
  EXPECT_EQ(back.precision, Precision::kAmpBf16);
  EXPECT_EQ(back.sequence_length, 64);
  EXPECT_EQ(back.transformer.heads, 4);
  EXPECT_EQ(back.mlstm.hidden_size, 128);
  EXPECT_EQ(back.hybrid_embedding.dense_sizes, std::vector<int>{16});
  const TransformerShape s = resolve_transformer("gpt2-small", back.transformer);
  EXPECT_EQ(s.hidden, 64);
  EXPECT_EQ(s.intermediate, 3072);
  EXPECT_EQ(s.vocab_size, 50257);
  EXPECT_EQ(s.max_positions, 1024);
  EXPECT_EQ(resolve_transformer("bert-base", {}).vocab_size, 30522);
  EXPECT_TRUE(is_language_model("mlstm"));
  EXPECT_FALSE(is_language_model("hybrid-embedding"));
}

TEST(ModelSizes, AmpFp16IsFineOnCuda) {
  std::string yaml = kJob;
  yaml.replace(yaml.find("amp-bf16"), 8, "amp-fp16");
  EXPECT_THROW(parse_benchmark_job(yaml), SpecError);
  EXPECT_EQ(parse_benchmark_job(yaml + "  device: cuda\n").benchmark.precision, Precision::kAmpFp16);
}

RunResult result_with_losses() {
  RunResult r;
  r.world_size = 2;
  r.parameter_count = 10;
  for (int k = 0; k < 2; ++k) {
    RankResult rk;
    rk.rank = k;
    rk.step_seconds = {{0.1, 0.2, 0.3}};
    rk.initial_loss = k == 0 ? 2.0 : 4.0;
    rk.final_loss = k == 0 ? 1.0 : 3.0;
    r.ranks.push_back(rk);
  }
  return r;
}

TEST(LossReport, MeanOverRanksThroughResultReportAndText) {
  const BenchmarkJob job = parse_benchmark_job(kJob);
  const auto runs = plan_runs(job, 2);
  const RunResult r = run_result_from_json(to_json(result_with_losses()));
  EXPECT_EQ(r.ranks[1].initial_loss, 4.0);
  const RunReport run = summarize_run(runs[1], r);
  ASSERT_TRUE(run.loss_start && run.loss_end);
  EXPECT_DOUBLE_EQ(*run.loss_start, 3.0);
  EXPECT_DOUBLE_EQ(*run.loss_end, 2.0);
  const nlohmann::json j = to_json(run);
  EXPECT_DOUBLE_EQ(j.at("lossStart").get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(j.at("lossEnd").get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(*run_report_from_json(j, "runs[1]").loss_start, 3.0);

  const Report rep = assemble_report(job, {run}, r.environment);
  const std::string text = format_report(rep);
  EXPECT_NE(text.find("Loss (mean over ranks) at the first -> the last measured step:"), std::string::npos) << text;
  EXPECT_NE(text.find("2 CPUs -- 1M/2G:  3.0000 -> 2.0000"), std::string::npos) << text;
}

TEST(LossReport, OlderDocumentsWithoutLossStillRead) {
  nlohmann::json rj = to_json(result_with_losses());
  for (auto& rk : rj["ranks"]) rk.erase("initialLoss");
  EXPECT_EQ(run_result_from_json(rj).ranks[0].initial_loss, 0.0);
  const BenchmarkJob job = parse_benchmark_job(kJob);
  nlohmann::json run = to_json(summarize_run(plan_runs(job, 2)[1], result_with_losses()));
  run.erase("lossStart");
  run.erase("lossEnd");
  const RunReport back = run_report_from_json(run, "runs[0]");
  EXPECT_FALSE(back.loss_start.has_value());
  const std::string text = format_report(assemble_report(job, {back}, {}));
  EXPECT_EQ(text.find("Loss (mean over ranks)"), std::string::npos) << text;
}

}  // namespace
}  // namespace trainbench
