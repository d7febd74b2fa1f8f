#pragma once

// The BenchmarkJob document as types. Read from YAML by core/spec/spec_parse.cpp, checked by
// core/spec/spec_validate.cpp, written as JSON by core/spec/spec_serialize.cpp; its bounds and allowed
// values are core/spec/spec_bounds.hpp's, its closed sets core/spec/vocabulary.hpp's and core/spec/paradigm.hpp's.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/spec/allreduce.hpp"
#include "core/spec/paradigm.hpp"
#include "core/spec/spec_bounds.hpp"
#include "core/spec/spec_error.hpp"

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
  DdpImplementation implementation = DdpImplementation::kPytorch;  ///< "implementation"
  double bucket_cap_mb = 25.0;                 ///< bucket size, as DDP's bucket_cap_mb
  GradientCompression gradient_compression = GradientCompression::kNone;
  bool broadcast_buffers = true;               ///< BatchNorm buffers from rank 0 each step
};

/// Size overrides of the transformer models (bert-base, gpt2-small); 0 keeps the preset's value
/// (bert-base: 12 layers, hidden 768, 12 heads, intermediate 3072, vocab 30522, 512 positions;
/// gpt2-small: 12, 768, 12, 3072, 50257, 1024).
struct TransformerSpec {
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int intermediate = 0;
  int vocab_size = 0;
  int max_positions = 0;
  Attention attention = Attention::kAuto;  ///< "attention"
};

/// The multiplicative LSTM of the sentiment-discovery scaling note (byte-level, vocab 256).
struct MlstmSpec {
  int hidden_size = 4096;
  int embedding_size = 64;
};

/// The DDP + RPC benchmark's HybridModel: numTables EmbeddingBags (sum) of numEmbeddings x
/// embeddingDim, concatenated, then Linear layers denseSizes... -> numClasses (ReLU after the
/// second layer, as in the seed).
struct HybridEmbeddingSpec {
  int num_tables = 8;
  int num_embeddings = 300;
  int embedding_dim = 64;
  int bag_size = 5;
  std::vector<int> dense_sizes{256, 128, 64, 32};
  int num_classes = 8;
};

/// spec.benchmark.pipeline: how paradigms pipeline and model-parallel split the model into
/// stages, one per rank (the model seen as a sequence of blocks, worker/models.hpp).
struct PipelineSpec {
  int micro_batches = 4;        ///< pipeline: micro-batches per step (GPipe); model-parallel uses 1
  std::vector<int> boundaries;  ///< index of the first block of stages 1..S-1; empty: balanced by parameters
};

/// spec.benchmark.hybridPs: paradigm hybrid-ps (the DDP + RPC benchmark's shape): the trainers
/// (nodes x devicesPerNode) replicate the dense part with DDP; the embedding tables' rows are
/// sharded over parameterServers extra processes, each owning a contiguous range of every table.
struct HybridPsSpec {
  int parameter_servers = 8;  ///< the seed's default; a sweep entry's parameterServers overrides it
};

struct BenchmarkSpec {
  std::string model;                 ///< required: mlp, resnet18, resnet50, ...
  Paradigm paradigm = Paradigm::kDdp;
  int batch_size_per_device = 32;
  Precision precision = Precision::kFp32;
  int warmup_steps = 20;
  int measure_steps = 100;
  int repeats = 5;
  std::uint64_t seed = 0;
  double learning_rate = 0.01;
  int threads_per_process = 0;       ///< 0: cores / processes on the node
  int image_size = 224;              ///< input height = width for image models
  MlpSpec mlp;
  DdpSpec ddp;
  std::optional<Optimizer> optimizer;  ///< unset: default_optimizer(paradigm) per run
  PipelineSpec pipeline;
  int sequence_length = 128;         ///< tokens per sequence of the language models
  TransformerSpec transformer;
  MlstmSpec mlstm;
  HybridEmbeddingSpec hybrid_embedding;
  AllreduceSpec allreduce;           ///< paradigm allreduce: message sizes and dtype
  HybridPsSpec hybrid_ps;            ///< paradigm hybrid-ps: parameter servers
  /// A rank whose straggler score (fastest rank's compute / its compute) is below this is named
  /// a straggler in the report, status and an Event. In (0, 1].
  double straggler_threshold = 0.7;
  double efficiency_target = 0.8;    ///< runs below this scaling efficiency are flagged, in (0, 1]
  /// a run whose repeats' p50 sec/iter spread ((max - min) / median) exceeds this % is noisy
  double noise_threshold_percent = 10;
  /// Peak TFLOP/s per device that MFU is measured against, instead of the GPU table or the CPU's
  /// measured GEMM (core/plan/peak_flops.hpp); unset: those. > 0.
  std::optional<double> peak_tflops;
};

