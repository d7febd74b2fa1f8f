#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/analysis/mfu.hpp"
#include "core/analysis/noise.hpp"
#include "core/plan/run_config.hpp"
#include "core/report/straggler.hpp"
#include "core/results/run_result.hpp"
#include "core/results/utilization.hpp"
#include "core/spec/spec.hpp"
#include "core/util/stats.hpp"

namespace trainbench {

inline constexpr int kReportSchemaVersion = 1;

struct RankReport {
  int rank = 0;
  int node_rank = 0;
  int local_rank = 0;
  Percentiles sec_per_iter;     ///< over this rank's measured steps, median over repeats
  std::int64_t peak_memory_bytes = 0;
  std::int64_t optimizer_state_bytes = 0;  ///< momentum / Adam moments held by this rank
  std::int64_t parameter_count = 0;        ///< parameters this rank holds (pipeline: its stage's)
  std::optional<int> stage;                ///< pipeline / model-parallel: this rank's stage
  std::optional<double> bubble_fraction;   ///< pipeline / model-parallel: measured idle share
  /// Seconds per step of compute and of exposed communication (waiting on other ranks), each
  /// the median over repeats of the repeat's p50 (as sec_per_iter.p50). Absent for paradigm
  /// allreduce and in older reports. "computeSeconds", "communicationSeconds".
  std::optional<double> compute_seconds;
  std::optional<double> communication_seconds;
  /// Fastest rank's compute_seconds / this rank's (core/report/straggler.hpp); 1.0 = the fastest.
  /// Absent where the run is not scored (pipeline stages do different work). "stragglerScore".
  std::optional<double> straggler_score;
  /// CPU, memory, network and GPU use over the measured steps (core/results/utilization.hpp); absent
  /// in reports of older workers. "utilization".
  std::optional<RankUtilization> utilization;
};

/// pipeline / model-parallel runs: how the model was split and the bubble GPipe predicts.
struct PipelineReport {
  int stages = 1;
  int micro_batches = 1;
  int block_count = 0;
  std::vector<int> stage_starts;  ///< first block of each stage
  double theoretical_bubble = 0;  ///< (S - 1) / (M + S - 1)
};

/// paradigm hybrid-ps: one parameter server of a run, summarised: each timing's percentiles per
/// repeat, median over the repeats (as the ranks' sec/iter).
struct ServerReport {
  int rank = 0;
  int server = 0;
  std::int64_t rows = 0;     ///< embedding rows it owns, all tables together
  std::int64_t lookups = 0;  ///< lookup requests served in the measured steps
  Percentiles lookup_service_seconds;  ///< per request: ids in hand -> partial sums sent
  Percentiles lookup_queue_seconds;    ///< per request: arrival -> start of its service
  Percentiles update_seconds;          ///< per step: applying every trainer's gradients
  std::int64_t peak_memory_bytes = 0;
  std::optional<RankUtilization> utilization;  ///< as RankReport's
};

struct HybridPsReport {
  int trainers = 0;
  int parameter_servers = 0;
  std::vector<ServerReport> servers;
};

/// A run's ranks in brief, for copies of a run that must stay small (the job's status): a run
/// with more than kMaxRanksInStatus ranks keeps its per-rank detail in its result ConfigMap and
/// this summary in status (core/report/rank_summary.hpp, docs/report.md).
struct RankSummary {
  int count = 0;                    ///< ranks in the run
  double sec_per_iter_p50_min = 0;  ///< the ranks' own p50 sec/iter: fastest rank's
  double sec_per_iter_p50_median = 0;
  double sec_per_iter_p50_max = 0;  ///< slowest rank's
  std::vector<RankReport> slowest;  ///< up to kSlowestRanksKept ranks, slowest (highest p50) first
  std::string detail_config_map;    ///< the ConfigMap holding every rank (key "result"), "" if none
};

/// One configuration (sweep entry) of the report.
struct RunReport {
  int index = 0;
  std::string label;            ///< "no ddp", "1M/2G"; "python-ddp 1M/2G" in a job with workloads
  /// spec.workloads[].name of the run ("workload"; absent in a job without workloads).
  std::string workload;
  /// The run its speedup is measured against, where the report has several workloads (each
  /// against its own workload's single-device run): "speedupBaselineRun", absent otherwise.
  std::optional<int> speedup_baseline_run;
  /// A program workload's stack as its probe named it (EnvironmentInfo::framework): "framework",
  /// absent for the built-in worker.
  std::string framework;
  /// The run was a program workload's (its paradigm is the program's own): "program": true.
  bool program = false;
  std::string devices_label;    ///< "2 CPUs"
  int nodes = 1;
  int devices_per_node = 1;
  int world_size = 1;
  Paradigm paradigm = Paradigm::kDdp;
  double bucket_cap_mb = 0;
  std::string phase = "Succeeded";  ///< Succeeded | Failed
  std::string error;                ///< why it failed
  Percentiles sec_per_iter;         ///< all ranks pooled, median over repeats
  Percentiles examples_per_sec;     ///< global batch / sec_per_iter
  std::vector<Percentiles> repeats; ///< all-rank sec/iter of each repeat
  std::optional<double> speedup;    ///< p50 throughput / baseline p50 throughput
  std::optional<double> efficiency; ///< speedup / world_size
  /// efficiency < the report's efficiency_target; set with efficiency ("belowTarget").
  std::optional<bool> below_target;
  /// How much the run's timings moved and the verdict (core/analysis/noise.hpp); absent for failed and
  /// all-reduce runs and in reports written before it existed.
  std::optional<NoiseReport> noise;
  /// Training FLOPs per example, achieved TFLOP/s per device, the peak and MFU (core/analysis/mfu.hpp);
  /// absent for failed and all-reduce runs and in older reports. "mfu".
  std::optional<MfuSummary> mfu;
  std::int64_t parameter_count = 0;
  int ddp_bucket_count = 0;
  std::int64_t max_peak_memory_bytes = 0;
  /// Training loss at the first and the last measured step, mean over ranks (each rank's loss
  /// on its own batch). Absent in reports written before they existed.
  std::optional<double> loss_start;
  std::optional<double> loss_end;
  /// paradigm allreduce: the per-size table (core/spec/allreduce.hpp). secPerIter is then the time of
  /// one all-reduce of the largest size, examplesPerSec 0, and there is no speedup or loss.
  std::optional<AllreduceReport> allreduce;
  std::string optimizer;                 ///< sgd | adam ("" in older reports)
  std::optional<PipelineReport> pipeline;
  /// paradigm hybrid-ps: the trainer / server counts and the servers' timings
  /// (core/report/hybrid_ps_report.hpp); ranks holds the trainers.
  std::optional<HybridPsReport> hybrid_ps;
  std::vector<RankReport> ranks;
  /// The ranks scored against the run's fastest and those named stragglers (core/report/straggler.hpp);
  /// absent where no score was computed. Kept whole when `ranks` is summarised. "stragglers".
  std::optional<StragglerReport> stragglers;
  /// Set where `ranks` was left out to keep this copy small (then `ranks` is empty).
  std::optional<RankSummary> rank_summary;
  /// Every rank's (trainers' and parameter servers') utilization summarised: mean CPU, max peak
  /// memory, mean bytes sent per step, GPU busy and memory (core/results/utilization.hpp). Absent for
  /// failed runs and where the workers did not report it. "utilization".
  std::optional<RunUtilization> utilization;
  /// Where the ranks ran (core/results/topology.hpp), from the result; absent in older reports, for
  /// program workloads, and where `ranks` was left out. "topology".
  std::optional<Topology> topology;
};

struct Report {
  int schema_version = kReportSchemaVersion;
  std::string job_name;
  std::string job_namespace;
  std::string model;
  int batch_size_per_device = 0;
  std::string precision;
  int warmup_steps = 0;
  int measure_steps = 0;
  int repeats = 0;
  double bucket_cap_mb = 0;
  std::string gradient_compression;
  EnvironmentInfo environment;
  /// spec.benchmark.efficiencyTarget and noiseThresholdPercent the runs were judged against
  /// (absent in older reports).
  std::optional<double> efficiency_target;
  std::optional<double> noise_threshold_percent;
  std::optional<int> baseline_run;  ///< index of the run speedup is measured against
  std::vector<RunReport> runs;
};

/// Builds the report of a job from its planned runs and, for each, either the workers' result
/// or the error that failed it. `results[i]` belongs to `runs[i]`.
struct RunOutcome {
  std::optional<RunResult> result;
  std::string error;  ///< set when the run failed
};
Report build_report(const BenchmarkJob& job, const std::vector<RunConfig>& runs,
                    const std::vector<RunOutcome>& outcomes);

/// The two halves of build_report, for executors that summarise each run where it ends (the
/// operator's master pod) and assemble the report elsewhere:
/// summarize_run turns one run's raw result into its RunReport (no speedup yet; throws
/// std::runtime_error on an inconsistent result); failed_run makes the RunReport of a run that
/// failed; assemble_report picks the baseline, fills speedup and efficiency, and judges each run
/// against spec.benchmark.efficiencyTarget (below_target) and noiseThresholdPercent (noise).
RunReport summarize_run(const RunConfig& run, const RunResult& result);
RunReport failed_run(const RunConfig& run, const std::string& error);
Report assemble_report(const BenchmarkJob& job, std::vector<RunReport> runs, const EnvironmentInfo& environment);

/// The runs of one workload of `report`, their labels without the workload's name (so they
/// match a report of the same shapes by label): what `trainbench diff --workloads A B` compares.
/// Throws std::runtime_error listing the report's workloads when it has no run of `workload`.
Report workload_report(const Report& report, const std::string& workload);

/// {"p50", "p75", "p90", "p95"}; the reader names the bad field and rejects negative values.
nlohmann::json percentiles_json(const Percentiles& p);
Percentiles percentiles_from_json(const nlohmann::json& j, const std::string& path);

nlohmann::json to_json(const RankReport& r);
RankReport rank_report_from_json(const nlohmann::json& j, const std::string& path);
nlohmann::json to_json(const RunReport& r);
/// `path` prefixes error messages ("runs[2]").
RunReport run_report_from_json(const nlohmann::json& j, const std::string& path);

nlohmann::json to_json(const Report& r);
/// Reads a report; throws std::runtime_error naming the bad field ("runs[0].secPerIter.p50:
/// must be a number") or an unsupported schemaVersion.
Report report_from_json(const nlohmann::json& j);
/// Reads a report file; errors name the file.
Report load_report(const std::string& path);

}  // namespace trainbench
