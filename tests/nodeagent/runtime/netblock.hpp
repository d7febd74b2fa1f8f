#pragma once

// Each node agent on a machine owns one block of loopback addresses, 127.K.0.0/16 (K in
// 1..254), for its node (127.K.0.10+i) and pods (127.K.1.1 ... 127.K.254.254), so that two of
// them never hand out the same pod IP. A block is claimed with flock() on LOCK_DIR/K.lock
// (default /tmp/trainbench-net): atomic between
// processes, and released by the kernel when the process exits, however it exits (SIGKILL
// included). Tests: test/netblock_test.cpp (NetBlock.*).

#include <string>

namespace noderuntime {

class NetBlock {
 public:
  static constexpr int kFirst = 1;
  static constexpr int kLast = 254;
  static constexpr const char* kDefaultLockDir = "/tmp/trainbench-net";

  /// Claims block `k` (kFirst..kLast), or with k == 0 the first free one. Throws
  /// std::runtime_error when `k` is held by another process, or when every block is.
  static NetBlock claim(int k, const std::string& lock_dir = kDefaultLockDir);

  NetBlock(NetBlock&& other) noexcept;
  NetBlock& operator=(NetBlock&& other) noexcept;
  NetBlock(const NetBlock&) = delete;
  NetBlock& operator=(const NetBlock&) = delete;
  ~NetBlock();

  int block() const { return k_; }
  /// "127.K." : what every address of this block starts with.
  std::string prefix() const;
  /// "127.K.0.0/16"
  std::string cidr() const;

 private:
  NetBlock(int k, int fd) : k_(k), fd_(fd) {}
  int k_ = 0;
  int fd_ = -1;
};

/// The IP of the i-th node (from 0) in a block whose addresses start with `prefix` ("127.K.").
std::string node_ip_in_block(const std::string& prefix, int i);
/// The n-th pod IP (from 0, wrapping after 254*254) in a block: prefix + "1.1", "1.2", ...
std::string pod_ip_in_block(const std::string& prefix, unsigned n);

}  // namespace noderuntime
