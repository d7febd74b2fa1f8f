#include "kube/backoff.hpp"

#include <algorithm>
#include <cmath>

namespace trainbench::kube {

Backoff::Backoff(BackoffPolicy policy, std::uint64_t seed) : policy_(policy), rng_(seed) {
  policy_.factor = std::max(1.0, policy_.factor);
  policy_.jitter = std::clamp(policy_.jitter, 0.0, 1.0);
  if (policy_.initial.count() < 1) policy_.initial = std::chrono::milliseconds(1);
  if (policy_.max < policy_.initial) policy_.max = policy_.initial;
}

std::chrono::milliseconds Backoff::next() {
  const double cap = static_cast<double>(policy_.max.count());
  const double base = std::min(cap, static_cast<double>(policy_.initial.count()) *
                                        std::pow(policy_.factor, std::min(attempt_, 64)));
  if (attempt_ < 1000) ++attempt_;
  double d = base;
  if (policy_.jitter > 0) {
    std::uniform_real_distribution<double> dist(1.0 - policy_.jitter, 1.0);
    d = base * dist(rng_);
  }
  return std::chrono::milliseconds(std::max<long long>(1, static_cast<long long>(d)));
}

}  // namespace trainbench::kube
