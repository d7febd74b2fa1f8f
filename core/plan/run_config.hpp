#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/spec/spec.hpp"

namespace trainbench {

/// Test-only behaviour of the worker. Never set by a spec or the plan; tests set it in the
/// RunConfig they hand a worker ("testOptions", serialised only when something is set, so the
/// config of a normal run is unchanged).
struct RunTestOptions {
  /// > 0: a loss scaler (worker/amp.hpp GradScaler) with this initial scale on any precision, so
  /// that the CPU build's tests can drive the skip/back-off path. "lossScale".
  double loss_scale = 0;
  /// bert-base / gpt2-small without dropout (a split model's stages draw their masks from their
  /// own generators, so only without it does it equal the unsplit model). "noDropout".
  bool no_dropout = false;
  /// This rank kills itself with SIGKILL at the start of its first measured step (-1: none).
  /// "sigkillRankAtFirstMeasuredStep".
  int sigkill_rank_at_first_measured_step = -1;
  /// paradigm allreduce: this rank contributes a wrong value to every size's verified
  /// all-reduce, so that the check must fail the run (-1: none). "allreduceFaultRank".
  int allreduce_fault_rank = -1;
  /// This rank stops itself with SIGSTOP at the start of loop step `sigstop_at_step` (0-based,
  /// warm-up included), as a hung driver or a stuck data loader looks (-1: none). "sigstopRank",
  /// "sigstopAtStep".
  int sigstop_rank = -1;
  int sigstop_at_step = 0;
  /// paradigms none / ddp / zero: this rank computes slow_factor forward + backward passes per
  /// step instead of one (the extra ones on a private copy of the model, so the training is
  /// unchanged): real compute, as a slow device or a throttled CPU would add (-1: none).
  /// "slowRank", "slowFactor" (an integer >= 1).
  int slow_rank = -1;
  int slow_factor = 1;

  /// Anything set (the default is a normal run).
  bool any() const {
    return loss_scale != 0 || no_dropout || sigkill_rank_at_first_measured_step != -1 || allreduce_fault_rank != -1 ||
           sigstop_rank != -1 || slow_rank != -1;
  }
};

nlohmann::json to_json(const RunTestOptions& t);
/// Throws std::runtime_error naming a mistyped field.
RunTestOptions run_test_options_from_json(const nlohmann::json& j);

/// Everything one run (one sweep entry) needs, fully resolved: pure data, the same for the
/// local executor and the Kubernetes operator. Workers receive it as JSON in
/// TRAINBENCH_RUN_CONFIG.
struct RunConfig {
  std::string job_name;
  std::string job_namespace = "default";
  int index = 0;              ///< position in spec.sweep
  int nodes = 1;
  int devices_per_node = 1;
  Paradigm paradigm = Paradigm::kDdp;
  std::string model;
  int batch_size_per_device = 32;
  Precision precision = Precision::kFp32;
  int warmup_steps = 20;
  int measure_steps = 100;
  int repeats = 5;
  std::uint64_t seed = 0;
  double learning_rate = 0.01;
  int threads_per_process = 1;  ///< resolved (never 0)
  int image_size = 224;
  MlpSpec mlp;
  DdpSpec ddp;
  Optimizer optimizer = Optimizer::kSgd;  ///< resolved per paradigm (default_optimizer)
  PipelineSpec pipeline;          ///< micro_batches resolved: 1 unless paradigm pipeline
  int sequence_length = 128;
  TransformerSpec transformer;
  MlstmSpec mlstm;
  HybridEmbeddingSpec hybrid_embedding;
  AllreduceSpec allreduce;        ///< paradigm allreduce
  Device device = Device::kCpu;
  Backend backend = Backend::kGloo;
  int collective_timeout_seconds = 300;
  /// resolved_hang_timeout_seconds(spec.runPolicy); 0: no progress records, no watch
  /// ("hangTimeoutSeconds", written only when > 0).
  int hang_timeout_seconds = 0;
  /// paradigm hybrid-ps: parameter-server processes besides the trainers ("parameterServers");
  /// 0 for every other paradigm.
  int parameter_servers = 0;
  /// hybrid-ps: the parameter servers run in pods of their own (the operator) instead of beside
  /// node 0's trainers (trainbench run): LOCAL_WORLD_SIZE and threads then count trainers only.
  /// "parameterServersOwnPods", written only when true.
  bool parameter_servers_own_pods = false;
  /// spec.benchmark.stragglerThreshold ("stragglerThreshold"; 0.7 when absent).
  double straggler_threshold = 0.7;
  /// spec.benchmark.peakTFLOPS ("peakTFLOPS", written only when set).
  std::optional<double> peak_tflops;
  RunTestOptions test;  ///< tests only ("testOptions", written only when set)
  /// spec.workloads[].name of the workload this run belongs to; "" in a job without workloads
  /// ("workload", written only when set).
  std::string workload;
  /// The program every rank runs instead of the built-in worker (spec.workloads[].program);
  /// unset: the built-in worker ("program", written only when set). Its runs have paradigm ddp
  /// in name only: what they do is the program's.
  std::optional<ProgramSpec> program;

