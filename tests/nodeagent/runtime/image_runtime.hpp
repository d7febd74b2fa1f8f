#pragma once

// The kubelet's image side for --images buildah (the node agent's): pulling
// (finding the image in the local store, as imagePullPolicy allows) and turning a pod's
// container into a ContainerLaunch (container_runtime.hpp) from its image: config, user,
// environment, mounts.

#include <string>

#include "runtime/cluster_view.hpp"
#include "runtime/container_runtime.hpp"
#include "runtime/image_store.hpp"
#include "runtime/pod_env.hpp"

namespace noderuntime {

/// The image cannot be had (ErrImagePull, ErrImageNeverPull).
class ImagePullError : public WaitingError {
 public:
  using WaitingError::WaitingError;
};

/// One start of one container.
struct ImageStart {
  const json& pod;
  const json& container;
  EnvList kubelet_env;  ///< HOSTNAME, KUBERNETES_SERVICE_*, LD_PRELOAD / TRAINBENCH_POD_IP, *SAN_OPTIONS
  EnvList pod_env;      ///< env / envFrom, resolved
  std::string pod_dir;
  std::string pod_ip;
  std::string sa_dir;
  std::string term_path;
  std::string log_path;
  std::string podnet_library;
};

class ImageRuntime {
 public:
  explicit ImageRuntime(ImageStoreOptions opts) : store_(std::move(opts)) {}

  /// At the node's start: buildah can be run; stale working containers removed.
  void check() { store_.check(); }
  /// The container's image; throws ImagePullError.
  ImageConfig pull(const json& container);
  /// Throws ContainerConfigError (runAsNonRoot, a volume that cannot be mounted).
  ContainerLaunch prepare(ClusterView& cluster, const ImageConfig& image, const ImageStart& start);
  /// At the node's exit, after every container has ended.
  void close() { store_.close(); }

 private:
  ImageStore store_;
};

}  // namespace noderuntime