/// One cluster shape of the sweep; optional fields override spec.benchmark.
struct SweepEntry {
  int nodes = 1;
  int devices_per_node = 1;
  std::optional<Paradigm> paradigm;
  std::optional<double> bucket_cap_mb;
  std::optional<int> parameter_servers;  ///< paradigm hybrid-ps only: overrides hybridPs.parameterServers
};

struct RunPolicy {
  int active_deadline_seconds = 0;   ///< 0: no deadline; a run past it is stopped and failed
  int collective_timeout_seconds = 300;  ///< process-group timeout inside the workers
  int backoff_limit = 2;             ///< operator: whole-run restarts after a failed pod
  int scheduling_timeout_seconds = 300;  ///< operator: all pods of a run Running within this
  /// No rank advanced this long: the run fails naming the stuck ranks; 0: off; unset:
  /// kDefaultHangTimeoutSeconds when the collective timeout is longer, else off (see below).
  std::optional<int> hang_timeout_seconds;
  CleanPodPolicy clean_pod_policy = CleanPodPolicy::kAll;  ///< operator: pods deleted when a run ends
};

inline constexpr int kDefaultHangTimeoutSeconds = 120;

/// The hang timeout a run uses: the field when set; unset, 120 s, or off when the collective
/// timeout is no longer than that (the workers' own timeout then ends a hang first, as before).
inline int resolved_hang_timeout_seconds(const RunPolicy& p) {
  if (p.hang_timeout_seconds) return *p.hang_timeout_seconds;
  return p.collective_timeout_seconds > kDefaultHangTimeoutSeconds ? kDefaultHangTimeoutSeconds : 0;
}

/// spec.template: merged by the operator into every pod it creates. The Kubernetes-shaped lists
/// are kept verbatim as JSON (checked only for shape: lists of objects, env items named).
struct PodTemplate {
  /// "": unset, the operator's worker image for spec.device (default_worker_image, or its
  /// --worker-image / --worker-cuda-image); the API server refuses an empty one (minLength 1).
  std::string image;
  std::string image_pull_policy;     ///< "" (Kubernetes decides) | Always | IfNotPresent | Never
  std::string service_account_name; ///< "" (the namespace's default); trainers only
  std::map<std::string, std::string> resource_limits;    ///< quantities as strings: "8", "500m", "4Gi"
  std::map<std::string, std::string> resource_requests;
  std::map<std::string, std::string> node_selector;
  nlohmann::json tolerations = nlohmann::json::array();   ///< [core/v1 Toleration]
  nlohmann::json volumes = nlohmann::json::array();       ///< [core/v1 Volume]
  nlohmann::json volume_mounts = nlohmann::json::array(); ///< [core/v1 VolumeMount]
  nlohmann::json env = nlohmann::json::array();           ///< [core/v1 EnvVar]
  std::map<std::string, std::string> annotations;  ///< pod annotations
  std::map<std::string, std::string> labels;       ///< pod labels (not trainbench.dev/...)

  /// "trainbench/worker:<kVersion>" for device cpu, "trainbench/worker:<kVersion>-cuda" for cuda
  /// (docker/worker.Dockerfile, TORCH_FLAVOUR).
  static std::string default_worker_image(Device device);
};

