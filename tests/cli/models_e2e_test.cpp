// `trainbench run` with the language models and the HybridModel at small sizes (paradigm none and
// ddp on 2 ranks), amp-bf16 on the CPU, and the loss at the start and end of the measured steps
// in the report. Skipped when the build has no trainbench-worker.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace trainbench::test {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string job_yaml(const std::string& name, const std::string& model, const std::string& precision,
                     const std::string& sweep) {
  return "apiVersion: trainbench.dev/v1alpha1\n"
         "kind: BenchmarkJob\n"
         "metadata:\n"
         "  name: " + name + "\n"
         "spec:\n"
         "  benchmark:\n"
         "    model: " + model + "\n"
         "    precision: " + precision + "\n"
         "    batchSizePerDevice: 4\n"
         "    warmupSteps: 0\n"
         "    measureSteps: 3\n"
         "    repeats: 1\n"
         "    threadsPerProcess: 1\n"
         "    sequenceLength: 16\n"
         "    transformer: {layers: 2, hidden: 32, heads: 4, intermediate: 64, vocabSize: 500, maxPositions: 64}\n"
         "    mlstm: {hiddenSize: 64, embeddingSize: 16}\n"
         "    hybridEmbedding: {numTables: 4, numEmbeddings: 50, embeddingDim: 8, bagSize: 3, denseSizes: [16, 8],"
         " numClasses: 4}\n"
         "  sweep:\n" + sweep;
}

class ModelsRun : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (real_worker_exe().empty()) GTEST_SKIP() << "this build has no trainbench-worker";
  }
  TempDir dir;
  EnvChanges env() { return {{"TMPDIR", dir.path()}, {"TRAINBENCH_WORKER", real_worker_exe()}}; }

  nlohmann::json run(const std::string& name, const std::string& model, const std::string& precision,
                     const std::string& sweep, std::string* text = nullptr) {
    const std::string job = dir.file(name + ".yaml");
    write_file(job, job_yaml(name, model, precision, sweep));
    const CliResult r = run_cli({"run", job, "--json", dir.file(name + ".json")}, env(), dir.path(), 110);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    if (text) *text = r.out;
    return nlohmann::json::parse(read_file(dir.file(name + ".json")));
  }
};

TEST_P(ModelsRun, NoneAndDdpReportLossAtStartAndEnd) {
  std::string model = GetParam();
  std::string name = "models-" + model;
  std::string text;
  const auto rep = run(name, model, "fp32",
                       "    - {nodes: 1, devicesPerNode: 1, paradigm: none}\n"
                       "    - {nodes: 1, devicesPerNode: 2, paradigm: ddp}\n",
                       &text);
  ASSERT_EQ(rep["runs"].size(), 2u) << rep.dump();
  for (const auto& run : rep["runs"]) {
    SCOPED_TRACE(run.dump());
    ASSERT_EQ(run["phase"], "Succeeded");
    ASSERT_TRUE(run["lossStart"].is_number());
    ASSERT_TRUE(run["lossEnd"].is_number());
    const double start = run["lossStart"].get<double>();
    const double end = run["lossEnd"].get<double>();
    EXPECT_TRUE(std::isfinite(start) && start > 0);
    EXPECT_TRUE(std::isfinite(end) && end > 0);
    EXPECT_GT(run["parameterCount"].get<std::int64_t>(), 0);
  }
  // The same initial model: the one-device run's start loss is rank 0's first batch; the 2-rank
  // run's is the mean over both ranks' batches -- both near ln(classes) for a fresh model.
  EXPECT_TRUE(contains(text, "Loss (mean over ranks) at the first -> the last measured step:")) << text;
  EXPECT_TRUE(contains(text, "1 CPUs -- no ddp:  ")) << text;
  EXPECT_TRUE(contains(text, "2 CPUs -- 1M/2G:  ")) << text;
}

INSTANTIATE_TEST_SUITE_P(Cli, ModelsRun, ::testing::Values("bert-base", "gpt2-small", "mlstm", "hybrid-embedding"),
                         [](const auto& tc_info) {
                           std::string n = tc_info.param;
                           for (auto& ch : n) {
                             if (ch == '-') ch = '_';
                           }
                           return n;
                         });

class PrecisionRun : public ModelsRun {};

TEST_F(PrecisionRun, AmpBf16OnCpuStartsCloseToFp32) {
  const std::string sweep = "    - {nodes: 1, devicesPerNode: 1, paradigm: none}\n";
  const auto fp32 = run("prec-fp32", "bert-base", "fp32", sweep);
  const auto bf16 = run("prec-bf16", "bert-base", "amp-bf16", sweep);
  EXPECT_EQ(bf16["benchmark"]["precision"], "amp-bf16");
  const double a = fp32["runs"][0]["lossStart"].get<double>();
  const double b = bf16["runs"][0]["lossStart"].get<double>();
  EXPECT_TRUE(std::isfinite(b));
  EXPECT_TRUE(std::isfinite(bf16["runs"][0]["lossEnd"].get<double>()));
  // Step 1 trains the same initial model on the same batch (dropout masks included): bf16
  // rounding moves the loss by well under 2%.
  EXPECT_NEAR(b, a, 0.02 * a) << "fp32 " << a << ", amp-bf16 " << b;
  EXPECT_NE(b, a) << "amp-bf16 gave fp32's loss bit for bit: was autocast on?";
}

TEST_F(PrecisionRun, AmpFp16OnCpuIsRefusedNamingTheField) {
  const std::string job = dir.file("fp16.yaml");
  write_file(job, job_yaml("prec-fp16", "gpt2-small", "amp-fp16", "    - {nodes: 1, devicesPerNode: 1}\n"));
  const CliResult r = run_cli({"validate", job}, env(), dir.path(), 30);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(contains(r.out + r.err, "spec.benchmark.precision")) << r.out << r.err;
  EXPECT_TRUE(contains(r.out + r.err, "amp-fp16 needs spec.device cuda")) << r.out << r.err;
}

}  // namespace
}  // namespace trainbench::test
