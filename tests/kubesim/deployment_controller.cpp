#include "deployment_controller.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>

#include "rbac.hpp"

namespace kubesim {

namespace {

const std::string kRevision = "deployment.kubernetes.io/revision";
const std::string kDesired = "deployment.kubernetes.io/desired-replicas";
const std::string kMaxReplicas = "deployment.kubernetes.io/max-replicas";
const std::string kComponent = "deployment-controller";

// What one sync works on: the Deployment, its ReplicaSets and the status it is writing.
struct Rollout {
  Api& api;
  json d;
  std::vector<json> rss;  ///< controlled by d, not being deleted; oldest first
  json status;            ///< d.status as this sync changes it
  int new_index = -1;     ///< the ReplicaSet whose template is d's, or -1
  json* new_rs() { return new_index < 0 ? nullptr : &rss[static_cast<std::size_t>(new_index)]; }
};

long long spec_replicas(const json& obj) { return obj["spec"].value("replicas", 1LL); }
long long status_int(const json& obj, const char* field) {
  return obj.value("status", json::object()).value(field, 0LL);
}

bool rolling(const json& d) {
  return d["spec"].value("strategy", json::object()).value("type", "RollingUpdate") == "RollingUpdate";
}

// ResolveFenceposts: surge rounded up, unavailable down; both 0 means unavailable 1.
std::pair<long long, long long> fenceposts(const json& d) {
  const json ru = d["spec"].value("strategy", json::object()).value("rollingUpdate", json::object());
  long long n = spec_replicas(d);
  long long surge = scaled_value(ru.value("maxSurge", json(0)), n, true);
  long long unavailable = scaled_value(ru.value("maxUnavailable", json(0)), n, false);
  if (surge == 0 && unavailable == 0) unavailable = 1;
  return {surge, unavailable};
}

long long max_surge(const json& d) { return rolling(d) ? fenceposts(d).first : 0; }

long long max_unavailable(const json& d) {
  long long n = spec_replicas(d);
  if (!rolling(d) || n == 0) return 0;
  return std::min(fenceposts(d).second, n);
}

// EqualIgnoreHash's view of a template: without the pod-template-hash label, semantically.
json template_without_hash(json tmpl) {
  if (tmpl.contains("metadata") && tmpl["metadata"].contains("labels") && tmpl["metadata"]["labels"].is_object()) {
    tmpl["metadata"]["labels"].erase(kPodTemplateHash);
  }
  return semantic_form(tmpl);
}

long long revision_of(const json& rs) {
  const json* v = json_path(rs, "metadata.annotations");
  if (!v || !v->is_object() || !v->contains(kRevision)) return 0;
  try {
    return std::stoll((*v)[kRevision].get<std::string>());
  } catch (const std::exception&) {
    return 0;
  }
}

long long max_old_revision(Rollout& r) {
  long long m = 0;
  for (std::size_t i = 0; i < r.rss.size(); ++i) {
    if (static_cast<int>(i) != r.new_index) m = std::max(m, revision_of(r.rss[i]));
  }
  return m;
}

long long sum_of(const Rollout& r, const std::function<long long(const json&)>& f) {
  long long s = 0;
  for (const auto& rs : r.rss) s += f(rs);
  return s;
}

// ---------- conditions ----------

json new_condition(const std::string& type, const std::string& status, const std::string& reason,
                   const std::string& message) {
  const std::string now = now_rfc3339();
  return {{"type", type},     {"status", status},  {"lastUpdateTime", now}, {"lastTransitionTime", now},
          {"reason", reason}, {"message", message}};
}

void remove_condition(json& status, const std::string& type) {
  if (!status.contains("conditions") || !status["conditions"].is_array()) return;
  json kept = json::array();
  for (const auto& c : status["conditions"]) {
    if (c.value("type", "") != type) kept.push_back(c);
  }
  status["conditions"] = kept;
}

// SetDeploymentCondition: same status and reason: unchanged; same status: keeps the transition time.
void set_condition(json& status, json cond) {
  const std::string type = cond["type"];
  const json* cur = find_condition(status, type);
  if (cur && (*cur)["status"] == cond["status"] && (*cur)["reason"] == cond["reason"]) return;
  if (cur && (*cur)["status"] == cond["status"]) cond["lastTransitionTime"] = (*cur)["lastTransitionTime"];
  remove_condition(status, type);
  if (!status.contains("conditions") || !status["conditions"].is_array()) status["conditions"] = json::array();
  status["conditions"].push_back(cond);
}

// ---------- ReplicaSets ----------

void load(Rollout& r) {
  const std::string uid = meta_field(r.d, "uid");
  for (const auto& p : r.api.store().list(kReplicaSets, meta_field(r.d, "namespace"))) {
    if (controlled_by(*p, uid) && !being_deleted(*p)) r.rss.push_back(*p);
  }
  std::stable_sort(r.rss.begin(), r.rss.end(), [](const json& a, const json& b) {
    return std::make_pair(meta_field(a, "creationTimestamp"), meta_field(a, "name")) <
           std::make_pair(meta_field(b, "creationTimestamp"), meta_field(b, "name"));
  });
  const json want = template_without_hash(r.d["spec"].value("template", json::object()));
  for (std::size_t i = 0; i < r.rss.size(); ++i) {
    if (template_without_hash(r.rss[i]["spec"].value("template", json::object())) == want) {
      r.new_index = static_cast<int>(i);
      break;
    }
  }
}

// The Deployment's annotations a ReplicaSet carries (SetNewReplicaSetAnnotations' copy).
void copy_annotations(const json& d, json& annotations) {
  const json* from = json_path(d, "metadata.annotations");
  if (!from || !from->is_object()) return;
  for (auto it = from->begin(); it != from->end(); ++it) {
    const std::string& k = it.key();
    if (k == kRevision || k == kDesired || k == kMaxReplicas ||
        k == "kubectl.kubernetes.io/last-applied-configuration" || k == "deployment.kubernetes.io/revision-history" ||
        k == "deprecated.deployment.rollback.to") {
      continue;
    }
    annotations[k] = it.value();
  }
}

void scaled_event(Rollout& r, const std::string& rs_name, long long from, long long to) {
  r.api.record_event(r.d, "Normal", "ScalingReplicaSet",
                     std::string(to > from ? "Scaled up" : "Scaled down") + " replica set " + rs_name + " from " +
                         std::to_string(from) + " to " + std::to_string(to),
                     kComponent);
}

// NewRSNewReplicas: how far the new ReplicaSet may grow now.
long long new_rs_new_replicas(Rollout& r, long long new_replicas) {
  long long want = spec_replicas(r.d);
  if (!rolling(r.d)) return want;
  long long current = sum_of(r, spec_replicas);
  if (r.new_index < 0) current += new_replicas;
  long long max_total = want + max_surge(r.d);
  if (current >= max_total) return new_replicas;
  return new_replicas + std::min(max_total - current, want - new_replicas);
}

json new_rs_object(Rollout& r, const std::string& hash, long long revision) {
  json tmpl = r.d["spec"]["template"];
  tmpl["metadata"]["labels"][kPodTemplateHash] = hash;
  json selector = r.d["spec"]["selector"];
  selector["matchLabels"][kPodTemplateHash] = hash;
  json annotations = json::object();
  copy_annotations(r.d, annotations);
  annotations[kRevision] = std::to_string(revision);
  annotations[kDesired] = std::to_string(spec_replicas(r.d));
  annotations[kMaxReplicas] = std::to_string(spec_replicas(r.d) + max_surge(r.d));
  json spec = {{"replicas", new_rs_new_replicas(r, 0)}, {"selector", selector}, {"template", tmpl}};
  if (r.d["spec"].contains("minReadySeconds")) spec["minReadySeconds"] = r.d["spec"]["minReadySeconds"];
  return {{"apiVersion", "apps/v1"},
          {"kind", "ReplicaSet"},
          {"metadata",
           {{"name", meta_field(r.d, "name") + "-" + hash},
            {"namespace", meta_field(r.d, "namespace")},
            {"labels", tmpl["metadata"]["labels"]},
            {"annotations", annotations},
            {"ownerReferences", json::array({controller_ref_to(r.d, "Deployment")})}}},
          {"spec", spec}};
}

// A name taken by a ReplicaSet that is not this template's: a hash collision.
void record_collision(Rollout& r) { r.status["collisionCount"] = r.status.value("collisionCount", 0LL) + 1; }

// getNewReplicaSet with createIfNotExisted: creates `<deployment>-<hash>`; false on a collision.
bool create_new(Rollout& r) {
  const json tmpl = r.d["spec"].value("template", json::object());
  const std::string hash = pod_template_hash(tmpl, r.status.value("collisionCount", -1LL));
  json rs = new_rs_object(r, hash, max_old_revision(r) + 1);
  const std::string name = rs["metadata"]["name"];
  if (ObjPtr existing = r.api.store().get(kReplicaSets, meta_field(r.d, "namespace"), name)) {
    bool ours =
        controlled_by(*existing, meta_field(r.d, "uid")) &&
        template_without_hash((*existing)["spec"].value("template", json::object())) == template_without_hash(tmpl);
    if (!ours) record_collision(r);
    return false;  // ours but being deleted, or a collision: the next sync tries again
  }
  TypePtr t = r.api.types().by_key(kReplicaSets);
  Result created = r.api.create(*t, meta_field(r.d, "namespace"), rs, admin_user(), {});
  json stored = created.object;
  r.rss.push_back(stored);
  r.new_index = static_cast<int>(r.rss.size()) - 1;
  long long n = spec_replicas(stored);
  if (n > 0) scaled_event(r, name, 0, n);
  set_condition(r.status, new_condition("Progressing", "True", "NewReplicaSetCreated",
                                        "Created new replica set \"" + name + "\""));
  return true;
}

// Writes a ReplicaSet's replicas (and the Deployment's desired/max annotations on it).
void scale(Rollout& r, json& rs, long long to) {
  const long long from = spec_replicas(rs);
  const std::string desired = std::to_string(spec_replicas(r.d));
  const std::string max_total = std::to_string(spec_replicas(r.d) + max_surge(r.d));
  ObjPtr p = r.api.mutate(kReplicaSets, meta_field(rs, "namespace"), meta_field(rs, "name"), [&](json& o) {
    if (meta_field(o, "uid") != meta_field(rs, "uid")) return false;
    if (spec_replicas(o) != to) o["metadata"]["generation"] = o["metadata"].value("generation", 1LL) + 1;
    o["spec"]["replicas"] = to;
    o["metadata"]["annotations"][kDesired] = desired;
    o["metadata"]["annotations"][kMaxReplicas] = max_total;
    return true;
  });
  if (p) rs = *p;
  if (from != to) scaled_event(r, meta_field(rs, "name"), from, to);
}

// The new ReplicaSet's revision is the highest; the Deployment's revision annotation is its.
void sync_revision(Rollout& r) {
  json* rs = r.new_rs();
  if (!rs) return;
  long long want = std::max(revision_of(*rs), max_old_revision(r) + 1);
  if (revision_of(*rs) != want) {
    ObjPtr p = r.api.mutate(kReplicaSets, meta_field(*rs, "namespace"), meta_field(*rs, "name"), [&](json& o) {
      o["metadata"]["annotations"][kRevision] = std::to_string(want);
      return true;
    });
    if (p) *rs = *p;
  }
  if (!find_condition(r.status, "Progressing")) {
    set_condition(r.status, new_condition("Progressing", "True", "FoundNewReplicaSet",
                                          "Found new replica set \"" + meta_field(*rs, "name") + "\""));
  }
}

// ---------- RollingUpdate ----------

bool reconcile_new(Rollout& r) {
  json* rs = r.new_rs();
  long long current = spec_replicas(*rs), want = spec_replicas(r.d);
  if (current == want) return false;
  long long to = current > want ? want : new_rs_new_replicas(r, current);
  if (to == current) return false;
  scale(r, *rs, to);
  return true;
}

// cleanupUnhealthyReplicas: old ReplicaSets' unavailable pods go first.
long long cleanup_unhealthy(Rollout& r, long long max_cleanup) {
  long long done = 0;
  for (std::size_t i = 0; i < r.rss.size() && done < max_cleanup; ++i) {
    json& rs = r.rss[i];
    if (static_cast<int>(i) == r.new_index || spec_replicas(rs) == 0) continue;
    long long unhealthy = spec_replicas(rs) - status_int(rs, "availableReplicas");
    if (unhealthy <= 0) continue;
    long long down = std::min(max_cleanup - done, unhealthy);
    scale(r, rs, spec_replicas(rs) - down);
    done += down;
  }
  return done;
}

// scaleDownOldReplicaSetsForRollingUpdate: keeps minAvailable available pods.
long long scale_down_old(Rollout& r) {
  long long min_available = spec_replicas(r.d) - max_unavailable(r.d);
  long long available = sum_of(r, [](const json& rs) { return status_int(rs, "availableReplicas"); });
  if (available <= min_available) return 0;
  long long total = available - min_available, done = 0;
  for (std::size_t i = 0; i < r.rss.size() && done < total; ++i) {
    json& rs = r.rss[i];
    if (static_cast<int>(i) == r.new_index || spec_replicas(rs) == 0) continue;
    long long down = std::min(spec_replicas(rs), total - done);
    scale(r, rs, spec_replicas(rs) - down);
    done += down;
  }
  return done;
}

bool reconcile_old(Rollout& r) {
  json* nrs = r.new_rs();
  long long old_count = sum_of(r, spec_replicas) - spec_replicas(*nrs);
  if (old_count == 0) return false;
  long long all = sum_of(r, spec_replicas);
  long long min_available = spec_replicas(r.d) - max_unavailable(r.d);
  long long new_unavailable = spec_replicas(*nrs) - status_int(*nrs, "availableReplicas");
  long long max_scaled_down = all - min_available - new_unavailable;
  if (max_scaled_down <= 0) return false;
  long long cleaned = cleanup_unhealthy(r, max_scaled_down);
  return cleaned + scale_down_old(r) > 0;
}

// ---------- status ----------

bool complete(const json& d, const json& status) {
  long long n = spec_replicas(d);
  return status.value("updatedReplicas", 0LL) == n && status.value("replicas", 0LL) == n &&
         status.value("availableReplicas", 0LL) == n &&
         status.value("observedGeneration", 0LL) >= d["metadata"].value("generation", 0LL);
}

json calculate_status(Rollout& r) {
  json s = {{"observedGeneration", r.d["metadata"].value("generation", 0LL)}};
  long long available = sum_of(r, [](const json& rs) { return status_int(rs, "availableReplicas"); });
  set_or_omit(s, "replicas", sum_of(r, [](const json& rs) { return status_int(rs, "replicas"); }));
  set_or_omit(s, "updatedReplicas", r.new_rs() ? status_int(*r.new_rs(), "replicas") : 0);
  set_or_omit(s, "readyReplicas", sum_of(r, [](const json& rs) { return status_int(rs, "readyReplicas"); }));
  set_or_omit(s, "availableReplicas", available);
  set_or_omit(s, "unavailableReplicas", std::max(0LL, sum_of(r, spec_replicas) - available));
  if (r.status.contains("collisionCount")) s["collisionCount"] = r.status["collisionCount"];
  if (r.status.contains("conditions")) s["conditions"] = r.status["conditions"];
  if (available >= spec_replicas(r.d) - max_unavailable(r.d)) {
    set_condition(
        s, new_condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."));
  } else {
    set_condition(s, new_condition("Available", "False", "MinimumReplicasUnavailable",
                                   "Deployment does not have minimum availability."));
  }
  return s;
}

// DeploymentProgressing: more updated, ready or available pods, or fewer old ones.
bool progressing(const json& old, const json& s) {
  auto v = [](const json& st, const char* f) { return st.value(f, 0LL); };
  return v(s, "updatedReplicas") > v(old, "updatedReplicas") ||
         v(s, "replicas") - v(s, "updatedReplicas") < v(old, "replicas") - v(old, "updatedReplicas") ||
         v(s, "readyReplicas") > v(old, "readyReplicas") || v(s, "availableReplicas") > v(old, "availableReplicas");
}

bool timed_out(const json& d, const json& s) {
  const json* c = find_condition(s, "Progressing");
  if (!c) return false;
  std::string reason = c->value("reason", "");
  if (reason == "NewReplicaSetAvailable") return false;
  if (reason == "ProgressDeadlineExceeded") return true;
  long long deadline = d["spec"].value("progressDeadlineSeconds", 600LL);
  return parse_rfc3339(c->value("lastUpdateTime", "")) + std::chrono::seconds(deadline) < Clock::now();
}

void update_progress(Rollout& r, json& s) {
  const json* cur = find_condition(r.status, "Progressing");
  bool was_complete = s.value("replicas", 0LL) == s.value("updatedReplicas", 0LL) && cur &&
                      cur->value("reason", "") == "NewReplicaSetAvailable";
  if (was_complete) return;
  const std::string subject = r.new_rs() ? "ReplicaSet \"" + meta_field(*r.new_rs(), "name") + "\""
                                         : "Deployment \"" + meta_field(r.d, "name") + "\"";
  if (complete(r.d, s)) {
    set_condition(
        s, new_condition("Progressing", "True", "NewReplicaSetAvailable", subject + " has successfully progressed."));
  } else if (progressing(r.status, s)) {
    json c = new_condition("Progressing", "True", "ReplicaSetUpdated", subject + " is progressing.");
    const json* now_cur = find_condition(s, "Progressing");
    if (now_cur && now_cur->value("status", "") == "True") c["lastTransitionTime"] = (*now_cur)["lastTransitionTime"];
    remove_condition(s, "Progressing");
    set_condition(s, c);
  } else if (timed_out(r.d, s)) {
    set_condition(
        s, new_condition("Progressing", "False", "ProgressDeadlineExceeded", subject + " has timed out progressing."));
  }
}

// syncRolloutStatus, and the Deployment's revision annotation.
void write_status(Rollout& r) {
  json s = calculate_status(r);
  if (r.d["spec"].contains("progressDeadlineSeconds")) {
    update_progress(r, s);
  } else {
    remove_condition(s, "Progressing");
  }
  if (s.contains("conditions") && s["conditions"].empty()) s.erase("conditions");
  const std::string revision = r.new_rs() ? std::to_string(revision_of(*r.new_rs())) : "";
  r.api.mutate(kDeployments, meta_field(r.d, "namespace"), meta_field(r.d, "name"), [&](json& o) {
    if (meta_field(o, "uid") != meta_field(r.d, "uid")) return false;
    o["status"] = s;
    if (!revision.empty() && revision != "0") o["metadata"]["annotations"][kRevision] = revision;
    return true;
  });
}

// cleanupDeployment: old ReplicaSets beyond revisionHistoryLimit that run nothing are deleted.
void cleanup_history(Rollout& r) {
  if (!r.d["spec"].contains("revisionHistoryLimit")) return;
  std::vector<json*> old;
  for (std::size_t i = 0; i < r.rss.size(); ++i) {
    if (static_cast<int>(i) != r.new_index) old.push_back(&r.rss[i]);
  }
  long long excess = static_cast<long long>(old.size()) - r.d["spec"].value("revisionHistoryLimit", 10LL);
  if (excess <= 0) return;
  std::stable_sort(old.begin(), old.end(),
                   [](const json* a, const json* b) { return revision_of(*a) < revision_of(*b); });
  for (long long i = 0; i < excess; ++i) {
    const json& rs = *old[static_cast<std::size_t>(i)];
    if (status_int(rs, "replicas") != 0 || spec_replicas(rs) != 0 ||
        rs["metadata"].value("generation", 0LL) > status_int(rs, "observedGeneration")) {
      continue;
    }
    r.api.delete_internal(kReplicaSets, meta_field(rs, "namespace"), meta_field(rs, "name"));
  }
}

// ---------- strategies ----------

void rollout_rolling(Rollout& r) {
  if (!r.new_rs() && !create_new(r)) return write_status(r);
  sync_revision(r);
  if (reconcile_new(r) || reconcile_old(r)) return write_status(r);
  if (complete(r.d, r.status)) cleanup_history(r);
  write_status(r);
}

// oldPodsRunning: an old ReplicaSet still has pods that have not finished (terminating included).
bool old_pods_running(Rollout& r) {
  for (std::size_t i = 0; i < r.rss.size(); ++i) {
    if (static_cast<int>(i) == r.new_index) continue;
    if (status_int(r.rss[i], "replicas") > 0) return true;
    for (const auto& p : r.api.store().list("pods", meta_field(r.d, "namespace"))) {
      if (!controlled_by(*p, meta_field(r.rss[i], "uid"))) continue;
      const std::string phase = (*p).value("status", json::object()).value("phase", "");
      if (phase != "Succeeded" && phase != "Failed") return true;
    }
  }
  return false;
}

void rollout_recreate(Rollout& r) {
  bool scaled_down = false;
  for (std::size_t i = 0; i < r.rss.size(); ++i) {
    if (static_cast<int>(i) == r.new_index || spec_replicas(r.rss[i]) == 0) continue;
    scale(r, r.rss[i], 0);
    scaled_down = true;
  }
  if (scaled_down || old_pods_running(r)) return write_status(r);
  if (!r.new_rs() && !create_new(r)) return write_status(r);
  sync_revision(r);
  if (spec_replicas(*r.new_rs()) != spec_replicas(r.d)) scale(r, *r.new_rs(), spec_replicas(r.d));
  if (complete(r.d, r.status)) cleanup_history(r);
  write_status(r);
}

}  // namespace

std::string pod_template_hash(const json& pod_template, long long collision_count) {
  std::uint32_t h = 2166136261u;
  auto feed = [&h](unsigned char c) {
    h ^= c;
    h *= 16777619u;
  };
  for (unsigned char c : pod_template.dump()) feed(c);
  if (collision_count >= 0) {
    auto n = static_cast<std::uint32_t>(collision_count);
    for (int i = 0; i < 8; ++i) feed(i < 4 ? static_cast<unsigned char>((n >> (8 * i)) & 0xff) : 0);
  }
  static const std::string alphanums = "bcdfghjklmnpqrstvwxz2456789";
  std::string out;
  for (char c : std::to_string(h)) out += alphanums[static_cast<std::size_t>(c) % alphanums.size()];
  return out;
}

void DeploymentController::route(const WatchEvent& ev, std::set<ObjectRef>& dirty) {
  if (ev.ref.key == kDeployments) {
    dirty.insert(ev.ref);
    return;
  }
  if (ev.ref.key != kReplicaSets) return;
  for (const ObjPtr& p : {ev.object, ev.old}) {
    if (!p) continue;
    const json* ref = controller_ref(*p);
    if (ref && ref->value("kind", "") == "Deployment") dirty.insert({kDeployments, ev.ref.ns, ref->value("name", "")});
  }
}

void DeploymentController::sync(const ObjectRef& ref) {
  ObjPtr p = api_.store().get(kDeployments, ref.ns, ref.name);
  if (!p) return;
  Rollout r{api_, *p, {}, p->value("status", json::object()), -1};
  load(r);
  if (being_deleted(r.d) || r.d["spec"].value("paused", false)) return write_status(r);
  if (rolling(r.d)) {
    rollout_rolling(r);
  } else {
    rollout_recreate(r);
  }
}

}  // namespace kubesim
