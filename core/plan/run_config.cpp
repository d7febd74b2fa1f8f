#include "core/plan/run_config.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/spec/json_fields.hpp"
#include "core/spec/model_sizes.hpp"

namespace trainbench {

namespace jf = json_fields;

std::string RunConfig::label() const {
  // A job with workloads names each row's workload first ("python-ddp 1M/2G"): its rows group
  // by workload in the report, and `trainbench diff --workloads` strips it to match shapes.
  const std::string prefix = workload.empty() ? "" : workload + " ";
  if (paradigm == Paradigm::kNone) return prefix + "no ddp";
  const std::string shape = std::to_string(nodes) + "M/" + std::to_string(devices_per_node) + "G";
  // The seed's labels name DDP runs by shape only; other paradigms add their name so that a
  // sweep mixing paradigms has one distinct row per run ("1M/2G zero").
  return prefix + (paradigm == Paradigm::kDdp ? shape : shape + " " + to_string(paradigm));
}

std::string RunConfig::devices_label() const {
  return std::to_string(world_size()) + (device == Device::kCuda ? " GPUs" : " CPUs");
}

nlohmann::json to_json(const RunTestOptions& t) {
  nlohmann::json j = nlohmann::json::object();
  if (t.loss_scale != 0) j["lossScale"] = t.loss_scale;
  if (t.no_dropout) j["noDropout"] = true;
  if (t.sigkill_rank_at_first_measured_step != -1) {
    j["sigkillRankAtFirstMeasuredStep"] = t.sigkill_rank_at_first_measured_step;
  }
  if (t.allreduce_fault_rank != -1) j["allreduceFaultRank"] = t.allreduce_fault_rank;
  if (t.sigstop_rank != -1) {
    j["sigstopRank"] = t.sigstop_rank;
    j["sigstopAtStep"] = t.sigstop_at_step;
  }
  if (t.slow_rank != -1) {
    j["slowRank"] = t.slow_rank;
    j["slowFactor"] = t.slow_factor;
  }
  return j;
}

RunTestOptions run_test_options_from_json(const nlohmann::json& j) {
  const std::string p = "testOptions";
  jf::require_object(j, p);
  RunTestOptions t;
  if (jf::has(j, "lossScale")) t.loss_scale = jf::get_number(j, "lossScale", p);
  if (jf::has(j, "noDropout")) t.no_dropout = jf::get_bool(j, "noDropout", p);
  if (jf::has(j, "sigkillRankAtFirstMeasuredStep")) {
    t.sigkill_rank_at_first_measured_step = jf::get_int32(j, "sigkillRankAtFirstMeasuredStep", p);
  }
  if (jf::has(j, "allreduceFaultRank")) t.allreduce_fault_rank = jf::get_int32(j, "allreduceFaultRank", p);
  if (jf::has(j, "sigstopRank")) t.sigstop_rank = jf::get_int32(j, "sigstopRank", p);
  if (jf::has(j, "sigstopAtStep")) t.sigstop_at_step = jf::get_int32(j, "sigstopAtStep", p);
  if (jf::has(j, "slowRank")) t.slow_rank = jf::get_int32(j, "slowRank", p);
  if (jf::has(j, "slowFactor")) t.slow_factor = jf::get_int32(j, "slowFactor", p);
  if (t.slow_factor < 1) throw std::runtime_error(p + ".slowFactor: must be >= 1");
  return t;
}

nlohmann::json to_json(const RunConfig& c) {
  nlohmann::json j = {
      {"jobName", c.job_name},
      {"jobNamespace", c.job_namespace},
      {"index", c.index},
      {"nodes", c.nodes},
      {"devicesPerNode", c.devices_per_node},
      {"paradigm", to_string(c.paradigm)},
      {"model", c.model},
      {"batchSizePerDevice", c.batch_size_per_device},
      {"precision", to_string(c.precision)},
      {"warmupSteps", c.warmup_steps},
      {"measureSteps", c.measure_steps},
      {"repeats", c.repeats},
      {"seed", c.seed},
      {"learningRate", c.learning_rate},
      {"threadsPerProcess", c.threads_per_process},
      {"imageSize", c.image_size},
      {"mlp",
       {{"inputSize", c.mlp.input_size}, {"hiddenSizes", c.mlp.hidden_sizes}, {"numClasses", c.mlp.num_classes}}},
      {"ddp",
       {{"implementation", to_string(c.ddp.implementation)},
        {"bucketCapMB", c.ddp.bucket_cap_mb},
        {"gradientCompression", to_string(c.ddp.gradient_compression)},
        {"broadcastBuffers", c.ddp.broadcast_buffers}}},
      {"optimizer", to_string(c.optimizer)},
      {"pipeline", {{"microBatches", c.pipeline.micro_batches}, {"boundaries", c.pipeline.boundaries}}},
      {"sequenceLength", c.sequence_length},
      {"transformer", to_json(c.transformer)},
      {"mlstm", to_json(c.mlstm)},
      {"hybridEmbedding", to_json(c.hybrid_embedding)},
      {"allreduce", to_json(c.allreduce)},
      {"device", to_string(c.device)},
      {"backend", to_string(c.backend)},
      {"collectiveTimeoutSeconds", c.collective_timeout_seconds},
      {"parameterServers", c.parameter_servers},
      {"stragglerThreshold", c.straggler_threshold},
  };
  if (c.parameter_servers_own_pods) j["parameterServersOwnPods"] = true;
  if (c.hang_timeout_seconds > 0) j["hangTimeoutSeconds"] = c.hang_timeout_seconds;
  if (c.peak_tflops) j["peakTFLOPS"] = *c.peak_tflops;
  if (c.test.any()) j["testOptions"] = to_json(c.test);
  if (!c.workload.empty()) j["workload"] = c.workload;
  if (c.program) j["program"] = to_json(*c.program);
  return j;
}

nlohmann::json to_json(const ProgramSpec& p) {
  nlohmann::json j = {{"command", p.command}, {"args", p.args}, {"env", nlohmann::json::array()}};
  for (const auto& v : p.env) j["env"].push_back({{"name", v.name}, {"value", v.value}});
  if (!p.image.empty()) j["image"] = p.image;
  if (!p.working_dir.empty()) j["workingDir"] = p.working_dir;
  if (p.flops_per_example) j["flopsPerExample"] = *p.flops_per_example;
  return j;
}

namespace {

std::vector<std::string> string_list(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  std::vector<std::string> out;
  const auto& list = jf::get_array(obj, key, path);
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) throw std::runtime_error(path + "." + key + "[" + std::to_string(i) + "]: must be a string");
    out.push_back(list[i].get<std::string>());
  }
  return out;
}

}  // namespace

