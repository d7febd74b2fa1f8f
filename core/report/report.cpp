#include "core/report/report.hpp"

#include <algorithm>
#include <map>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/analysis/mfu.hpp"
#include "core/report/allreduce_run.hpp"
#include "core/report/hybrid_ps_report.hpp"
#include "core/report/rank_summary.hpp"
#include "core/spec/json_fields.hpp"
#include "core/spec/spec_error.hpp"

namespace trainbench {

namespace jf = json_fields;

nlohmann::json percentiles_json(const Percentiles& p) {
  return {{"p50", p.p50}, {"p75", p.p75}, {"p90", p.p90}, {"p95", p.p95}};
}

Percentiles percentiles_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  Percentiles p{jf::get_number(j, "p50", path), jf::get_number(j, "p75", path), jf::get_number(j, "p90", path),
                jf::get_number(j, "p95", path)};
  if (p.p50 < 0 || p.p75 < 0 || p.p90 < 0 || p.p95 < 0) throw std::runtime_error(path + ": must be >= 0");
  return p;
}

RunReport failed_run(const RunConfig& cfg, const std::string& error) {
  RunReport run;
  run.index = cfg.index;
  run.label = cfg.label();
  run.workload = cfg.workload;
  run.program = cfg.program.has_value();
  run.devices_label = cfg.devices_label();
  run.nodes = cfg.nodes;
  run.devices_per_node = cfg.devices_per_node;
  run.world_size = cfg.world_size();
  run.paradigm = cfg.paradigm;
  run.bucket_cap_mb = cfg.ddp.bucket_cap_mb;
  run.phase = "Failed";
  run.error = error.empty() ? "no result" : error;
  return run;
}

namespace {

RankReport rank_report(const RankResult& rk, bool staged) {
  RankReport rr;
  rr.rank = rk.rank;
  rr.node_rank = rk.node_rank;
  rr.local_rank = rk.local_rank;
  rr.sec_per_iter = median_of_repeats(rk.step_seconds);
  rr.peak_memory_bytes = rk.peak_memory_bytes;
  rr.optimizer_state_bytes = rk.optimizer_state_bytes;
  rr.parameter_count = rk.parameter_count;
  rr.utilization = rk.utilization;
  if (staged) {
    rr.stage = rk.stage;
    rr.bubble_fraction = rk.bubble_fraction;
  }
  if (!rk.compute_seconds.empty()) rr.compute_seconds = median_of_repeats(rk.compute_seconds).p50;
  if (!rk.communication_seconds.empty()) rr.communication_seconds = median_of_repeats(rk.communication_seconds).p50;
  return rr;
}

/// The run's utilization over every rank that reported one (trainers and parameter servers).
std::optional<RunUtilization> run_utilization(const RunConfig& cfg, const RunResult& result) {
  std::vector<RankUtilization> ranks;
  for (const auto& rk : result.ranks) {
    if (rk.utilization) ranks.push_back(*rk.utilization);
  }
  for (const auto& s : result.servers) {
    if (s.utilization) ranks.push_back(*s.utilization);
  }
  return summarize_utilization(ranks, cfg.threads_per_process);
}

}  // namespace

