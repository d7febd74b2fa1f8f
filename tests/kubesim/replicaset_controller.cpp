#include "replicaset_controller.hpp"

#include <algorithm>
#include <tuple>

#include "rbac.hpp"

namespace kubesim {

namespace {

// The pod a ReplicaSet creates from its template (controller.GetPodFromTemplate).
json pod_from_template(const json& rs) {
  const json tmpl = rs["spec"].value("template", json::object());
  const json tmeta = tmpl.value("metadata", json::object());
  json m = {{"generateName", meta_field(rs, "name") + "-"},
            {"ownerReferences", json::array({controller_ref_to(rs, "ReplicaSet")})}};
  for (const char* f : {"labels", "annotations", "finalizers"}) {
    if (tmeta.contains(f)) m[f] = tmeta[f];
  }
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", m}, {"spec", tmpl.value("spec", json::object())}};
}

// controller.ActivePods' order: the pod to delete first sorts first.
std::tuple<int, int, int, long long, std::string> deletion_rank(const json& pod) {
  const json st = pod.value("status", json::object());
  int assigned = pod.value("spec", json::object()).value("nodeName", "").empty() ? 0 : 1;
  std::string phase = st.value("phase", "");
  int phase_rank = phase == "Pending" ? 0 : phase == "Running" ? 2 : 1;
  int ready = pod_ready(pod) ? 1 : 0;
  long long restarts = 0;
  for (const auto& cs : st.value("containerStatuses", json::array())) restarts += cs.value("restartCount", 0LL);
  return {assigned, phase_rank, ready, -restarts, meta_field(pod, "creationTimestamp")};
}

void set_failure_condition(json& status, const std::string& message, const json& old_status) {
  if (message.empty()) return;
  json cond = {{"type", "ReplicaFailure"},
               {"status", "True"},
               {"reason", "FailedCreate"},
               {"message", message},
               {"lastTransitionTime", now_rfc3339()}};
  const json* old = find_condition(old_status, "ReplicaFailure");
  if (old && old->value("status", "") == "True") cond["lastTransitionTime"] = (*old)["lastTransitionTime"];
  status["conditions"] = json::array({cond});
}

}  // namespace

void ReplicaSetController::route(const WatchEvent& ev, std::set<ObjectRef>& dirty) {
  if (ev.ref.key == kReplicaSets) {
    dirty.insert(ev.ref);
    return;
  }
  if (ev.ref.key != "pods") return;
  for (const ObjPtr& p : {ev.object, ev.old}) {
    if (!p) continue;
    const json* ref = controller_ref(*p);
    if (ref && ref->value("kind", "") == "ReplicaSet") dirty.insert({kReplicaSets, ev.ref.ns, ref->value("name", "")});
  }
}

std::vector<ObjPtr> ReplicaSetController::active_pods(const json& rs) {
  std::vector<ObjPtr> out;
  const std::string uid = meta_field(rs, "uid");
  for (const auto& p : api_.store().list("pods", meta_field(rs, "namespace"))) {
    if (controlled_by(*p, uid) && pod_active(*p)) out.push_back(p);
  }
  return out;
}

void ReplicaSetController::create_pods(const json& rs, long long count) {
  TypePtr pods = api_.types().by_key("pods");
  const std::string uid = meta_field(rs, "uid");
  for (long long i = 0; i < std::min(count, 500LL); ++i) {
    try {
      Result r = api_.create(*pods, meta_field(rs, "namespace"), pod_from_template(rs), admin_user(), {});
      failures_.erase(uid);
      api_.record_event(rs, "Normal", "SuccessfulCreate", "Created pod: " + r.object["metadata"].value("name", ""),
                        "replicaset-controller");
    } catch (const ApiError& e) {
      const std::string message = e.message();
      if (failures_[uid] != message) {
        api_.record_event(rs, "Warning", "FailedCreate", "Error creating: " + message, "replicaset-controller");
      }
      failures_[uid] = message;
      return;
    }
  }
}

void ReplicaSetController::delete_pods(const json& rs, std::vector<ObjPtr> active, long long count) {
  std::stable_sort(active.begin(), active.end(), [](const ObjPtr& a, const ObjPtr& b) {
    auto ra = deletion_rank(*a), rb = deletion_rank(*b);
    if (std::get<0>(ra) != std::get<0>(rb)) return std::get<0>(ra) < std::get<0>(rb);
    if (std::get<1>(ra) != std::get<1>(rb)) return std::get<1>(ra) < std::get<1>(rb);
    if (std::get<2>(ra) != std::get<2>(rb)) return std::get<2>(ra) < std::get<2>(rb);
    if (std::get<3>(ra) != std::get<3>(rb)) return std::get<3>(ra) < std::get<3>(rb);
    return std::get<4>(ra) > std::get<4>(rb);  // newer first
  });
  for (long long i = 0; i < count && i < static_cast<long long>(active.size()); ++i) {
    const std::string name = meta_field(*active[i], "name");
    if (api_.delete_internal("pods", meta_field(rs, "namespace"), name)) {
      api_.record_event(rs, "Normal", "SuccessfulDelete", "Deleted pod: " + name, "replicaset-controller");
    }
  }
}

json ReplicaSetController::compute_status(const json& rs) {
  const json spec = rs.value("spec", json::object());
  const json template_labels =
      spec.value("template", json::object()).value("metadata", json::object()).value("labels", json::object());
  const long long min_ready = spec.value("minReadySeconds", 0LL);
  const auto now = Clock::now();
  long long replicas = 0, labeled = 0, ready = 0, available = 0;
  for (const auto& p : active_pods(rs)) {
    ++replicas;
    const json labels = (*p)["metadata"].value("labels", json::object());
    bool full = true;
    for (auto it = template_labels.begin(); it != template_labels.end(); ++it)
      full = full && labels.value(it.key(), json()) == it.value();
    if (full) ++labeled;
    if (pod_ready(*p)) ++ready;
    if (pod_available(*p, min_ready, now)) ++available;
  }
  json status = {{"replicas", replicas}};
  set_or_omit(status, "fullyLabeledReplicas", labeled);
  set_or_omit(status, "readyReplicas", ready);
  set_or_omit(status, "availableReplicas", available);
  set_or_omit(status, "observedGeneration", rs["metadata"].value("generation", 0LL));
  auto f = failures_.find(meta_field(rs, "uid"));
  set_failure_condition(status, f == failures_.end() ? "" : f->second, rs.value("status", json::object()));
  return status;
}

void ReplicaSetController::sync(const ObjectRef& ref) {
  ObjPtr p = api_.store().get(kReplicaSets, ref.ns, ref.name);
  if (!p) return;
  const json rs = *p;
  if (!being_deleted(rs)) {
    auto active = active_pods(rs);
    long long diff = static_cast<long long>(active.size()) - rs["spec"].value("replicas", 1LL);
    if (diff < 0) create_pods(rs, -diff);
    if (diff > 0) delete_pods(rs, active, diff);
  }
  json status = compute_status(rs);
  api_.mutate(kReplicaSets, ref.ns, ref.name, [&](json& obj) {
    if (meta_field(obj, "uid") != meta_field(rs, "uid")) return false;
    obj["status"] = status;
    return true;
  });
}

}  // namespace kubesim
