#include <iostream>
#include <thread>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/plan/run_config.hpp"
#include "core/spec/spec.hpp"

namespace trainbench::cli {

const char* const kValidateUsage =
    "usage: trainbench validate JOB.yaml...\n"
    "\n"
    "Checks BenchmarkJob files (schema, allowed values, sweep shapes) without running anything.\n"
    "Prints \"JOB.yaml: valid BenchmarkJob NAME (N runs)\" for a good file, and one line per\n"
    "problem, \"JOB.yaml: FIELD: MESSAGE\", on stderr for a bad one.\n"
    "\n"
    "exit codes: 0 all files valid, 2 a file is invalid or the command line is wrong\n";

int cmd_validate(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {});
  if (a.help) {
    std::cout << kValidateUsage;
    return kExitOk;
  }
  if (a.positional.empty()) throw UsageError("expected a JOB.yaml file");
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (cores <= 0) cores = 1;
  int rc = kExitOk;
  for (const auto& file : a.positional) {
    try {
      const BenchmarkJob job = load_benchmark_job(file);
      const auto runs = plan_runs(job, cores);
      std::cout << file << ": valid BenchmarkJob " << job.metadata.name << " (" << runs.size()
                << (runs.size() == 1 ? " run" : " runs") << ")\n";
    } catch (const SpecError& e) {
      for (const auto& err : e.errors()) std::cerr << file << ": " << err.str() << "\n";
      rc = kExitUsage;
    } catch (const std::exception& e) {
      std::cerr << file << ": " << e.what() << "\n";
      rc = kExitUsage;
    }
  }
  return rc;
}

}  // namespace trainbench::cli
