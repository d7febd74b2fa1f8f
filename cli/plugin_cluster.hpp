#pragma once

// What `kubectl trainbench` reads from the cluster, through the kubeconfig and the kube library
// (verified TLS; no kubectl underneath): a BenchmarkJob with its typed status, and pod logs.
// Errors say what was asked and why it failed, as kubectl's do.

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/plugin_args.hpp"
#include "core/api/job_status.hpp"
#include "kube/client.hpp"

namespace trainbench::cli {

/// A BenchmarkJob as the API server has it.
struct ClusterJob {
  std::string name;
  std::string namespace_;
  nlohmann::json object;      ///< the whole object (spec, metadata, status)
  BenchmarkJobStatus status;  ///< empty until the operator first wrote it
};

/// Not an API failure but a fact the user must act on (no such job, no report yet, no pod): the
/// message says which and what to do. main prints it and exits with `exit_code`.
class PluginError : public std::runtime_error {
 public:
  PluginError(const std::string& message, int exit_code) : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

/// kubectl-trainbench's exit codes beyond the CLI's (cli/commands.hpp: 0 ok, 1 error, 2 usage,
/// 4 regression): 5 the job has no report yet, or logs found no pod to read.
inline constexpr int kExitNotYet = 5;

class PluginCluster {
 public:
  /// The kubeconfig as kubectl picks it: --kubeconfig, else $KUBECONFIG, else ~/.kube/config,
  /// else (in a pod) the ServiceAccount; --context, else current-context. Throws
  /// PluginError "kubeconfig: FILE: FIELD: problem".
  explicit PluginCluster(const KubeFlags& flags);

  /// -n/--namespace, else the context's namespace, else "default".
  const std::string& namespace_name() const { return ns_; }
  /// "kubeconfig FILE (context C)", for error messages (the server is in each request's).
  std::string where() const;

  /// GET the job. Throws PluginError (exit 1) naming the job and namespace when it does not
  /// exist, saying that the BenchmarkJob API is not served (CRD missing), or naming the failure
  /// (describe_cluster_error).
  ClusterJob job(const std::string& name) const;

  /// The container's log to `on_text` (see kube::Client::pod_log). Throws kube::NotFoundError
  /// when the pod does not exist, PluginError for every other failure.
  void pod_log(const std::string& pod, const std::string& container, bool follow,
               const std::function<void(const std::string&)>& on_text) const;

 private:
  std::shared_ptr<const kube::Client> client_;
  std::string ns_;
};

/// The message for a failed request, naming the cause: TransportError ("cannot reach the API
/// server of WHERE: connect: GET https://...: ..."), ApiError ("GET /apis/...: the API server answered 403
/// Forbidden: ..."), anything else its what().
std::string describe_cluster_error(const std::exception& e, const std::string& where);

}  // namespace trainbench::cli
