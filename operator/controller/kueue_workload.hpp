#pragma once

// Queueing a BenchmarkJob with Kueue (docs/install.md, "Queueing with Kueue"). The operator is the
// job's Kueue integration: what Kueue's jobframework library does for the kinds Kueue knows, done
// here for BenchmarkJob, registered in Kueue's Configuration as an external framework
// (`integrations.externalFrameworks: [BenchmarkJob.v1alpha1.trainbench.dev]`):
//
//  - a job labelled kueue.x-k8s.io/queue-name gets one Workload (kueue.x-k8s.io/v1beta2), owned by
//    it, asking for its largest run: the master, the most trainer pods and parameter-server pods of
//    any run of the sweep, each pod set with the pod's own containers and resource requests. Every
//    run fits in what Kueue admits, so a run is never started before its whole gang has quota;
//  - the job runs while the Workload is admitted (condition Admitted) and is suspended otherwise:
//    the operator writes spec.suspend as Kueue's own integrations do (true until admission, false
//    on admission, true on eviction), and spec.suspend's semantics do the rest (docs/operator.md,
//    "Suspend and queueing": no pod while suspended, a run under way interrupted and started again);
//  - after an eviction (condition Evicted, e.g. preemption), once no pod of the job is active, the
//    Workload's quota reservation is given back (status.admission cleared, QuotaReserved False,
//    Admitted False, Requeued), and Kueue queues it again;
//  - an ended job's Workload is marked Finished (Succeeded or Failed), which frees its quota.
// Pure functions: the reconciler decides, the controller carries the writes out.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/controller/manifests.hpp"

namespace trainbench::op {

inline constexpr const char* kQueueNameLabel = "kueue.x-k8s.io/queue-name";
inline constexpr const char* kPriorityClassLabel = "kueue.x-k8s.io/priority-class";

/// The job's LocalQueue (label kueue.x-k8s.io/queue-name), "" when it is not queued.
std::string queue_name_of(const nlohmann::json& job_object);

/// The job's Workload: benchmarkjob-<job>-<hash of name and uid>, at most 63 characters.
std::string workload_name(const std::string& job, const std::string& uid);

/// One pod set of the Workload: `count` pods like `pod` (its labels and spec are the template).
struct PodSetShape {
  std::string name;  ///< master, trainer, parameter-server
  int count = 0;
  nlohmann::json pod;
};

/// The Workload for the job: owner reference to it (controller), labels trainbench.dev/job and the
/// managed-by label, queueName, the pod sets, and priorityClassRef + priority when the job names a
/// WorkloadPriorityClass whose value is known.
nlohmann::json workload(const JobContext& job, const std::string& queue, const std::vector<PodSetShape>& pod_sets,
                        const std::optional<std::string>& priority_class, std::optional<int> priority);

/// Where Kueue stands with a Workload, from its conditions.
enum class Admission {
  kPending,   ///< no quota reserved (queued, or waiting for admission checks)
  kAdmitted,  ///< Admitted True and not Evicted: the job may run
  kEvicted,   ///< Evicted True: the job must stop, then give the reservation back
  kFinished,  ///< Finished True
};
struct AdmissionState {
  Admission admission = Admission::kPending;
  bool quota_reserved = false;  ///< status.admission present (QuotaReserved True)
  std::string message;          ///< the deciding condition's message (why pending, why evicted)
};
AdmissionState admission_of(const nlohmann::json& workload);

/// Status merge patch giving an evicted Workload's quota back (as jobframework's reconciler does
/// once the job's pods are gone): admission null, QuotaReserved False (reason Pending), Admitted
/// False, Requeued True when evicted by preemption or node failures (else False). The whole
/// conditions list is sent (a merge patch replaces lists), so the patch carries the Workload's
/// resourceVersion: a Workload Kueue changed meanwhile answers 409, and the next reconcile decides anew.
nlohmann::json give_back_quota_patch(const nlohmann::json& workload, const std::string& now);

/// Status merge patch marking the Workload Finished (reason Succeeded or Failed), with its resourceVersion.
nlohmann::json finished_patch(const nlohmann::json& workload, bool succeeded, const std::string& message,
                              const std::string& now);

}  // namespace trainbench::op
