#pragma once

// The spec's closed sets of words as enums. Each set is ONE table (Spellings<E>::table) giving
// every value its text in the spec; to_string, parse_enum and allowed_texts are views of that
// table, used by the spec reader, the validator's messages, the CRD generator's enums and the
// JSON of RunConfig. Paradigm, with its traits, lives in core/spec/paradigm.hpp.

#include <array>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace trainbench {

/// One value of a closed set and its text in the spec.
template <typename E>
struct Spelling {
  E value;
  std::string_view text;
};

/// Specialised beside each enum: `static constexpr std::array<Entry, N> table`, where Entry has
/// members `value` (E) and `text` (std::string_view), in the order the spec documents them.
template <typename E>
struct Spellings;

/// The spec's text of `v` ("" only for a value missing from its table, which a test forbids).
template <typename E, typename = decltype(Spellings<E>::table)>
std::string to_string(E v) {
  for (const auto& s : Spellings<E>::table) {
    if (s.value == v) return std::string(s.text);
  }
  return "";
}

/// Streams the spec's text (test failure messages print "ddp", not 1).
template <typename E, typename = decltype(Spellings<E>::table)>
std::ostream& operator<<(std::ostream& os, E v) {
  return os << to_string(v);
}

/// The value spelt `text` exactly (case-sensitive, as the API server's enum), or nullopt.
template <typename E>
std::optional<E> parse_enum(std::string_view text) {
  for (const auto& s : Spellings<E>::table) {
    if (s.text == text) return s.value;
  }
  return std::nullopt;
}

/// Every text of E in table order: the validator's "must be one of [...]" and the CRD's enum.
template <typename E>
const std::vector<std::string>& allowed_texts() {
  static const std::vector<std::string> texts = [] {
    std::vector<std::string> v;
    for (const auto& s : Spellings<E>::table) v.emplace_back(s.text);
    return v;
  }();
  return texts;
}

/// spec.benchmark.precision: fp32, or autocast to bfloat16 / float16 (fp16 with loss scaling).
enum class Precision { kFp32, kAmpBf16, kAmpFp16 };
template <>
struct Spellings<Precision> {
  static constexpr std::array<Spelling<Precision>, 3> table{
      {{Precision::kFp32, "fp32"}, {Precision::kAmpBf16, "amp-bf16"}, {Precision::kAmpFp16, "amp-fp16"}}};
};

/// spec.device.
enum class Device { kCpu, kCuda };
template <>
struct Spellings<Device> {
  static constexpr std::array<Spelling<Device>, 2> table{{{Device::kCpu, "cpu"}, {Device::kCuda, "cuda"}}};
};

/// spec.backend: the c10d process-group backend (defaulted from the device: nccl on cuda).
enum class Backend { kGloo, kNccl };
template <>
struct Spellings<Backend> {
  static constexpr std::array<Spelling<Backend>, 2> table{{{Backend::kGloo, "gloo"}, {Backend::kNccl, "nccl"}}};
};

/// The backend a job on `device` gets when spec.backend is not set.
constexpr Backend default_backend(Device device) { return device == Device::kCuda ? Backend::kNccl : Backend::kGloo; }

/// spec.runPolicy.cleanPodPolicy: which pods the operator deletes when a run ends.
enum class CleanPodPolicy { kAll, kRunning, kNone };
template <>
struct Spellings<CleanPodPolicy> {
  static constexpr std::array<Spelling<CleanPodPolicy>, 3> table{
      {{CleanPodPolicy::kAll, "All"}, {CleanPodPolicy::kRunning, "Running"}, {CleanPodPolicy::kNone, "None"}}};
};

/// spec.benchmark.optimizer: SGD with momentum 0.9, or Adam.
enum class Optimizer { kSgd, kAdam };
template <>
struct Spellings<Optimizer> {
  static constexpr std::array<Spelling<Optimizer>, 2> table{{{Optimizer::kSgd, "sgd"}, {Optimizer::kAdam, "adam"}}};
};

/// spec.benchmark.ddp.gradientCompression: gradients all-reduced as they are, or cast to 16 bits.
enum class GradientCompression { kNone, kFp16, kBf16 };
template <>
struct Spellings<GradientCompression> {
  static constexpr std::array<Spelling<GradientCompression>, 3> table{{{GradientCompression::kNone, "none"},
                                                                       {GradientCompression::kFp16, "fp16"},
                                                                       {GradientCompression::kBf16, "bf16"}}};
};

/// spec.benchmark.ddp.implementation: whose DistributedDataParallel averages the gradients:
/// PyTorch's own (c10d::Reducer, as torch.nn.parallel.DistributedDataParallel drives it) or
/// trainbench's bucketed reducer (worker/ddp_reducer.hpp).
enum class DdpImplementation { kPytorch, kTrainbench };
template <>
struct Spellings<DdpImplementation> {
  static constexpr std::array<Spelling<DdpImplementation>, 2> table{
      {{DdpImplementation::kPytorch, "pytorch"}, {DdpImplementation::kTrainbench, "trainbench"}}};
};

/// spec.benchmark.transformer.attention: how bert-base and gpt2-small compute attention.
/// auto: the fused kernel where libtorch has it (2.x: at::scaled_dot_product_attention, flash /
/// memory-efficient on CUDA), else eager; eager: matmul, softmax, matmul (libtorch 1.13's only
/// path; kept for comparisons); fused: the fused kernel, an error where libtorch lacks it.
enum class Attention { kAuto, kEager, kFused };
template <>
struct Spellings<Attention> {
  static constexpr std::array<Spelling<Attention>, 3> table{
      {{Attention::kAuto, "auto"}, {Attention::kEager, "eager"}, {Attention::kFused, "fused"}}};
};

/// What a process of a run does (TRAINBENCH_ROLE, the pods' trainbench.dev/role label).
enum class Role { kTrainer, kParameterServer };
template <>
struct Spellings<Role> {
  static constexpr std::array<Spelling<Role>, 2> table{
      {{Role::kTrainer, "trainer"}, {Role::kParameterServer, "parameter-server"}}};
};

inline std::optional<Precision> parse_precision(std::string_view t) { return parse_enum<Precision>(t); }
inline std::optional<Device> parse_device(std::string_view t) { return parse_enum<Device>(t); }
inline std::optional<Backend> parse_backend(std::string_view t) { return parse_enum<Backend>(t); }
inline std::optional<CleanPodPolicy> parse_clean_pod_policy(std::string_view t) {
  return parse_enum<CleanPodPolicy>(t);
}
inline std::optional<Optimizer> parse_optimizer(std::string_view t) { return parse_enum<Optimizer>(t); }
inline std::optional<GradientCompression> parse_gradient_compression(std::string_view t) {
  return parse_enum<GradientCompression>(t);
}
inline std::optional<Attention> parse_attention(std::string_view t) { return parse_enum<Attention>(t); }
inline std::optional<Role> parse_role(std::string_view t) { return parse_enum<Role>(t); }

}  // namespace trainbench
