#pragma once

#include <string>
#include <vector>

namespace trainbench::cli {

/// Exit codes of the trainbench CLI.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;       ///< could not work at all (worker missing, I/O error, internal)
inline constexpr int kExitUsage = 2;       ///< bad command line, invalid job spec or report
inline constexpr int kExitRunFailed = 3;   ///< one or more runs failed (the report marks them)
/// diff --fail-on-regression / run --baseline: a row significantly slower than the baseline by
/// more than the threshold (run: only when no run failed, which is 3).
inline constexpr int kExitRegression = 4;
// Interrupted by a signal: 128 + signal (130 SIGINT, 143 SIGTERM, 129 SIGHUP).

extern const char* const kRunUsage;
extern const char* const kDiffUsage;
extern const char* const kReportUsage;
extern const char* const kValidateUsage;
extern const char* const kCrdUsage;
extern const char* const kNodeLaunchUsage;

/// Each takes the words after its subcommand name; may throw UsageError (exit 2) or
/// std::exception (exit 1), which main reports.
int cmd_run(const std::vector<std::string>& args);
int cmd_diff(const std::vector<std::string>& args);
int cmd_report(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_crd(const std::vector<std::string>& args);
int cmd_node_launch(const std::vector<std::string>& args);

}  // namespace trainbench::cli
