#pragma once

// One pod as its node runs it: the state of each of its containers (init containers first),
// shared by the pod's threads under its mutex. The node agent makes one per pod bound to its
// node and hands it to a PodRunner (pod_runner.hpp).

#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/util.hpp"

namespace noderuntime {

struct ContainerRun {
  std::string name;
  bool init = false;
  json spec;
  pid_t pid = -1;
  bool running = false;
  bool finished = false;  ///< terminated for good (no restart coming)
  bool ready = false;
  int exit_code = 0;
  int restarts = 0;
  std::string log_path;
  std::string term_path;
  bool has_log = false;
  std::string image_ref;  ///< image mode: the image found in the store, and its id
  std::string image_id;
  json state = {{"waiting", {{"reason", "ContainerCreating"}}}};
  json last_state = json::object();
};

struct PodRun {
  std::string ns, name, uid, node, ip, host_ip, dir, restart_policy, start_time;
  json labels = json::object();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<ContainerRun> containers;  // init containers first, then the others
  bool stopping = false;
  bool removed = false;  ///< the pod object is gone
  bool delete_when_done = false;
  bool done = false;
  bool fake = false;  ///< nothing runs (the node agent's --pods simulated)
  bool initialized = false;
  std::string runtime = "nodeagent";  ///< the scheme of containerIDs (runtime://ID)
};

using RunPtr = std::shared_ptr<PodRun>;

/// A run for a pod bound to this node, its containers waiting (ContainerCreating, init ones
/// PodInitializing); its directory is PODS_DIR/NS_NAME_UID, each container's log NAME.log there.
RunPtr make_pod_run(const json& pod, const std::string& pods_dir, const std::string& ip, const std::string& host_ip);

/// The containerID the status reports for a container of the run (runtime://UID-NAME).
std::string container_id(const PodRun& run, const std::string& container);

/// The container's log file ("" when it has not started, or the pod is fake); `container` ""
/// means the first regular container.
std::string container_log_path(PodRun& run, const std::string& container);
/// Whether the container is not running any more (or never will).
bool container_finished(PodRun& run, const std::string& container);
/// Whether an instance of the container runs now.
bool container_running(PodRun& run, const std::string& container);
/// Freezes the process trees of the pod's running containers (freeze_tree): a lost node.
void freeze_containers(PodRun& run);

}  // namespace noderuntime
