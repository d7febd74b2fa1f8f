// BenchmarkJob YAML as `trainbench validate` / `submit` read it (core::parse_benchmark_job, which
// also runs validate()). Only SpecError may come out; a job it accepts must survive the trip to
// the operator (fuzz/spec_round_trip.hpp).

#include "core/spec/spec.hpp"
#include "fuzz/spec_round_trip.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainbench;
  BenchmarkJob job;
  try {
    job = parse_benchmark_job(fuzz::as_string(data, size));
  } catch (const SpecError& e) {
    FUZZ_CHECK(!e.errors().empty(), "SpecError without a field error");
    return 0;
  }
  FUZZ_CHECK(validate(job).empty(), "parse_benchmark_job accepted a job validate() refuses");
  fuzz::check_valid_job_round_trip(job);
  return 0;
}
