#pragma once

// The allreduce paradigm's place in the common report (core/report/report, core/report/report_format): its
// RunReport is summarised here and its table printed after the training table.

#include <string>

#include "core/report/report.hpp"

namespace trainbench {

/// Called by summarize_run for a result that carries an all-reduce part: fills run.allreduce
/// (the per-size table) and sets the common fields so that nothing misreads them: secPerIter
/// (run and ranks) = seconds per all-reduce of the largest size, examplesPerSec 0, no loss.
/// Throws std::runtime_error on an inconsistent result.
void summarize_allreduce_run(const RunConfig& cfg, const RunResult& result, RunReport& run);

/// The all-reduce table of every succeeded allreduce run of the report ("" when none).
std::string format_allreduce_runs(const Report& report);

/// busbw per size of the allreduce runs both reports have (matched by row name), and a line for
/// the ones only one side has ("" when neither has any).
std::string format_allreduce_diffs(const Report& base, const Report& test);

}  // namespace trainbench
