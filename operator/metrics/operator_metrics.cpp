#include "operator/metrics/operator_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <mutex>
#include <set>

#include "telemetry/prometheus_handler.hpp"

namespace trainbench::op {
namespace {

using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;


const char* outcome_label(ControllerMetrics::Outcome o) {
  switch (o) {
    case ControllerMetrics::Outcome::kSuccess:
      return "success";
    case ControllerMetrics::Outcome::kRequeue:
      return "requeue";
    case ControllerMetrics::Outcome::kError:
      return "error";
  }
  return "error";
}

/// The phases a BenchmarkJob can be in (docs/crd.md): each is always exported, 0 when empty,
/// so that a phase that empties drops to 0 instead of vanishing.
const std::set<std::string>& known_phases() {
  static const std::set<std::string> phases = {"Pending", "Running", "Succeeded", "Failed", "Suspended"};
  return phases;
}

}  // namespace

struct OperatorMetrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<Counter>* reconciles = nullptr;
  prometheus::Family<Counter>* reconcile_errors = nullptr;
  Histogram* reconcile_seconds = nullptr;
  Gauge* queue_depth = nullptr;
  prometheus::Family<Counter>* requests = nullptr;
  prometheus::Family<Histogram>* request_seconds = nullptr;
  prometheus::Family<Counter>* watch_restarts = nullptr;
  prometheus::Family<Counter>* relists = nullptr;
  prometheus::Family<Gauge>* cached_objects = nullptr;
  prometheus::Family<Gauge>* jobs = nullptr;
  Counter* runs_started = nullptr;
  Counter* runs_succeeded = nullptr;
  Counter* runs_failed = nullptr;
  Counter* runs_restarted = nullptr;
  Gauge* leader = nullptr;
  Gauge* synced = nullptr;

  std::mutex mutex;  ///< guards source and the last informer counts
  std::function<ControllerSnapshot()> source;
  std::map<std::string, ControllerSnapshot::Informer> last;  ///< counters grow by differences
};

OperatorMetrics::OperatorMetrics(const std::string& version) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  auto& reg = *m.registry;
  prometheus::BuildGauge()
      .Name("trainbench_operator_info")
      .Help("The operator's version (value 1).")
      .Register(reg)
      .Add({{"version", version}})
      .Set(1);
  m.reconciles = &prometheus::BuildCounter()
                      .Name("trainbench_operator_reconcile_total")
                      .Help("Reconciles of a BenchmarkJob, by result (success, requeue after a conflict, error).")
                      .Register(reg);
  for (auto o : {Outcome::kSuccess, Outcome::kRequeue, Outcome::kError}) m.reconciles->Add({{"result", outcome_label(o)}});
  m.reconcile_errors = &prometheus::BuildCounter()
                            .Name("trainbench_operator_reconcile_errors_total")
                            .Help("Reconciles that failed with an error and were retried with backoff.")
                            .Register(reg);
  m.reconcile_errors->Add({});
  m.reconcile_seconds = &prometheus::BuildHistogram()
                             .Name("trainbench_operator_reconcile_duration_seconds")
                             .Help("Time one reconcile of one BenchmarkJob took, its API writes included.")
                             .Register(reg)
                             .Add({}, telemetry::duration_buckets_seconds());
  m.queue_depth = &prometheus::BuildGauge()
                       .Name("trainbench_operator_workqueue_depth")
                       .Help("BenchmarkJobs waiting in the work queue.")
                       .Register(reg)
                       .Add({});
  m.requests = &prometheus::BuildCounter()
                    .Name("trainbench_operator_api_requests_total")
                    .Help("Kubernetes API requests by verb, resource and HTTP code (code 0: no answer).")
                    .Register(reg);
  m.request_seconds = &prometheus::BuildHistogram()
                           .Name("trainbench_operator_api_request_duration_seconds")
                           .Help("Kubernetes API request latency by verb and resource (watches: until the headers).")
                           .Register(reg);
  m.watch_restarts = &prometheus::BuildCounter()
                          .Name("trainbench_operator_watch_restarts_total")
                          .Help("Watches re-opened after the first, by resource (timeouts, dropped connections, 410).")
                          .Register(reg);
  m.relists = &prometheus::BuildCounter()
                   .Name("trainbench_operator_watch_relists_total")
                   .Help("Full lists forced by a 410 Gone (the watch fell behind the server's history), by resource.")
                   .Register(reg);
  m.cached_objects = &prometheus::BuildGauge()
                          .Name("trainbench_operator_cached_objects")
                          .Help("Objects held in the informer cache, by resource.")
                          .Register(reg);
  m.jobs = &prometheus::BuildGauge()
                .Name("trainbench_operator_benchmarkjobs")
                .Help("BenchmarkJobs the operator sees, by status.phase.")
                .Register(reg);
  for (const auto& p : known_phases()) m.jobs->Add({{"phase", p}});
  auto counter = [&](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Register(reg).Add({});
  };
  m.runs_started = counter("trainbench_operator_runs_started_total", "Runs (sweep entries) whose pods were created.");
  m.runs_succeeded = counter("trainbench_operator_runs_succeeded_total", "Runs that finished with a complete result.");
  m.runs_failed = counter("trainbench_operator_runs_failed_total", "Runs that failed for good.");
  m.runs_restarted =
      counter("trainbench_operator_runs_restarted_total", "Runs restarted as a whole after a pod failed (backoffLimit).");
  m.leader = &prometheus::BuildGauge()
                  .Name("trainbench_operator_leader")
                  .Help("1 while this replica holds the leader lease (or runs without leader election).")
                  .Register(reg)
                  .Add({});
  m.synced = &prometheus::BuildGauge()
                  .Name("trainbench_operator_informers_synced")
                  .Help("1 once every informer cache has listed (the operator is ready).")
                  .Register(reg)
                  .Add({});
}

