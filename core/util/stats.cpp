#include "core/util/stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace trainbench {

double percentile(std::vector<double> values, double q) {
  if (values.empty()) throw std::invalid_argument("percentile of an empty sample");
  if (!(q >= 0.0 && q <= 100.0)) throw std::invalid_argument("percentile q must be in [0, 100]");
  std::sort(values.begin(), values.end());
  const double h = (static_cast<double>(values.size()) - 1.0) * q / 100.0;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = h - static_cast<double>(lo);
  return values[lo] + frac * (values[hi] - values[lo]);
}

double median(std::vector<double> values) { return percentile(std::move(values), 50.0); }

Percentiles percentiles(const std::vector<double>& values) {
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  return {percentile(sorted, 50), percentile(sorted, 75), percentile(sorted, 90), percentile(sorted, 95)};
}

Percentiles median_of(const std::vector<Percentiles>& per_repeat) {
  if (per_repeat.empty()) throw std::invalid_argument("median of no repeats");
  std::vector<double> a, b, c, d;
  for (const auto& p : per_repeat) {
    a.push_back(p.p50);
    b.push_back(p.p75);
    c.push_back(p.p90);
    d.push_back(p.p95);
  }
  return {median(a), median(b), median(c), median(d)};
}

Percentiles throughput(const Percentiles& s, double examples_per_step) {
  auto rate = [examples_per_step](double sec) { return sec > 0 ? examples_per_step / sec : 0.0; };
  return {rate(s.p50), rate(s.p75), rate(s.p90), rate(s.p95)};
}

double speedup(double throughput_n, double throughput_1) {
  if (!(throughput_1 > 0)) throw std::invalid_argument("speedup against a zero baseline throughput");
  return throughput_n / throughput_1;
}

double scaling_efficiency(double speedup_value, int devices) {
  if (devices < 1) throw std::invalid_argument("scaling efficiency needs devices >= 1");
  return speedup_value / devices;
}

Percentiles median_of_repeats(const std::vector<std::vector<double>>& per_repeat) {
  if (per_repeat.empty()) throw std::invalid_argument(" has no repeats");
  std::vector<Percentiles> ps;
  for (std::size_t r = 0; r < per_repeat.size(); ++r) {
    if (per_repeat[r].empty()) throw std::invalid_argument("[" + std::to_string(r) + "] is empty");
    ps.push_back(percentiles(per_repeat[r]));
  }
  return median_of(ps);
}

}  // namespace trainbench