RunReport summarize_run(const RunConfig& cfg, const RunResult& result) {
  RunReport run = failed_run(cfg, "");
  run.phase = "Succeeded";
  run.error.clear();
  if (result.ranks.empty()) throw std::runtime_error("run " + std::to_string(cfg.index) + ": result has no ranks");
  const std::size_t repeats = result.ranks.front().step_seconds.size();
  for (const auto& rk : result.ranks) {
    if (rk.step_seconds.size() != repeats) {
      throw std::runtime_error("run " + std::to_string(cfg.index) + ": ranks disagree on the number of repeats");
    }
  }
  for (std::size_t r = 0; r < repeats; ++r) {
    std::vector<double> pooled;
    for (const auto& rk : result.ranks) pooled.insert(pooled.end(), rk.step_seconds[r].begin(), rk.step_seconds[r].end());
    run.repeats.push_back(percentiles(pooled));
  }
  run.sec_per_iter = median_of(run.repeats);
  // A pipeline's ranks are stages of one model replica: it trains one batch per step.
  const bool staged = splits_into_stages(cfg.paradigm);
  run.examples_per_sec =
      throughput(run.sec_per_iter, static_cast<double>(cfg.batch_size_per_device) * (staged ? 1 : cfg.world_size()));
  run.optimizer = result.optimizer;
  run.framework = result.environment.framework;
  run.topology = result.topology;
  if (staged) {
    PipelineReport pr;
    pr.stages = cfg.world_size();
    pr.micro_batches = result.micro_batches;
    pr.block_count = result.block_count;
    pr.stage_starts = result.stage_starts;
    // In doubles: micro_batches + stages - 1 overflows an int for microBatches near INT_MAX.
    const double stages = static_cast<double>(pr.stages);
    pr.theoretical_bubble = (stages - 1.0) / (static_cast<double>(pr.micro_batches) + stages - 1.0);
    run.pipeline = pr;
  }
  run.parameter_count = result.parameter_count;
  run.ddp_bucket_count = result.ddp_bucket_count;
  double loss_start = 0;
  double loss_end = 0;
  for (const auto& rk : result.ranks) {
    loss_start += rk.initial_loss;
    loss_end += rk.final_loss;
  }
  run.loss_start = loss_start / static_cast<double>(result.ranks.size());
  run.loss_end = loss_end / static_cast<double>(result.ranks.size());
  for (const auto& rk : result.ranks) {
    run.max_peak_memory_bytes = std::max(run.max_peak_memory_bytes, rk.peak_memory_bytes);
    run.ranks.push_back(rank_report(rk, staged));
  }
  // A pipeline's stages do different work by design (its bubble shows the imbalance): only
  // ranks doing the same work are scored against each other.
  if (!staged) run.stragglers = score_stragglers(run.ranks, cfg.straggler_threshold);
  if (result.allreduce) {
    summarize_allreduce_run(cfg, result, run);
  } else {
    run.noise = measure_noise(cfg, result, run.repeats);
    run.mfu = summarize_mfu(cfg, result, run.examples_per_sec.p50);
  }
  if (has_parameter_servers(cfg.paradigm)) summarize_hybrid_ps_run(cfg, result, run);
  run.utilization = run_utilization(cfg, result);
  return run;
}

namespace {

/// Each succeeded run against the job's targets: efficiency below efficiencyTarget, and the
/// noise verdict of its repeats against noiseThresholdPercent.
void judge_runs(Report& rep, const BenchmarkSpec& b) {
  rep.efficiency_target = b.efficiency_target;
  rep.noise_threshold_percent = b.noise_threshold_percent;
  for (auto& r : rep.runs) {
    r.below_target.reset();
    if (r.efficiency) r.below_target = *r.efficiency < b.efficiency_target;
    if (r.noise) judge_noise(*r.noise, b.noise_threshold_percent, static_cast<int>(r.repeats.size()), b.measure_steps);
  }
}

/// The single-device "no ddp" run of `workload`, else any single-device run of it.
std::optional<int> speedup_baseline(const std::vector<RunReport>& runs, const std::string& workload) {
  auto pick = [&](bool want_none) -> std::optional<int> {
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const auto& r = runs[i];
      if (r.workload == workload && r.phase == "Succeeded" && r.world_size == 1 && !r.allreduce &&
          (!want_none || r.paradigm == Paradigm::kNone)) {
        return static_cast<int>(i);
      }
    }
    return std::nullopt;
  };
  const auto none = pick(true);
  return none ? none : pick(false);
}

