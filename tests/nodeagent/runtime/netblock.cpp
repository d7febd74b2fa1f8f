#include "runtime/netblock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace noderuntime {

namespace {

std::string lock_path(const std::string& dir, int k) { return dir + "/" + std::to_string(k) + ".lock"; }

void ensure_lock_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 01777) != 0 && errno != EEXIST) {
    throw std::runtime_error("cannot create " + dir + ": " + std::strerror(errno));
  }
  // Shared between users: sticky and world-writable, as /tmp is (mkdir's mode is masked by umask).
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && st.st_uid == ::geteuid() && (st.st_mode & 07777) != 01777) {
    ::chmod(dir.c_str(), 01777);
  }
}

/// The lock's fd when this process now holds block k, -1 when another process does.
int try_lock(const std::string& dir, int k) {
  const std::string path = lock_path(dir, k);
  // O_CLOEXEC: pods (exec'd children) must not inherit the lock and keep it after the agent dies.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) return -1;
    throw std::runtime_error("cannot lock " + path + ": " + std::strerror(err));
  }
  // For whoever looks: which process holds it.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // informational only
  }
  return fd;
}

}  // namespace

NetBlock NetBlock::claim(int k, const std::string& lock_dir) {
  if (k != 0 && (k < kFirst || k > kLast)) {
    throw std::runtime_error("net block " + std::to_string(k) + " is out of range " + std::to_string(kFirst) + ".." +
                             std::to_string(kLast));
  }
  ensure_lock_dir(lock_dir);
  if (k != 0) {
    const int fd = try_lock(lock_dir, k);
    if (fd < 0) {
      throw std::runtime_error("net block " + std::to_string(k) + " (127." + std::to_string(k) +
                               ".0.0/16) is held by another process (" + lock_path(lock_dir, k) + ")");
    }
    return NetBlock(k, fd);
  }
  for (int b = kFirst; b <= kLast; ++b) {
    const int fd = try_lock(lock_dir, b);
    if (fd >= 0) return NetBlock(b, fd);
  }
  throw std::runtime_error("every net block 127.1.0.0/16 ... 127.254.0.0/16 is held (" + lock_dir + ")");
}

NetBlock::NetBlock(NetBlock&& other) noexcept : k_(other.k_), fd_(std::exchange(other.fd_, -1)) {}

NetBlock& NetBlock::operator=(NetBlock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    k_ = other.k_;
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

NetBlock::~NetBlock() {
  if (fd_ >= 0) ::close(fd_);
}

std::string NetBlock::prefix() const { return "127." + std::to_string(k_) + "."; }

std::string NetBlock::cidr() const { return prefix() + "0.0/16"; }

std::string node_ip_in_block(const std::string& prefix, int i) { return prefix + "0." + std::to_string(10 + i % 240); }

std::string pod_ip_in_block(const std::string& prefix, unsigned n) {
  return prefix + std::to_string(1 + (n / 254) % 254) + "." + std::to_string(1 + n % 254);
}

}  // namespace noderuntime
