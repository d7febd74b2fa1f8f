// A program's rank record (the probe protocol, docs/workloads.md; written by the user's
// program, read by `trainbench run` and the master pod): core::parse_program_rank_record for a
// run of 1-2 ranks x 1-3 repeats x 1-4 steps (the first byte picks the shape), then the run's
// result assembled and summarised as the executors do. Only std::runtime_error may come out;
// an accepted record must read back the same from its own JSON.

#include <stdexcept>
#include <string>

#include "core/report/report.hpp"
#include "core/results/program_record.hpp"
#include "fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainbench;
  if (size < 1) return 0;
  RunConfig run;
  run.devices_per_node = 1 + (data[0] & 1);
  run.repeats = 1 + (data[0] >> 1) % 3;
  run.measure_steps = 1 + (data[0] >> 3) % 4;
  run.program = ProgramSpec{};
  run.program->command = {"train"};
  const int rank = (data[0] >> 5) & 1 ? run.world_size() - 1 : 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  ProgramRankRecord record;
  try {
    record = parse_program_rank_record(text, run, rank);
  } catch (const std::runtime_error&) {
    return 0;
  }
  const nlohmann::json written = to_json(record, run.world_size());
  try {
    FUZZ_CHECK(to_json(program_rank_record_from_json(nlohmann::json::parse(written.dump()), run, rank),
                       run.world_size()) == written,
               "rank record JSON round trip differs: " + fuzz::safe_dump(written));
  } catch (const std::runtime_error& e) {
    fuzz::fail(__FILE__, __LINE__, std::string("an accepted record's own JSON is refused: ") + e.what());
  }
  std::vector<ProgramRankRecord> records(static_cast<std::size_t>(run.world_size()), record);
  for (int r = 0; r < run.world_size(); ++r) records[static_cast<std::size_t>(r)].result.rank = r;
  try {
    (void)to_json(summarize_run(run, assemble_program_result(run, records)));
  } catch (const std::runtime_error&) {
  }
  return 0;
}
