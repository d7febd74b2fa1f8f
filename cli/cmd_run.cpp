#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/diff_output.hpp"
#include "cli/interrupt.hpp"
#include "cli/local_executor.hpp"
#include "cli/progress.hpp"
#include "cli/regression_check.hpp"
#include "core/plan/run_config.hpp"
#include "core/report/compare.hpp"
#include "core/report/report.hpp"
#include "core/report/report_format.hpp"
#include "core/spec/spec.hpp"
#include "core/util/atomic_file.hpp"
#include "core/util/stats.hpp"

namespace trainbench::cli {
namespace fs = std::filesystem;

const char* const kRunUsage =
    "usage: trainbench run JOB.yaml [--json OUT.json] [--keep-logs DIR] [--quick]\n"
    "                      [--baseline BASE.json [--fail-on-regression PCT]]\n"
    "\n"
    "Runs every sweep entry of a BenchmarkJob, in order, as local trainbench-worker processes\n"
    "(one per rank, torchrun-style environment) and prints the report to stdout; progress goes\n"
    "to stderr.\n"
    "\n"
    "options:\n"
    "  --json OUT.json    also write the report as JSON (for `trainbench diff`)\n"
    "  --keep-logs DIR    keep every run's directory (rank-R.log, result.json) under DIR;\n"
    "                     by default they go to a temporary directory that is removed unless\n"
    "                     a run fails\n"
    "  --quick            a smoke run of the job: at most 1 warmup step, 2 measured steps and\n"
    "                     1 repeat (model, batch, precision and sweep untouched); the numbers\n"
    "                     are not a benchmark\n"
    "  --baseline BASE.json  after the report, compare it with an earlier report as\n"
    "                     `trainbench diff BASE.json NEW --fail-on-regression PCT` does, and\n"
    "                     exit 4 when a row is significantly slower by more than PCT percent\n"
    "  --fail-on-regression PCT  the threshold of --baseline (default: the job's\n"
    "                     spec.baseline.regressionThresholdPercent, else 5)\n"
    "\n"
    "environment:\n"
    "  TRAINBENCH_WORKER  the worker executable (default: trainbench-worker next to trainbench)\n"
    "\n"
    "exit codes: 0 all runs succeeded, 1 error, 2 usage error or invalid job,\n"
    "            3 one or more runs failed (the report marks them), 4 significantly slower\n"
    "            than --baseline (when no run failed), 130/143 interrupted\n";

namespace {

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

/// The pooled median step time of a result, for the progress line's last word.
std::string median_status(const RunResult& r) {
  std::vector<double> all;
  for (const auto& rank : r.ranks) {
    for (const auto& rep : rank.step_seconds) all.insert(all.end(), rep.begin(), rep.end());
  }
  if (all.empty()) return "";
  char buf[48];
  std::snprintf(buf, sizeof buf, " | p50 %.4g s/iter", median(all));
  return buf;
}

/// Fails early (before an hour of benchmarking) when OUT cannot be written; "" if it can.
std::string check_writable(const std::string& path) {
  const std::string probe = path + ".trainbench-probe";
  {
    std::ofstream f(probe);
    if (!f) return "--json " + path + ": cannot write there (" + std::strerror(errno) + ")";
  }
  std::remove(probe.c_str());
  return "";
}

std::string make_temp_base(const std::string& job_name) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string templ = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/trainbench-" + job_name + "-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    throw std::runtime_error("cannot create a temporary directory " + templ + ": " + std::strerror(errno));
  }
  return buf.data();
}

void print_failure(const LocalRunOutcome& o) {
  if (!o.failed_log.empty()) {
    std::cerr << "  rank " << o.failed_rank << " log: " << o.failed_log << "\n";
    if (!o.log_tail.empty()) {
      std::cerr << "  last lines:\n";
      std::istringstream in(o.log_tail);
      std::string line;
      while (std::getline(in, line)) std::cerr << "    " << line << "\n";
    }
  }
  if (o.logs_kept && !o.run_dir.empty()) std::cerr << "  logs kept in " << o.run_dir << "\n";
}

/// What `trainbench run` was asked to do.
struct RunRequest {
  std::string job_file;
  std::string json_out;  ///< "" unless --json
  std::string keep_dir;  ///< "" unless --keep-logs
  bool quick = false;
  std::string baseline_file;             ///< "" unless --baseline
  std::optional<double> fail_threshold;  ///< --fail-on-regression PCT
};