/// spec.nccl: NCCL's environment in every worker pod (unset fields are not set).
struct NcclSpec {
  std::string socket_ifname;         ///< NCCL_SOCKET_IFNAME; "" unset
  std::optional<bool> ib_disable;    ///< NCCL_IB_DISABLE=1/0
  std::string debug;                 ///< NCCL_DEBUG: "" unset | VERSION | WARN | INFO | TRACE
  std::map<std::string, std::string> extra_env;  ///< more variables, e.g. NCCL_P2P_DISABLE
};

/// One environment variable of a program workload (spec.workloads[].program.env).
struct ProgramEnvVar {
  std::string name;
  std::string value;
};

/// spec.workloads[].program: a user's training program, run as every rank of each of the
/// sweep's runs with the torchrun environment; it reports through the probe protocol
/// (docs/workloads.md: a rank record and progress records, as the built-in worker's ranks do).
struct ProgramSpec {
  /// The operator's pod image; "": the operator's worker image for spec.device. `trainbench run`
  /// ignores it (the program runs on this machine).
  std::string image;
  std::vector<std::string> command;  ///< required: the executable and its first arguments
  std::vector<std::string> args;     ///< appended to command
  std::vector<ProgramEnvVar> env;    ///< on top of the rank's torchrun environment
  std::string working_dir;           ///< "": the executor's (trainbench run: its working directory)
  /// Training FLOPs of one example (forward + backward), for MFU; unset: no MFU. "flopsPerExample".
  std::optional<double> flops_per_example;
};

/// spec.workloads[]: what the sweep's runs train. Without `program`, the built-in worker with
/// spec.benchmark's model and paradigm; with it, the user's program.
struct WorkloadSpec {
  std::string name;  ///< unique in the job; the report's group of rows
  std::optional<ProgramSpec> program;
};

/// The default of spec.baseline.regressionThresholdPercent, and of `trainbench run --baseline`.
inline constexpr double kDefaultRegressionThresholdPercent = 5;

/// spec.baseline: the report the operator compares this job's with when it ends (the Regressed
/// condition, docs/operator.md). Exactly one of benchmarkJob and configMap, in the job's namespace.
struct BaselineSpec {
  std::string benchmark_job;              ///< an earlier BenchmarkJob: its status.report
  std::string config_map;                 ///< or a ConfigMap ...
  std::string config_map_key = "report";  ///< ... whose key holds a report (`trainbench run --json`)
  /// Regressed when a row's p50 ex/sec is significantly lower by more than this (percent).
  double regression_threshold_percent = kDefaultRegressionThresholdPercent;
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
  Device device = Device::kCpu;
  std::optional<Backend> backend;  ///< parse_benchmark_job sets default_backend(device) when unset
  RunPolicy run_policy;
  int master_port = 29500;           ///< MASTER_PORT of every run (the rendezvous TCPStore)
  PodTemplate pod_template;          ///< spec.template
  NcclSpec nccl;
  std::optional<BaselineSpec> baseline;  ///< spec.baseline
  /// spec.suspend (as batch/v1 Job's): the operator runs no pod while true; a queue (Kueue)
  /// creates the job suspended and admits it by setting false. `trainbench run` ignores it.
  bool suspend = false;
  /// spec.workloads: each runs the whole sweep, in order (runs = workloads x sweep). Empty: the
  /// built-in worker alone, unnamed (the job as before workloads existed).
  std::vector<WorkloadSpec> workloads;
};

/// True when some run of the job is the built-in worker's (no workloads, or one without a program).
bool has_builtin_workload(const BenchmarkJob& job);

/// Parses one YAML (or JSON) document into a BenchmarkJob, applies defaults and validates it.
/// Unknown fields are rejected. Throws SpecError naming every bad field.
BenchmarkJob parse_benchmark_job(const std::string& yaml_text);

/// Reads `path` and calls parse_benchmark_job. A missing file is a SpecError on path "<file>".
BenchmarkJob load_benchmark_job(const std::string& path);

/// Semantic checks on an already-built job (also run by parse_benchmark_job).
std::vector<FieldError> validate(const BenchmarkJob& job);

/// The job as a document (apiVersion, kind, metadata, spec) with every default filled in and
/// unset optional fields left out; parse_benchmark_job(to_json(job).dump()) gives the job back.
nlohmann::json to_json(const BenchmarkJob& job);

}  // namespace trainbench
