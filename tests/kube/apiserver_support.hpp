#pragma once

// Helpers for the kube client's tests against the real kube-apiserver (tests/controlplane):
// admin clients from a control plane's kubeconfig, a namespace of each test's own,
// tests/controlplane/controlplane.sh for control planes of a test's own and their faults, and the
// reflector's recorded callbacks.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/client.hpp"
#include "kube/config.hpp"
#include "kube/reflector.hpp"

namespace kubetest {

/// Polls `pred` every 50 ms for up to `timeout`; true as soon as it holds.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

/// $KUBECONFIG: the shared control plane's admin kubeconfig, which the ctest fixture sets.
/// Throws std::runtime_error when it is not set.
std::string fixture_kubeconfig();

/// The admin config of `kubeconfig` (client certificate CN=trainbench-admin, O=system:masters),
/// with a rate limit that does not slow the tests and a request timeout for a loaded machine.
trainbench::kube::ClientConfig admin_config(const std::string& kubeconfig);

/// Runs `bash tests/controlplane/controlplane.sh ARGS...` and returns what it printed (stdout
/// and stderr). Throws std::runtime_error with that output when it fails.
std::string controlplane_sh(const std::vector<std::string>& args);

/// A namespace of the running test's own, "kt-<test name>-<pid>" (lowercase, at most 63
/// characters), created by the constructor and deleted (not waited for) by the destructor.
class TestNamespace {
 public:
  explicit TestNamespace(std::shared_ptr<const trainbench::kube::Client> admin);
  ~TestNamespace();
  TestNamespace(const TestNamespace&) = delete;
  TestNamespace& operator=(const TestNamespace&) = delete;
  const std::string& name() const { return name_; }

 private:
  std::shared_ptr<const trainbench::kube::Client> admin_;
  std::string name_;
};

/// A ConfigMap named `name` with data {k: v} and `labels`.
nlohmann::json config_map(const std::string& name, const std::map<std::string, std::string>& labels = {});

/// The names of a List's items, in the server's order.
std::vector<std::string> names(const nlohmann::json& list);

/// A ServiceAccount token (TokenRequest, one hour) of `ns`/`account`.
std::string service_account_token(const trainbench::kube::Client& admin, const std::string& ns,
                                  const std::string& account);

/// Reflector callbacks, recorded as "add NAME", "update NAME", "delete NAME", "error MESSAGE".
class Events {
 public:
  void add(const std::string& entry);
  bool has(const std::string& entry) const;
  trainbench::kube::ReflectorHandlers handlers();

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> log_;
};

/// Reflector options with a short backoff (50 ms to 500 ms), so that reconnects are quick.
trainbench::kube::ReflectorOptions quick_reflector();

}  // namespace kubetest
