#pragma once

// The host side of what a kubelet mounts into a container: the pod's volumes (emptyDir: a
// directory of the pod, mode 0777, shared by its containers; configMap / secret: their keys as
// files, written once per pod; hostPath), the container's volumeMounts (readOnly, subPath), and
// the kubelet's own files: /etc/hosts, /etc/hostname, /etc/resolv.conf, the ServiceAccount
// token directory (also where the pod's projected kube-api-access volume is mounted), the
// termination log, and the pod network shim.

#include <string>
#include <vector>

#include "runtime/cluster_view.hpp"
#include "runtime/util.hpp"

namespace noderuntime {

/// A bind mount of a host file or directory at `target` inside the container.
struct Mount {
  std::string source;
  std::string target;  ///< absolute path inside the container
  bool read_only = false;
  bool file = false;  ///< the source is a file (its mountpoint is made as a file)
};

/// Where the pod network shim is mounted in image containers (LD_PRELOAD names it).
constexpr const char* kPodnetTarget = "/.nodeagent/libnodeagent_podnet.so";

struct MountContext {
  ClusterView& cluster;
  const json& pod;
  const json& container;
  std::string pod_dir;
  std::string pod_ip;
  std::string sa_dir;     ///< "" when no token is mounted
  std::string term_path;  ///< the host file behind terminationMessagePath
  std::string podnet_library;
  bool read_only_root = false;
};

/// Every mount of the container, the pod's volumes made as needed. Throws ContainerConfigError
/// (reason ContainerCreating, the kubelet's MountVolume.SetUp message) for a missing ConfigMap or
/// Secret, an unsupported volume kind or a volumeMount naming no volume. A projected volume with
/// a serviceAccountToken source (what the ServiceAccount admission plugin adds, kube-api-access-*)
/// is the ServiceAccount directory `sa_dir`.
std::vector<Mount> container_mounts(const MountContext& ctx);

/// The /etc/hosts a kubelet writes for the pod ("Kubernetes-managed hosts file").
std::string pod_hosts_file(const json& pod, const std::string& pod_ip);

}  // namespace noderuntime
