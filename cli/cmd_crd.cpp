#include <iostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/api/crd.hpp"

namespace trainbench::cli {

const char* const kCrdUsage =
    "usage: trainbench crd [--output yaml|json]\n"
    "\n"
    "Prints the BenchmarkJob CustomResourceDefinition (apiextensions.k8s.io/v1), generated from the\n"
    "same allowed values, limits and defaults `trainbench validate` checks. The repository keeps\n"
    "its output in crds/trainbench.dev_benchmarkjobs.yaml:\n"
    "  trainbench crd > crds/trainbench.dev_benchmarkjobs.yaml\n"
    "  kubectl apply -f crds/trainbench.dev_benchmarkjobs.yaml\n"
    "\n"
    "options:\n"
    "  --output FORMAT  yaml (default, with a generated-file header) or json\n"
    "\n"
    "exit codes: 0 ok, 2 the command line is wrong\n";

int cmd_crd(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {"--output"});
  if (a.help) {
    std::cout << kCrdUsage;
    return kExitOk;
  }
  if (!a.positional.empty()) throw UsageError("unexpected argument \"" + a.positional[0] + "\"");
  const std::string format = a.value("--output", "yaml");
  if (format == "yaml") {
    std::cout << benchmarkjob_crd_yaml();
  } else if (format == "json") {
    std::cout << benchmarkjob_crd().dump(2) << "\n";
  } else {
    throw UsageError("--output must be yaml or json, got \"" + format + "\"");
  }
  return kExitOk;
}

}  // namespace trainbench::cli