/// Speedup and efficiency of every succeeded run of `workload` against run `base`.
void apply_speedup(std::vector<RunReport>& runs, const std::string& workload, int base, bool name_baseline) {
  const double base_rate = runs[static_cast<std::size_t>(base)].examples_per_sec.p50;
  for (auto& r : runs) {
    if (r.workload != workload || r.phase != "Succeeded" || !(base_rate > 0) || r.allreduce) continue;
    r.speedup = speedup(r.examples_per_sec.p50, base_rate);
    r.efficiency = scaling_efficiency(*r.speedup, r.world_size);
    if (name_baseline) r.speedup_baseline_run = base;
  }
}

std::string shape_label(const RunReport& r) {
  return std::to_string(r.nodes) + "M/" + std::to_string(r.devices_per_node) + "G";
}

}  // namespace

Report workload_report(const Report& report, const std::string& workload) {
  Report out = report;
  out.runs.clear();
  out.environment.framework.clear();
  out.baseline_run.reset();
  std::string known;
  // Rows match the other workload's by shape ("1M/2G"): "no ddp", "1M/2G zero" and a program's
  // "1M/2G" are each one shape, unless the workload runs one shape twice (then its labels stay).
  std::map<std::string, int> shapes;
  for (const auto& r : report.runs) {
    if (r.workload == workload) ++shapes[shape_label(r)];
  }
  for (const auto& r : report.runs) {
    if (known.find("\"" + r.workload + "\"") == std::string::npos) known += (known.empty() ? "\"" : ", \"") + r.workload + "\"";
    if (r.workload != workload) continue;
    RunReport copy = r;
    const std::string prefix = workload + " ";
    if (copy.label.rfind(prefix, 0) == 0) copy.label = copy.label.substr(prefix.size());
    if (shapes[shape_label(r)] == 1) copy.label = shape_label(r);
    if (!copy.framework.empty() && out.environment.framework != copy.framework) {
      // A program: the built-in worker's libtorch, BLAS and DDP are not what it ran.
      out.environment.framework = copy.framework;
      out.environment.libtorch_version.clear();
      out.environment.blas.clear();
      out.environment.ddp.clear();
      out.environment.attention.clear();
      out.model = "program of workload " + workload;
    }
    if (report.baseline_run || r.speedup_baseline_run) {
      const int base = r.speedup_baseline_run.value_or(report.baseline_run.value_or(-1));
      if (base == static_cast<int>(&r - report.runs.data())) out.baseline_run = static_cast<int>(out.runs.size());
    }
    copy.speedup_baseline_run.reset();
    out.runs.push_back(copy);
  }
  if (out.runs.empty()) {
    throw std::runtime_error("the report has no run of workload \"" + workload + "\" (its workloads: " + known + ")");
  }
  return out;
}

Report assemble_report(const BenchmarkJob& job, std::vector<RunReport> runs, const EnvironmentInfo& environment) {
  Report rep;
  rep.job_name = job.metadata.name;
  rep.job_namespace = job.metadata.namespace_;
  rep.model = job.benchmark.model;
  rep.batch_size_per_device = job.benchmark.batch_size_per_device;
  rep.precision = to_string(job.benchmark.precision);
  rep.warmup_steps = job.benchmark.warmup_steps;
  rep.measure_steps = job.benchmark.measure_steps;
  rep.repeats = job.benchmark.repeats;
  rep.bucket_cap_mb = job.benchmark.ddp.bucket_cap_mb;
  rep.gradient_compression = to_string(job.benchmark.ddp.gradient_compression);
  rep.environment = environment;
  rep.runs = std::move(runs);
  for (auto& r : rep.runs) {
    r.speedup.reset();
    r.efficiency.reset();
    r.speedup_baseline_run.reset();
  }
  // Each workload's runs against its own baseline (a job without workloads: one group).
  std::vector<std::string> workloads;
  for (const auto& r : rep.runs) {
    if (std::find(workloads.begin(), workloads.end(), r.workload) == workloads.end()) workloads.push_back(r.workload);
  }
  for (const std::string& w : workloads) {
    const std::optional<int> base = speedup_baseline(rep.runs, w);
    if (!rep.baseline_run) rep.baseline_run = base;
    if (base) apply_speedup(rep.runs, w, *base, workloads.size() > 1);
  }
  judge_runs(rep, job.benchmark);
  return rep;
}