ProgramSpec program_spec_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  ProgramSpec p;
  p.command = string_list(j, "command", path);
  if (p.command.empty()) throw std::runtime_error(path + ".command: must not be empty");
  if (jf::has(j, "args")) p.args = string_list(j, "args", path);
  if (jf::has(j, "env")) {
    const auto& env = jf::get_array(j, "env", path);
    for (std::size_t i = 0; i < env.size(); ++i) {
      const std::string ep = path + ".env[" + std::to_string(i) + "]";
      jf::require_object(env[i], ep);
      p.env.push_back({jf::get_string(env[i], "name", ep), jf::get_string(env[i], "value", ep)});
    }
  }
  if (jf::has(j, "image")) p.image = jf::get_string(j, "image", path);
  if (jf::has(j, "workingDir")) p.working_dir = jf::get_string(j, "workingDir", path);
  if (jf::has(j, "flopsPerExample")) p.flops_per_example = jf::get_number(j, "flopsPerExample", path);
  return p;
}

RunConfig run_config_from_json(const nlohmann::json& j) {
  const std::string p;  // root
  jf::require_object(j, "runConfig");
  RunConfig c;
  c.job_name = jf::get_string(j, "jobName", p);
  c.job_namespace = jf::get_string(j, "jobNamespace", p);
  c.index = jf::get_int32(j, "index", p);
  c.nodes = jf::get_int32(j, "nodes", p);
  c.devices_per_node = jf::get_int32(j, "devicesPerNode", p);
  c.paradigm = jf::get_enum<Paradigm>(j, "paradigm", p);
  c.model = jf::get_string(j, "model", p);
  c.batch_size_per_device = jf::get_int32(j, "batchSizePerDevice", p);
  c.precision = jf::get_enum<Precision>(j, "precision", p);
  c.warmup_steps = jf::get_int32(j, "warmupSteps", p);
  c.measure_steps = jf::get_int32(j, "measureSteps", p);
  c.repeats = jf::get_int32(j, "repeats", p);
  const std::int64_t seed = jf::get_int(j, "seed", p);
  if (seed < 0) throw std::runtime_error("seed: must be >= 0");
  c.seed = static_cast<std::uint64_t>(seed);
  c.learning_rate = jf::get_number(j, "learningRate", p);
  c.threads_per_process = jf::get_int32(j, "threadsPerProcess", p);
  c.image_size = jf::get_int32(j, "imageSize", p);
  const auto& mlp = jf::get_object(j, "mlp", p);
  c.mlp.input_size = jf::get_int32(mlp, "inputSize", "mlp");
  c.mlp.num_classes = jf::get_int32(mlp, "numClasses", "mlp");
  c.mlp.hidden_sizes.clear();
  c.mlp.hidden_sizes = jf::get_int32_list(mlp, "hiddenSizes", "mlp");
  const auto& ddp = jf::get_object(j, "ddp", p);
  c.ddp.implementation = jf::get_enum<DdpImplementation>(ddp, "implementation", "ddp");
  c.ddp.bucket_cap_mb = jf::get_number(ddp, "bucketCapMB", "ddp");
  c.ddp.gradient_compression = jf::get_enum<GradientCompression>(ddp, "gradientCompression", "ddp");
  c.ddp.broadcast_buffers = jf::get_bool(ddp, "broadcastBuffers", "ddp");
  c.optimizer = jf::get_enum<Optimizer>(j, "optimizer", p);
  const auto& pipe = jf::get_object(j, "pipeline", p);
  c.pipeline.micro_batches = jf::get_int32(pipe, "microBatches", "pipeline");
  c.pipeline.boundaries = jf::get_int32_list(pipe, "boundaries", "pipeline");
  if (c.pipeline.micro_batches < 1) throw std::runtime_error("pipeline.microBatches: must be >= 1");
  c.sequence_length = jf::get_int32(j, "sequenceLength", p);
  c.transformer = transformer_spec_from_json(jf::get_object(j, "transformer", p), "transformer");
  c.mlstm = mlstm_spec_from_json(jf::get_object(j, "mlstm", p), "mlstm");
  c.hybrid_embedding = hybrid_embedding_spec_from_json(jf::get_object(j, "hybridEmbedding", p), "hybridEmbedding");
  if (jf::has(j, "allreduce")) {  // optional: configs from before the allreduce paradigm lack it
    const auto& ar = jf::get_object(j, "allreduce", p);
    c.allreduce.min_bytes = jf::get_int(ar, "minBytes", "allreduce");
    c.allreduce.max_bytes = jf::get_int(ar, "maxBytes", "allreduce");
    c.allreduce.dtype = jf::get_string(ar, "dtype", "allreduce");
  }
  c.device = jf::get_enum<Device>(j, "device", p);
  c.backend = jf::get_enum<Backend>(j, "backend", p);
  c.collective_timeout_seconds = jf::get_int32(j, "collectiveTimeoutSeconds", p);
  if (c.nodes < 1 || c.devices_per_node < 1) throw std::runtime_error("nodes/devicesPerNode: must be >= 1");
  if (c.threads_per_process < 1) throw std::runtime_error("threadsPerProcess: must be >= 1");
  if (c.measure_steps < 1 || c.repeats < 1 || c.warmup_steps < 0) {
    throw std::runtime_error("warmupSteps/measureSteps/repeats: out of range");
  }
  // optional: configs from before paradigm hybrid-ps lack it
  if (jf::has(j, "parameterServers")) c.parameter_servers = jf::get_int32(j, "parameterServers", p);
  if (jf::has(j, "parameterServersOwnPods")) c.parameter_servers_own_pods = jf::get_bool(j, "parameterServersOwnPods", p);
  if (jf::has(j, "hangTimeoutSeconds")) c.hang_timeout_seconds = jf::get_int32(j, "hangTimeoutSeconds", p);
  if (jf::has(j, "testOptions")) c.test = run_test_options_from_json(jf::get_object(j, "testOptions", p));
  if (jf::has(j, "stragglerThreshold")) c.straggler_threshold = jf::get_number(j, "stragglerThreshold", p);
  if (jf::has(j, "peakTFLOPS")) c.peak_tflops = jf::get_number(j, "peakTFLOPS", p);
  if (jf::has(j, "workload")) c.workload = jf::get_string(j, "workload", p);
  if (jf::has(j, "program")) c.program = program_spec_from_json(jf::get_object(j, "program", p), "program");
  if (has_parameter_servers(c.paradigm) &&
      (c.parameter_servers < kMinParameterServers || c.parameter_servers > kMaxParameterServers)) {
    throw std::runtime_error("parameterServers: paradigm hybrid-ps needs " + std::to_string(kMinParameterServers) +
                             ".." + std::to_string(kMaxParameterServers) + ", got " +
                             std::to_string(c.parameter_servers));
  }
  if (!has_parameter_servers(c.paradigm) && c.parameter_servers != 0) {
    throw std::runtime_error("parameterServers: must be 0 for paradigm " + to_string(c.paradigm) + ", got " +
                             std::to_string(c.parameter_servers));
  }
  return c;
}

