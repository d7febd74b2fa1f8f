#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/spec_error.hpp"

namespace trainbench {

inline constexpr const char* kApiVersion = "trainbench.dev/v1alpha1";
inline constexpr const char* kKind = "BenchmarkJob";

/// Shape of the `mlp` model: input -> hidden... -> classes, ReLU between.
struct MlpSpec {
  int input_size = 1024;
  std::vector<int> hidden_sizes{4096, 4096};
  int num_classes = 1000;
};

struct DdpSpec {
  double bucket_cap_mb = 25.0;                 ///< bucket size, as DDP's bucket_cap_mb
  std::string gradient_compression = "none";   ///< none | fp16 | bf16
  bool broadcast_buffers = true;               ///< BatchNorm buffers from rank 0 each step
};

struct BenchmarkSpec {
  std::string model;                 ///< required: mlp, resnet18, resnet50, ...
  std::string paradigm = "ddp";      ///< none | ddp
  int batch_size_per_device = 32;
  std::string precision = "fp32";
  int warmup_steps = 20;
  int measure_steps = 100;
  int repeats = 5;
  std::uint64_t seed = 0;
  double learning_rate = 0.01;
  int threads_per_process = 0;       ///< 0: cores / processes on the node
  int image_size = 224;              ///< input height = width for image models
  MlpSpec mlp;
  DdpSpec ddp;
};

/// One cluster shape of the sweep; optional fields override spec.benchmark.
struct SweepEntry {
  int nodes = 1;
  int devices_per_node = 1;
  std::optional<std::string> paradigm;
  std::optional<double> bucket_cap_mb;
};

struct RunPolicy {
  int active_deadline_seconds = 0;   ///< 0: no deadline; a run past it is stopped and failed
  int collective_timeout_seconds = 300;  ///< process-group timeout inside the workers
};

struct ObjectMeta {
  std::string name;
  std::string namespace_ = "default";
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
};

struct BenchmarkJob {
  std::string api_version = kApiVersion;
  std::string kind = kKind;
  ObjectMeta metadata;
  BenchmarkSpec benchmark;
  std::vector<SweepEntry> sweep;
  std::string device = "cpu";        ///< cpu | cuda
  std::string backend;               ///< gloo | nccl; defaulted from device
  RunPolicy run_policy;
};

/// Allowed values, shared by validation, docs and (later) the CRD schema.
const std::vector<std::string>& known_models();
const std::vector<std::string>& known_paradigms();
const std::vector<std::string>& known_precisions();
const std::vector<std::string>& known_compressions();

/// Parses one YAML (or JSON) document into a BenchmarkJob, applies defaults and validates it.
/// Unknown fields are rejected. Throws SpecError naming every bad field.
BenchmarkJob parse_benchmark_job(const std::string& yaml_text);

/// Reads `path` and calls parse_benchmark_job. A missing file is a SpecError on path "<file>".
BenchmarkJob load_benchmark_job(const std::string& path);

/// Semantic checks on an already-built job (also run by parse_benchmark_job).
std::vector<FieldError> validate(const BenchmarkJob& job);

}  // namespace trainbench