Report build_report(const BenchmarkJob& job, const std::vector<RunConfig>& runs,
                    const std::vector<RunOutcome>& outcomes) {
  if (runs.size() != outcomes.size()) throw std::invalid_argument("build_report: one outcome per run is needed");
  std::vector<RunReport> reports;
  std::optional<EnvironmentInfo> env;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunOutcome& out = outcomes[i];
    if (out.result && out.error.empty()) {
      try {
        reports.push_back(summarize_run(runs[i], *out.result));
        fold_environment(env, out.result->environment);
      } catch (const std::exception& e) {
        reports.push_back(failed_run(runs[i], e.what()));
      }
    } else {
      reports.push_back(failed_run(runs[i], out.error));
    }
  }
  return assemble_report(job, std::move(reports), env.value_or(EnvironmentInfo{}));
}

nlohmann::json to_json(const RankReport& rk) {
  nlohmann::json rj = {{"rank", rk.rank},
                       {"nodeRank", rk.node_rank},
                       {"localRank", rk.local_rank},
                       {"secPerIter", percentiles_json(rk.sec_per_iter)},
                       {"peakMemoryBytes", rk.peak_memory_bytes},
                       {"optimizerStateBytes", rk.optimizer_state_bytes},
                       {"parameterCount", rk.parameter_count}};
  if (rk.stage) rj["stage"] = *rk.stage;
  if (rk.bubble_fraction) rj["bubbleFraction"] = *rk.bubble_fraction;
  if (rk.compute_seconds) rj["computeSeconds"] = *rk.compute_seconds;
  if (rk.communication_seconds) rj["communicationSeconds"] = *rk.communication_seconds;
  if (rk.straggler_score) rj["stragglerScore"] = *rk.straggler_score;
  if (rk.utilization) rj["utilization"] = to_json(*rk.utilization);
  return rj;
}

RankReport rank_report_from_json(const nlohmann::json& j, const std::string& rp) {
  jf::require_object(j, rp);
  RankReport rk;
  rk.rank = jf::get_int32(j, "rank", rp);
  rk.node_rank = jf::get_int32(j, "nodeRank", rp);
  rk.local_rank = jf::get_int32(j, "localRank", rp);
  rk.sec_per_iter = percentiles_from_json(jf::member(j, "secPerIter", rp), rp + ".secPerIter");
  rk.peak_memory_bytes = jf::get_int(j, "peakMemoryBytes", rp);
  if (jf::has(j, "optimizerStateBytes")) rk.optimizer_state_bytes = jf::get_int(j, "optimizerStateBytes", rp);
  if (jf::has(j, "parameterCount")) rk.parameter_count = jf::get_int(j, "parameterCount", rp);
  if (jf::has(j, "stage")) rk.stage = jf::get_int32(j, "stage", rp);
  if (jf::has(j, "bubbleFraction")) rk.bubble_fraction = jf::get_number(j, "bubbleFraction", rp);
  auto seconds = [&](const char* key, std::optional<double>& out) {
    if (!jf::has(j, key)) return;
    out = jf::get_number(j, key, rp);
    if (*out < 0) throw std::runtime_error(rp + "." + key + ": must be >= 0");
  };
  seconds("computeSeconds", rk.compute_seconds);
  seconds("communicationSeconds", rk.communication_seconds);
  seconds("stragglerScore", rk.straggler_score);
  if (jf::has(j, "utilization")) rk.utilization = rank_utilization_from_json(j["utilization"], rp + ".utilization");
  return rk;
}

