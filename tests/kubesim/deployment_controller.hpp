#pragma once

// The Deployment controller (kube-controller-manager's): a Deployment's pod template runs in a
// ReplicaSet named `<deployment>-<pod-template-hash>` (the hash of the template, FNV-32a made
// safe as the real one's; label pod-template-hash added to the ReplicaSet's selector, template
// and so its pods), controlled by the Deployment. A template change makes a new ReplicaSet and
// the old ones are scaled down: RollingUpdate with the real maxSurge/maxUnavailable arithmetic
// (percentages rounded as the real one, both 0 meaning maxUnavailable 1), or Recreate (old pods
// gone first). Scaling changes the current ReplicaSet. Annotations deployment.kubernetes.io/
// revision, desired-replicas, max-replicas; revisionHistoryLimit cleanup; paused; hash
// collisions (status.collisionCount). Status: observedGeneration, replicas, updatedReplicas,
// readyReplicas, availableReplicas, unavailableReplicas, conditions Available
// (MinimumReplicasAvailable) and Progressing (NewReplicaSetCreated, FoundNewReplicaSet,
// ReplicaSetUpdated, NewReplicaSetAvailable, ProgressDeadlineExceeded) with the real messages,
// so that `kubectl rollout status` and `helm install --wait` end when the pods are ready.
// ScalingReplicaSet events. Not emulated: proportional scaling of several ReplicaSets in the
// middle of a rollout (the new one takes the change), adoption of orphan ReplicaSets, rollback
// annotations.

#include <string>
#include <vector>

#include "workloads.hpp"

namespace kubesim {

class DeploymentController : public ControllerLoop {
 public:
  explicit DeploymentController(Api& api) : ControllerLoop(api, "deployment controller") {}
  ~DeploymentController() override { stop(); }
  DeploymentController(const DeploymentController&) = delete;
  DeploymentController& operator=(const DeploymentController&) = delete;

 protected:
  void route(const WatchEvent& ev, std::set<ObjectRef>& dirty) override;
  void sync(const ObjectRef& ref) override;
  const std::string& resync_key() const override { return kDeployments; }
};

/// The pod-template-hash of a template (ComputeHash: FNV-32a, collisionCount, SafeEncodeString).
std::string pod_template_hash(const json& pod_template, long long collision_count);

}  // namespace kubesim
