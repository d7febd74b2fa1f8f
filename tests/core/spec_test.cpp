#include <gtest/gtest.h>

#include <string>

#include "core/spec.hpp"

namespace trainbench {
namespace {

const char* kValid = R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata:
  name: resnet50-scaling
spec:
  benchmark:
    model: resnet50
    batchSizePerDevice: 32
    ddp: {bucketCapMB: 25}
  sweep:
    - {nodes: 1, devicesPerNode: 1, paradigm: none}
    - {nodes: 1, devicesPerNode: 1}
    - {nodes: 2, devicesPerNode: 8, bucketCapMB: 1}
)";

TEST(Spec, ParsesValidJobAndAppliesDefaults) {
  BenchmarkJob job = parse_benchmark_job(kValid);
  EXPECT_EQ(job.metadata.name, "resnet50-scaling");
  EXPECT_EQ(job.metadata.namespace_, "default");
  EXPECT_EQ(job.benchmark.model, "resnet50");
  EXPECT_EQ(job.benchmark.paradigm, "ddp");
  EXPECT_EQ(job.benchmark.precision, "fp32");
  EXPECT_EQ(job.benchmark.warmup_steps, 20);
  EXPECT_EQ(job.benchmark.measure_steps, 100);
  EXPECT_EQ(job.benchmark.repeats, 5);
  EXPECT_EQ(job.device, "cpu");
  EXPECT_EQ(job.backend, "gloo");
  ASSERT_EQ(job.sweep.size(), 3u);
  EXPECT_EQ(job.sweep[0].paradigm.value_or(""), "none");
  EXPECT_FALSE(job.sweep[1].paradigm.has_value());
  EXPECT_EQ(job.sweep[2].nodes, 2);
  EXPECT_EQ(job.sweep[2].devices_per_node, 8);
  EXPECT_DOUBLE_EQ(job.sweep[2].bucket_cap_mb.value_or(0), 1.0);
}

TEST(Spec, CudaDefaultsToNccl) {
  std::string y = kValid;
  y += "  device: cuda\n";
  EXPECT_EQ(parse_benchmark_job(y).backend, "nccl");
}

TEST(Spec, AcceptsServerPopulatedMetadataAndStatus) {
  std::string y = kValid;
  y.replace(y.find("  name: resnet50-scaling\n"), 25,
            "  name: resnet50-scaling\n  uid: abc\n  resourceVersion: \"12\"\n  generation: 3\n");
  y += "status: {phase: Running}\n";
  EXPECT_NO_THROW(parse_benchmark_job(y));
}

struct Malformed {
  const char* name;
  std::string yaml;
  std::string field;     // the path the message must name
  std::string fragment;  // and a fragment of the explanation
};

std::string job_with(const std::string& benchmark_extra, const std::string& sweep, const std::string& spec_extra = "",
                     const std::string& name = "job-a") {
  return "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata:\n  name: " + name +
         "\nspec:\n  benchmark:\n    model: mlp\n" + benchmark_extra + "  sweep:\n" + sweep + spec_extra;
}

const std::string kSweep = "    - {nodes: 1, devicesPerNode: 2}\n";

class MalformedSpec : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedSpec, NamesTheField) {
  const Malformed& m = GetParam();
  try {
    parse_benchmark_job(m.yaml);
    FAIL() << "accepted: " << m.yaml;
  } catch (const SpecError& e) {
    bool found = false;
    for (const auto& fe : e.errors()) {
      if (fe.path == m.field && fe.message.find(m.fragment) != std::string::npos) found = true;
    }
    EXPECT_TRUE(found) << "expected '" << m.field << ": ..." << m.fragment << "...', got:\n" << e.what();
    EXPECT_NE(std::string(e.what()).find(m.field + ": "), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Spec, MalformedSpec,
    ::testing::Values(
        Malformed{"zero_devices", job_with("", "    - {nodes: 1, devicesPerNode: 1}\n    - {nodes: 1, devicesPerNode: 2}\n    - {nodes: 1, devicesPerNode: 0}\n"),
                  "spec.sweep[2].devicesPerNode", "must be >= 1, got 0"},
        Malformed{"zero_nodes", job_with("", "    - {nodes: 0, devicesPerNode: 1}\n"), "spec.sweep[0].nodes", "must be >= 1, got 0"},
        Malformed{"unknown_model", job_with("", kSweep).replace(job_with("", kSweep).find("model: mlp"), 10, "model: vgg16"),
                  "spec.benchmark.model", "must be one of [mlp, resnet18"},
        Malformed{"missing_model", "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata: {name: a}\nspec:\n  benchmark: {batchSizePerDevice: 8}\n  sweep:\n" + kSweep,
                  "spec.benchmark.model", "is required"},
        Malformed{"unknown_benchmark_field", job_with("    batchsize: 32\n", kSweep), "spec.benchmark.batchsize", "unknown field"},
        Malformed{"unknown_top_field", job_with("", kSweep) + "extra: 1\n", "extra", "unknown field"},
        Malformed{"unknown_spec_field", job_with("", kSweep, "  gpus: 8\n"), "spec.gpus", "unknown field"},
        Malformed{"unknown_sweep_field", job_with("", "    - {nodes: 1, gpus: 2}\n"), "spec.sweep[0].gpus", "unknown field"},
        Malformed{"batch_not_integer", job_with("    batchSizePerDevice: lots\n", kSweep), "spec.benchmark.batchSizePerDevice",
                  "must be an integer, got \"lots\""},
        Malformed{"batch_fraction", job_with("    batchSizePerDevice: 1.5\n", kSweep), "spec.benchmark.batchSizePerDevice",
                  "must be an integer"},
        Malformed{"batch_zero", job_with("    batchSizePerDevice: 0\n", kSweep), "spec.benchmark.batchSizePerDevice",
                  "must be >= 1, got 0"},
        Malformed{"bad_paradigm", job_with("    paradigm: horovod\n", kSweep), "spec.benchmark.paradigm",
                  "must be one of [none, ddp], got \"horovod\""},
        Malformed{"bad_sweep_paradigm", job_with("", "    - {nodes: 1, devicesPerNode: 1, paradigm: dp}\n"),
                  "spec.sweep[0].paradigm", "must be one of [none, ddp]"},
        Malformed{"none_on_two_devices", job_with("", "    - {nodes: 1, devicesPerNode: 2, paradigm: none}\n"),
                  "spec.sweep[0].devicesPerNode", "paradigm none runs on exactly one device"},
        Malformed{"bad_precision", job_with("    precision: fp8\n", kSweep), "spec.benchmark.precision",
                  "must be one of [fp32], got \"fp8\""},
        Malformed{"negative_warmup", job_with("    warmupSteps: -1\n", kSweep), "spec.benchmark.warmupSteps",
                  "must be >= 0, got -1"},
        Malformed{"zero_measure", job_with("    measureSteps: 0\n", kSweep), "spec.benchmark.measureSteps", "must be >= 1, got 0"},
        Malformed{"zero_repeats", job_with("    repeats: 0\n", kSweep), "spec.benchmark.repeats", "must be >= 1, got 0"},
        Malformed{"negative_bucket", job_with("    ddp: {bucketCapMB: -5}\n", kSweep), "spec.benchmark.ddp.bucketCapMB",
                  "must be > 0, got -5"},
        Malformed{"sweep_bucket_zero", job_with("", "    - {nodes: 1, devicesPerNode: 1, bucketCapMB: 0}\n"),
                  "spec.sweep[0].bucketCapMB", "must be > 0, got 0"},
        Malformed{"bad_compression", job_with("    ddp: {gradientCompression: int8}\n", kSweep),
                  "spec.benchmark.ddp.gradientCompression", "must be one of [none, fp16, bf16]"},
        Malformed{"unknown_ddp_field", job_with("    ddp: {bucketCap: 25}\n", kSweep), "spec.benchmark.ddp.bucketCap",
                  "unknown field"},
        Malformed{"broadcast_not_bool", job_with("    ddp: {broadcastBuffers: maybe}\n", kSweep),
                  "spec.benchmark.ddp.broadcastBuffers", "must be true or false"},
        Malformed{"empty_sweep", job_with("", "    []\n"), "spec.sweep", "at least one"},
        Malformed{"sweep_not_list", job_with("", "    nodes: 2\n"), "spec.sweep", "must be a list"},
        Malformed{"sweep_entry_scalar", job_with("", "    - 4\n"), "spec.sweep[0]", "must be an object"},
        Malformed{"missing_sweep", "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata: {name: a}\nspec:\n  benchmark: {model: mlp}\n",
                  "spec.sweep", "at least one"},
        Malformed{"bad_api_version", "apiVersion: trainbench.dev/v2\nkind: BenchmarkJob\nmetadata: {name: a}\nspec:\n  benchmark: {model: mlp}\n  sweep:\n" + kSweep,
                  "apiVersion", "must be \"trainbench.dev/v1alpha1\""},
        Malformed{"bad_kind", "apiVersion: trainbench.dev/v1alpha1\nkind: Job\nmetadata: {name: a}\nspec:\n  benchmark: {model: mlp}\n  sweep:\n" + kSweep,
                  "kind", "must be \"BenchmarkJob\""},
        Malformed{"missing_kind", "apiVersion: trainbench.dev/v1alpha1\nmetadata: {name: a}\nspec:\n  benchmark: {model: mlp}\n  sweep:\n" + kSweep,
                  "kind", "is required"},
        Malformed{"missing_name", "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata: {}\nspec:\n  benchmark: {model: mlp}\n  sweep:\n" + kSweep,
                  "metadata.name", "is required"},
        Malformed{"uppercase_name", job_with("", kSweep, "", "ResNet_Job"), "metadata.name", "RFC 1123"},
        Malformed{"bad_device", job_with("", kSweep, "  device: tpu\n"), "spec.device", "must be one of [cpu, cuda]"},
        Malformed{"nccl_on_cpu", job_with("", kSweep, "  backend: nccl\n"), "spec.backend", "nccl needs spec.device cuda"},
        Malformed{"bad_backend", job_with("", kSweep, "  backend: mpi\n"), "spec.backend", "must be one of [gloo, nccl]"},
        Malformed{"image_too_small", job_with("    imageSize: 16\n", kSweep), "spec.benchmark.imageSize", "must be >= 32, got 16"},
        Malformed{"hidden_not_int", job_with("    mlp: {hiddenSizes: [64, wide]}\n", kSweep),
                  "spec.benchmark.mlp.hiddenSizes[1]", "must be an integer"},
        Malformed{"hidden_zero", job_with("    mlp: {hiddenSizes: [64, 0]}\n", kSweep), "spec.benchmark.mlp.hiddenSizes[1]",
                  "must be >= 1, got 0"},
        Malformed{"negative_seed", job_with("    seed: -3\n", kSweep), "spec.benchmark.seed", "must be >= 0, got -3"},
        Malformed{"lr_zero", job_with("    learningRate: 0\n", kSweep), "spec.benchmark.learningRate", "must be > 0"},
        Malformed{"benchmark_list", "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata: {name: a}\nspec:\n  benchmark: [mlp]\n  sweep:\n" + kSweep,
                  "spec.benchmark", "must be an object"},
        Malformed{"huge_world", job_with("", "    - {nodes: 100, devicesPerNode: 100}\n"), "spec.sweep[0]",
                  "must be <= 4096, got 10000"},
        Malformed{"int_overflow", job_with("    measureSteps: 99999999999\n", kSweep), "spec.benchmark.measureSteps",
                  "must be a 32-bit integer"},
        Malformed{"bad_deadline", job_with("", kSweep, "  runPolicy: {activeDeadlineSeconds: -1}\n"),
                  "spec.runPolicy.activeDeadlineSeconds", "must be >= 0, got -1"},
        Malformed{"not_yaml", "apiVersion: [unclosed\n", "<yaml>", "not valid YAML"},
        Malformed{"two_documents", job_with("", kSweep) + "---\n" + job_with("", kSweep), "<yaml>", "exactly one document"},
        Malformed{"document_is_list", "- a\n- b\n", "<document>", ""}),
    [](const ::testing::TestParamInfo<Malformed>& p) { return std::string(p.param.name); });

TEST(Spec, ReportsEveryProblemAtOnce) {
  try {
    parse_benchmark_job(job_with("    batchSizePerDevice: 0\n    repeats: 0\n", "    - {nodes: 0, devicesPerNode: 1}\n"));
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.errors().size(), 3u) << e.what();
  }
}

TEST(Spec, MissingFileIsAClearError) {
  try {
    load_benchmark_job("/nonexistent/job.yaml");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/job.yaml"), std::string::npos);
  }
}

}  // namespace
}  // namespace trainbench

namespace trainbench {
namespace {
TEST(Spec, DirectoryIsNotASpec) {
  try {
    load_benchmark_job("/");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
}
}  // namespace
}  // namespace trainbench
