#include "core/results/run_result.hpp"

#include <stdexcept>

#include "core/spec/json_fields.hpp"

namespace trainbench {

namespace jf = json_fields;

nlohmann::json to_json(const EnvironmentInfo& e) {
  nlohmann::json j = {
      {"trainbenchVersion", e.trainbench_version},
      {"libtorchVersion", e.libtorch_version},
      {"cudaVersion", e.cuda_version},
      {"backend", e.backend},
      {"device", e.device},
      {"deviceName", e.device_name},
      {"blas", e.blas},
      {"hostname", e.hostname},
      {"threadsPerProcess", e.threads_per_process},
  };
  if (e.cpu_cores) j["cpuCores"] = *e.cpu_cores;
  if (!e.attention.empty()) j["attention"] = e.attention;
  if (!e.ddp.empty()) j["ddp"] = e.ddp;
  if (!e.framework.empty()) j["framework"] = e.framework;
  return j;
}

EnvironmentInfo environment_from_json(const nlohmann::json& j) {
  const std::string p = "environment";
  jf::require_object(j, p);
  EnvironmentInfo e;
  e.trainbench_version = jf::get_string(j, "trainbenchVersion", p);
  e.libtorch_version = jf::get_string(j, "libtorchVersion", p);
  e.cuda_version = jf::get_string(j, "cudaVersion", p);
  e.backend = jf::get_string(j, "backend", p);
  e.device = jf::get_string(j, "device", p);
  e.device_name = jf::get_string(j, "deviceName", p);
  e.blas = jf::get_string(j, "blas", p);
  e.hostname = jf::get_string(j, "hostname", p);
  e.threads_per_process = jf::get_int32(j, "threadsPerProcess", p);
  if (jf::has(j, "cpuCores")) e.cpu_cores = jf::get_int32(j, "cpuCores", p);
  if (jf::has(j, "attention")) e.attention = jf::get_string(j, "attention", p);
  if (jf::has(j, "ddp")) e.ddp = jf::get_string(j, "ddp", p);
  if (jf::has(j, "framework")) e.framework = jf::get_string(j, "framework", p);
  return e;
}

namespace {

/// [repeat][item] seconds: a non-empty list of lists of numbers >= 0 (inner lists may be empty
/// only when `allow_empty_inner`).
std::vector<std::vector<double>> seconds_lists(const nlohmann::json& obj, const std::string& key, const std::string& p,
                                               bool allow_empty_inner) {
  std::vector<std::vector<double>> out;
  const auto& reps = jf::get_array(obj, key, p);
  for (std::size_t r_i = 0; r_i < reps.size(); ++r_i) {
    const std::string rp = p + "." + key + "[" + std::to_string(r_i) + "]";
    if (!reps[r_i].is_array() || (!allow_empty_inner && reps[r_i].empty())) {
      throw std::runtime_error(rp + (allow_empty_inner ? ": must be an array" : ": must be a non-empty array"));
    }
    std::vector<double> values;
    for (std::size_t s = 0; s < reps[r_i].size(); ++s) {
      const double v = jf::as_number(reps[r_i][s], rp + "[" + std::to_string(s) + "]");
      if (v < 0) throw std::runtime_error(rp + "[" + std::to_string(s) + "]: must be >= 0");
      values.push_back(v);
    }
    out.push_back(std::move(values));
  }
  if (out.empty()) throw std::runtime_error(p + "." + key + ": must not be empty");
  return out;
}

nlohmann::json to_json(const ServerResult& s) {
  nlohmann::json j = {{"rank", s.rank},
                      {"server", s.server},
                      {"rows", s.rows},
                      {"lookups", s.lookups},
                      {"lookupServiceSeconds", s.lookup_service_seconds},
                      {"lookupQueueSeconds", s.lookup_queue_seconds},
                      {"updateSeconds", s.update_seconds},
                      {"peakMemoryBytes", s.peak_memory_bytes}};
  if (s.utilization) j["utilization"] = to_json(*s.utilization);
  return j;
}

ServerResult server_result_from_json(const nlohmann::json& sj, const std::string& p) {
  jf::require_object(sj, p);
  ServerResult s;
  s.rank = jf::get_int32(sj, "rank", p);
  s.server = jf::get_int32(sj, "server", p);
  s.rows = jf::get_int(sj, "rows", p);
  s.lookups = jf::get_int(sj, "lookups", p);
  if (s.rows < 0) throw std::runtime_error(p + ".rows: must be >= 0");
  if (s.lookups < 0) throw std::runtime_error(p + ".lookups: must be >= 0");
  s.lookup_service_seconds = seconds_lists(sj, "lookupServiceSeconds", p, true);
  s.lookup_queue_seconds = seconds_lists(sj, "lookupQueueSeconds", p, true);
  s.update_seconds = seconds_lists(sj, "updateSeconds", p, false);
  s.peak_memory_bytes = jf::get_int(sj, "peakMemoryBytes", p);
  if (jf::has(sj, "utilization")) s.utilization = rank_utilization_from_json(sj["utilization"], p + ".utilization");
  std::size_t requests = 0;
  for (std::size_t r = 0; r < s.lookup_service_seconds.size(); ++r) {
    requests += s.lookup_service_seconds[r].size();
    if (r >= s.lookup_queue_seconds.size() || s.lookup_queue_seconds[r].size() != s.lookup_service_seconds[r].size()) {
      throw std::runtime_error(p + ".lookupQueueSeconds[" + std::to_string(r) +
                               "]: must have one entry per lookupServiceSeconds entry");
    }
  }
  if (s.lookup_queue_seconds.size() != s.lookup_service_seconds.size()) {
    throw std::runtime_error(p + ".lookupQueueSeconds: must have one list per repeat, as lookupServiceSeconds");
  }
  if (static_cast<std::int64_t>(requests) != s.lookups) {
    throw std::runtime_error(p + ".lookups: " + std::to_string(s.lookups) + ", but lookupServiceSeconds has " +
                             std::to_string(requests) + " entries");
  }
  return s;
}

nlohmann::json to_json(const RankResult& rk) {
  nlohmann::json j = {{"rank", rk.rank},
                      {"nodeRank", rk.node_rank},
                      {"localRank", rk.local_rank},
                      {"stepSeconds", rk.step_seconds},
                      {"peakMemoryBytes", rk.peak_memory_bytes},
                      {"finalLoss", rk.final_loss},
                      {"initialLoss", rk.initial_loss},
                      {"optimizerStateBytes", rk.optimizer_state_bytes},
                      {"parameterCount", rk.parameter_count},
                      {"stage", rk.stage},
                      {"bubbleFraction", rk.bubble_fraction}};
  if (!rk.compute_seconds.empty()) j["computeSeconds"] = rk.compute_seconds;
  if (!rk.communication_seconds.empty()) j["communicationSeconds"] = rk.communication_seconds;
  if (rk.utilization) j["utilization"] = to_json(*rk.utilization);
  return j;
}

/// An optional [repeat][step] list beside stepSeconds: absent (empty) or of its shape.
std::vector<std::vector<double>> step_split(const nlohmann::json& rj, const std::string& key, const std::string& p,
                                            const std::vector<std::vector<double>>& step_seconds) {
  if (!jf::has(rj, key)) return {};
  std::vector<std::vector<double>> out = seconds_lists(rj, key, p, false);
  bool same = out.size() == step_seconds.size();
  for (std::size_t r = 0; same && r < out.size(); ++r) same = out[r].size() == step_seconds[r].size();
  if (!same) throw std::runtime_error(p + "." + key + ": must have the shape of stepSeconds");
  return out;
}

RankResult rank_result_from_json(const nlohmann::json& rj, const std::string& p) {
  jf::require_object(rj, p);
  RankResult rk;
  rk.rank = jf::get_int32(rj, "rank", p);
  rk.node_rank = jf::get_int32(rj, "nodeRank", p);
  rk.local_rank = jf::get_int32(rj, "localRank", p);
  rk.peak_memory_bytes = jf::get_int(rj, "peakMemoryBytes", p);
  rk.final_loss = jf::get_number(rj, "finalLoss", p);
  if (jf::has(rj, "initialLoss")) rk.initial_loss = jf::get_number(rj, "initialLoss", p);
  if (jf::has(rj, "optimizerStateBytes")) rk.optimizer_state_bytes = jf::get_int(rj, "optimizerStateBytes", p);
  if (jf::has(rj, "parameterCount")) rk.parameter_count = jf::get_int(rj, "parameterCount", p);
  if (jf::has(rj, "stage")) rk.stage = jf::get_int32(rj, "stage", p);
  if (jf::has(rj, "bubbleFraction")) rk.bubble_fraction = jf::get_number(rj, "bubbleFraction", p);
  rk.step_seconds = seconds_lists(rj, "stepSeconds", p, false);
  rk.compute_seconds = step_split(rj, "computeSeconds", p, rk.step_seconds);
  rk.communication_seconds = step_split(rj, "communicationSeconds", p, rk.step_seconds);
  if (jf::has(rj, "utilization")) rk.utilization = rank_utilization_from_json(rj["utilization"], p + ".utilization");
  return rk;
}

}  // namespace

nlohmann::json to_json(const RunResult& r) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& rk : r.ranks) ranks.push_back(to_json(rk));
  nlohmann::json out = {{"runIndex", r.run_index},         {"worldSize", r.world_size},
          {"parameterCount", r.parameter_count}, {"ddpBucketCount", r.ddp_bucket_count},
          {"environment", to_json(r.environment)}, {"ranks", ranks}};
  out["optimizer"] = r.optimizer;
  out["microBatches"] = r.micro_batches;
  out["blockCount"] = r.block_count;
  out["stageStarts"] = r.stage_starts;
  if (r.allreduce) out["allreduce"] = to_json(*r.allreduce);
  if (r.peak_gemm) out["peakGemm"] = to_json(*r.peak_gemm);
  if (r.topology) out["topology"] = to_json(*r.topology);
  if (!r.servers.empty()) {
    nlohmann::json servers = nlohmann::json::array();
    for (const auto& s : r.servers) servers.push_back(to_json(s));
    out["servers"] = servers;
  }
  return out;
}

