#include "core/analysis/mfu.hpp"

#include <stdexcept>

#include "core/plan/model_flops.hpp"
#include "core/plan/peak_flops.hpp"
#include "core/spec/json_fields.hpp"
#include "core/util/text_cells.hpp"

namespace trainbench {

namespace jf = json_fields;

double achieved_tflops(double flops_per_example, double examples_per_sec, int devices) {
  return devices > 0 ? flops_per_example * examples_per_sec / devices / 1e12 : 0.0;
}

namespace {

/// Training FLOPs of one example: the built-in model's layers, or a program's flopsPerExample
/// (0 when it gives none: no MFU).
double run_flops_per_example(const RunConfig& c) {
  if (c.program) return c.program->flops_per_example.value_or(0);
  return training_flops_per_example(model_layers(c));
}

}  // namespace

double rank_flops_per_example(const RunConfig& c) {
  const double flops = run_flops_per_example(c);
  return splits_into_stages(c.paradigm) ? flops / c.world_size() : flops;
}

std::optional<MfuSummary> summarize_mfu(const RunConfig& c, const RunResult& result, double examples_per_sec) {
  const double flops = run_flops_per_example(c);
  if (flops <= 0 || result.allreduce) return std::nullopt;
  MfuSummary m;
  m.flops_per_example = flops;
  m.achieved_tflops = achieved_tflops(flops, examples_per_sec, c.world_size());
  if (const auto peak = resolve_peak(c, result.environment.device_name, result.peak_gemm)) {
    m.peak_tflops = peak->tflops;
    m.peak_source = peak->source;
    m.mfu = m.achieved_tflops / peak->tflops;
  }
  return m;
}

namespace {

/// Three significant digits or so: 0.048, 1.25, 31.4, 989.
std::string fmt_tflops(double v) {
  if (v >= 100) return printf_str("%.0f", v);
  if (v >= 10) return printf_str("%.1f", v);
  if (v >= 1) return printf_str("%.2f", v);
  return printf_str("%.3f", v);
}

std::string fmt_flops(double v) {
  const char* units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
  std::size_t u = 0;
  while (v >= 1000 && u + 1 < sizeof(units) / sizeof(units[0])) {
    v /= 1000;
    ++u;
  }
  return printf_str("%.1f ", v) + units[u];
}

}  // namespace

std::string format_mfu(const MfuSummary& m) {
  std::string out = fmt_flops(m.flops_per_example) + "/ex  " + fmt_tflops(m.achieved_tflops) + " TFLOP/s per device";
  if (!m.peak_tflops) return out + "  (no peak known: set spec.benchmark.peakTFLOPS)";
  out += "  peak " + fmt_tflops(*m.peak_tflops) + " (" + m.peak_source + ")";
  if (m.mfu) out += "  MFU " + printf_str("%.1f%%", *m.mfu * 100);
  // Above 100% the peak is wrong, not the run: a GEMM timed while other processes held the
  // cores measures less than the machine can do. Said out loud rather than printed as a win.
  if (m.mfu && *m.mfu > 1) out += "  (above 100%: the peak was measured low, e.g. on a busy machine)";
  return out;
}

nlohmann::json to_json(const MfuSummary& m) {
  nlohmann::json j = {{"flopsPerExample", m.flops_per_example}, {"achievedTFLOPS", m.achieved_tflops}};
  if (m.peak_tflops) {
    j["peakTFLOPS"] = *m.peak_tflops;
    j["peakSource"] = m.peak_source;
  }
  if (m.mfu) j["mfu"] = *m.mfu;
  return j;
}

MfuSummary mfu_summary_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  MfuSummary m;
  m.flops_per_example = jf::get_number(j, "flopsPerExample", path);
  m.achieved_tflops = jf::get_number(j, "achievedTFLOPS", path);
  if (jf::has(j, "peakTFLOPS")) {
    m.peak_tflops = jf::get_number(j, "peakTFLOPS", path);
    m.peak_source = jf::get_string(j, "peakSource", path);
  }
  if (jf::has(j, "mfu")) m.mfu = jf::get_number(j, "mfu", path);
  if (m.flops_per_example < 0 || m.achieved_tflops < 0 || m.peak_tflops.value_or(1) <= 0 || m.mfu.value_or(0) < 0) {
    throw std::runtime_error(path + ": FLOP counts and rates must be >= 0 (peakTFLOPS > 0)");
  }
  return m;
}

}  // namespace trainbench
