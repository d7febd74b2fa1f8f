#pragma once

// The ReplicaSet controller (kube-controller-manager's): each ReplicaSet keeps spec.replicas
// active pods (not finished, not being deleted) of its template, named `<rs>-<5 random chars>`
// (generateName), controlled by it (ownerReferences controller=true, blockOwnerDeletion); a
// deleted or failed pod is replaced, extra pods are deleted (the least useful first: unscheduled,
// pending, not ready, then the newest), and status says replicas, fullyLabeledReplicas,
// readyReplicas, availableReplicas (ready for minReadySeconds) and observedGeneration, with a
// ReplicaFailure condition while pods cannot be created. Events SuccessfulCreate,
// SuccessfulDelete, FailedCreate as the real controller. A ReplicaSet being deleted gets no new
// pods. Not emulated: adoption of orphan pods that match the selector, slow-start batches.

#include <map>
#include <string>
#include <vector>

#include "workloads.hpp"

namespace kubesim {

class ReplicaSetController : public ControllerLoop {
 public:
  explicit ReplicaSetController(Api& api) : ControllerLoop(api, "replicaset controller") {}
  ~ReplicaSetController() override { stop(); }
  ReplicaSetController(const ReplicaSetController&) = delete;
  ReplicaSetController& operator=(const ReplicaSetController&) = delete;

 protected:
  void route(const WatchEvent& ev, std::set<ObjectRef>& dirty) override;
  void sync(const ObjectRef& ref) override;
  const std::string& resync_key() const override { return kReplicaSets; }

 private:
  std::vector<ObjPtr> active_pods(const json& rs);
  void create_pods(const json& rs, long long count);
  void delete_pods(const json& rs, std::vector<ObjPtr> active, long long count);
  json compute_status(const json& rs);
  std::map<std::string, std::string> failures_;  ///< ReplicaSet uid -> the last FailedCreate message
};

}  // namespace kubesim