nlohmann::json to_json(const RunReport& run) {
  nlohmann::json j = {{"index", run.index},
                      {"label", run.label},
                      {"devices", run.devices_label},
                      {"nodes", run.nodes},
                      {"devicesPerNode", run.devices_per_node},
                      {"worldSize", run.world_size},
                      {"paradigm", to_string(run.paradigm)},
                      {"bucketCapMB", run.bucket_cap_mb},
                      {"phase", run.phase}};
  if (!run.workload.empty()) j["workload"] = run.workload;
  if (!run.framework.empty()) j["framework"] = run.framework;
  if (run.program) j["program"] = true;
  if (run.phase == "Succeeded") {
    j["secPerIter"] = percentiles_json(run.sec_per_iter);
    j["examplesPerSec"] = percentiles_json(run.examples_per_sec);
    nlohmann::json reps = nlohmann::json::array();
    for (const auto& p : run.repeats) reps.push_back(percentiles_json(p));
    j["repeats"] = reps;
    j["speedup"] = run.speedup ? nlohmann::json(*run.speedup) : nlohmann::json(nullptr);
    j["efficiency"] = run.efficiency ? nlohmann::json(*run.efficiency) : nlohmann::json(nullptr);
    if (run.below_target) j["belowTarget"] = *run.below_target;
    if (run.noise) j["noise"] = to_json(*run.noise);
    if (run.mfu) j["mfu"] = to_json(*run.mfu);
    if (run.speedup_baseline_run) j["speedupBaselineRun"] = *run.speedup_baseline_run;
    j["parameterCount"] = run.parameter_count;
    j["ddpBucketCount"] = run.ddp_bucket_count;
    j["maxPeakMemoryBytes"] = run.max_peak_memory_bytes;
    if (run.loss_start) j["lossStart"] = *run.loss_start;
    if (run.loss_end) j["lossEnd"] = *run.loss_end;
    if (run.allreduce) j["allreduce"] = to_json(*run.allreduce);
    if (run.hybrid_ps) j["hybridPs"] = to_json(*run.hybrid_ps);
    if (!run.optimizer.empty()) j["optimizer"] = run.optimizer;
    if (run.pipeline) {
      j["pipeline"] = {{"stages", run.pipeline->stages},
                       {"microBatches", run.pipeline->micro_batches},
                       {"blockCount", run.pipeline->block_count},
                       {"stageStarts", run.pipeline->stage_starts},
                       {"theoreticalBubble", run.pipeline->theoretical_bubble}};
    }
    nlohmann::json ranks = nlohmann::json::array();
    for (const auto& rk : run.ranks) ranks.push_back(to_json(rk));
    j["ranks"] = ranks;
    if (run.stragglers) j["stragglers"] = to_json(*run.stragglers);
    if (run.rank_summary) j["rankSummary"] = to_json(*run.rank_summary);
    if (run.utilization) j["utilization"] = to_json(*run.utilization);
    if (run.topology) j["topology"] = to_json(*run.topology);
  } else {
    j["error"] = run.error;
  }
  return j;
}

nlohmann::json to_json(const Report& r) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& run : r.runs) runs.push_back(to_json(run));
  nlohmann::json j = {{"schemaVersion", r.schema_version},
                      {"kind", "BenchmarkReport"},
                      {"job", {{"name", r.job_name}, {"namespace", r.job_namespace}}},
                      {"benchmark",
                       {{"model", r.model},
                        {"batchSizePerDevice", r.batch_size_per_device},
                        {"precision", r.precision},
                        {"warmupSteps", r.warmup_steps},
                        {"measureSteps", r.measure_steps},
                        {"repeats", r.repeats},
                        {"bucketCapMB", r.bucket_cap_mb},
                        {"gradientCompression", r.gradient_compression}}},
                      {"environment", to_json(r.environment)},
                      {"baselineRun", r.baseline_run ? nlohmann::json(*r.baseline_run) : nlohmann::json(nullptr)},
                      {"runs", runs}};
  if (r.efficiency_target) j["benchmark"]["efficiencyTarget"] = *r.efficiency_target;
  if (r.noise_threshold_percent) j["benchmark"]["noiseThresholdPercent"] = *r.noise_threshold_percent;
  return j;
}

