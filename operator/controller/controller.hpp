#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/results/run_progress.hpp"
#include "kube/client.hpp"
#include "kube/rate_limiter.hpp"
#include "kube/reflector.hpp"
#include "operator/controller/controller_metrics.hpp"
#include "operator/controller/own_writes.hpp"
#include "operator/controller/reconciler.hpp"
#include "operator/controller/work_queue.hpp"

namespace trainbench::op {

struct ControllerOptions {
  std::string watch_namespace;  ///< empty: all namespaces
  int workers = 2;
  std::shared_ptr<ControllerMetrics> metrics;  ///< optional
  /// Lost nodes (docs/operator.md): a node not Ready for this long fails the runs on it and
  /// its pods are force-deleted. 0: no node informer (no cluster-scoped nodes list/watch).
  std::chrono::seconds node_lost_after{60};
  /// The work queue's delays (requeues, error backoff) are measured on it; tests inject a fake.
  std::shared_ptr<kube::Clock> clock = kube::Clock::steady();
  /// --progress-interval: a running job's master pod is polled for its run's progress, and
  /// status.progressDetail written, at most this often (docs/operator.md, "Progress"). 0: off.
  std::chrono::seconds progress_interval{10};
  /// Reads the progress a master pod serves, by its pod IP (nullopt: unreachable or unreadable).
  /// Default: poll_master_progress; tests inject a fake.
  std::function<std::optional<RunProgressSample>(const std::string& pod_ip)> poll_progress;
  /// --kueue: jobs labelled kueue.x-k8s.io/queue-name are queued by Kueue through a Workload each
  /// (kueue_workload.hpp); the operator watches kueue.x-k8s.io Workloads.
  bool kueue = false;
  /// --pod-create-parallelism: at most this many pod creates in flight at once (create_pods); 1:
  /// one after another.
  int pod_create_parallelism = 32;
  /// --worker-image / --worker-cuda-image: the pods' image when a job's spec.template.image is unset.
  WorkerImages worker_images;
};

/// GET http://POD_IP:kMasterProgressPort/progress with a 1 s deadline, read as a RunProgressSample.
std::optional<RunProgressSample> poll_master_progress(const std::string& pod_ip);

/// The operator's control loop: reflectors (list + watch) on BenchmarkJobs and on everything the
/// operator creates feed a rate-limited work queue keyed by namespace/name; workers take keys,
/// read the job and everything it owns from the informers' caches (with the operator's own
/// recent writes laid over them, own_writes.hpp), call reconcile() and carry out its actions.
/// A reconcile makes no read request in the steady state; status is written with the
/// resourceVersion it was computed from (409 -> decide again). Level-triggered: a missed event
/// only delays work, it never loses it.
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

  /// Queue depth, jobs by phase, informer counts: read at scrape time. Thread-safe.
  ControllerSnapshot snapshot() const;

 private:
  void enqueue_owner(const nlohmann::json& obj);
  void execute(const std::string& key, const std::string& ns, const std::string& job_version, const Action& action);
  /// The decision's actions in order; consecutive pod creates (a run's gang) through create_pods.
  void execute_all(const std::string& key, const std::string& ns, const std::string& job_version,
                   const std::vector<Action>& actions);
  /// Pod creates in slow-start batches, as Kubernetes' Job controller creates a Job's pods: 1,
  /// then 2, 4, ... at once (at most pod_create_parallelism), each batch waited for; a failed
  /// create stops the rest (the reconcile fails before its status write and is retried), so a
  /// refused pod costs one request, not a gang's worth. The client's rate limit still applies.
  void create_pods(const std::string& key, const std::string& ns, const std::vector<const Action*>& creates);
  /// The reflector's objects labelled with this job, in its namespace.
  std::vector<nlohmann::json> job_objects(const kube::Reflector& r, const std::string& ns, const std::string& job) const;
  bool exists(const kube::Reflector& r, const std::string& key, const std::string& resource, const std::string& ns,
              const std::string& name, OwnWrites::Clock::time_point now);

  /// reconcile_key's work; false when a write conflicted and the key was requeued.
  bool reconcile_once(const std::string& key);
  /// The job's pods' nodes that are not Ready (nodes_ informer; empty without it).
  std::map<std::string, NodeTrouble> unready_nodes(const std::vector<nlohmann::json>& pods) const;
  /// A job changed: the ended jobs that name it as their baseline and wait for it are reconciled.
  void enqueue_waiting_on(const nlohmann::json& job);
  /// spec.baseline's object for a job that has ended and not decided Regressed (baseline.hpp).
  ObservedBaseline read_baseline(const nlohmann::json& job) const;
  /// o.workload (the job's Workload, from the informer and the operator's own writes) and, before
  /// one is made for a job naming a WorkloadPriorityClass, o.workload_priority (one read).
  void observe_workload(const std::string& key, const std::string& ns, const std::string& name,
                        OwnWrites::Clock::time_point now, Observed& o);
  /// A node changed: every job with a pod on it is reconciled.
  void enqueue_jobs_on_node(const nlohmann::json& node);
  std::vector<kube::Reflector*> reflectors() const;
  /// The progress of the job's running master pod: polled at most once per progress_interval
  /// per job (the sample is kept in between), nullopt when no master runs or it cannot be read.
  std::optional<RunProgressSample> progress_of(const std::string& key, const std::vector<nlohmann::json>& pods);

  struct ProgressPoll {
    std::string pod_ip;
    kube::Clock::time_point at;
    std::optional<RunProgressSample> sample;
  };
  std::mutex progress_mutex_;  ///< guards progress_polls_ (a key is reconciled by one worker at a time)
  std::map<std::string, ProgressPoll> progress_polls_;

  /// Whether an Event create the API server refused with 403 is tried again (the reconcile fails
  /// before its status write) rather than skipped: for kEventForbiddenGrace after its first 403.
  /// A kube-apiserver that has just started authorizes from RBAC informers that may not have
  /// synced yet, and refuses what the operator's Role grants (seen after an API-server restart,
  /// kubernetes/kubernetes#121635); a 403 that lasts is a missing grant, and the Event is skipped.
  bool retry_forbidden_event(const std::string& event_name);
  std::mutex event_refusals_mutex_;
  std::map<std::string, kube::Clock::time_point> event_refusals_;  ///< Event name -> first 403

  std::shared_ptr<const kube::Client> client_;
  ControllerOptions options_;
  std::shared_ptr<ControllerMetrics> metrics_;
  std::atomic<bool> synced_{false};
  WorkQueue queue_;
  OwnWrites own_;
  std::unique_ptr<kube::Reflector> jobs_, pods_, configmaps_, services_, accounts_, roles_, bindings_;
  std::unique_ptr<kube::Reflector> nodes_;      ///< only with node_lost_after > 0
  std::unique_ptr<kube::Reflector> workloads_;  ///< Kueue's Workloads, only with kueue
};

}  // namespace trainbench::op
