#include "runtime/image_runtime.hpp"

namespace noderuntime {

ImageConfig ImageRuntime::pull(const json& container) {
  const std::string image = container.value("image", "");
  try {
    return store_.inspect(image);
  } catch (const ImageNotFound& e) {
    // Always is served as IfNotPresent: the store is local only (README, "What differs").
    if (container.value("imagePullPolicy", "") == "Never") {
      throw ImagePullError("ErrImageNeverPull",
                           "Container image " + json(image).dump() + " is not present with pull policy of Never");
    }
    throw ImagePullError("ErrImagePull",
                         "Failed to pull image " + json(image).dump() + ": rpc error: code = NotFound desc = " +
                             e.what() + " (--images buildah pulls nothing: build it into the local store)");
  }
}

ContainerLaunch ImageRuntime::prepare(ClusterView& cluster, const ImageConfig& image, const ImageStart& start) {
  ContainerLaunch l;
  l.lower = store_.rootfs(image);
  l.process = process_config({start.pod, start.container, image, l.lower, start.kubelet_env, start.pod_env});
  l.mounts = container_mounts({cluster, start.pod, start.container, start.pod_dir, start.pod_ip, start.sa_dir,
                               start.term_path, start.podnet_library, l.process.read_only_root});
  l.state_dir = start.pod_dir + "/containers/" + start.container.value("name", "");
  l.hostname = start.pod["spec"].value("hostname", start.pod["metadata"].value("name", "")).substr(0, 63);
  l.log_path = start.log_path;
  return l;
}

}  // namespace noderuntime