RunReport run_report_from_json(const nlohmann::json& rj, const std::string& p) {
  jf::require_object(rj, p);
  RunReport run;
  run.index = jf::get_int32(rj, "index", p);
  run.label = jf::get_string(rj, "label", p);
  run.devices_label = jf::get_string(rj, "devices", p);
  run.nodes = jf::get_int32(rj, "nodes", p);
  run.devices_per_node = jf::get_int32(rj, "devicesPerNode", p);
  run.world_size = jf::get_int32(rj, "worldSize", p);
  run.paradigm = jf::get_enum<Paradigm>(rj, "paradigm", p);
  run.bucket_cap_mb = jf::get_number(rj, "bucketCapMB", p);
  run.phase = jf::get_string(rj, "phase", p);
  if (jf::has(rj, "workload")) run.workload = jf::get_string(rj, "workload", p);
  if (jf::has(rj, "framework")) run.framework = jf::get_string(rj, "framework", p);
  if (jf::has(rj, "program")) run.program = jf::get_bool(rj, "program", p);
  if (run.phase == "Succeeded") {
    run.sec_per_iter = percentiles_from_json(jf::member(rj, "secPerIter", p), p + ".secPerIter");
    run.examples_per_sec = percentiles_from_json(jf::member(rj, "examplesPerSec", p), p + ".examplesPerSec");
    const auto& reps = jf::get_array(rj, "repeats", p);
    for (std::size_t k = 0; k < reps.size(); ++k) {
      run.repeats.push_back(percentiles_from_json(reps[k], p + ".repeats[" + std::to_string(k) + "]"));
    }
    if (jf::has(rj, "speedup")) run.speedup = jf::get_number(rj, "speedup", p);
    if (jf::has(rj, "efficiency")) run.efficiency = jf::get_number(rj, "efficiency", p);
    if (jf::has(rj, "belowTarget")) run.below_target = jf::get_bool(rj, "belowTarget", p);
    if (jf::has(rj, "noise")) run.noise = noise_report_from_json(rj["noise"], p + ".noise");
    if (jf::has(rj, "mfu")) run.mfu = mfu_summary_from_json(rj["mfu"], p + ".mfu");
    if (jf::has(rj, "speedupBaselineRun")) run.speedup_baseline_run = jf::get_int32(rj, "speedupBaselineRun", p);
    run.parameter_count = jf::get_int(rj, "parameterCount", p);
    run.ddp_bucket_count = jf::get_int32(rj, "ddpBucketCount", p);
    run.max_peak_memory_bytes = jf::get_int(rj, "maxPeakMemoryBytes", p);
    if (jf::has(rj, "lossStart")) run.loss_start = jf::get_number(rj, "lossStart", p);
    if (jf::has(rj, "lossEnd")) run.loss_end = jf::get_number(rj, "lossEnd", p);
    if (jf::has(rj, "optimizer")) run.optimizer = jf::get_string(rj, "optimizer", p);
    if (jf::has(rj, "pipeline")) {
      const std::string pp = p + ".pipeline";
      const auto& pj = jf::get_object(rj, "pipeline", p);
      PipelineReport pr;
      pr.stages = jf::get_int32(pj, "stages", pp);
      pr.micro_batches = jf::get_int32(pj, "microBatches", pp);
      pr.block_count = jf::get_int32(pj, "blockCount", pp);
      pr.stage_starts = jf::get_int32_list(pj, "stageStarts", pp);
      pr.theoretical_bubble = jf::get_number(pj, "theoreticalBubble", pp);
      run.pipeline = pr;
    }
    if (jf::has(rj, "allreduce")) run.allreduce = allreduce_report_from_json(rj["allreduce"], p + ".allreduce");
    if (jf::has(rj, "hybridPs")) run.hybrid_ps = hybrid_ps_report_from_json(rj["hybridPs"], p + ".hybridPs");
    const auto& ranks = jf::get_array(rj, "ranks", p);
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      run.ranks.push_back(rank_report_from_json(ranks[k], p + ".ranks[" + std::to_string(k) + "]"));
    }
    if (jf::has(rj, "stragglers")) run.stragglers = straggler_report_from_json(rj["stragglers"], p + ".stragglers");
    if (jf::has(rj, "rankSummary")) run.rank_summary = rank_summary_from_json(rj["rankSummary"], p + ".rankSummary");
    if (jf::has(rj, "utilization")) run.utilization = run_utilization_from_json(rj["utilization"], p + ".utilization");
    if (jf::has(rj, "topology")) run.topology = topology_from_json(rj["topology"], p + ".topology");
  } else if (run.phase == "Failed") {
    run.error = jf::get_string(rj, "error", p);
  } else {
    throw std::runtime_error(p + ".phase: must be \"Succeeded\" or \"Failed\", got \"" + printable(run.phase) + "\"");
  }
  return run;
}

