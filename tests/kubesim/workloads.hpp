#pragma once

// What the apps/v1 controllers (deployment_controller, replicaset_controller) and the apps/v1
// strategy share: label selectors as metav1.LabelSelector objects, int-or-percent values,
// controller references, pod readiness and availability, Go's %#v printing of the values that
// the real validation messages show, and the loop every controller runs.

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "api.hpp"

namespace kubesim {

/// The storage keys of the apps/v1 kinds.
inline const std::string kDeployments = "deployments.apps";
inline const std::string kReplicaSets = "replicasets.apps";
/// The label the deployment controller adds to its ReplicaSets' selector, template and pods.
inline const std::string kPodTemplateHash = "pod-template-hash";

/// metadata.<field> as a string ("" when absent).
std::string meta_field(const json& obj, const char* field);
/// metadata.deletionTimestamp is set.
bool being_deleted(const json& obj);

/// Whether a metav1.LabelSelector object selects these labels; a missing (null) selector
/// selects nothing, an empty one everything (metav1.LabelSelectorAsSelector).
bool selector_matches(const json& selector, const json& labels);
/// labels.Selector's String() of a metav1.LabelSelector: "app=x,k in (a,b),!k2", sorted by key.
std::string selector_string(const json& selector);
/// Go's %#v of map[string]string: map[string]string{"a":"b", "c":"d"} (nil: ...(nil)).
std::string go_string_map(const json& labels);
/// Go's %#v of a v1.LabelSelector, as field.Invalid prints one.
std::string go_label_selector(const json& selector);

/// A value as apiequality.Semantic.DeepEqual compares typed objects: nulls and empty maps/lists
/// dropped (a template that went through a Go client, e.g. `kubectl rollout undo`, carries
/// `creationTimestamp: null` and empty fields that the stored one may lack).
json semantic_form(const json& value);

/// intstr.GetScaledValueFromIntOrPercent: 3, "25%" of total (rounded up or down).
long long scaled_value(const json& int_or_percent, long long total, bool round_up);

/// The ownerReference with controller=true, or nullptr.
const json* controller_ref(const json& obj);
/// Whether `obj`'s controller is the object with this uid.
bool controlled_by(const json& obj, const std::string& owner_uid);
/// A controller reference to `owner` (kind apps/v1 `kind`), blockOwnerDeletion as the real ones.
json controller_ref_to(const json& owner, const std::string& kind);

/// A pod neither finished (Succeeded/Failed) nor being deleted (controller.FilterActivePods).
bool pod_active(const json& pod);
/// The pod's Ready condition is True.
bool pod_ready(const json& pod);
/// Ready for at least minReadySeconds (podutil.IsPodAvailable).
bool pod_available(const json& pod, long long min_ready_s, Clock::time_point now);

/// A condition of `type` in status.conditions, or nullptr.
const json* find_condition(const json& status, const std::string& type);
/// An integer field that the API omits when 0 (omitempty): set, or erased when 0.
void set_or_omit(json& obj, const std::string& field, long long value);

/// A controller's loop: one watch on every kind, `route` turns each event into the objects to
/// sync, `sync` runs for each (under the store's lock), and every `resync` all objects that
/// `all` names are synced again (retries, minReadySeconds, deadlines).
class ControllerLoop {
 public:
  ControllerLoop(Api& api, std::string name) : api_(api), name_(std::move(name)) {}
  virtual ~ControllerLoop();
  ControllerLoop(const ControllerLoop&) = delete;
  ControllerLoop& operator=(const ControllerLoop&) = delete;
  void start();
  void stop();

 protected:
  virtual void route(const WatchEvent& ev, std::set<ObjectRef>& dirty) = 0;
  virtual void sync(const ObjectRef& ref) = 0;
  /// The storage key whose objects are resynced periodically.
  virtual const std::string& resync_key() const = 0;
  Api& api_;

 private:
  void run();
  void sync_all(std::set<ObjectRef>& dirty);
  std::string name_;
  std::shared_ptr<Watcher> watcher_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
};

}  // namespace kubesim
