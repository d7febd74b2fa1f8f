#include "operator/controller/kueue_workload.hpp"

#include <cstdint>
#include <algorithm>
#include <cstdio>

#include "operator/controller/json_access.hpp"
#include "operator/controller/naming.hpp"

namespace trainbench::op {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxNameLength = 63;
constexpr std::size_t kHashLength = 5;

/// FNV-1a, 64 bits: a stable hash for names (no security rests on it).
std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

/// j[key] as a string when it is one, else "".
std::string str_or(const json& j, const char* key) {
  const json v = get_or(j, key, "");
  return v.is_string() ? v.get<std::string>() : "";
}

/// The condition of `type` in a Workload's status (a pointer into `workload`), or null.
const json* condition(const json& workload, const std::string& type) {
  if (!workload.is_object() || !workload.contains("status") || !workload["status"].is_object()) return nullptr;
  const json& status = workload["status"];
  if (!status.contains("conditions") || !status["conditions"].is_array()) return nullptr;
  for (const auto& c : status["conditions"]) {
    if (c.is_object() && str_or(c, "type") == type) return &c;
  }
  return nullptr;
}

bool is_true(const json* c) { return c != nullptr && str_or(*c, "status") == "True"; }

std::string message_of(const json* c) { return c == nullptr ? "" : str_or(*c, "message"); }

/// The Workload's conditions with `c` set (replacing one of its type; lastTransitionTime kept
/// when the status did not change).
json with_condition(json conditions, json c) {
  if (!conditions.is_array()) conditions = json::array();
  for (auto& old : conditions) {
    if (!old.is_object() || str_or(old, "type") != c["type"]) continue;
    if (str_or(old, "status") == c["status"]) c["lastTransitionTime"] = get_or(old, "lastTransitionTime", c["lastTransitionTime"]);
    old = std::move(c);
    return conditions;
  }
  conditions.push_back(std::move(c));
  return conditions;
}

json workload_condition(const std::string& type, bool status, const std::string& reason, const std::string& message,
                        const std::string& now, std::int64_t generation) {
  return {{"type", type},
          {"status", status ? "True" : "False"},
          {"reason", reason},
          {"message", message.substr(0, 32768)},
          {"lastTransitionTime", now},
          {"observedGeneration", generation}};
}

std::int64_t generation_of(const json& workload) {
  const json g = get_or(get_or(workload, "metadata", json::object()), "generation", 1);
  return g.is_number_integer() ? g.get<std::int64_t>() : 1;
}

json status_patch(const json& workload, json status) {
  return {{"metadata", {{"resourceVersion", str_or(get_or(workload, "metadata", json::object()), "resourceVersion")}}},
          {"status", std::move(status)}};
}

/// A pod set's template: the pod's labels and spec (what Kueue reads: containers' requests,
/// node selector, tolerations, affinity).
json template_of(const json& pod) {
  return {{"metadata", {{"labels", get_or(get_or(pod, "metadata", json::object()), "labels", json::object())}}},
          {"spec", get_or(pod, "spec", json::object())}};
}

}  // namespace

std::string queue_name_of(const json& job_object) {
  return str_or(get_or(get_or(job_object, "metadata", json::object()), "labels", json::object()), kQueueNameLabel);
}

std::string workload_name(const std::string& job, const std::string& uid) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(fnv1a("BenchmarkJob\ntrainbench.dev\n" + job + "\n" + uid)));
  std::string prefix = "benchmarkjob-" + job;
  prefix.resize(std::min(prefix.size(), kMaxNameLength - 1 - kHashLength));
  while (!prefix.empty() && (prefix.back() == '-' || prefix.back() == '.')) prefix.pop_back();
  return prefix + "-" + std::string(hash + 16 - kHashLength, kHashLength);  // the low bits: they mix every byte
}

json workload(const JobContext& job, const std::string& queue, const std::vector<PodSetShape>& pod_sets,
              const std::optional<std::string>& priority_class, std::optional<int> priority) {
  json sets = json::array();
  for (const auto& s : pod_sets) {
    if (s.count > 0) sets.push_back({{"name", s.name}, {"count", s.count}, {"template", template_of(s.pod)}});
  }
  // kueue.x-k8s.io/job-uid: what Kueue's own integrations set, and what its eviction messages name.
  json labels = {{kJobLabel, job.name}, {"app.kubernetes.io/managed-by", kManagedBy}, {"kueue.x-k8s.io/job-uid", job.uid}};
  if (priority_class) labels[kPriorityClassLabel] = *priority_class;
  json wl = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
             {"kind", "Workload"},
             {"metadata",
              {{"name", workload_name(job.name, job.uid)},
               {"namespace", job.namespace_},
               {"labels", labels},
               {"ownerReferences", json::array({owner_reference(job)})}}},
             {"spec", {{"queueName", queue}, {"podSets", sets}}}};
  if (priority_class && priority) {
    wl["spec"]["priorityClassRef"] = {
        {"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", *priority_class}};
    wl["spec"]["priority"] = *priority;
  }
  return wl;
}

AdmissionState admission_of(const json& workload) {
  AdmissionState s;
  s.quota_reserved = !get_or(get_or(workload, "status", json::object()), "admission", nullptr).is_null();
  const json* finished = condition(workload, "Finished");
  const json* evicted = condition(workload, "Evicted");
  const json* admitted = condition(workload, "Admitted");
  const json* reserved = condition(workload, "QuotaReserved");
  if (is_true(finished)) {
    s.admission = Admission::kFinished;
    s.message = message_of(finished);
  } else if (is_true(evicted)) {
    s.admission = Admission::kEvicted;
    s.message = message_of(evicted);
  } else if (is_true(admitted)) {
    s.admission = Admission::kAdmitted;
    s.message = message_of(admitted);
  } else {
    s.message = message_of(reserved != nullptr ? reserved : admitted);
  }
  return s;
}

json give_back_quota_patch(const json& workload, const std::string& now) {
  const std::int64_t gen = generation_of(workload);
  const json* evicted = condition(workload, "Evicted");
  const std::string reason = evicted == nullptr ? "" : str_or(*evicted, "reason");
  const std::string message = message_of(evicted);
  // As Kueue's jobframework: requeued (back in the queue at once) after a preemption or a node
  // failure; otherwise Kueue decides when (e.g. its backoff after a PodsReady timeout).
  const bool requeued = reason == "Preempted" || reason == "NodeFailures";
  json conditions = get_or(get_or(workload, "status", json::object()), "conditions", json::array());
  conditions = with_condition(std::move(conditions), workload_condition("QuotaReserved", false, "Pending", message, now, gen));
  conditions = with_condition(std::move(conditions), workload_condition("Admitted", false, "NoReservation",
                                                                        "The workload has no reservation", now, gen));
  conditions = with_condition(std::move(conditions), workload_condition("Requeued", requeued,
                                                                        reason.empty() ? "Pending" : reason, message, now, gen));
  return status_patch(workload, {{"admission", nullptr}, {"conditions", conditions}});
}

json finished_patch(const json& workload, bool succeeded, const std::string& message, const std::string& now) {
  json conditions = get_or(get_or(workload, "status", json::object()), "conditions", json::array());
  conditions = with_condition(std::move(conditions), workload_condition("Finished", true,
                                                                        succeeded ? "Succeeded" : "Failed", message,
                                                                        now, generation_of(workload)));
  return status_patch(workload, {{"conditions", conditions}});
}

}  // namespace trainbench::op
