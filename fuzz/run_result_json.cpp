// The worker's RunResult JSON (written by rank 0; read by the master, `trainbench run` and the
// operator from result ConfigMaps): core::run_result_from_json, then summarize_run as those
// readers do. Only std::runtime_error may come out; an accepted result must read back the same
// from its own JSON.

#include <algorithm>
#include <stdexcept>

#include "core/report/report.hpp"
#include "core/results/run_result.hpp"
#include "fuzz/fuzz_util.hpp"

namespace {

using namespace trainbench;

void summarize(const RunResult& result, Paradigm paradigm) {
  RunConfig cfg;
  cfg.paradigm = paradigm;
  cfg.model = "mlp";
  cfg.devices_per_node = std::max<int>(1, static_cast<int>(std::min<std::size_t>(result.ranks.size(), 4096)));
  try {
    const nlohmann::json report = to_json(summarize_run(cfg, result));
    (void)run_report_from_json(nlohmann::json::parse(report.dump()), "run");
  } catch (const std::runtime_error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  RunResult result;
  try {
    result = run_result_from_json(j);
  } catch (const std::runtime_error&) {
    return 0;
  }
  const nlohmann::json written = to_json(result);
  try {
    FUZZ_CHECK(to_json(run_result_from_json(nlohmann::json::parse(written.dump()))) == written,
               "RunResult JSON round trip differs: " + fuzz::safe_dump(written));
  } catch (const std::runtime_error& e) {
    fuzz::fail(__FILE__, __LINE__, std::string("an accepted RunResult's own JSON is refused: ") + e.what());
  }
  summarize(result, Paradigm::kDdp);
  summarize(result, Paradigm::kPipeline);
  return 0;
}
