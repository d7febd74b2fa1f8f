#include "kubesim_process.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace kubetest {

std::string KubesimProcess::executable() {
#ifdef KUBESIM_EXE
  return KUBESIM_EXE;
#else
  return {};
#endif
}

KubesimProcess::KubesimProcess(std::string dir, std::vector<std::string> extra_args)
    : dir_(std::move(dir)), extra_args_(std::move(extra_args)) {
  start("127.0.0.1:0");
}

KubesimProcess::~KubesimProcess() { stop(); }

std::string KubesimProcess::log() const {
  std::ifstream in(dir_ + "/kubesim-" + std::to_string(starts_) + ".log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void KubesimProcess::start(const std::string& listen) {
  const std::string exe = executable();
  if (exe.empty()) throw std::runtime_error("kubesim was not built");
  ++starts_;
  const std::string log_path = dir_ + "/kubesim-" + std::to_string(starts_) + ".log";
  // Everything the child needs is prepared before fork (no allocation after it: other threads).
  std::vector<std::string> args = {exe, "--listen", listen, "--dir", dir_};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  const std::string marker = "kubesim ready ";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string out = log();
    const auto at = out.find(marker);
    if (at != std::string::npos) {
      const auto end = out.find_first_of("\r\n", at);
      if (end != std::string::npos) {
        url_ = out.substr(at + marker.size(), end - at - marker.size());
        port_ = std::stoi(url_.substr(url_.rfind(':') + 1));
        return;
      }
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("kubesim exited before it was ready:\n" + out);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::string out = log();
  stop();
  throw std::runtime_error("kubesim did not become ready within 30 s:\n" + out);
}

void KubesimProcess::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void KubesimProcess::restart() {
  stop();
  start("127.0.0.1:" + std::to_string(port_));
}

}  // namespace kubetest