namespace {

/// The run of sweep entry `e` for `workload` (nullptr: a job without workloads).
RunConfig plan_run(const BenchmarkJob& job, const SweepEntry& e, const WorkloadSpec* workload, int cores,
                   ServerPlacement servers) {
  const BenchmarkSpec& b = job.benchmark;
  RunConfig c;
  {
    c.job_name = job.metadata.name;
    c.job_namespace = job.metadata.namespace_;
    c.nodes = e.nodes;
    c.devices_per_node = e.devices_per_node;
    c.paradigm = e.paradigm.value_or(b.paradigm);
    if (workload) {
      c.workload = workload->name;
      c.program = workload->program;
      if (c.program) c.paradigm = Paradigm::kDdp;  // the program's own; the row is labelled by its shape
    }
    c.model = c.program ? "" : b.model;  // a program brings its own
    c.batch_size_per_device = b.batch_size_per_device;
    c.precision = b.precision;
    c.warmup_steps = b.warmup_steps;
    c.measure_steps = b.measure_steps;
    c.repeats = b.repeats;
    c.seed = b.seed;
    c.learning_rate = b.learning_rate;
    c.straggler_threshold = b.straggler_threshold;
    c.peak_tflops = b.peak_tflops;
    if (has_parameter_servers(c.paradigm))
      c.parameter_servers = e.parameter_servers.value_or(b.hybrid_ps.parameter_servers);
    c.parameter_servers_own_pods = c.parameter_servers > 0 && servers == ServerPlacement::OwnPods;
    // cores / processes on the busiest node (node 0, which also hosts local parameter servers)
    c.threads_per_process = b.threads_per_process > 0
                                ? b.threads_per_process
                                : std::max(1, std::max(cores, 1) / processes_on_node(c, 0));
    c.image_size = b.image_size;
    c.mlp = b.mlp;
    c.ddp = b.ddp;
    c.optimizer = b.optimizer.value_or(default_optimizer(c.paradigm));
    c.pipeline = b.pipeline;
    if (c.paradigm != Paradigm::kPipeline) c.pipeline.micro_batches = 1;  // model-parallel: one micro-batch
    c.sequence_length = b.sequence_length;
    c.transformer = b.transformer;
    c.mlstm = b.mlstm;
    c.hybrid_embedding = b.hybrid_embedding;
    c.allreduce = b.allreduce;
    if (e.bucket_cap_mb) c.ddp.bucket_cap_mb = *e.bucket_cap_mb;
    c.device = job.device;
    c.backend = job.backend.value_or(default_backend(job.device));
    c.collective_timeout_seconds = job.run_policy.collective_timeout_seconds;
    c.hang_timeout_seconds = resolved_hang_timeout_seconds(job.run_policy);
  }
  return c;
}

}  // namespace

