#include "core/plot_axis.hpp"

#include <algorithm>
#include <cmath>

namespace trainbench {

double PlotScale::map(double v) const {
  const double a = log2 ? std::log2(lo) : lo;
  const double b = log2 ? std::log2(hi) : hi;
  const double x = log2 ? std::log2(v) : v;
  if (!(b > a)) return (p0 + p1) / 2;
  return p0 + (x - a) / (b - a) * (p1 - p0);
}

std::vector<double> nice_ticks(double lo, double hi, int target_count, double min_step) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, target_count - 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude * 10;
  for (const double m : {1.0, 2.0, 5.0}) {
    if (magnitude * m >= raw) {
      step = magnitude * m;
      break;
    }
  }
  step = std::max(step, min_step);
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step;
  for (int k = 0;; ++k) {
    const double t = first + k * step;
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
    if (t >= hi - step * 1e-9 || k > 1000) break;
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

}  // namespace trainbench
