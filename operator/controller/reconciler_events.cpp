// Part of reconcile() (reconciler_internal.hpp): the job's Events (core/v1), each named by the
// transition it reports so that a repeated decision creates none twice.
#include "core/report/report_notes.hpp"
#include "core/report/straggler.hpp"
#include "operator/controller/reconciler_internal.hpp"

namespace trainbench::op::reconcile_detail {

namespace {

json event(const JobContext& job, const std::string& type, const std::string& reason, const std::string& message,
           const std::string& now, const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", name}, {"namespace", job.namespace_}}},
          {"involvedObject",
           {{"apiVersion", "trainbench.dev/v1alpha1"}, {"kind", "BenchmarkJob"}, {"name", job.name},
            {"namespace", job.namespace_}, {"uid", job.uid}}},
          {"type", type},
          {"reason", reason},
          {"message", message},
          {"firstTimestamp", now},
          {"lastTimestamp", now},
          {"count", 1},
          {"source", {{"component", kManagedBy}}},
          {"reportingComponent", kManagedBy}};
}

/// Stragglers a Stragglers Event names (lowest score first; its message stays well under the
/// 1 KiB Kubernetes' own recorders keep): status and the result ConfigMap name the rest.
constexpr std::size_t kStragglersNamedInEvent = 5;

}  // namespace

/// A finished job's runs below spec.benchmark.efficiencyTarget, and its noisy runs: one
/// Warning Event each (BelowTarget, Noisy), as a job that ends is decided once.
void Reconcile::emit_verdicts() {
  if (!status_.report) return;
  constexpr std::size_t kMaxEventMessage = 1024;  // events.k8s.io's note limit
  auto cut = [](std::string s) {
    return s.size() > kMaxEventMessage ? s.substr(0, kMaxEventMessage - 3) + "..." : s;
  };
  const std::string below = below_target_summary(*status_.report);
  if (!below.empty()) emit("Warning", "BelowTarget", cut(below), "");
  const std::string noisy = noisy_summary(*status_.report);
  if (!noisy.empty()) emit("Warning", "Noisy", cut(noisy), "");
}

/// A Warning Event naming a succeeded run's stragglers (core/report/straggler.hpp), if it has any.
void Reconcile::warn_of_stragglers(int index, const RunStatus& rs) {
  if (!rs.summary || !rs.summary->stragglers || rs.summary->stragglers->count == 0) return;
  emit("Warning", "Stragglers",
       "run " + std::to_string(index) + " (" + rs.label +
           "): " + straggler_line(*rs.summary->stragglers, kStragglersNamedInEvent),
       run_key(index, -1));
}

/// Records a transition's Event under a name derived from the transition itself (job uid,
/// reason, run, attempt, generation: transition_event_name), never from the clock. The Event is created
/// before the status write that records the transition; a leader killed between the two
/// leaves it behind, the next one decides the same transition again and its create of the same
/// name answers 409 AlreadyExists, a no-op: one Event per transition.
void Reconcile::emit(const std::string& type, const std::string& reason, const std::string& message,
                     const std::string& key) {
  d_.actions.push_back(
      {Action::Verb::Event,
       "events",
       "",
       event(job_, type, reason, message, now_, transition_event_name(job_.name, job_.uid, reason, key)),
       "",
       {}});
}

}  // namespace trainbench::op::reconcile_detail
