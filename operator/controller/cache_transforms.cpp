#include "operator/controller/cache_transforms.hpp"

namespace trainbench::op {
namespace {

using nlohmann::json;

void copy_fields(const json& from, json& to, std::initializer_list<const char*> keys) {
  if (!from.is_object()) return;
  for (const char* k : keys) {
    auto it = from.find(k);
    if (it != from.end()) to[k] = *it;
  }
}

json with_type_and_metadata(const json& object) {
  json out = json::object();
  copy_fields(object, out, {"apiVersion", "kind"});
  out["metadata"] = slim_metadata(object);
  return out;
}

}  // namespace

json slim_metadata(const json& object) {
  json md = json::object();
  if (object.is_object() && object.contains("metadata")) {
    copy_fields(object["metadata"], md,
                {"name", "namespace", "uid", "resourceVersion", "generation", "labels", "deletionTimestamp"});
  }
  return md;
}

json slim_pod(json pod) {
  json out = with_type_and_metadata(pod);
  const json* spec = pod.is_object() && pod.contains("spec") ? &pod["spec"] : nullptr;
  if (spec && spec->is_object() && spec->contains("nodeName")) out["spec"] = {{"nodeName", (*spec)["nodeName"]}};
  const json& st = pod.is_object() && pod.contains("status") ? pod["status"] : json();
  if (!st.is_object()) return out;
  json status = json::object();
  copy_fields(st, status, {"phase", "reason", "message", "conditions", "podIP"});
  if (st.contains("containerStatuses") && st["containerStatuses"].is_array()) {
    json cs = json::array();
    for (const auto& c : st["containerStatuses"]) {
      json slim = json::object();
      copy_fields(c, slim, {"name", "state", "restartCount"});
      cs.push_back(std::move(slim));
    }
    status["containerStatuses"] = std::move(cs);
  }
  out["status"] = std::move(status);
  return out;
}

json slim_node(json node) {
  json out = with_type_and_metadata(node);
  const json& st = node.is_object() && node.contains("status") ? node["status"] : json();
  if (!st.is_object() || !st.contains("conditions") || !st["conditions"].is_array()) return out;
  for (const auto& c : st["conditions"]) {
    if (c.is_object() && c.value("type", "") == "Ready") out["status"]["conditions"] = json::array({c});
  }
  return out;
}

json slim_config_map(json config_map) {
  json out = with_type_and_metadata(config_map);
  if (config_map.is_object() && config_map.contains("data")) out["data"] = std::move(config_map["data"]);
  return out;
}

json slim_workload(json workload) {
  json out = with_type_and_metadata(workload);
  const json& st = workload.is_object() && workload.contains("status") ? workload["status"] : json();
  if (!st.is_object()) return out;
  json status = json::object();
  copy_fields(st, status, {"conditions", "admission"});
  out["status"] = std::move(status);
  return out;
}

json slim_object(json object) { return with_type_and_metadata(object); }

}  // namespace trainbench::op