RunRequest run_request(const ParsedArgs& a) {
  if (a.positional.size() != 1) {
    throw UsageError(a.positional.empty() ? "expected a JOB.yaml file"
                                          : "expected one JOB.yaml file, got " + std::to_string(a.positional.size()));
  }
  RunRequest req{a.positional[0],  a.value("--json"),     a.value("--keep-logs"),
                 a.has("--quick"), a.value("--baseline"), std::nullopt};
  if (a.has("--fail-on-regression")) {
    if (req.baseline_file.empty()) throw UsageError("--fail-on-regression needs --baseline BASE.json");
    req.fail_threshold = parse_regression_threshold("--fail-on-regression", a.value("--fail-on-regression"));
  }
  return req;
}

/// The job and its runs, planned for this machine's cores (--quick shortens the steps first).
/// Throws SpecError.
void load_and_plan(const RunRequest& req, BenchmarkJob& job, std::vector<RunConfig>& runs) {
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (cores <= 0) cores = 1;
  job = load_benchmark_job(req.job_file);
  if (req.quick) {
    job.benchmark.warmup_steps = std::min(job.benchmark.warmup_steps, 1);
    job.benchmark.measure_steps = std::min(job.benchmark.measure_steps, 2);
    job.benchmark.repeats = 1;
  }
  runs = plan_runs(job, cores);
}

/// Where the runs' directories go: --keep-logs DIR (created), else a new temporary directory.
struct RunsBase {
  std::string dir;
  bool temporary = false;  ///< removed at the end unless a run kept its logs there
};

/// The runs' base directory, or nullopt after printing why --keep-logs DIR cannot be used.
std::optional<RunsBase> make_runs_base(const RunRequest& req, const std::string& job_name) {
  if (req.keep_dir.empty()) return RunsBase{make_temp_base(job_name), true};
  std::error_code ec;
  fs::create_directories(req.keep_dir, ec);
  if (ec || !fs::is_directory(req.keep_dir)) {
    std::cerr << "trainbench run: --keep-logs " << req.keep_dir << ": cannot create directory"
              << (ec ? " (" + ec.message() + ")" : "") << "\n";
    return std::nullopt;
  }
  return RunsBase{req.keep_dir, false};
}

/// What the sweep produced: the outcomes of the runs that finished, in order.
struct SweepOutcome {
  std::vector<RunOutcome> outcomes;
  bool any_failed = false;
  bool any_kept = false;  ///< some run's directory was kept under the base
  int interrupted = 0;    ///< the signal that stopped the sweep, 0 if none
};

ProgressRun progress_run(const RunConfig& run, std::size_t i, std::size_t count) {
  ProgressRun pr;
  pr.number = static_cast<int>(i) + 1;
  pr.count = static_cast<int>(count);
  pr.label = run.label();
  pr.model = !trains_model(run.paradigm) ? "(communication only)" : run.model;
  pr.world_size = run.process_count();  // processes started (hybrid-ps: trainers + parameter servers)
  pr.warmup_steps = run.warmup_steps;
  pr.steps = run_steps(run);
  return pr;
}

/// What the job's runs train, for the banner: its workloads' names, or the built-in model.
std::string what_runs(const BenchmarkJob& job) {
  if (job.workloads.empty()) return job.benchmark.model.empty() ? "all-reduce" : job.benchmark.model;
  std::string names;
  for (const WorkloadSpec& w : job.workloads) names += (names.empty() ? "" : ", ") + w.name;
  return "workloads " + names;
}

/// Every run in order, one progress line each; stops at an interrupt.
SweepOutcome run_sweep(const BenchmarkJob& job, const std::vector<RunConfig>& runs, const std::string& worker,
                       const RunsBase& base, ProgressDisplay& display) {
  SweepOutcome sweep;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if ((sweep.interrupted = interrupt_signal()) != 0) break;
    const RunConfig& run = runs[i];
    display.begin(progress_run(run, i, runs.size()));

    LocalExecutorOptions opts;
    opts.worker = worker;
    opts.runs_dir = base.dir;
    opts.keep_logs = !base.temporary;
    opts.active_deadline_seconds = job.run_policy.active_deadline_seconds;
    opts.on_progress = [&display](const ProgressUpdate& p) { display.update(p); };
    LocalRunOutcome o = run_local(run, opts);
    sweep.any_kept = sweep.any_kept || o.logs_kept;

    if (o.interrupted_by != 0) {
      display.end("interrupted after " + format_seconds(o.elapsed_seconds));
      sweep.interrupted = o.interrupted_by;
      if (o.logs_kept) std::cerr << "  logs kept in " << o.run_dir << "\n";
      break;
    }
    if (o.outcome.result) {
      display.end("done in " + format_seconds(o.elapsed_seconds) + median_status(*o.outcome.result));
    } else {
      sweep.any_failed = true;
      display.end("FAILED after " + format_seconds(o.elapsed_seconds) + ": " + o.outcome.error);
      print_failure(o);
    }
    sweep.outcomes.push_back(std::move(o.outcome));
  }
  if (sweep.interrupted == 0) sweep.interrupted = interrupt_signal();
  return sweep;
}

