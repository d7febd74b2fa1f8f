// The closed sets of core/spec/vocabulary.hpp and core/spec/paradigm.hpp: every value prints as its spec
// text and parses back; unknown text (other case, empty, near misses) parses to nothing.

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/plan/run_config.hpp"
#include "core/spec/paradigm.hpp"
#include "core/spec/spec.hpp"
#include "core/spec/vocabulary.hpp"

namespace trainbench {
namespace {

/// Every value of E listed in its table round-trips through its text; texts are distinct and
/// non-empty; allowed_texts lists them in table order; `unknown` texts parse to nullopt.
template <typename E>
void expect_round_trip(const std::vector<E>& values, const std::vector<std::string>& texts,
                       const std::vector<std::string>& unknown) {
  ASSERT_EQ(values.size(), texts.size());
  ASSERT_EQ(Spellings<E>::table.size(), values.size()) << "a value is missing from the test or the table";
  std::set<std::string> seen;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::string text = to_string(values[i]);
    EXPECT_EQ(text, texts[i]);
    EXPECT_TRUE(seen.insert(text).second) << "duplicate text " << text;
    const auto back = parse_enum<E>(text);
    ASSERT_TRUE(back.has_value()) << text;
    EXPECT_EQ(*back, values[i]) << text;
    std::ostringstream os;
    os << values[i];
    EXPECT_EQ(os.str(), text);
  }
  EXPECT_EQ(allowed_texts<E>(), texts);
  for (const auto& u : unknown) EXPECT_FALSE(parse_enum<E>(u).has_value()) << "'" << u << "'";
  EXPECT_FALSE(parse_enum<E>("").has_value());
}

TEST(Vocabulary, ParadigmRoundTrips) {
  expect_round_trip<Paradigm>({Paradigm::kNone, Paradigm::kDdp, Paradigm::kZero, Paradigm::kPipeline,
                               Paradigm::kModelParallel, Paradigm::kAllreduce, Paradigm::kHybridPs},
                              {"none", "ddp", "zero", "pipeline", "model-parallel", "allreduce", "hybrid-ps"},
                              {"DDP", "horovod", "dp", "model_parallel", "hybrid-ps "});
  EXPECT_EQ(parse_paradigm("zero"), Paradigm::kZero);
  EXPECT_EQ(known_paradigms(), allowed_texts<Paradigm>());
}

TEST(Vocabulary, ParadigmTraits) {
  EXPECT_TRUE(uses_ddp_reducer(Paradigm::kDdp));
  EXPECT_TRUE(uses_ddp_reducer(Paradigm::kZero));
  EXPECT_FALSE(uses_ddp_reducer(Paradigm::kNone));
  EXPECT_TRUE(uses_ddp_reducer(Paradigm::kHybridPs));  // its trainers' dense part, among the trainers
  EXPECT_TRUE(splits_into_stages(Paradigm::kPipeline));
  EXPECT_TRUE(splits_into_stages(Paradigm::kModelParallel));
  EXPECT_FALSE(splits_into_stages(Paradigm::kDdp));
  EXPECT_FALSE(trains_model(Paradigm::kAllreduce));
  EXPECT_TRUE(trains_model(Paradigm::kNone));
  EXPECT_TRUE(has_parameter_servers(Paradigm::kHybridPs));
  EXPECT_FALSE(has_parameter_servers(Paradigm::kDdp));
  for (const auto& row : Spellings<Paradigm>::table) {
    EXPECT_EQ(default_optimizer(row.value), row.value == Paradigm::kZero ? Optimizer::kAdam : Optimizer::kSgd)
        << row.text;
  }
}

TEST(Vocabulary, PrecisionRoundTrips) {
  expect_round_trip<Precision>({Precision::kFp32, Precision::kAmpBf16, Precision::kAmpFp16},
                               {"fp32", "amp-bf16", "amp-fp16"}, {"fp16", "FP32", "amp_bf16"});
  EXPECT_EQ(parse_precision("amp-bf16"), Precision::kAmpBf16);
  EXPECT_EQ(known_precisions(), allowed_texts<Precision>());
}

TEST(Vocabulary, DeviceRoundTrips) {
  expect_round_trip<Device>({Device::kCpu, Device::kCuda}, {"cpu", "cuda"}, {"tpu", "CUDA", "gpu"});
  EXPECT_EQ(parse_device("cuda"), Device::kCuda);
  EXPECT_EQ(known_devices(), allowed_texts<Device>());
}

TEST(Vocabulary, BackendRoundTrips) {
  expect_round_trip<Backend>({Backend::kGloo, Backend::kNccl}, {"gloo", "nccl"}, {"mpi", "NCCL"});
  EXPECT_EQ(parse_backend("nccl"), Backend::kNccl);
  EXPECT_EQ(known_backends(), allowed_texts<Backend>());
  EXPECT_EQ(default_backend(Device::kCpu), Backend::kGloo);
  EXPECT_EQ(default_backend(Device::kCuda), Backend::kNccl);
}

TEST(Vocabulary, CleanPodPolicyRoundTrips) {
  expect_round_trip<CleanPodPolicy>({CleanPodPolicy::kAll, CleanPodPolicy::kRunning, CleanPodPolicy::kNone},
                                    {"All", "Running", "None"}, {"all", "Succeeded", "none"});
  EXPECT_EQ(parse_clean_pod_policy("Running"), CleanPodPolicy::kRunning);
  EXPECT_EQ(known_clean_pod_policies(), allowed_texts<CleanPodPolicy>());
}

TEST(Vocabulary, OptimizerRoundTrips) {
  expect_round_trip<Optimizer>({Optimizer::kSgd, Optimizer::kAdam}, {"sgd", "adam"}, {"adamw", "SGD"});
  EXPECT_EQ(parse_optimizer("adam"), Optimizer::kAdam);
  EXPECT_EQ(known_optimizers(), allowed_texts<Optimizer>());
}

TEST(Vocabulary, GradientCompressionRoundTrips) {
  expect_round_trip<GradientCompression>(
      {GradientCompression::kNone, GradientCompression::kFp16, GradientCompression::kBf16}, {"none", "fp16", "bf16"},
      {"fp8", "int8", "None"});
  EXPECT_EQ(parse_gradient_compression("bf16"), GradientCompression::kBf16);
  EXPECT_EQ(known_compressions(), allowed_texts<GradientCompression>());
}

TEST(Vocabulary, RoleRoundTrips) {
  expect_round_trip<Role>({Role::kTrainer, Role::kParameterServer}, {"trainer", "parameter-server"},
                          {"master", "server", "parameter_server"});
  EXPECT_EQ(parse_role("parameter-server"), Role::kParameterServer);
}

/// RunConfig's JSON names a misspelt enum field and its allowed values.
TEST(Vocabulary, RunConfigNamesAMisspeltField) {
  nlohmann::json j = to_json(RunConfig{});
  EXPECT_EQ(j.at("paradigm"), "ddp");
  EXPECT_EQ(run_config_from_json(j).paradigm, Paradigm::kDdp);
  j["ddp"]["gradientCompression"] = "fp8";
  try {
    run_config_from_json(j);
    FAIL() << "accepted gradientCompression fp8";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "ddp.gradientCompression: must be one of [none, fp16, bf16], got \"fp8\"");
  }
  j = to_json(RunConfig{});
  j["paradigm"] = "horovod";
  EXPECT_THROW(run_config_from_json(j), std::runtime_error);
}

}  // namespace
}  // namespace trainbench
