#pragma once

// Capped exponential backoff with jitter, for reconnecting watches. Not thread-safe (one owner).

#include <chrono>
#include <cstdint>
#include <random>

namespace trainbench::kube {

struct BackoffPolicy {
  std::chrono::milliseconds initial{500};
  std::chrono::milliseconds max{30000};
  double factor = 2.0;
  /// Each delay is drawn uniformly from [d * (1 - jitter), d]; 0 disables jitter.
  double jitter = 0.5;
};

class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy = {}, std::uint64_t seed = std::random_device{}());
  /// The delay before the next attempt; grows by `factor` per call up to `max`.
  std::chrono::milliseconds next();
  /// After a success: the next delay starts again from `initial`.
  void reset() { attempt_ = 0; }
  int attempts() const { return attempt_; }

 private:
  BackoffPolicy policy_;
  std::mt19937_64 rng_;
  int attempt_ = 0;
};

}  // namespace trainbench::kube
