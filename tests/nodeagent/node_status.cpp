#include "node_status.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>

#include "kube/errors.hpp"
#include "runtime/util.hpp"

namespace nodeagent {

namespace {

json condition(const std::string& type, const std::string& status, const std::string& reason,
               const std::string& message, const json& old_conditions) {
  const std::string now = noderuntime::now_rfc3339();
  std::string since = now;
  if (old_conditions.is_array()) {
    for (const auto& c : old_conditions) {
      if (c.value("type", "") == type && c.value("status", "") == status) since = c.value("lastTransitionTime", now);
    }
  }
  return {{"type", type}, {"status", status}, {"reason", reason}, {"message", message},
          {"lastHeartbeatTime", now}, {"lastTransitionTime", since}};
}

json resources(const NodeFacts& f) {
  json r = {{"cpu", std::to_string(f.cpus)},
            {"memory", std::to_string(f.memory / 1024) + "Ki"},
            {"pods", std::to_string(f.max_pods)}};
  if (f.gpus > 0) r["nvidia.com/gpu"] = std::to_string(f.gpus);
  return r;
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

json node_info(const NodeFacts& f) {
  utsname u{};
  uname(&u);
  return {{"machineID", read_first_line("/etc/machine-id")},
          {"systemUUID", read_first_line("/etc/machine-id")},
          {"bootID", read_first_line("/proc/sys/kernel/random/boot_id")},
          {"kernelVersion", u.release},
          {"osImage", "trainbench node agent (no container runtime)"},
          {"containerRuntimeVersion", "trainbench-nodeagent://" + f.runtime},
          {"kubeletVersion", "v1.37.2-nodeagent"},
          {"kubeProxyVersion", ""},
          {"operatingSystem", "linux"},
          {"architecture", "amd64"}};
}

json labels_of(const NodeFacts& f) {
  json labels = {{"kubernetes.io/hostname", f.name}, {"kubernetes.io/os", "linux"}, {"kubernetes.io/arch", "amd64"},
                 {"beta.kubernetes.io/os", "linux"}, {"beta.kubernetes.io/arch", "amd64"}};
  for (const auto& [k, v] : f.labels) labels[k] = v;
  return labels;
}

json taints_of(const NodeFacts& f) {
  json out = json::array();
  for (const auto& t : f.taints) {
    const auto colon = t.rfind(':');
    const std::string kv = t.substr(0, colon);
    const auto eq = kv.find('=');
    json taint = {{"key", kv.substr(0, eq)}, {"effect", t.substr(colon + 1)}};
    if (eq != std::string::npos) taint["value"] = kv.substr(eq + 1);
    out.push_back(taint);
  }
  return out;
}

}  // namespace

int machine_cpus() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

long long machine_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? static_cast<long long>(pages) * size : 0;
}

kube::ResourceType nodes_resource() { return {"", "v1", "nodes", false, "Node"}; }

json node_status(const NodeFacts& f, const json& old) {
  const json conditions = json::array(
      {condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available",
                 old),
       condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure", old),
       condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available", old),
       condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", old)});
  const json addresses =
      json::array({{{"type", "InternalIP"}, {"address", f.ip}}, {{"type", "Hostname"}, {"address", f.name}}});
  return {{"conditions", conditions},
          {"addresses", addresses},
          {"capacity", resources(f)},
          {"allocatable", resources(f)},
          {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", f.port}}}}},
          {"nodeInfo", node_info(f)}};
}

json node_object(const NodeFacts& f) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", f.name}, {"labels", labels_of(f)}}},
          {"spec", f.taints.empty() ? json::object() : json{{"taints", taints_of(f)}}},
          {"status", node_status(f, json::array())}};
}

json register_node(const kube::Client& client, const NodeFacts& f) {
  try {
    return client.create(nodes_resource(), "", node_object(f));
  } catch (const kube::ConflictError& e) {
    if (!e.is_already_exists()) throw;
  }
  json node = client.patch(nodes_resource(), "", f.name, kube::PatchType::kStrategic,
                           {{"metadata", {{"labels", labels_of(f)}}}});
  post_node_status(client, f);
  return node;
}

void post_node_status(const kube::Client& client, const NodeFacts& f) {
  const json node = client.get(nodes_resource(), "", f.name);
  const json old = node.value("status", json::object()).value("conditions", json::array());
  client.patch(nodes_resource(), "", f.name, kube::PatchType::kStrategic, {{"status", node_status(f, old)}}, {},
               "status");
}

}  // namespace nodeagent