RunResult run_result_from_json(const nlohmann::json& j) {
  jf::require_object(j, "");
  RunResult r;
  r.run_index = jf::get_int32(j, "runIndex", "");
  r.world_size = jf::get_int32(j, "worldSize", "");
  r.parameter_count = jf::get_int(j, "parameterCount", "");
  r.ddp_bucket_count = jf::get_int32(j, "ddpBucketCount", "");
  if (jf::has(j, "optimizer")) r.optimizer = jf::get_string(j, "optimizer", "");
  if (jf::has(j, "microBatches")) r.micro_batches = jf::get_int32(j, "microBatches", "");
  if (r.micro_batches < 1)
    throw std::runtime_error("microBatches: must be >= 1, got " + std::to_string(r.micro_batches));
  if (jf::has(j, "blockCount")) r.block_count = jf::get_int32(j, "blockCount", "");
  if (r.block_count < 0) throw std::runtime_error("blockCount: must be >= 0, got " + std::to_string(r.block_count));
  if (jf::has(j, "stageStarts")) r.stage_starts = jf::get_int32_list(j, "stageStarts", "");
  if (jf::has(j, "allreduce")) r.allreduce = allreduce_run_info_from_json(j["allreduce"], "allreduce");
  if (jf::has(j, "peakGemm")) r.peak_gemm = measured_gemm_from_json(j["peakGemm"], "peakGemm");
  if (jf::has(j, "topology")) r.topology = topology_from_json(j["topology"], "topology");
  r.environment = environment_from_json(jf::get_object(j, "environment", ""));
  const auto& ranks = jf::get_array(j, "ranks", "");
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    r.ranks.push_back(rank_result_from_json(ranks[i], "ranks[" + std::to_string(i) + "]"));
  }
  if (jf::has(j, "servers")) {
    const auto& servers = jf::get_array(j, "servers", "");
    for (std::size_t i = 0; i < servers.size(); ++i) {
      const std::string p = "servers[" + std::to_string(i) + "]";
      ServerResult s = server_result_from_json(servers[i], p);
      if (s.server != static_cast<int>(i)) {
        throw std::runtime_error(p + ".server: expected " + std::to_string(i) + " (ordered by server), got " +
                                 std::to_string(s.server));
      }
      r.servers.push_back(std::move(s));
    }
  }
  if (static_cast<int>(r.ranks.size()) != r.world_size) {
    throw std::runtime_error("ranks: expected " + std::to_string(r.world_size) + " entries (worldSize), got " +
                             std::to_string(r.ranks.size()));
  }
  return r;
}

}  // namespace trainbench
