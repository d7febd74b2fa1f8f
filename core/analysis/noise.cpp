#include "core/analysis/noise.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <boost/math/distributions/normal.hpp>
#include <boost/math/quadrature/gauss_kronrod.hpp>
#include <boost/math/statistics/univariate_statistics.hpp>

#include "core/spec/json_fields.hpp"
#include "core/util/text_cells.hpp"

namespace trainbench {

namespace jf = json_fields;

namespace {

/// d2(r): the expected range (max - min) of r independent standard normal values,
/// E[R] = integral over x of 1 - Phi(x)^r - (1 - Phi(x))^r (d2(2) = 1.128, d2(5) = 2.326).
double expected_normal_range(int r) {
  if (r < 2) return 0;
  const boost::math::normal_distribution<double> n;
  auto f = [&n, r](double x) {
    const double p = boost::math::cdf(n, x);
    return 1.0 - std::pow(p, r) - std::pow(1.0 - p, r);
  };
  const double inf = std::numeric_limits<double>::infinity();
  return boost::math::quadrature::gauss_kronrod<double, 61>::integrate(f, -inf, inf, 15, 1e-10);
}

/// "1 core", "2 cores".
std::string count(int n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

/// A measured %: one decimal below 100 ("9.9%" is not "10%"); a setting: as the spec has it.
std::string percent(double v) { return printf_str(v < 100 ? "%.1f%%" : "%.0f%%", v); }
std::string setting(double v) { return printf_str("%g%%", v); }

/// What would help a noisy run, most telling first: oversubscribed cores, then whether the
/// steps' own jitter explains the spread (more measured steps) or the repeats drifted apart
/// while each was steady (a quieter machine), then more repeats for a robust median.
std::vector<std::string> noisy_advice(const NoiseReport& n, int repeats, int measure_steps, double jitter) {
  std::vector<std::string> advice;
  const int threads = n.processes_per_host * n.threads_per_process;
  if (n.host_cores && threads > *n.host_cores) {
    advice.push_back("fewer processes than cores: " + count(n.processes_per_host, "process", "processes") + " x " +
                     count(n.threads_per_process, "thread", "threads") + " share " +
                     count(*n.host_cores, "core", "cores") +
                     " (lower devicesPerNode or spec.benchmark.threadsPerProcess)");
  }
  if (jitter >= n.threshold_percent / 2) {
    advice.push_back("more measured steps (spec.benchmark.measureSteps, now " + std::to_string(measure_steps) +
                     "): step-to-step jitter alone moves the repeats' medians apart by about " + percent(jitter));
  } else {
    advice.push_back(
        "a quieter machine: each repeat was steady but the repeats drifted apart, as when other work shares "
        "the host");
  }
  if (repeats < 5) {
    advice.push_back("more repeats (spec.benchmark.repeats, now " + std::to_string(repeats) +
                     "; 5 or more keep one disturbed repeat from moving the median)");
  }
  return advice;
}

}  // namespace

double coefficient_of_variation_percent(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  const auto [mean, variance] = boost::math::statistics::mean_and_sample_variance(values);
  if (!(mean > 0)) return 0;
  return std::sqrt(variance) / mean * 100.0;
}

std::optional<double> repeat_spread_percent(const std::vector<Percentiles>& repeats) {
  if (repeats.size() < 2) return std::nullopt;
  std::vector<double> p50;
  for (const auto& p : repeats) p50.push_back(p.p50);
  const auto [lo, hi] = std::minmax_element(p50.begin(), p50.end());
  const double mid = median(p50);
  return mid > 0 ? (*hi - *lo) / mid * 100.0 : 0.0;
}

double jitter_spread_percent(double step_cv_percent, int repeats, int steps) {
  if (repeats < 2 || steps < 1) return 0;
  constexpr double kMedianEfficiency = 1.2533;  // sqrt(pi / 2): SE(median) / SE(mean), normal data
  return expected_normal_range(repeats) * kMedianEfficiency * step_cv_percent / std::sqrt(static_cast<double>(steps));
}

NoiseReport measure_noise(const RunConfig& run, const RunResult& result, const std::vector<Percentiles>& repeats) {
  NoiseReport n;
  n.repeat_spread_percent = repeat_spread_percent(repeats);
  std::vector<double> cv;
  for (std::size_t r = 0; r < repeats.size(); ++r) {
    std::vector<double> pooled;
    for (const auto& rk : result.ranks) {
      if (r < rk.step_seconds.size()) pooled.insert(pooled.end(), rk.step_seconds[r].begin(), rk.step_seconds[r].end());
    }
    cv.push_back(coefficient_of_variation_percent(pooled));
  }
  if (!cv.empty()) n.step_cv_percent = median(cv);
  n.processes_per_host = processes_on_node(run, 0);
  n.threads_per_process = run.threads_per_process;
  n.host_cores = result.environment.cpu_cores;
  return n;
}

void judge_noise(NoiseReport& n, double threshold_percent, int repeats, int measure_steps) {
  n.threshold_percent = threshold_percent;
  n.advice.clear();
  if (!n.repeat_spread_percent) {
    n.verdict = NoiseVerdict::kUnjudged;
    n.reason = "one repeat: the spread between repeats cannot be judged (step times vary " +
               percent(n.step_cv_percent) + ", CV)";
    n.advice.push_back("spec.benchmark.repeats >= 2 (5 keep one disturbed repeat from moving the median)");
    return;
  }
  const double spread = *n.repeat_spread_percent;
  const std::string figures = "the repeats' p50 sec/iter differ by " + percent(spread) + " (threshold " +
                              setting(threshold_percent) + "); step times vary " + percent(n.step_cv_percent) +
                              " within a repeat (CV)";
  if (spread <= threshold_percent) {
    n.verdict = NoiseVerdict::kQuiet;
    n.reason = figures;
    return;
  }
  n.verdict = NoiseVerdict::kNoisy;
  n.reason = figures;
  n.advice = noisy_advice(n, repeats, measure_steps, jitter_spread_percent(n.step_cv_percent, repeats, measure_steps));
}

nlohmann::json to_json(const NoiseReport& n) {
  nlohmann::json j = {{"stepCvPercent", n.step_cv_percent},
                      {"thresholdPercent", n.threshold_percent},
                      {"processesPerHost", n.processes_per_host},
                      {"threadsPerProcess", n.threads_per_process},
                      {"reason", n.reason},
                      {"advice", n.advice}};
  if (n.verdict) j["verdict"] = to_string(*n.verdict);
  if (n.repeat_spread_percent) j["repeatSpreadPercent"] = *n.repeat_spread_percent;
  if (n.host_cores) j["hostCores"] = *n.host_cores;
  return j;
}

NoiseReport noise_report_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  NoiseReport n;
  if (jf::has(j, "verdict")) n.verdict = jf::get_enum<NoiseVerdict>(j, "verdict", path);
  if (jf::has(j, "repeatSpreadPercent")) n.repeat_spread_percent = jf::get_number(j, "repeatSpreadPercent", path);
  n.step_cv_percent = jf::get_number(j, "stepCvPercent", path);
  n.threshold_percent = jf::get_number(j, "thresholdPercent", path);
  n.processes_per_host = jf::get_int32(j, "processesPerHost", path);
  n.threads_per_process = jf::get_int32(j, "threadsPerProcess", path);
  if (jf::has(j, "hostCores")) n.host_cores = jf::get_int32(j, "hostCores", path);
  n.reason = jf::get_string(j, "reason", path);
  const auto& advice = jf::get_array(j, "advice", path);
  for (std::size_t k = 0; k < advice.size(); ++k) {
    const std::string ap = path + ".advice[" + std::to_string(k) + "]";
    if (!advice[k].is_string()) throw std::runtime_error(ap + ": must be a string");
    n.advice.push_back(advice[k].get<std::string>());
  }
  if (n.verdict && *n.verdict != NoiseVerdict::kUnjudged && !n.repeat_spread_percent) {
    throw std::runtime_error(path + ".repeatSpreadPercent: is required with verdict " + to_string(*n.verdict));
  }
  return n;
}

}  // namespace trainbench
