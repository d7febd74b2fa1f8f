#pragma once

// The bearer token of a client: static, or read from a file that is re-read periodically
// (projected ServiceAccount tokens rotate). Thread-safe.

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "kube/rate_limiter.hpp"

namespace trainbench::kube {

class TokenSource {
 public:
  /// `token_file` empty: always `static_token`. Otherwise the file is read on first use and again
  /// when the last read is older than `refresh` (or after invalidate()).
  TokenSource(std::string static_token, std::string token_file, std::chrono::seconds refresh,
              std::shared_ptr<Clock> clock = Clock::steady());

  /// The current token (empty: no bearer authentication). When a re-read fails or gives an
  /// empty file, the last good token is kept. Throws ConfigError only when no token was ever read.
  std::string token();
  /// Forces a re-read on the next token() (after a 401, the file may have rotated).
  void invalidate();
  bool from_file() const { return !file_.empty(); }

 private:
  const std::string static_token_;
  const std::string file_;
  const std::chrono::seconds refresh_;
  std::shared_ptr<Clock> clock_;
  std::mutex mutex_;
  std::string cached_;
  bool have_ = false;
  bool stale_ = true;
  Clock::time_point read_at_{};
};

}  // namespace trainbench::kube
