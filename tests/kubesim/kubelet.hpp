#pragma once

// The simulated nodes: scheduler + kubelet in one controller. Pods are bound to a node whose
// labels match their nodeSelector (else Pending, PodScheduled=False/Unschedulable), get a
// loopback pod IP (127.0.x.y), and their containers run as local processes (mode Process), or
// turn Running at once and never run anything (Fake), or stay Pending untouched (None).
// See README.md for the container environment, DNS emulation and termination rules. Containers
// run through the node runtime shared with the node agent (tests/nodeagent/runtime: PodRunner).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api.hpp"
#include "auth.hpp"
#include "runtime/image_store.hpp"

namespace kubesim {

enum class KubeletMode { Process, Fake, None };

struct NodeSpec {
  std::string name;
  std::map<std::string, std::string> labels;
};

struct KubeletOptions {
  KubeletMode mode = KubeletMode::Process;
  std::vector<NodeSpec> nodes;
  std::string dir;              ///< per-pod directories go under DIR/pods
  /// Every node and pod IP starts with this ("127.K.", the instance's NetBlock, netblock.hpp).
  std::string ip_prefix = "127.0.";
  double max_grace_s = 3;       ///< SIGTERM -> SIGKILL wait is min(grace, this)
  double dns_wait_s = 60;       ///< how long a pod waits for its env's <svc>.<ns>.svc names to resolve
  /// The pod network shim (podnet_shim.cpp) preloaded into every container with KUBESIM_POD_IP:
  /// wildcard binds land on the pod IP, as in a pod's own network namespace. "" disables it.
  std::string podnet_library;
  /// How long after a node is lost (lose_node) its Ready condition turns Unknown
  /// (node-monitor-grace-period; node_lifecycle.hpp).
  double node_grace_s = 40;
  /// Image mode (kubesim --images buildah): containers run in their images' root filesystems,
  /// found in this buildah storage (image_runtime.hpp, container_runtime.hpp). Needs root.
  std::optional<noderuntime::ImageStoreOptions> images;
  std::vector<std::string> passthrough_env = {"PATH", "LD_LIBRARY_PATH", "TMPDIR", "LANG", "LC_ALL",
                                              "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"};
};

class Kubelet {
 public:
  Kubelet(Api& api, const TokenAuthority& tokens, KubeletOptions opts);
  ~Kubelet();
  Kubelet(const Kubelet&) = delete;
  Kubelet& operator=(const Kubelet&) = delete;

  /// Creates the Node objects and starts the controller.
  void start();
  /// Kills every pod's processes (SIGKILL to their process groups) and stops the controller.
  void stop();
  /// Image mode, after stop(): removes the images' root filesystems (buildah working
  /// containers). The containers' mounts went with their processes' namespaces.
  void release_images();

  /// Sends `signal` to the pod's containers (all, or the named one): the number signalled, or
  /// -1 when kubesim runs no such pod.
  int kill(const std::string& ns, const std::string& pod, const std::string& container, int signal);
  /// The container's log file ("" when it has not started); `container` "" means the first.
  std::string log_path(const std::string& ns, const std::string& pod, const std::string& container) const;
  /// Whether the container is not running any more (or never will).
  bool container_finished(const std::string& ns, const std::string& pod, const std::string& container) const;
  json stats() const;
  /// Takes a node away (node_lifecycle.hpp): its kubelet stops, its pods' processes are frozen,
  /// its Ready condition turns Unknown after node_grace_s. False when no such node exists.
  bool lose_node(const std::string& node);
  /// Prometheus targets as its kubernetes_sd (role: pod) would find them, in file_sd format: one
  /// group per declared port of each running container, with the same __meta_kubernetes_pod_*
  /// labels, so the relabeling a cluster's scrape config uses works unchanged.
  json scrape_targets() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kubesim