/// The comparison with --baseline after the report: the diff and the regression check; its exit
/// code (kExitRegression or kExitOk).
int compare_with_baseline(const RunRequest& req, const BenchmarkJob& job, const Report& baseline,
                          const Report& report) {
  const double threshold = req.fail_threshold.value_or(job.baseline ? job.baseline->regression_threshold_percent
                                                                    : kDefaultRegressionThresholdPercent);
  std::cout << "\nCompared with the baseline " << req.baseline_file << ":\n\n";
  return print_diff(baseline, report, threshold, std::cout);
}

/// Prints the report (and writes --json), then the comparison with --baseline; the exit code of
/// a sweep that was not interrupted.
int report_sweep(const RunRequest& req, const BenchmarkJob& job, const std::vector<RunConfig>& runs,
                 const SweepOutcome& sweep, const std::optional<Report>& baseline) {
  const Report report = build_report(job, runs, sweep.outcomes);
  std::cout << format_report(report);
  std::cout.flush();
  int rc = sweep.any_failed ? kExitRunFailed : kExitOk;
  if (baseline && compare_with_baseline(req, job, *baseline, report) != kExitOk && rc == kExitOk) {
    rc = kExitRegression;
  }
  if (!req.json_out.empty()) {
    try {
      write_file_atomically(req.json_out, to_json(report).dump(2) + "\n");
    } catch (const std::exception& e) {
      std::cerr << "trainbench run: error: " << e.what() << "\n";
      rc = kExitError;
    }
  }
  if (sweep.any_failed) {
    std::cerr << "trainbench: " << (sweep.any_kept ? "logs of the failed runs are kept (see above); " : "")
              << "one or more runs failed\n";
  }
  return rc;
}

void fit_to_terminal(ProgressDisplay& display, bool tty) {
  if (struct winsize ws{}; tty && ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    display.set_width(ws.ws_col);
  }
}

std::string interrupt_name(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal " + std::to_string(sig);
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {"--json", "--keep-logs", "--baseline", "--fail-on-regression"}, {"--quick"});
  if (a.help) {
    std::cout << kRunUsage;
    return kExitOk;
  }
  const RunRequest req = run_request(a);
  BenchmarkJob job;
  std::vector<RunConfig> runs;
  try {
    load_and_plan(req, job, runs);
  } catch (const SpecError& e) {
    for (const auto& err : e.errors()) std::cerr << req.job_file << ": " << err.str() << "\n";
    return kExitUsage;
  }
  std::optional<Report> baseline;
  if (!req.baseline_file.empty()) {
    try {
      baseline = load_report(req.baseline_file);  // before the runs: a bad file fails in a second
    } catch (const std::exception& e) {
      std::cerr << "trainbench run: --baseline " << e.what() << "\n";
      return kExitUsage;
    }
  }
  if (!req.json_out.empty()) {
    if (const std::string problem = check_writable(req.json_out); !problem.empty()) {
      std::cerr << "trainbench run: " << problem << "\n";
      return kExitUsage;
    }
  }
  const std::optional<RunsBase> base = make_runs_base(req, job.metadata.name);
  if (!base) return kExitUsage;
  std::string worker;  // a job whose every workload is a program runs without trainbench-worker
  try {
    if (has_builtin_workload(job)) worker = find_worker_binary();
  } catch (...) {
    if (base->temporary) ::rmdir(base->dir.c_str());
    throw;
  }

  install_interrupt_handlers();
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  ProgressDisplay display(std::cerr, tty);
  fit_to_terminal(display, tty);
  std::cerr << "trainbench: job " << job.metadata.name << ": " << runs.size() << (runs.size() == 1 ? " run" : " runs")
            << " of " << what_runs(job) << (worker.empty() ? "" : " (worker " + worker + ")") << "\n";
  const SweepOutcome sweep = run_sweep(job, runs, worker, *base, display);

  if (base->temporary && !sweep.any_kept) ::rmdir(base->dir.c_str());
  if (sweep.interrupted != 0) {
    std::cerr << "trainbench: interrupted by " << interrupt_name(sweep.interrupted)
              << "; all ranks were stopped; no report written\n";
    return 128 + sweep.interrupted;
  }
  return report_sweep(req, job, runs, sweep, baseline);
}

}  // namespace trainbench::cli
