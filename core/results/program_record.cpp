#include "core/results/program_record.hpp"

#include <cmath>
#include <stdexcept>

#include "core/spec/json_fields.hpp"
#include "core/util/version.hpp"

namespace trainbench {
namespace {

namespace jf = json_fields;

/// [repeat][step] seconds, exactly run.repeats x run.measure_steps numbers >= 0.
std::vector<std::vector<double>> step_lists(const nlohmann::json& j, const std::string& key, const RunConfig& run) {
  const auto& reps = jf::get_array(j, key, "");
  if (reps.size() != static_cast<std::size_t>(run.repeats)) {
    throw std::runtime_error(key + ": has " + std::to_string(reps.size()) + " repeats, the run measures " +
                             std::to_string(run.repeats) + " (spec.benchmark.repeats)");
  }
  std::vector<std::vector<double>> out;
  for (std::size_t r = 0; r < reps.size(); ++r) {
    const std::string rp = key + "[" + std::to_string(r) + "]";
    if (!reps[r].is_array()) throw std::runtime_error(rp + ": must be an array of seconds");
    if (reps[r].size() != static_cast<std::size_t>(run.measure_steps)) {
      throw std::runtime_error(rp + ": has " + std::to_string(reps[r].size()) + " steps, the run measures " +
                               std::to_string(run.measure_steps) + " per repeat (spec.benchmark.measureSteps)");
    }
    std::vector<double> steps;
    steps.reserve(reps[r].size());
    for (std::size_t s = 0; s < reps[r].size(); ++s) {
      const std::string sp = rp + "[" + std::to_string(s) + "]";
      const double v = jf::as_number(reps[r][s], sp);
      if (!std::isfinite(v) || v < 0) throw std::runtime_error(sp + ": must be a finite number >= 0");
      steps.push_back(v);
    }
    out.push_back(std::move(steps));
  }
  return out;
}

std::int64_t non_negative(const nlohmann::json& j, const std::string& key) {
  const std::int64_t v = jf::get_int(j, key, "");
  if (v < 0) throw std::runtime_error(key + ": must be >= 0, got " + std::to_string(v));
  return v;
}

double finite(const nlohmann::json& j, const std::string& key) {
  const double v = jf::get_number(j, key, "");
  if (!std::isfinite(v)) throw std::runtime_error(key + ": must be a finite number");
  return v;
}

void read_header(const nlohmann::json& j, const RunConfig& run, int rank) {
  jf::require_object(j, "record");
  const std::string kind = jf::get_string(j, "kind", "");
  if (kind != kRankRecordKind) {
    throw std::runtime_error("kind: must be \"" + std::string(kRankRecordKind) + "\", got \"" + kind.substr(0, 80) + "\"");
  }
  const int version = jf::get_int32(j, "version", "");
  if (version != kRankRecordVersion) {
    throw std::runtime_error("version: this trainbench reads version " + std::to_string(kRankRecordVersion) +
                             ", got " + std::to_string(version));
  }
  if (const int r = jf::get_int32(j, "rank", ""); r != rank) {
    throw std::runtime_error("rank: the record of rank " + std::to_string(rank) + " says rank " + std::to_string(r));
  }
  if (const int w = jf::get_int32(j, "worldSize", ""); w != run.world_size()) {
    throw std::runtime_error("worldSize: " + std::to_string(w) + ", the run has " + std::to_string(run.world_size()) +
                             " ranks");
  }
}

EnvironmentInfo read_environment(const nlohmann::json& j, const RunConfig& run) {
  EnvironmentInfo e;
  e.trainbench_version = kVersion;
  e.device = to_string(run.device);
  e.backend = to_string(run.backend);
  e.threads_per_process = run.threads_per_process;
  if (!jf::has(j, "environment")) return e;
  const auto& env = jf::get_object(j, "environment", "");
  const auto text = [&env](const char* key, std::string& out) {
    if (!jf::has(env, key)) return;
    out = jf::get_string(env, key, "environment");
    if (out.size() > 256) out = out.substr(0, 253) + "...";
  };
  text("framework", e.framework);
  text("deviceName", e.device_name);
  text("hostname", e.hostname);
  text("backend", e.backend);
  text("cudaVersion", e.cuda_version);
  return e;
}

}  // namespace

ProgramRankRecord program_rank_record_from_json(const nlohmann::json& j, const RunConfig& run, int rank) {
  read_header(j, run, rank);
  ProgramRankRecord rec;
  RankResult& rk = rec.result;
  rk.rank = rank;
  rk.node_rank = rank / run.devices_per_node;
  rk.local_rank = rank % run.devices_per_node;
  rk.step_seconds = step_lists(j, "stepSeconds", run);
  if (jf::has(j, "communicationSeconds")) {
    rk.communication_seconds = step_lists(j, "communicationSeconds", run);
    rk.compute_seconds = rk.step_seconds;
    for (std::size_t r = 0; r < rk.step_seconds.size(); ++r) {
      for (std::size_t s = 0; s < rk.step_seconds[r].size(); ++s) {
        const double comm = rk.communication_seconds[r][s];
        const double step = rk.step_seconds[r][s];
        if (comm > step * (1 + 1e-9) + 1e-9) {
          throw std::runtime_error("communicationSeconds[" + std::to_string(r) + "][" + std::to_string(s) +
                                   "]: longer than its step (stepSeconds)");
        }
        rk.compute_seconds[r][s] = std::max(0.0, step - comm);
      }
    }
  }
  if (jf::has(j, "initialLoss")) rk.initial_loss = finite(j, "initialLoss");
  if (jf::has(j, "finalLoss")) rk.final_loss = finite(j, "finalLoss");
  if (jf::has(j, "peakMemoryBytes")) rk.peak_memory_bytes = non_negative(j, "peakMemoryBytes");
  if (jf::has(j, "parameterCount")) rk.parameter_count = non_negative(j, "parameterCount");
  if (jf::has(j, "optimizerStateBytes")) rk.optimizer_state_bytes = non_negative(j, "optimizerStateBytes");
  rec.environment = read_environment(j, run);
  return rec;
}

ProgramRankRecord parse_program_rank_record(const std::string& text, const RunConfig& run, int rank) {
  if (text.size() > kMaxRankRecordBytes) {
    throw std::runtime_error("is larger than " + std::to_string(kMaxRankRecordBytes >> 20) + " MiB (" +
                             std::to_string(text.size()) + " bytes)");
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw std::runtime_error("is not JSON (a record is one JSON object, docs/workloads.md)");
  return program_rank_record_from_json(j, run, rank);
}

RunResult assemble_program_result(const RunConfig& run, const std::vector<ProgramRankRecord>& records) {
  if (records.size() != static_cast<std::size_t>(run.world_size())) {
    throw std::runtime_error("expected " + std::to_string(run.world_size()) + " rank records, got " +
                             std::to_string(records.size()));
  }
  RunResult result;
  result.run_index = run.index;
  result.world_size = run.world_size();
  result.environment = records.front().environment;
  result.parameter_count = records.front().result.parameter_count;
  for (const auto& r : records) result.ranks.push_back(r.result);
  return result;
}

nlohmann::json to_json(const ProgramRankRecord& r, int world_size) {
  const RankResult& rk = r.result;
  nlohmann::json j = {{"kind", kRankRecordKind},        {"version", kRankRecordVersion},
                      {"rank", rk.rank},                {"worldSize", world_size},
                      {"stepSeconds", rk.step_seconds}, {"initialLoss", rk.initial_loss},
                      {"finalLoss", rk.final_loss},     {"peakMemoryBytes", rk.peak_memory_bytes},
                      {"parameterCount", rk.parameter_count}, {"optimizerStateBytes", rk.optimizer_state_bytes}};
  if (!rk.communication_seconds.empty()) j["communicationSeconds"] = rk.communication_seconds;
  j["environment"] = {{"framework", r.environment.framework},
                      {"deviceName", r.environment.device_name},
                      {"hostname", r.environment.hostname},
                      {"backend", r.environment.backend}};
  return j;
}

}  // namespace trainbench
