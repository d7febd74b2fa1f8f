// Report JSON as `trainbench diff` and `report` read it (core::report_from_json, then
// format_report and format_diff); the operator reads the same run summaries from status.runs.
// Only std::runtime_error may come out; an accepted report must read back the same from its own
// JSON.

#include <stdexcept>

#include "core/report/report.hpp"
#include "core/report/report_format.hpp"
#include "fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainbench;
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  Report report;
  try {
    report = report_from_json(j);
  } catch (const std::runtime_error&) {
    return 0;
  }
  try {
    (void)format_report(report);
    (void)format_diff(report, report);
  } catch (const std::runtime_error&) {
  }
  const nlohmann::json written = to_json(report);
  std::string text;
  try {
    text = written.dump();
  } catch (const nlohmann::json::exception& e) {
    fuzz::fail(__FILE__, __LINE__, std::string("an accepted report cannot be written: ") + e.what());
  }
  try {
    FUZZ_CHECK(to_json(report_from_json(nlohmann::json::parse(text))) == written,
               "report JSON round trip differs: " + text);
  } catch (const std::runtime_error& e) {
    fuzz::fail(__FILE__, __LINE__, std::string("an accepted report's own JSON is refused: ") + e.what());
  }
  return 0;
}
