// Resource quantities (spec.template.resources limits and requests): core's check of the text
// as validate() runs it, and as parse_benchmark_job reads it from YAML. For short inputs core's
// verdict must equal Kubernetes' quantity pattern (kQuantityPattern, which the CRD carries):
// one truth for `trainbench validate` and the API server.

#include <regex>
#include <string>

#include "core/spec/spec.hpp"
#include "fuzz/fuzz_util.hpp"

namespace {

using namespace trainbench;

// Short enough for std::regex (it recurses per character) and under any length bound.
constexpr std::size_t kDifferentialLength = 32;

bool core_accepts(const std::string& q) {
  BenchmarkJob job;
  job.metadata.name = "job-a";
  job.benchmark.model = "mlp";
  job.sweep = {SweepEntry{}};
  job.backend = Backend::kGloo;
  job.pod_template.resource_limits["cpu"] = q;
  for (const auto& e : validate(job)) {
    if (e.path.find("resources.limits") != std::string::npos) return false;
  }
  return true;
}

void parse_from_yaml(const std::string& q) {
  const std::string line = q.substr(0, q.find_first_of("\r\n"));
  try {
    (void)parse_benchmark_job(
        "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata: {name: job-a}\nspec:\n"
        "  benchmark: {model: mlp}\n  template:\n    resources:\n      requests:\n        memory: " +
        line + "\n");
  } catch (const SpecError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string q = fuzz::as_string(data, size);
  const bool accepted = core_accepts(q);
  if (q.size() <= kDifferentialLength) {
    static const std::regex kPattern(kQuantityPattern);
    const bool pattern = std::regex_match(q, kPattern);
    FUZZ_CHECK(accepted == pattern, "core " + std::string(accepted ? "accepts" : "refuses") + " quantity \"" + q +
                                        "\", the CRD's pattern " + (pattern ? "accepts" : "refuses"));
  }
  parse_from_yaml(q);
  return 0;
}
