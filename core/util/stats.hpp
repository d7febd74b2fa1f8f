#pragma once

#include <vector>

namespace trainbench {

/// Percentile of `values` (need not be sorted), q in [0, 100], by linear interpolation between
/// the closest ranks: position h = (n - 1) * q / 100 in the sorted values, the result
/// x[floor h] + (h - floor h) * (x[floor h + 1] - x[floor h]). This is Hyndman & Fan's
/// definition 7, numpy.percentile's default, which PyTorch's DDP benchmark uses.
/// Throws std::invalid_argument on an empty input or q outside [0, 100].
double percentile(std::vector<double> values, double q);

/// The median (percentile 50): for an even count, the mean of the two middle values.
double median(std::vector<double> values);

struct Percentiles {
  double p50 = 0, p75 = 0, p90 = 0, p95 = 0;
};

Percentiles percentiles(const std::vector<double>& values);

/// The element-wise median of several Percentiles (one per repeat).
Percentiles median_of(const std::vector<Percentiles>& per_repeat);

/// Each repeat's percentiles, then their element-wise median: the statistic of every timing in
/// the report. Throws std::invalid_argument "[r] is empty" for an empty repeat r, " has no
/// repeats" for none (callers prefix the list's name).
Percentiles median_of_repeats(const std::vector<std::vector<double>>& per_repeat);

/// examples/sec for each percentile of sec/iter: examples_per_step / seconds.
Percentiles throughput(const Percentiles& sec_per_iter, double examples_per_step);

/// speedup = throughput(n devices) / throughput(1 device, same per-device batch).
double speedup(double throughput_n, double throughput_1);
/// scaling efficiency = speedup / devices.
double scaling_efficiency(double speedup_value, int devices);

}  // namespace trainbench
