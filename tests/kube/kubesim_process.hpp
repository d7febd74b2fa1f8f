#pragma once

// Runs the real `kubesim` binary for integration tests: `kubesim --listen 127.0.0.1:PORT --dir DIR`,
// waits for its "kubesim ready https://..." line, and can stop and restart it on the same port
// and directory.

#include <sys/types.h>

#include <string>
#include <vector>

namespace kubetest {

class KubesimProcess {
 public:
  /// The kubesim executable this test binary was built with; empty when there was none.
  static std::string executable();

  /// Starts kubesim with its state in `dir` (which must exist). Throws std::runtime_error when
  /// it does not become ready within 30 s (the message holds its log).
  /// `extra_args` are added to kubesim's command line (e.g. "--kubelet", "none").
  explicit KubesimProcess(std::string dir, std::vector<std::string> extra_args = {});
  ~KubesimProcess();
  KubesimProcess(const KubesimProcess&) = delete;
  KubesimProcess& operator=(const KubesimProcess&) = delete;

  /// SIGTERM, then SIGKILL after 10 s.
  void stop();
  /// Starts again on the same port and directory.
  void restart();

  const std::string& url() const { return url_; }
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  std::string kubeconfig_path() const { return dir_ + "/kubeconfig"; }
  std::string admin_token_path() const { return dir_ + "/admin-token"; }
  std::string log() const;

 private:
  void start(const std::string& listen);

  std::string dir_;
  std::vector<std::string> extra_args_;
  std::string url_;
  int port_ = 0;
  pid_t pid_ = -1;
  int starts_ = 0;
};

}  // namespace kubetest
