// FLOPs of the models' layer lists against published figures, the GPU peak table, the peak a run
// is measured against and the MFU summary in the report (core/plan/model_flops, peak_flops, mfu).
#include <gtest/gtest.h>

#include "core/analysis/mfu.hpp"
#include "core/api/job_status.hpp"
#include "core/plan/model_flops.hpp"
#include "core/plan/peak_flops.hpp"
#include "core/report/report.hpp"
#include "core/report/report_format.hpp"

namespace trainbench {
namespace {

RunConfig config_of(const std::string& model) {
  RunConfig c;
  c.model = model;
  return c;
}

double forward_gmacs(const std::string& model) {
  return forward_macs_per_example(model_layers(config_of(model))) / 1e9;
}

// torchvision's model table ("GFLOPS" there are multiply-adds, counted by fvcore: one fused
// multiply-add = 1) at 224 x 224: resnet18 1.81, resnet50 4.09, resnet101 7.80, resnext50_32x4d
// 4.23, resnext101_32x8d 16.41. Here: convolutions and the classifier, in multiply-adds.
TEST(ModelFlops, ResNetsMatchTorchvisionMultiplyAdds) {
  EXPECT_NEAR(forward_gmacs("resnet50"), 4.09, 0.01);
  EXPECT_NEAR(forward_gmacs("resnet18"), 1.81, 0.01);
  EXPECT_NEAR(forward_gmacs("resnet101"), 7.80, 0.01);
  EXPECT_NEAR(forward_gmacs("resnext50_32x4d"), 4.23, 0.01);
  EXPECT_NEAR(forward_gmacs("resnext101_32x8d"), 16.41, 0.01);
  // FLOPs: 2 per multiply-add forward, 3 x forward to train.
  const auto layers = model_layers(config_of("resnet50"));
  EXPECT_DOUBLE_EQ(forward_flops_per_example(layers), 2 * forward_macs_per_example(layers));
  EXPECT_DOUBLE_EQ(training_flops_per_example(layers), 6 * forward_macs_per_example(layers));
}

TEST(ModelFlops, ResNetFollowsTheImageSize) {
  RunConfig c = config_of("resnet50");
  c.image_size = 112;  // about a quarter of the positions (7 x 7 becomes 4 x 4, not 3.5 x 3.5)
  EXPECT_NEAR(forward_gmacs("resnet50") / (forward_macs_per_example(model_layers(c)) / 1e9), 4.0, 0.4);
  EXPECT_EQ(total_parameters(model_layers(c)), 25557032);  // parameters do not depend on it
}

TEST(ModelFlops, MlpExactly) {
  // 1024 -> 4096 -> 4096 -> 1000: forward 2 x MACs, training 3 x forward; biases add no FLOPs.
  const double macs = 1024.0 * 4096 + 4096.0 * 4096 + 4096.0 * 1000;
  const auto layers = model_layers(config_of("mlp"));
  EXPECT_EQ(forward_macs_per_example(layers), macs);
  EXPECT_EQ(training_flops_per_example(layers), 6 * macs);
  EXPECT_EQ(training_flops_per_example(layers), 150405120.0);
}

// Transformers: PaLM's convention (Chowdhery et al. 2022, appendix B; Chinchilla's, Hoffmann et
// al. 2022, appendix F, counts attention alike): training FLOPs per token = 6 N + 12 L h s, N the
// parameters in matmuls applied to every token (Kaplan et al. 2020's non-embedding parameters,
// 12 L h^2 for L layers of width h with a 4h MLP, plus the LM head, which PaLM's N holds as the
// shared embedding), L layers, h hidden, s tokens.
TEST(ModelFlops, Gpt2SmallIsSixNPlusTheAttentionTerm) {
  const double L = 12, h = 768, V = 50257;
  for (int s : {128, 1024}) {
    RunConfig c = config_of("gpt2-small");
    c.sequence_length = s;
    const auto layers = model_layers(c);
    const double non_embedding = 12 * L * h * h;  // 84,934,656: GPT-2 small's "85M non-embedding"
    EXPECT_EQ(non_embedding, 84934656.0);
    const double per_token = 6 * (non_embedding + h * V) + 12 * L * h * s;
    EXPECT_EQ(training_flops_per_example(layers) / s, per_token) << "sequence " << s;
    EXPECT_EQ(total_parameters(layers), 124439808);  // Hugging Face's gpt2
  }
}

TEST(ModelFlops, BertBaseIsSixNPlusTheAttentionTerm) {
  const double L = 12, h = 768, V = 30522, s = 128;
  const auto layers = model_layers(config_of("bert-base"));
  // Per token: the layers, the MLM transform (h x h) and decoder (h x V); per sequence: the pooler
  // (h x h) and the next-sentence classifier (h x 2) on the first token.
  const double per_token = 6 * (12 * L * h * h + h * h + h * V) + 12 * L * h * s;
  const double per_sequence = 6 * (h * h + 2 * h);
  EXPECT_EQ(training_flops_per_example(layers), s * per_token + per_sequence);
  EXPECT_EQ(total_parameters(layers), 109482240 + 624188);  // BertModel + pre-training heads
}

TEST(ModelFlops, MlstmAndHybridEmbedding) {
  RunConfig c = config_of("mlstm");  // H 4096, E 64, 128 tokens: the gate matmuls per token
  const double e = 64, h = 4096;
  EXPECT_EQ(forward_macs_per_example(model_layers(c)), 128 * (e * h + h * h + 4 * e * h + 4 * h * h + h * 256));
  c = config_of("hybrid-embedding");  // lookups 0; 512-256-128-64-32-8
  EXPECT_EQ(forward_macs_per_example(model_layers(c)), 512.0 * 256 + 256 * 128 + 128 * 64 + 64 * 32 + 32 * 8);
  EXPECT_TRUE(model_layers(config_of("")).empty());  // paradigm allreduce: no model
}

TEST(ModelFlops, DominantGemm) {
  // mlp: 4096 x 4096 is the largest product; m = the batch.
  EXPECT_EQ(dominant_gemm(model_layers(config_of("mlp")), 32), (GemmShape{32, 4096, 4096, 1}));
  // gpt2-small: the LM head (768 x 50257 at every token) outweighs any one of the 12 layers' shapes.
  RunConfig c = config_of("gpt2-small");
  EXPECT_EQ(dominant_gemm(model_layers(c), 4), (GemmShape{4 * 128, 768, 50257, 1}));
  c.batch_size_per_device = 32;  // 4096 rows would be 316 GFLOP a product: cut to the floor
  EXPECT_EQ(peak_gemm_shape(c), (GemmShape{kMinGemmRows, 768, 50257, 1}));
  c = config_of("mlp");
  c.mlp.hidden_sizes = {1024};
  c.batch_size_per_device = 1000000;  // 2 x 1024^2 x m <= 4 GFLOP
  EXPECT_EQ(peak_gemm_shape(c), (GemmShape{1907, 1024, 1024, 1}));
  EXPECT_FALSE(dominant_gemm(model_layers(config_of("")), 8));
  EXPECT_TRUE(conv_dominated(model_layers(config_of("resnet50"))));
  EXPECT_FALSE(conv_dominated(model_layers(config_of("gpt2-small"))));
}

TEST(PeakFlops, GpuTableMatchesCudaDeviceNames) {
  auto name = [](const std::string& device) {
    const GpuPeak* p = find_gpu_peak(device);
    return p ? std::string(p->name) : std::string("none");
  };
  EXPECT_EQ(name("NVIDIA H100 80GB HBM3"), "NVIDIA H100 SXM");
  EXPECT_EQ(name("NVIDIA H100 PCIe"), "NVIDIA H100 PCIe");
  EXPECT_EQ(name("NVIDIA H100 NVL"), "NVIDIA H100 NVL");
  EXPECT_EQ(name("NVIDIA H200"), "NVIDIA H200 SXM");
  EXPECT_EQ(name("NVIDIA H200 NVL"), "NVIDIA H200 NVL");
  EXPECT_EQ(name("NVIDIA A100-SXM4-80GB"), "NVIDIA A100");
  EXPECT_EQ(name("NVIDIA A100 80GB PCIe"), "NVIDIA A100");
  EXPECT_EQ(name("NVIDIA L4"), "NVIDIA L4");
  EXPECT_EQ(name("NVIDIA L40S"), "NVIDIA L40S");
  EXPECT_EQ(name("NVIDIA A10"), "NVIDIA A10");
  EXPECT_EQ(name("NVIDIA GeForce RTX 4090"), "none");
  EXPECT_EQ(name("Intel(R) Xeon(R) CPU"), "none");
  const GpuPeak& h100 = *find_gpu_peak("NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.column(PeakColumn::kBf16), 989.5);  // 1,979 with sparsity / 2
  EXPECT_EQ(h100.column(PeakColumn::kFp32), 67);
  EXPECT_EQ(find_gpu_peak("NVIDIA A100-SXM4-80GB")->column(PeakColumn::kTf32), 156);
  EXPECT_EQ(find_gpu_peak("NVIDIA L4")->column(PeakColumn::kFp16), 121);
}

TEST(PeakFlops, PrecisionPicksTheColumn) {
  EXPECT_EQ(peak_column(Precision::kAmpBf16, Device::kCuda, false), PeakColumn::kBf16);
  EXPECT_EQ(peak_column(Precision::kAmpFp16, Device::kCuda, true), PeakColumn::kFp16);
  EXPECT_EQ(peak_column(Precision::kFp32, Device::kCuda, false), PeakColumn::kFp32);
  EXPECT_EQ(peak_column(Precision::kFp32, Device::kCuda, true), PeakColumn::kTf32);  // cuDNN's TF32
  EXPECT_EQ(peak_column(Precision::kFp32, Device::kCpu, true), PeakColumn::kFp32);
  EXPECT_EQ(gemm_dtype(Precision::kAmpBf16), "bfloat16");
}

TEST(PeakFlops, SpecOverridesTableOverridesNothing) {
  RunConfig c = config_of("gpt2-small");
  c.device = Device::kCuda;
  c.precision = Precision::kAmpBf16;
  auto peak = resolve_peak(c, "NVIDIA H100 80GB HBM3", std::nullopt);
  ASSERT_TRUE(peak);
  EXPECT_EQ(peak->tflops, 989.5);
  EXPECT_EQ(peak->source, "NVIDIA H100 SXM bf16 dense (NVIDIA H100 Tensor Core GPU datasheet)");
  EXPECT_FALSE(resolve_peak(c, "NVIDIA GeForce RTX 4090", std::nullopt));
  c.peak_tflops = 700;
  peak = resolve_peak(c, "NVIDIA H100 80GB HBM3", std::nullopt);
  EXPECT_EQ(peak->tflops, 700);
  EXPECT_EQ(peak->source, "spec.benchmark.peakTFLOPS");
  // CPU: the measured GEMM, or nothing.
  c = config_of("mlp");
  EXPECT_FALSE(resolve_peak(c, "Intel Xeon", std::nullopt));
  const MeasuredGemm g{{256, 4096, 4096, 1}, "float32", 0.125, 3};
  peak = resolve_peak(c, "Intel Xeon", g);
  EXPECT_EQ(peak->tflops, 0.125);
  EXPECT_EQ(peak->source, "measured GEMM 256 x 4096 x 4096 float32");
  EXPECT_EQ(measured_gemm_from_json(to_json(g), "peakGemm").shape, g.shape);
}

RunResult cpu_result(double gemm_tflops) {
  RunResult r;
  r.environment.device = "cpu";
  r.peak_gemm = MeasuredGemm{{32, 4096, 4096, 1}, "float32", gemm_tflops, 3};
  return r;
}

TEST(Mfu, AchievedPerDeviceAgainstThePeak) {
  RunConfig c = config_of("mlp");
  c.nodes = 1;
  c.devices_per_node = 2;
  const auto m = summarize_mfu(c, cpu_result(0.1), 1000);  // 1000 ex/s over 2 devices
  ASSERT_TRUE(m);
  EXPECT_EQ(m->flops_per_example, 150405120.0);
  EXPECT_DOUBLE_EQ(m->achieved_tflops, 150405120.0 * 1000 / 2 / 1e12);
  EXPECT_DOUBLE_EQ(*m->mfu, m->achieved_tflops / 0.1);
  EXPECT_EQ(m->peak_source, "measured GEMM 32 x 4096 x 4096 float32");
  // No peak known: FLOP/s without MFU; no model: nothing.
  const auto no_peak = summarize_mfu(c, RunResult{}, 1000);
  EXPECT_FALSE(no_peak->mfu);
  EXPECT_FALSE(no_peak->peak_tflops);
  EXPECT_FALSE(summarize_mfu(config_of(""), RunResult{}, 1000));
  // JSON both ways; old reports (no "mfu") still read.
  const MfuSummary back = mfu_summary_from_json(to_json(*m), "runs[0].mfu");
  EXPECT_EQ(back.peak_source, m->peak_source);
  EXPECT_DOUBLE_EQ(*back.mfu, *m->mfu);
  EXPECT_THROW(mfu_summary_from_json({{"flopsPerExample", 1}}, "runs[0].mfu"), std::runtime_error);
}

TEST(Mfu, ShownInTheReportText) {
  BenchmarkJob job;
  job.metadata.name = "j";
  job.benchmark.model = "mlp";
  job.sweep = {SweepEntry{}};
  const auto runs = plan_runs(job, 2);
  RunResult result = cpu_result(0.2);
  result.ranks.push_back(RankResult{});
  result.ranks[0].step_seconds = {{0.1, 0.1}};
  const Report report = build_report(job, runs, {RunOutcome{result, ""}});
  ASSERT_TRUE(report.runs[0].mfu);
  const std::string text = format_report(report);
  // 32 examples per 0.1 s: 320 ex/s x 150.4 MFLOP = 0.048 TFLOP/s of a 0.2 peak: MFU 24.1%.
  EXPECT_NE(text.find("150.4 MFLOP/ex"), std::string::npos) << text;
  EXPECT_NE(text.find("MFU 24.1%"), std::string::npos) << text;
  EXPECT_NE(text.find("measured GEMM 32 x 4096 x 4096 float32"), std::string::npos) << text;
  const Report back = report_from_json(to_json(report));
  EXPECT_DOUBLE_EQ(*back.runs[0].mfu->mfu, *report.runs[0].mfu->mfu);
  // The job's status carries it in each run's summary: status.runs[0].summary.mfu.
  RunStatus status;
  status.summary = report.runs[0];
  const nlohmann::json j = to_json(status);
  EXPECT_DOUBLE_EQ(j.at("summary").at("mfu").at("achievedTFLOPS").get<double>(), report.runs[0].mfu->achieved_tflops);
  EXPECT_DOUBLE_EQ(*run_status_from_json(j, "status.runs[0]").summary->mfu->mfu, *report.runs[0].mfu->mfu);
  EXPECT_EQ(text.find("above 100%"), std::string::npos) << text;
}

// A peak measured on a busy machine can be below what the run then achieves: the line says so.
TEST(Mfu, AboveHundredPercentBlamesThePeak) {
  MfuSummary m;
  m.flops_per_example = 50e6;
  m.achieved_tflops = 0.017;
  m.peak_tflops = 0.013;
  m.peak_source = "measured GEMM 32 x 2048 x 2048 float32";
  m.mfu = m.achieved_tflops / *m.peak_tflops;
  EXPECT_NE(format_mfu(m).find("MFU 130.8%  (above 100%: the peak was measured low"), std::string::npos)
      << format_mfu(m);
}

}  // namespace
}  // namespace trainbench
