#pragma once

// Retrying one API call through the failures that clear on their own.

#include <chrono>
#include <exception>
#include <functional>
#include <memory>

#include "kube/backoff.hpp"
#include "kube/rate_limiter.hpp"

namespace trainbench::kube {

/// True for what a later attempt may get past: a TransportError (connection refused or reset,
/// timeout), an ApiError with code 429 or 5xx. False for everything else (401, 403, 404, 409,
/// 422, a bad kubeconfig, any non-kube exception).
bool is_transient(const std::exception& e);

struct RetryOptions {
  /// No new attempt starts after this much time since the first one.
  std::chrono::milliseconds give_up_after{std::chrono::minutes(10)};
  BackoffPolicy backoff{std::chrono::milliseconds(250), std::chrono::seconds(10), 2.0, 0.0};
  /// Told before each wait: the error that failed the attempt and the delay before the next one.
  std::function<void(const std::exception&, std::chrono::milliseconds)> on_retry;
  /// Measures give_up_after and waits between attempts (tests pass a fake one).
  std::shared_ptr<Clock> clock = Clock::steady();
};

/// Calls `attempt` until it returns. A transient failure (is_transient) is retried after the
/// backoff's next delay while give_up_after has not passed; any other failure, or a transient one
/// past the deadline, is rethrown as it is.
void call_with_retries(const std::function<void()>& attempt, const RetryOptions& options = {});

}  // namespace trainbench::kube
