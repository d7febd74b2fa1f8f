#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "operator/controller/reconciler.hpp"
#include "operator/controller/work_queue.hpp"
#include "operator/kube/client.hpp"
#include "operator/kube/reflector.hpp"

namespace trainbench::op {

struct ControllerOptions {
  std::string watch_namespace;  ///< empty: all namespaces
  int workers = 2;
};

/// The operator's control loop: reflectors (list + watch) on BenchmarkJobs and on everything the
/// operator creates feed a rate-limited work queue keyed by namespace/name; workers take keys,
/// read the job, its pods and result ConfigMaps fresh from the API, call reconcile() and carry
/// out its actions. Level-triggered: a missed event only delays work, it never loses it.
class Controller {
 public:
  Controller(std::shared_ptr<const kube::Client> client, ControllerOptions options);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  /// Runs until `stop` is true; returns after the workers and reflectors have stopped.
  void run(const std::atomic<bool>& stop);

  /// Reconciles one job now (used by run()'s workers; public for tests).
  void reconcile_key(const std::string& key);

 private:
  void enqueue_owner(const nlohmann::json& obj);
  void execute(const std::string& ns, const Action& action);
  bool cached(const kube::Reflector& r, const std::string& ns, const std::string& name) const;

  std::shared_ptr<const kube::Client> client_;
  ControllerOptions options_;
  WorkQueue queue_;
  std::unique_ptr<kube::Reflector> jobs_, pods_, configmaps_, services_, accounts_, roles_, bindings_;
};

}  // namespace trainbench::op
