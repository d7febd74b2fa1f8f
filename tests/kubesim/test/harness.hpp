#pragma once

// Test helpers: start the real kubesim binary in a temporary directory, run the real kubectl
// (HOME and KUBECACHEDIR in that directory) and curl against it, read its audit log.

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kubesim_test {

using json = nlohmann::json;

struct CmdResult {
  int code = -1;  ///< -1: timed out
  std::string out;
  std::string err;
};

/// Runs argv with the current environment plus `env`; stdin from `input`.
CmdResult run_cmd(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                  const std::string& input = "", double timeout_s = 30);

/// A process left running (e.g. `kubectl get -w`); killed and reaped on destruction.
class Background {
 public:
  Background(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const std::string& out_path);
  ~Background();
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  std::string output() const;
  void stop();

 private:
  pid_t pid_ = -1;
  std::string out_path_;
};

bool wait_until(double timeout_s, const std::function<bool()>& pred);
std::string read_text(const std::string& path);
void write_text(const std::string& path, const std::string& text);
bool process_alive(pid_t pid);

struct HttpResult {
  int code = 0;
  std::string body;
  json j() const;
};

class Kubesim {
 public:
  explicit Kubesim(const std::vector<std::string>& extra_args = {});
  ~Kubesim();
  Kubesim(const Kubesim&) = delete;
  Kubesim& operator=(const Kubesim&) = delete;

  const std::string& url() const { return url_; }
  const std::string& dir() const { return dir_; }
  std::string kubeconfig() const { return dir_ + "/kubeconfig"; }
  std::string ca() const { return dir_ + "/ca.crt"; }
  const std::string& admin_token() const { return token_; }
  pid_t pid() const { return pid_; }
  std::map<std::string, std::string> kubectl_env() const;

  CmdResult kubectl(const std::vector<std::string>& args, const std::string& input = "", double timeout_s = 30) const;
  /// The same with another kubectl binary (e.g. 1.20) and its own cache directory.
  CmdResult kubectl_bin(const std::string& exe, const std::vector<std::string>& args, const std::string& input = "",
                        double timeout_s = 30) const;
  /// kubectl apply -f - ; asserts nothing.
  CmdResult apply(const std::string& yaml, const std::vector<std::string>& extra = {}) const;
  /// kubectl get ARGS -o json, parsed (null on failure).
  json get_json(const std::vector<std::string>& args) const;
  /// A raw HTTPS request with curl (token "" sends none).
  HttpResult http(const std::string& method, const std::string& path, const std::string& body = "",
                  const std::string& token = "<admin>", const std::string& content_type = "application/json") const;
  std::vector<json> audit() const;
  /// SIGTERM and wait; the exit code (or -1).
  int stop();

 private:
  std::string dir_;
  std::string url_;
  std::string token_;
  pid_t pid_ = -1;
};

/// A namespaced CRD for tests: widgets.example.dev (kind Widget, short name wg), v1alpha1,
/// status subresource, spec.size integer >= 1 required, spec.mode enum fast|slow default fast.
std::string widget_crd_yaml();

}  // namespace kubesim_test
