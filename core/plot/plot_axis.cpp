#include "core/plot/plot_axis.hpp"

#include <algorithm>
#include <cmath>

namespace trainbench {

double PlotScale::map(double v) const {
  const double a = logarithmic ? std::log2(lo) : lo;
  const double b = logarithmic ? std::log2(hi) : hi;
  const double x = logarithmic ? std::log2(v) : v;
  if (!(b > a)) return (p0 + p1) / 2;
  return p0 + (x - a) / (b - a) * (p1 - p0);
}

std::vector<double> nice_ticks(double lo, double hi, int target_count, double min_step) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = std::max((hi - lo) / std::max(1, target_count - 1), min_step);
  // The step is m x 10^e; ticks are computed as n x m / 10^-e (or n x m x 10^e), so 0.6 is 0.6
  // and not 3 x 0.2 = 0.6000000000000001.
  int e = static_cast<int>(std::floor(std::log10(raw)));
  double m = 10;
  for (const double c : {1.0, 2.0, 5.0}) {
    if (c * std::pow(10.0, e) >= raw * (1 - 1e-12)) {
      m = c;
      break;
    }
  }
  if (m == 10) {
    m = 1;
    ++e;
  }
  const double scale = std::pow(10.0, std::abs(e));
  auto tick = [&](long n) { return e < 0 ? static_cast<double>(n) * m / scale : static_cast<double>(n) * m * scale; };
  const double step = tick(1);
  std::vector<double> ticks;
  const long first = static_cast<long>(std::floor(lo / step + 1e-9));
  for (long n = first;; ++n) {
    ticks.push_back(tick(n));
    if (ticks.back() >= hi - step * 1e-9 || n - first > 1000) break;
  }
  return ticks;
}

std::vector<double> power_of_two_ticks(double lo, double hi) {
  std::vector<double> ticks;
  const int a = static_cast<int>(std::floor(std::log2(lo) + 1e-9));
  const int b = static_cast<int>(std::ceil(std::log2(hi) - 1e-9));
  for (int k = a; k <= std::max(a, b); ++k) ticks.push_back(std::ldexp(1.0, k));
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  const int a = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  const int b = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  std::vector<double> ticks;
  for (const std::vector<double>& steps : {std::vector<double>{1, 2, 5}, std::vector<double>{1}}) {
    std::vector<double> candidates;  // ascending, from 10^a to 10^b
    for (int e = a; e <= std::max(a, b); ++e) {
      const double decade = e < 0 ? 1 / std::pow(10.0, -e) : std::pow(10.0, e);
      for (const double m : steps) candidates.push_back(e == b && m > 1 ? 0 : m * decade);
    }
    ticks.clear();
    for (std::size_t i = 0; i < candidates.size() && candidates[i] > 0; ++i) {
      const bool next_still_below =
          i + 1 < candidates.size() && candidates[i + 1] > 0 && candidates[i + 1] <= lo * (1 + 1e-9);
      if (next_still_below) continue;  // the first tick is the largest <= lo
      ticks.push_back(candidates[i]);
      if (candidates[i] >= hi * (1 - 1e-9)) break;
    }
    if (ticks.size() <= 10) break;
  }
  return ticks;
}

}  // namespace trainbench