Report report_from_json(const nlohmann::json& j) {
  jf::require_object(j, "");
  Report r;
  r.schema_version = jf::get_int32(j, "schemaVersion", "");
  if (r.schema_version != kReportSchemaVersion) {
    throw std::runtime_error("schemaVersion: unsupported version " + std::to_string(r.schema_version) +
                             " (this trainbench reads " + std::to_string(kReportSchemaVersion) + ")");
  }
  if (jf::get_string(j, "kind", "") != "BenchmarkReport") throw std::runtime_error("kind: must be \"BenchmarkReport\"");
  const auto& job = jf::get_object(j, "job", "");
  r.job_name = jf::get_string(job, "name", "job");
  r.job_namespace = jf::get_string(job, "namespace", "job");
  const auto& b = jf::get_object(j, "benchmark", "");
  r.model = jf::get_string(b, "model", "benchmark");
  r.batch_size_per_device = jf::get_int32(b, "batchSizePerDevice", "benchmark");
  r.precision = jf::get_string(b, "precision", "benchmark");
  r.warmup_steps = jf::get_int32(b, "warmupSteps", "benchmark");
  r.measure_steps = jf::get_int32(b, "measureSteps", "benchmark");
  r.repeats = jf::get_int32(b, "repeats", "benchmark");
  r.bucket_cap_mb = jf::get_number(b, "bucketCapMB", "benchmark");
  r.gradient_compression = jf::get_string(b, "gradientCompression", "benchmark");
  if (jf::has(b, "efficiencyTarget")) r.efficiency_target = jf::get_number(b, "efficiencyTarget", "benchmark");
  if (jf::has(b, "noiseThresholdPercent"))
    r.noise_threshold_percent = jf::get_number(b, "noiseThresholdPercent", "benchmark");
  r.environment = environment_from_json(jf::get_object(j, "environment", ""));
  if (jf::has(j, "baselineRun")) r.baseline_run = jf::get_int32(j, "baselineRun", "");
  const auto& runs = jf::get_array(j, "runs", "");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    r.runs.push_back(run_report_from_json(runs[i], "runs[" + std::to_string(i) + "]"));
  }
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    const auto& base = r.runs[i].speedup_baseline_run;
    if (base && (*base < 0 || static_cast<std::size_t>(*base) >= r.runs.size())) {
      throw std::runtime_error("runs[" + std::to_string(i) + "].speedupBaselineRun: must index runs, got " +
                               std::to_string(*base));
    }
  }
  if (r.baseline_run && (*r.baseline_run < 0 || static_cast<std::size_t>(*r.baseline_run) >= r.runs.size())) {
    throw std::runtime_error("baselineRun: must index runs (0.." +
                             std::to_string(static_cast<long long>(r.runs.size()) - 1) + "), got " +
                             std::to_string(*r.baseline_run));
  }
  return r;
}

Report load_report(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw std::runtime_error(path + ": cannot read the report file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read the report file");
  std::ostringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(path + ": not valid JSON (" + printable(e.what(), 200) + ")");
  }
  try {
    return report_from_json(j);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

}  // namespace trainbench
