#pragma once

// The subcommands of `kubectl trainbench` (cli/kubectl_trainbench.cpp). Each reads what it needs
// through PluginCluster and prints as the `trainbench` CLI prints the same thing locally.

#include <string>

#include "cli/plugin_args.hpp"
#include "cli/plugin_cluster.hpp"
#include "core/report/report.hpp"

namespace trainbench::cli {

/// The job's report: status.report, plus a FAILED row (with status.runs[].message as its error)
/// for each run that failed, which status.report leaves out and `trainbench run` prints. Throws
/// PluginError when there is neither: exit 5 while the job may still get a report (no status
/// yet, Pending, Running), 1 when it never will (Invalid); the message says the phase, the runs
/// done and what each run is doing.
Report job_report(const ClusterJob& job);

/// Why a job has no report, in words ("phase Running, 0 of 2 runs done; run 0 ... Running").
std::string no_report_reason(const ClusterJob& job);

int plugin_report(const PluginRequest& r);
int plugin_diff(const PluginRequest& r);
int plugin_plot(const PluginRequest& r);
int plugin_logs(const PluginRequest& r);

}  // namespace trainbench::cli
