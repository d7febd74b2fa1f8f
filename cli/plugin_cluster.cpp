#include "cli/plugin_cluster.hpp"

#include <cstdlib>
#include <filesystem>

#include "cli/commands.hpp"
#include "core/util/version.hpp"
#include "kube/config.hpp"
#include "kube/errors.hpp"

namespace trainbench::cli {
namespace {

/// kubectl's order: --kubeconfig, $KUBECONFIG, ~/.kube/config, then in-cluster (load_default_config
/// prefers in-cluster to ~/.kube/config, as a pod's operator should; a user in a pod expects kubectl's).
std::string kubeconfig_path(const KubeFlags& flags) {
  if (!flags.kubeconfig.empty()) return flags.kubeconfig;
  const char* env = std::getenv("KUBECONFIG");  // NOLINT(concurrency-mt-unsafe)
  if (env != nullptr && *env != '\0') return env;
  const char* home = std::getenv("HOME");  // NOLINT(concurrency-mt-unsafe)
  std::error_code ec;
  const std::string file = home != nullptr ? std::string(home) + "/.kube/config" : "";
  return !file.empty() && std::filesystem::exists(file, ec) ? file : "";
}

kube::ClientConfig load_config(const KubeFlags& flags) {
  const std::string path = kubeconfig_path(flags);
  kube::ClientConfig c =
      path.empty() ? kube::load_default_config(flags.context) : kube::load_kubeconfig(path, flags.context);
  c.user_agent = std::string("kubectl-trainbench/") + kVersion;
  return c;
}

}  // namespace

PluginCluster::PluginCluster(const KubeFlags& flags) {
  kube::ClientConfig config;
  try {
    config = load_config(flags);
  } catch (const kube::ConfigError& e) {
    throw PluginError(std::string("kubeconfig: ") + e.what(), kExitError);
  }
  ns_ = !flags.namespace_.empty()          ? flags.namespace_
        : config.default_namespace.empty() ? "default"
                                           : config.default_namespace;
  client_ = std::make_shared<const kube::Client>(std::move(config));
}

std::string PluginCluster::where() const { return client_->transport().config().source; }

ClusterJob PluginCluster::job(const std::string& name) const {
  ClusterJob j{name, ns_, nullptr, {}};
  try {
    j.object = client_->get(kube::resources::benchmark_jobs(), ns_, name);
  } catch (const kube::NotFoundError& e) {
    // A missing job names itself in the Status; a missing resource type (no CRD) does not.
    if (e.details().name == name) {
      throw PluginError("BenchmarkJob \"" + name + "\" not found in namespace \"" + ns_ + "\"", kExitError);
    }
    throw PluginError("the server does not serve BenchmarkJobs (trainbench.dev/v1alpha1): is the CRD installed? (" +
                          e.status_message() + ")",
                      kExitError);
  } catch (const kube::KubeError& e) {
    throw PluginError(describe_cluster_error(e, where()), kExitError);
  }
  if (j.object.contains("status") && !j.object["status"].is_null()) {
    j.status = job_status_from_json(j.object["status"]);
  }
  return j;
}

void PluginCluster::pod_log(const std::string& pod, const std::string& container, bool follow,
                            const std::function<void(const std::string&)>& on_text) const {
  kube::LogOptions o;
  o.container = container;
  o.follow = follow;
  try {
    client_->pod_log(ns_, pod, o, on_text);
  } catch (const kube::NotFoundError&) {
    throw;
  } catch (const kube::ApiError& e) {
    // The kubelet's answer for a container not started yet (ContainerCreating): not there yet.
    const bool waiting = e.code() == 400 && e.status_message().find("is waiting to start") != std::string::npos;
    throw PluginError(describe_cluster_error(e, where()), waiting ? kExitNotYet : kExitError);
  } catch (const kube::KubeError& e) {
    throw PluginError(describe_cluster_error(e, where()), kExitError);
  }
}

std::string describe_cluster_error(const std::exception& e, const std::string& where) {
  if (const auto* t = dynamic_cast<const kube::TransportError*>(&e)) {
    return "cannot reach the API server of " + where + ": " + to_string(t->kind()) + ": " + t->what();
  }
  if (const auto* a = dynamic_cast<const kube::ApiError*>(&e)) {
    const std::string reason = a->reason().empty() ? "" : " " + a->reason();
    return a->request() + ": the API server answered " + std::to_string(a->code()) + reason + ": " +
           a->status_message();
  }
  return e.what();
}

}  // namespace trainbench::cli