  /// The trainers (devices): examples/sec and speedup count these.
  int world_size() const { return nodes * devices_per_node; }
  /// Every process of the run (the c10d world, WORLD_SIZE): the trainers, then the parameter
  /// servers of paradigm hybrid-ps.
  int process_count() const { return world_size() + parameter_servers; }
  /// Seed-style configuration label: "no ddp" or "1M/2G" (machines / devices per machine),
  /// after the workload's name in a job with workloads ("python-ddp 1M/2G").
  std::string label() const;
  /// "2 CPUs" / "8 GPUs".
  std::string devices_label() const;
};

nlohmann::json to_json(const RunConfig& c);
/// Throws std::runtime_error naming the missing, mistyped or misspelt field.
RunConfig run_config_from_json(const nlohmann::json& j);

/// Where paradigm hybrid-ps's parameter servers run.
enum class ServerPlacement {
  WithNodeZero,  ///< local processes beside node 0's trainers (trainbench run)
  OwnPods,       ///< one pod each (the operator): node 0's trainers share their pod with no server
};

/// A program as JSON (RunConfig's "program") and back; the reader names the bad field.
nlohmann::json to_json(const ProgramSpec& p);
ProgramSpec program_spec_from_json(const nlohmann::json& j, const std::string& path);

/// The plan: one RunConfig per sweep entry, in order; with spec.workloads, the whole sweep for
/// each workload in turn (index = workload x sweep entries + entry). `cores` is the number of CPU cores
/// available on one node (used to resolve threadsPerProcess = 0: cores / processes on it).
std::vector<RunConfig> plan_runs(const BenchmarkJob& job, int cores,
                                 ServerPlacement servers = ServerPlacement::WithNodeZero);

/// Where a rank lives inside a run.
struct RankPlacement {
  int node_rank = 0;
  int local_rank = 0;
  int rank = 0;  ///< trainers: node_rank * devices_per_node + local_rank; servers: world_size() + j
  Role role = Role::kTrainer;
};

/// The trainers in rank order, then (paradigm hybrid-ps) parameter server j = 0..P-1 as rank
/// world_size() + j with node rank 0: local rank devices_per_node + j beside node 0's trainers,
/// or local rank 0 alone in its pod (parameter_servers_own_pods).
std::vector<RankPlacement> placements(const RunConfig& run);

/// Processes of the run on node `node_rank` (node 0 also hosts the parameter servers, unless
/// they have pods of their own).
int processes_on_node(const RunConfig& run, int node_rank);

/// torchrun's LOCAL_WORLD_SIZE of a rank: the processes started together on its host (its node,
/// or its pod): processes_on_node(), except 1 for a parameter server in a pod of its own.
int local_world_size(const RunConfig& run, const RankPlacement& p);

/// One environment variable of a process.
struct EnvVar {
  std::string name;
  std::string value;
};

/// The environment of one rank, the same for every launcher (trainbench run, trainbench
/// node-launch in a trainer pod, the operator's parameter-server pods), in this order:
/// MASTER_ADDR, MASTER_PORT, WORLD_SIZE (every process: process_count()), RANK, LOCAL_RANK,
/// LOCAL_WORLD_SIZE (local_world_size()), NODE_RANK, GROUP_RANK (= NODE_RANK), OMP_NUM_THREADS,
/// OPENBLAS_NUM_THREADS, TRAINBENCH_ROLE (trainer | parameter-server) and TRAINBENCH_RUN_CONFIG
/// (the RunConfig as JSON). torchrun's names; no Slurm variables (the worker also reads Slurm's
/// when a job is launched by srun instead). The launcher adds what only it knows (result files,
/// pod identity, NCCL settings) on top.
std::vector<EnvVar> rank_variables(const RunConfig& run, const RankPlacement& p, const std::string& master_addr,
                                   int master_port);

/// The variables of rank_variables() that a launcher of several processes on one host
/// (trainbench node-launch, like torchrun's agent) sets per process; every other one is the
/// same for all the processes of a host.
bool is_per_process_variable(const std::string& name);

/// rank_variables() by name, for a launcher that lays it over its own environment.
std::map<std::string, std::string> rank_environment(const RunConfig& run, const RankPlacement& p,
                                                    const std::string& master_addr, int master_port);

}  // namespace trainbench
