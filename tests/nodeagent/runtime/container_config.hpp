#pragma once

// What the kubelet and the container runtime (containerd + runc) make of a pod's container and
// its image, before anything runs: the process's argv (command/args against the image's
// ENTRYPOINT/CMD), its environment (image Env, then the kubelet's variables, then the
// container's env), its working directory and its user (securityContext.runAsUser/runAsGroup/
// supplementalGroups/fsGroup, else the image's USER, names looked up in the image's
// /etc/passwd and /etc/group), and the kubelet's runAsNonRoot check.

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/image_store.hpp"
#include "runtime/pod_env.hpp"

namespace noderuntime {

/// Why a container waits instead of running: `reason` is the kubelet's waiting reason, the
/// message the kubelet's.
class WaitingError : public std::runtime_error {
 public:
  WaitingError(std::string reason, const std::string& message)
      : std::runtime_error(message), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

/// The container cannot be created (CreateContainerConfigError, CreateContainerError).
class ContainerConfigError : public WaitingError {
 public:
  using WaitingError::WaitingError;
};

struct Identity {
  unsigned uid = 0;
  unsigned gid = 0;
  std::vector<unsigned> groups;  ///< supplementary groups
  std::string home = "/";        ///< from /etc/passwd, for HOME when the env has none
};

struct ProcessConfig {
  std::vector<std::string> argv;
  EnvList env;
  std::string cwd;
  Identity user;
  bool no_new_privs = false;  ///< allowPrivilegeEscalation: false
  bool read_only_root = false;
};

struct ProcessInputs {
  const json& pod;
  const json& container;
  const ImageConfig& image;
  std::string rootfs;   ///< the image's root filesystem (its /etc/passwd and /etc/group)
  EnvList kubelet_env;  ///< HOSTNAME, KUBERNETES_SERVICE_*, the pod network shim's
  EnvList pod_env;      ///< the container's env/envFrom, resolved (pod_env.hpp)
};

/// Throws ContainerConfigError (runAsNonRoot with a root or unverifiable user).
ProcessConfig process_config(const ProcessInputs& in);

/// Kubernetes' rule: command replaces ENTRYPOINT (and drops CMD), args replace CMD; $(VAR) in
/// command/args is expanded from the container's own env.
std::vector<std::string> container_argv(const json& container, const ImageConfig& image,
                                        const std::map<std::string, std::string>& vars);

/// securityContext field of the container, else of the pod (null when neither sets it).
json security_field(const json& pod, const json& container, const std::string& field);

/// The user the container runs as. `passwd` / `group`: the image's files' text.
Identity resolve_identity(const json& pod, const json& container, const std::string& image_user,
                          const std::string& passwd, const std::string& group);

/// The kubelet's runAsNonRoot check; throws ContainerConfigError with its message.
void verify_run_as_non_root(const json& pod, const json& container, const std::string& image_user);

}  // namespace noderuntime