std::vector<RunConfig> plan_runs(const BenchmarkJob& job, int cores, ServerPlacement servers) {
  std::vector<RunConfig> runs;
  const std::size_t workloads = std::max<std::size_t>(job.workloads.size(), 1);
  for (std::size_t w = 0; w < workloads; ++w) {
    const WorkloadSpec* workload = job.workloads.empty() ? nullptr : &job.workloads[w];
    for (const SweepEntry& e : job.sweep) {
      runs.push_back(plan_run(job, e, workload, cores, servers));
      runs.back().index = static_cast<int>(runs.size() - 1);
    }
  }
  return runs;
}

std::vector<RankPlacement> placements(const RunConfig& run) {
  std::vector<RankPlacement> out;
  for (int node = 0; node < run.nodes; ++node) {
    for (int local = 0; local < run.devices_per_node; ++local) {
      out.push_back({node, local, node * run.devices_per_node + local, Role::kTrainer});
    }
  }
  for (int j = 0; j < run.parameter_servers; ++j) {
    const int local = run.parameter_servers_own_pods ? 0 : run.devices_per_node + j;
    out.push_back({0, local, run.world_size() + j, Role::kParameterServer});
  }
  return out;
}

int processes_on_node(const RunConfig& run, int node_rank) {
  return run.devices_per_node + (node_rank == 0 && !run.parameter_servers_own_pods ? run.parameter_servers : 0);
}

