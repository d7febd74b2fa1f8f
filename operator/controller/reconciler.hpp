#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results/run_progress.hpp"
#include "operator/controller/baseline.hpp"
#include "operator/controller/manifests.hpp"

namespace trainbench::op {

using Clock = std::chrono::system_clock;

/// A node whose Ready condition is not True (False or Unknown), from its condition.
struct NodeTrouble {
  std::string status;       ///< "False" or "Unknown"
  std::string reason;       ///< e.g. NodeStatusUnknown
  std::string message;      ///< e.g. "Kubelet stopped posting node status."
  Clock::time_point since;  ///< the condition's lastTransitionTime
};

/// Everything reconcile looks at for one BenchmarkJob, read fresh from the API (or the
/// informers' caches). The controller is level-triggered: this snapshot is all it needs.
struct Observed {
  nlohmann::json job;                      ///< the BenchmarkJob object (metadata, spec, status)
  std::vector<nlohmann::json> pods;        ///< pods labelled trainbench.dev/job=<name>
  std::vector<nlohmann::json> services;    ///< services labelled trainbench.dev/job=<name>
  std::vector<nlohmann::json> configmaps;  ///< result ConfigMaps labelled trainbench.dev/job=<name>
  bool reporter_service_account = false;   ///< J-reporter objects exist
  bool reporter_role = false;
  bool reporter_role_binding = false;
  Clock::time_point now;
  /// spec.baseline's object, read by the controller once the job has ended (baseline.hpp). Its
  /// initializer keeps aggregate initializations that stop at `now` free of warnings.
  ObservedBaseline baseline{};
  /// The current run's progress as its master pod served it (the controller polls it), if read.
  std::optional<RunProgressSample> progress{};
  /// --progress-interval: status.progressDetail is written at most this often, and only when it
  /// changed (0: no progress in status). A running job is requeued this often, which drives the polls.
  std::chrono::seconds progress_interval{0};
  /// --kueue: a job labelled kueue.x-k8s.io/queue-name is queued by Kueue (kueue_workload.hpp).
  bool kueue = false;
  /// --worker-image / --worker-cuda-image: the pods' image when spec.template.image is unset.
  WorkerImages worker_images{};
  /// The job's Kueue Workload, when it has one.
  std::optional<nlohmann::json> workload{};
  /// The value of the WorkloadPriorityClass the job names (label kueue.x-k8s.io/priority-class),
  /// read by the controller before the job's Workload is made; nullopt: none named, or unreadable.
  std::optional<int> workload_priority{};
};

/// What reconcile knows of the nodes the job's pods run on (docs/operator.md, "Lost nodes").
struct NodeHealth {
  /// The nodes of the job's pods whose Ready condition is not True (absent: Ready, or unknown).
  std::map<std::string, NodeTrouble> unready;
  /// A node not Ready for this long is lost: the run on it fails (restart under backoffLimit)
  /// and its pods are force-deleted. 0: nodes are not looked at.
  std::chrono::seconds lost_after{0};
};

/// One thing to do to the cluster. Creates that answer 409 AlreadyExists and deletes that
/// answer 404 are success (another reconcile, or an earlier operator, did it).
struct Action {
  /// DeleteCollection: one request deletes every object matching `label_selector` (the pods
  /// of a run or a job), instead of one request per pod.
  /// ForceDelete: a Delete with gracePeriodSeconds 0 (as kubectl delete --force), for pods on
  /// a lost node, which no kubelet will ever confirm gone.
  /// Patch: a merge patch of the object itself (the job's spec.suspend, as Kueue's integrations
  /// write it). PatchStatus: a merge patch of the status subresource; the job's carries the
  /// resourceVersion the decision was made from, a Workload's patch carries its own.
  enum class Verb { Create, Delete, ForceDelete, DeleteCollection, Patch, PatchStatus, Event };
  Verb verb = Verb::Create;
  std::string resource;  ///< pods, services, configmaps, serviceaccounts, roles, rolebindings, events, benchmarkjobs, workloads
  std::string name;      ///< for Delete, ForceDelete, Patch, PatchStatus
  nlohmann::json body;   ///< object to create, status merge patch, or event
  std::string label_selector;      ///< for DeleteCollection
  std::vector<std::string> names;  ///< for DeleteCollection: the known objects it deletes
};

struct Decision {
  std::vector<Action> actions;
  /// Reconcile again after this long even if nothing changes (timeouts, deadlines).
  std::optional<std::chrono::milliseconds> requeue_after;
};

/// Observe, compare with the plan, decide. Pure: no I/O, so every rule of the run policy is
/// unit-tested (tests/operator/reconciler*_test.cpp). The policy is in docs/operator.md.
Decision reconcile(const Observed& observed, const NodeHealth& nodes = NodeHealth{});

std::string format_time(Clock::time_point t);
/// Parses RFC 3339 "YYYY-MM-DDTHH:MM:SSZ" (fractions and offsets accepted); nullopt if malformed.
std::optional<Clock::time_point> parse_time(const std::string& s);

}  // namespace trainbench::op
