#pragma once

// Axes of the plots trainbench draws (core/plot/scaling_plot): a value -> pixel scale, linear or
// logarithmic, and tick values a reader takes in at a glance (1, 2 or 5 x 10^k apart; powers of
// two for devices on a logarithmic axis, 1, 2, 5 x 10^k for rates).

#include <vector>

namespace trainbench {

/// Maps the domain [lo, hi] onto pixels [p0, p1] (p1 < p0 for a y axis, SVG's y grows down).
struct PlotScale {
  double lo = 0;
  double hi = 1;
  double p0 = 0;
  double p1 = 1;
  bool logarithmic = false;  ///< positions by log(value); lo and hi must then be > 0

  double map(double v) const;
};

/// Ticks covering [lo, hi] on a linear axis: the first <= lo, the last >= hi, about
/// `target_count` of them, steps of 1, 2 or 5 x 10^k (no smaller than `min_step`).
std::vector<double> nice_ticks(double lo, double hi, int target_count, double min_step = 0);

/// Powers of two from the largest <= lo to the smallest >= hi (lo, hi > 0).
std::vector<double> power_of_two_ticks(double lo, double hi);

/// Ticks of a logarithmic axis covering [lo, hi] (lo, hi > 0): 1, 2, 5 x 10^k, or only the
/// powers of ten when that gives more than 10 ticks.
std::vector<double> log_ticks(double lo, double hi);

}  // namespace trainbench
