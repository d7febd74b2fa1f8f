#include "kube/retry.hpp"

#include "kube/errors.hpp"

namespace trainbench::kube {

bool is_transient(const std::exception& e) {
  if (dynamic_cast<const TransportError*>(&e) != nullptr) return true;
  if (const auto* api = dynamic_cast<const ApiError*>(&e)) return api->is_too_many_requests() || api->is_server_error();
  return false;
}

void call_with_retries(const std::function<void()>& attempt, const RetryOptions& options) {
  Clock& clock = *options.clock;
  const auto deadline = clock.now() + options.give_up_after;
  Backoff backoff(options.backoff);
  for (;;) {
    try {
      attempt();
      return;
    } catch (const std::exception& e) {
      if (!is_transient(e) || clock.now() >= deadline) throw;
      const std::chrono::milliseconds delay = backoff.next();
      if (options.on_retry) options.on_retry(e, delay);
      clock.sleep_for(delay, StopToken{});
    }
  }
}

}  // namespace trainbench::kube
