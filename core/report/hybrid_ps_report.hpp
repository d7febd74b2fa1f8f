#pragma once

// The hybrid-ps paradigm's place in the common report (core/report/report, core/report/report_format): the
// parameter servers' timings summarised per run (ServerReport, HybridPsReport in report.hpp),
// and the seed's per-trainer table (each trainer's p50/p75/p90/p95 sec/iter and examples/sec,
// then "All": every trainer's steps pooled, examples/sec of all trainers together).

#include <string>

#include <nlohmann/json.hpp>

#include "core/report/report.hpp"

namespace trainbench {

/// Called by summarize_run for a hybrid-ps run: fills run.hybrid_ps from the result's servers.
/// Throws std::runtime_error on an inconsistent result (server count, repeats, empty timings).
void summarize_hybrid_ps_run(const RunConfig& cfg, const RunResult& result, RunReport& run);

nlohmann::json to_json(const HybridPsReport& r);
/// `path` prefixes error messages ("runs[0].hybridPs").
HybridPsReport hybrid_ps_report_from_json(const nlohmann::json& j, const std::string& path);

/// The per-trainer tables and the servers of every succeeded hybrid-ps run ("" when none).
/// Each trainer's examples/sec = the report's batch per device / its sec/iter.
std::string format_hybrid_ps_runs(const Report& report);

}  // namespace trainbench
