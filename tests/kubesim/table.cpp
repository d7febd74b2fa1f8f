#include "table.hpp"

#include <cstdint>
#include <functional>
#include <sstream>

#include "workloads.hpp"

namespace kubesim {

namespace {

json col(const std::string& name, const std::string& type, const std::string& format, const std::string& desc,
         int priority = 0) {
  return {{"name", name}, {"type", type}, {"format", format}, {"description", desc}, {"priority", priority}};
}

const char* kNameDesc =
    "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a "
    "client to request the generation of an appropriate name automatically. Name is primarily intended for creation "
    "idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const char* kAgeDesc =
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed "
    "to be set in happens-before order across separate operations. Clients may not set this value. It is represented "
    "in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

std::string s(const json& obj, const std::string& path) {
  const json* v = json_path(obj, path);
  if (!v || v->is_null()) return "";
  return v->is_string() ? v->get<std::string>() : v->dump();
}

std::string age(const json& obj) { return age_of(s(obj, "metadata.creationTimestamp")); }

json pod_row(const json& p) {
  const json status = p.value("status", json::object());
  const json spec = p.value("spec", json::object());
  std::size_t total = spec.value("containers", json::array()).size();
  std::size_t ready = 0;
  long long restarts = 0;
  std::string reason = status.value("phase", "");
  if (status.contains("reason")) reason = status["reason"];
  for (const auto& cs : status.value("containerStatuses", json::array())) {
    if (cs.value("ready", false)) ++ready;
    restarts += cs.value("restartCount", 0LL);
    const json state = cs.value("state", json::object());
    if (state.contains("waiting") && !state["waiting"].value("reason", "").empty()) {
      reason = state["waiting"]["reason"];
    } else if (state.contains("terminated")) {
      std::string r = state["terminated"].value("reason", "");
      if (r.empty()) {
        r = state["terminated"].contains("signal") ? "Signal:" + state["terminated"]["signal"].dump()
                                                   : "ExitCode:" + state["terminated"].value("exitCode", json(0)).dump();
      }
      reason = r;
    }
  }
  if (reason == "Running" || reason.empty()) reason = status.value("phase", "Pending");
  for (const auto& cs : status.value("initContainerStatuses", json::array())) {
    const json state = cs.value("state", json::object());
    if (state.contains("terminated") && state["terminated"].value("exitCode", 0) == 0) continue;
    if (state.contains("running") || state.contains("waiting")) {
      reason = "Init:0/" + std::to_string(spec.value("initContainers", json::array()).size());
    } else if (state.contains("terminated")) {
      reason = "Init:" + state["terminated"].value("reason", std::string("Error"));
    }
    break;
  }
  if (p["metadata"].contains("deletionTimestamp") && !p["metadata"]["deletionTimestamp"].is_null()) reason = "Terminating";
  std::string node = spec.value("nodeName", "<none>");
  std::string ip = status.value("podIP", "<none>");
  return json::array({p["metadata"].value("name", ""), std::to_string(ready) + "/" + std::to_string(total), reason,
                      std::to_string(restarts), age(p), ip, node, "<none>", "<none>"});
}

std::string ports_of(const json& spec) {
  std::string out;
  for (const auto& p : spec.value("ports", json::array())) {
    if (!out.empty()) out += ",";
    out += p.value("port", json(0)).dump() + "/" + p.value("protocol", "TCP");
  }
  return out.empty() ? "<none>" : out;
}

std::string selector_of(const json& spec) {
  std::string out;
  const json sel = spec.value("selector", json::object());
  for (auto it = sel.begin(); it != sel.end(); ++it) {
    if (!out.empty()) out += ",";
    out += it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  }
  return out.empty() ? "<none>" : out;
}

struct Layout {
  json columns;
  std::function<json(const json&)> row;
};

// layoutContainerCells: the template's container names and images, comma-separated.
std::pair<std::string, std::string> container_cells(const json& workload) {
  std::string names, images;
  const json* cs = json_path(workload, "spec.template.spec.containers");
  if (cs && cs->is_array()) {
    for (const auto& c : *cs) {
      names += (names.empty() ? "" : ",") + c.value("name", "");
      images += (images.empty() ? "" : ",") + c.value("image", "");
    }
  }
  return {names, images};
}

json workload_wide_columns(const std::string& selector_desc) {
  return json::array({col("Containers", "string", "", "Names of each container in the template.", 1),
                      col("Images", "string", "", "Images referenced by each container in the template.", 1),
                      col("Selector", "string", "", selector_desc, 1)});
}

json deployment_row(const json& o) {
  auto [names, images] = container_cells(o);
  const json st = o.value("status", json::object());
  const json* sel = json_path(o, "spec.selector");
  return json::array(
      {o["metadata"].value("name", ""),
       std::to_string(st.value("readyReplicas", 0LL)) + "/" + std::to_string(o["spec"].value("replicas", 1LL)),
       st.value("updatedReplicas", 0LL), st.value("availableReplicas", 0LL), age(o), names, images,
       sel ? selector_string(*sel) : ""});
}

json replicaset_row(const json& o) {
  auto [names, images] = container_cells(o);
  const json st = o.value("status", json::object());
  const json* sel = json_path(o, "spec.selector");
  return json::array({o["metadata"].value("name", ""), o["spec"].value("replicas", 1LL), st.value("replicas", 0LL),
                      st.value("readyReplicas", 0LL), age(o), names, images, sel ? selector_string(*sel) : ""});
}

// Deployments: NAME READY UP-TO-DATE AVAILABLE AGE; ReplicaSets: NAME DESIRED CURRENT READY AGE.
Layout workload_layout(const std::string& key, const json& name) {
  json cols;
  if (key == kDeployments) {
    cols = json::array(
        {name, col("Ready", "string", "", "Number of the pod with ready state"),
         col("Up-to-date", "string", "",
             "Total number of non-terminated pods targeted by this deployment that have the desired template spec."),
         col("Available", "string", "",
             "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment."),
         col("Age", "string", "", kAgeDesc)});
    for (const auto& c : workload_wide_columns("Label selector for pods. Existing ReplicaSets whose pods are selected "
                                               "by this will be the ones affected by this deployment."))
      cols.push_back(c);
    return {cols, deployment_row};
  }
  cols = json::array({name,
                      col("Desired", "integer", "",
                          "Replicas is the number of desired replicas. This is a pointer to distinguish between "
                          "explicit zero and unspecified. Defaults to 1. More info: "
                          "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/"
                          "#what-is-a-replicationcontroller"),
                      col("Current", "integer", "",
                          "Replicas is the most recently oberved number of replicas. More info: "
                          "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/"
                          "#what-is-a-replicationcontroller"),
                      col("Ready", "integer", "", "The number of ready replicas for this replica set."),
                      col("Age", "string", "", kAgeDesc)});
  for (const auto& c : workload_wide_columns(
           "Selector is a label query over pods that should match the replica count. Label keys and values that must "
           "match in order to be controlled by this replica set. It must match the pod template's labels. More info: "
           "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"))
    cols.push_back(c);
  return {cols, replicaset_row};
}

Layout layout_for(const ResourceType& t) {
  const std::string key = t.storage_key();
  json name = col("Name", "string", "name", kNameDesc);
  if (key == kDeployments || key == kReplicaSets) return workload_layout(key, name);
  if (key == "pods") {
    return {json::array({name, col("Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic."),
                         col("Status", "string", "", "The aggregate status of the containers in this pod."),
                         col("Restarts", "string", "", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
                         col("Age", "string", "", kAgeDesc),
                         col("IP", "string", "", "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.", 1),
                         col("Node", "string", "", "NodeName is a request to schedule this pod onto a specific node.", 1),
                         col("Nominated Node", "string", "", "nominatedNodeName is set only when this pod preempts other pods on the node.", 1),
                         col("Readiness Gates", "string", "", "If specified, all readiness gates will be evaluated for pod readiness.", 1)}),
            pod_row};
  }
  if (key == "services") {
    return {json::array({name, col("Type", "string", "", "type determines how the Service is exposed."),
                         col("Cluster-IP", "string", "", "clusterIP is the IP address of the service."),
                         col("External-IP", "string", "", "externalIPs is a list of IP addresses."),
                         col("Port(s)", "string", "", "The list of ports that are exposed by this service."),
                         col("Age", "string", "", kAgeDesc),
                         col("Selector", "string", "", "Route service traffic to pods with label keys and values matching this selector.", 1)}),
            [](const json& o) {
              const json spec = o.value("spec", json::object());
              return json::array({o["metadata"].value("name", ""), spec.value("type", "ClusterIP"),
                                  spec.value("clusterIP", "<none>"), "<none>", ports_of(spec), age(o), selector_of(spec)});
            }};
  }
  if (key == "namespaces") {
    return {json::array({name, col("Status", "string", "", "The status of the namespace"), col("Age", "string", "", kAgeDesc)}),
            [](const json& o) { return json::array({o["metadata"].value("name", ""), s(o, "status.phase"), age(o)}); }};
  }
  if (key == "configmaps") {
    return {json::array({name, col("Data", "integer", "", "Data contains the configuration data."), col("Age", "string", "", kAgeDesc)}),
            [](const json& o) {
              return json::array({o["metadata"].value("name", ""),
                                  o.value("data", json::object()).size() + o.value("binaryData", json::object()).size(), age(o)});
            }};
  }
  if (key == "secrets") {
    return {json::array({name, col("Type", "string", "", "The type of the secret"),
                         col("Data", "string", "", "The number of entries in the secret"), col("Age", "string", "", kAgeDesc)}),
            [](const json& o) {
              return json::array({o["metadata"].value("name", ""), o.value("type", "Opaque"),
                                  std::to_string(o.value("data", json::object()).size()), age(o)});
            }};
  }
  if (key == "serviceaccounts") {
    return {json::array({name, col("Secrets", "string", "", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use."),
                         col("Age", "string", "", kAgeDesc)}),
            [](const json& o) {
              return json::array({o["metadata"].value("name", ""), std::to_string(o.value("secrets", json::array()).size()), age(o)});
            }};
  }
  if (key == "nodes") {
    return {json::array({name, col("Status", "string", "", "The status of the node"),
                         col("Roles", "string", "", "The roles of the node"), col("Age", "string", "", kAgeDesc),
                         col("Version", "string", "", "Kubelet Version reported by the node.")}),
            [](const json& o) {
              std::string ready = "Unknown";
              for (const auto& c : o.value("status", json::object()).value("conditions", json::array())) {
                if (c.value("type", "") == "Ready") ready = c.value("status", "") == "True" ? "Ready" : "NotReady";
              }
              return json::array({o["metadata"].value("name", ""), ready, "<none>", age(o), s(o, "status.nodeInfo.kubeletVersion")});
            }};
  }
  if (key == "events") {
    return {json::array({col("Last Seen", "string", "", "Time when last this event was observed"),
                         col("Type", "string", "", "Type of this event (Normal, Warning)"),
                         col("Reason", "string", "", "This should be a short, machine understandable string"),
                         col("Object", "string", "", "The object that this event is about."),
                         col("Message", "string", "", "A human-readable description of the status of this operation.")}),
            [](const json& o) {
              std::string last = s(o, "lastTimestamp");
              if (last.empty()) last = s(o, "eventTime");
              if (last.empty()) last = s(o, "metadata.creationTimestamp");
              return json::array({age_of(last), s(o, "type"), s(o, "reason"),
                                  to_lower(s(o, "involvedObject.kind")) + "/" + s(o, "involvedObject.name"), s(o, "message")});
            }};
  }
  if (key == "leases.coordination.k8s.io") {
    return {json::array({name, col("Holder", "string", "", "The holder of the lease"), col("Age", "string", "", kAgeDesc)}),
            [](const json& o) { return json::array({o["metadata"].value("name", ""), s(o, "spec.holderIdentity"), age(o)}); }};
  }
  if (t.custom) {
    json cols = json::array({name});
    json pcs = t.printer_columns.is_array() ? t.printer_columns : json::array();
    if (pcs.empty()) {
      cols.push_back(col("Age", "date", "", kAgeDesc));
      return {cols, [](const json& o) { return json::array({o["metadata"].value("name", ""), age(o)}); }};
    }
    for (const auto& pc : pcs) {
      cols.push_back(col(pc.value("name", ""), pc.value("type", "string"), pc.value("format", ""),
                         pc.value("description", ""), pc.value("priority", 0)));
    }
    return {cols, [pcs](const json& o) {
              json row = json::array({o["metadata"].value("name", "")});
              for (const auto& pc : pcs) {
                json v = eval_jsonpath(o, pc.value("jsonPath", ""));
                std::string type = pc.value("type", "string");
                if (v.is_null()) {
                  row.push_back(nullptr);
                } else if (type == "date") {
                  row.push_back(v.is_string() ? age_of(v.get<std::string>()) : v.dump());
                } else if (type == "integer" && v.is_number_float()) {
                  row.push_back(static_cast<std::int64_t>(v.get<double>()));  // the API server truncates too
                } else if (type == "integer" || type == "number" || type == "boolean") {
                  row.push_back(v);
                } else {
                  row.push_back(v.is_string() ? v.get<std::string>() : v.dump());
                }
              }
              return row;
            }};
  }
  return {json::array({name, col("Created At", "date", "", kAgeDesc)}),
          [](const json& o) { return json::array({o["metadata"].value("name", ""), s(o, "metadata.creationTimestamp")}); }};
}

}  // namespace

json eval_jsonpath(const json& obj, const std::string& raw) {
  std::string path = raw;
  if (!path.empty() && path.front() == '{' && path.back() == '}') path = path.substr(1, path.size() - 2);
  const json* cur = &obj;
  std::size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '.') {
      ++i;
      std::size_t j = i;
      while (j < path.size() && path[j] != '.' && path[j] != '[') ++j;
      std::string key = path.substr(i, j - i);
      i = j;
      if (key.empty()) continue;
      if (!cur->is_object() || !cur->contains(key)) return nullptr;
      cur = &(*cur)[key];
    } else if (path[i] == '[') {
      std::size_t close = path.find(']', i);
      if (close == std::string::npos) return nullptr;
      std::string inner = path.substr(i + 1, close - i - 1);
      i = close + 1;
      if (!cur->is_array()) return nullptr;
      if (!inner.empty() && inner[0] == '?') {
        // ?(@.key=="value")
        auto at = inner.find("@.");
        auto eq = inner.find("==");
        if (at == std::string::npos || eq == std::string::npos) return nullptr;
        std::string key = inner.substr(at + 2, eq - at - 2);
        std::string val = inner.substr(eq + 2);
        while (!val.empty() && (val.back() == ')' || val.back() == ' ')) val.pop_back();
        if (val.size() >= 2 && (val[0] == '"' || val[0] == '\'')) val = val.substr(1, val.size() - 2);
        const json* found = nullptr;
        for (const auto& e : *cur) {
          const json* v = json_path(e, key);
          if (v && ((v->is_string() && v->get<std::string>() == val) || (!v->is_string() && v->dump() == val))) {
            found = &e;
            break;
          }
        }
        if (!found) return nullptr;
        cur = found;
      } else {
        try {
          long long idx = std::stoll(inner);
          if (idx < 0) idx += static_cast<long long>(cur->size());
          if (idx < 0 || idx >= static_cast<long long>(cur->size())) return nullptr;
          cur = &(*cur)[static_cast<std::size_t>(idx)];
        } catch (...) {
          return nullptr;
        }
      }
    } else {
      ++i;
    }
  }
  return *cur;
}

json to_table(const ResourceType& t, const json& objects, bool single, IncludeObject include,
              const std::string& table_api_version) {
  Layout layout = layout_for(t);
  json rows = json::array();
  auto add = [&](const json& o) {
    json row = {{"cells", layout.row(o)}};
    if (include == IncludeObject::Object) {
      json full = o;
      full["apiVersion"] = t.api_version();
      full["kind"] = t.kind;
      row["object"] = full;
    } else if (include == IncludeObject::Metadata) {
      row["object"] = {{"kind", "PartialObjectMetadata"}, {"apiVersion", "meta.k8s.io/v1"}, {"metadata", o["metadata"]}};
    }
    rows.push_back(row);
  };
  json meta = json::object();
  if (single) {
    add(objects);
    meta["resourceVersion"] = s(objects, "metadata.resourceVersion");
  } else {
    for (const auto& o : objects["items"]) add(o);
    meta = objects.value("metadata", json::object());
  }
  return {{"kind", "Table"}, {"apiVersion", table_api_version}, {"metadata", meta},
          {"columnDefinitions", layout.columns}, {"rows", rows}};
}

}  // namespace kubesim
