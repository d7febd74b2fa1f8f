#pragma once

// The pods a node runs, by uid, and the pod IPs handed to them from the node's NetBlock prefix
// (netblock.hpp): 127.K.1.1, 127.K.1.2, ... never two at once. Thread-safe.

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "runtime/pod_run.hpp"

namespace noderuntime {

class PodRegistry {
 public:
  explicit PodRegistry(std::string ip_prefix) : ip_prefix_(std::move(ip_prefix)) {}

  /// A free pod IP, taken until the run is forgotten.
  std::string allocate_ip();
  void add(const RunPtr& run);
  RunPtr find(const std::string& uid) const;
  /// The run of a pod not yet removed, by name.
  RunPtr find(const std::string& ns, const std::string& name) const;
  std::vector<RunPtr> all() const;
  std::size_t size() const;
  std::size_t ips_in_use() const;

  /// The pod object is gone: the run is marked removed; true when it had ended already (then
  /// it is forgotten and its IP free again), false while it still runs.
  bool pod_removed(const RunPtr& run);

  /// What is left to do when a run has ended.
  struct Ending {
    bool delete_pod = false;  ///< the pod was being deleted: finish its deletion
  };
  /// The run has ended (marked done, waiters woken); a removed one is forgotten.
  Ending run_ended(const RunPtr& run);

 private:
  void forget(const RunPtr& run);

  std::string ip_prefix_;
  mutable std::mutex mu_;
  std::map<std::string, RunPtr> runs_;  // uid -> run
  std::set<std::string> used_ips_;
  unsigned next_ip_ = 0;
};

}  // namespace noderuntime
