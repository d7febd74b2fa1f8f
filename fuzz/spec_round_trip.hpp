#pragma once

// The property a valid BenchmarkJob must keep on its way to the cluster: `trainbench submit`
// sends to_json(job) and the operator parses that JSON again (reconciler: parse_benchmark_job of
// the custom resource), so both must read the same job; its run plan must survive the RunConfig
// JSON the pods receive.

#include "core/plan/run_config.hpp"
#include "core/spec/spec.hpp"
#include "fuzz/fuzz_util.hpp"

namespace trainbench::fuzz {

inline void check_valid_job_round_trip(const BenchmarkJob& job) {
  const nlohmann::json first = to_json(job);
  std::string text;
  try {
    text = first.dump();
  } catch (const nlohmann::json::exception& e) {
    fail(__FILE__, __LINE__, std::string("a valid job cannot be sent (") + e.what() + "): " + safe_dump(first));
  }
  BenchmarkJob again;
  try {
    again = parse_benchmark_job(text);
  } catch (const SpecError& e) {
    fail(__FILE__, __LINE__, std::string("a valid job's JSON is refused: ") + e.what());
  }
  FUZZ_CHECK(to_json(again) == first, "parse(to_json(job)) differs: " + safe_dump(first));
  for (const auto& run : plan_runs(job, 2, ServerPlacement::OwnPods)) {
    const nlohmann::json rc = to_json(run);
    FUZZ_CHECK(to_json(run_config_from_json(nlohmann::json::parse(rc.dump()))) == rc,
               "RunConfig JSON round trip differs: " + safe_dump(rc));
  }
}

}  // namespace trainbench::fuzz