int local_world_size(const RunConfig& run, const RankPlacement& p) {
  if (p.role == Role::kParameterServer && run.parameter_servers_own_pods) return 1;
  return processes_on_node(run, p.node_rank);
}

std::vector<EnvVar> rank_variables(const RunConfig& run, const RankPlacement& p, const std::string& master_addr,
                                   int master_port) {
  return {
      {"MASTER_ADDR", master_addr},
      {"MASTER_PORT", std::to_string(master_port)},
      {"WORLD_SIZE", std::to_string(run.process_count())},
      {"RANK", std::to_string(p.rank)},
      {"LOCAL_RANK", std::to_string(p.local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(local_world_size(run, p))},
      {"NODE_RANK", std::to_string(p.node_rank)},
      {"GROUP_RANK", std::to_string(p.node_rank)},
      {"OMP_NUM_THREADS", std::to_string(run.threads_per_process)},
      // OpenBLAS keeps its own pool, sized from OMP_NUM_THREADS unless this is set.
      {"OPENBLAS_NUM_THREADS", std::to_string(run.threads_per_process)},
      {"TRAINBENCH_ROLE", to_string(p.role)},
      {"TRAINBENCH_RUN_CONFIG", to_json(run).dump()},
  };
}

bool is_per_process_variable(const std::string& name) { return name == "RANK" || name == "LOCAL_RANK"; }

std::map<std::string, std::string> rank_environment(const RunConfig& run, const RankPlacement& p,
                                                    const std::string& master_addr, int master_port) {
  std::map<std::string, std::string> env;
  for (auto& v : rank_variables(run, p, master_addr, master_port)) env.emplace(std::move(v.name), std::move(v.value));
  return env;
}

}  // namespace trainbench
