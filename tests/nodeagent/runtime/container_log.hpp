#pragma once

// Reading a container's log file as the kubelet serves it: the last N lines, and a followed
// stream that ends once the container has terminated and its log has been sent (the node
// agent's /containerLogs; the runner's FallbackToLogsOnError message).

#include <cstddef>
#include <functional>
#include <string>

namespace noderuntime {

/// The last `n` lines of `data` (a final line without "\n" counts); "" when n <= 0.
std::string tail_lines(const std::string& data, long long n);

/// The file's last `max_lines` lines within its last `max_bytes` bytes ("" when unreadable).
std::string read_log_tail(const std::string& path, std::size_t max_lines, std::size_t max_bytes);

struct LogFollower {
  /// Whether the container will write no more (checked before each read, so the last bytes
  /// are sent after it turns true).
  std::function<bool()> finished;
  /// Sends bytes; false when the peer is gone.
  std::function<bool(const std::string& data)> write;
  /// Whether the peer has gone away meanwhile.
  std::function<bool()> peer_closed;
};

/// Sends what the file holds beyond `offset`, every 100 ms, until the container has finished
/// (then what is left is sent and it returns true) or the peer is gone (false).
bool follow_log(const std::string& path, std::size_t offset, const LogFollower& f);

}  // namespace noderuntime
