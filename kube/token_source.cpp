#include "kube/token_source.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "kube/errors.hpp"

namespace trainbench::kube {
namespace {

bool read_token(const std::string& path, std::string& out, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  const char* ws = " \t\r\n";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) {
    error = "the token file is empty";
    return false;
  }
  out = s.substr(b, s.find_last_not_of(ws) - b + 1);
  return true;
}

}  // namespace

TokenSource::TokenSource(std::string static_token, std::string token_file, std::chrono::seconds refresh,
                         std::shared_ptr<Clock> clock)
    : static_token_(std::move(static_token)),
      file_(std::move(token_file)),
      refresh_(refresh),
      clock_(std::move(clock)) {}

std::string TokenSource::token() {
  if (file_.empty()) return static_token_;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = clock_->now();
  if (have_ && !stale_ && now - read_at_ < refresh_) return cached_;
  std::string fresh, error;
  if (read_token(file_, fresh, error)) {
    cached_ = std::move(fresh);
    have_ = true;
  } else if (!have_) {
    throw ConfigError(file_ + ": cannot read the bearer token: " + error);
  }
  // On a failed re-read keep the last token and try again after the next interval.
  stale_ = false;
  read_at_ = now;
  return cached_;
}

void TokenSource::invalidate() {
  std::lock_guard<std::mutex> lock(mutex_);
  stale_ = true;
}

}  // namespace trainbench::kube