OperatorMetrics::~OperatorMetrics() = default;

void OperatorMetrics::reconciled(Outcome outcome, double seconds) {
  impl_->reconciles->Add({{"result", outcome_label(outcome)}}).Increment();
  if (outcome == Outcome::kError) impl_->reconcile_errors->Add({}).Increment();
  impl_->reconcile_seconds->Observe(seconds);
}

void OperatorMetrics::transition(const std::string& reason) {
  if (reason == "RunStarted") impl_->runs_started->Increment();
  if (reason == "RunSucceeded") impl_->runs_succeeded->Increment();
  if (reason == "RunFailed") impl_->runs_failed->Increment();
  if (reason == "RunRestarted") impl_->runs_restarted->Increment();
}

kube::RequestObserver OperatorMetrics::request_observer() {
  return [this](const kube::RequestRecord& r) {
    // Bounded: verbs and resources are the operator's own few; codes are HTTP's.
    const std::string resource = r.info.resource.empty() ? "none" : r.info.resource;
    impl_->requests->Add({{"verb", r.info.verb}, {"resource", resource}, {"code", std::to_string(r.code)}}).Increment();
    impl_->request_seconds->Add({{"verb", r.info.verb}, {"resource", resource}}, telemetry::duration_buckets_seconds()).Observe(r.seconds);
  };
}

void OperatorMetrics::set_leader(bool leading) { impl_->leader->Set(leading ? 1 : 0); }

void OperatorMetrics::set_snapshot_source(std::function<ControllerSnapshot()> source) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->source = std::move(source);
}

void OperatorMetrics::refresh() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  if (!m.source) return;
  const ControllerSnapshot snap = m.source();
  m.queue_depth->Set(static_cast<double>(snap.queue_depth));
  m.synced->Set(snap.synced ? 1 : 0);
  for (const auto& p : known_phases()) {
    const auto it = snap.jobs_by_phase.find(p);
    m.jobs->Add({{"phase", p}}).Set(it == snap.jobs_by_phase.end() ? 0.0 : static_cast<double>(it->second));
  }
  for (const auto& [phase, n] : snap.jobs_by_phase) {
    if (known_phases().count(phase) == 0) m.jobs->Add({{"phase", phase}}).Set(static_cast<double>(n));
  }
  for (const auto& [resource, now] : snap.informers) {
    auto& before = m.last[resource];
    const auto restarts = [](std::uint64_t watches) { return watches > 0 ? watches - 1 : 0; };
    auto& restart_counter = m.watch_restarts->Add({{"resource", resource}});
    if (restarts(now.watches) > restarts(before.watches)) {
      restart_counter.Increment(static_cast<double>(restarts(now.watches) - restarts(before.watches)));
    }
    auto& relist_counter = m.relists->Add({{"resource", resource}});
    if (now.relists > before.relists) relist_counter.Increment(static_cast<double>(now.relists - before.relists));
    m.cached_objects->Add({{"resource", resource}}).Set(static_cast<double>(now.objects));
    before = now;
  }
}

std::shared_ptr<prometheus::Registry> OperatorMetrics::registry() const { return impl_->registry; }

}  // namespace trainbench::op
