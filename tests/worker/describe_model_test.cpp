// Parameter counts of the worker's models must equal torchvision's exactly.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <ostream>

#include "core/plan/model_flops.hpp"
#include "worker_launcher.hpp"

namespace {

using trainbench::test::run_process;
using trainbench::test::worker_path;

nlohmann::json describe(const std::string& model) {
  const auto out = run_process({worker_path(), "--describe-model", model}, {});
  EXPECT_EQ(out.exit_code, 0) << out.output;
  return nlohmann::json::parse(out.output);
}

struct Expected {
  const char* model;
  std::int64_t parameters;
};

std::ostream& operator<<(std::ostream& os, const Expected& e) { return os << e.model; }

class DescribeModel : public ::testing::TestWithParam<Expected> {};

TEST_P(DescribeModel, ParameterCountMatchesTorchvision) {
  const auto j = describe(GetParam().model);
  EXPECT_EQ(j.at("model"), GetParam().model);
  EXPECT_EQ(j.at("parameters").get<std::int64_t>(), GetParam().parameters);
  EXPECT_GT(j.at("buffers").get<std::int64_t>(), 0);
}

INSTANTIATE_TEST_SUITE_P(Torchvision, DescribeModel,
                         ::testing::Values(Expected{"resnet18", 11689512},
                                           Expected{"resnet50", 25557032},
                                           Expected{"resnet101", 44549160},
                                           Expected{"resnext50_32x4d", 25028904},
                                           Expected{"resnext101_32x8d", 88791336}),
                         [](const auto& tc_info) { return std::string(tc_info.param.model); });

TEST(DescribeModelMlp, DefaultShape) {
  // Default RunConfig mlp: 1024 -> 4096 -> 4096 -> 1000, no buffers.
  const auto j = describe("mlp");
  const std::int64_t expected = 1024LL * 4096 + 4096 + 4096LL * 4096 + 4096 + 4096LL * 1000 + 1000;
  EXPECT_EQ(j.at("parameters").get<std::int64_t>(), expected);
  EXPECT_EQ(j.at("buffers").get<std::int64_t>(), 0);
}

// The FLOP counts come from core's layer list of each model (core/plan/model_flops.hpp): it must hold
// exactly the parameters of the model libtorch builds (same default shapes: RunConfig{}), so
// that neither can change without the other.
TEST(DescribeModelFlops, LayerListHasTheModelsParameters) {
  for (const char* model : {"mlp", "resnet18", "resnet50", "resnet101", "resnext50_32x4d", "resnext101_32x8d",
                            "bert-base", "gpt2-small", "mlstm", "hybrid-embedding"}) {
    trainbench::RunConfig config;
    config.model = model;
    const auto layers = trainbench::model_layers(config);
    ASSERT_FALSE(layers.empty()) << model;
    EXPECT_EQ(trainbench::total_parameters(layers), describe(model).at("parameters").get<std::int64_t>()) << model;
  }
}

TEST(DescribeModelMlp, UnknownModelIsAConfigError) {
  const auto out = run_process({worker_path(), "--describe-model", "vgg16"}, {});
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("unknown model 'vgg16'"), std::string::npos) << out.output;
}

}  // namespace

namespace {

// --version names the PyTorch stack a run would report: this CPU build's libtorch 2.x from the
// pinned wheel, no CUDA, cuDNN or NCCL, gloo, MKL inside libtorch_cpu.
TEST(WorkerVersion, NamesItsPyTorchStack) {
  const auto out = run_process({worker_path(), "--version"}, {});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("trainbench-worker 0."), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("\nPyTorch (libtorch): 2."), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("\nCUDA: none\ncuDNN: none\nNCCL: none\ngloo: yes\n"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("\nBLAS: MKL in libtorch_cpu"), std::string::npos) << out.output;
  const auto bad = run_process({worker_path(), "--versions"}, {});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("unexpected argument '--versions'"), std::string::npos) << bad.output;
}

}  // namespace
