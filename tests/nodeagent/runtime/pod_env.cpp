#include "runtime/pod_env.hpp"

#include <cctype>
#include <optional>
#include <stdexcept>

namespace noderuntime {

namespace {

std::string label_lookup(const json& map, const std::string& key) {
  if (map.is_object() && map.contains(key) && map[key].is_string()) return map[key];
  return "";
}

std::string field_ref(const json& pod, const std::string& path) {
  const json& m = pod["metadata"];
  if (path == "metadata.name") return m.value("name", "");
  if (path == "metadata.namespace") return m.value("namespace", "");
  if (path == "metadata.uid") return m.value("uid", "");
  if (path == "spec.nodeName") return pod["spec"].value("nodeName", "");
  if (path == "spec.serviceAccountName") return pod["spec"].value("serviceAccountName", "");
  if (path == "status.podIP") return pod.value("status", json::object()).value("podIP", "");
  if (path == "status.hostIP") return pod.value("status", json::object()).value("hostIP", "");
  if (path == "status.podIPs") return pod.value("status", json::object()).value("podIP", "");
  if (path == "status.hostIPs") return pod.value("status", json::object()).value("hostIP", "");
  for (const char* which : {"labels", "annotations"}) {
    std::string prefix = std::string("metadata.") + which + "['";
    if (starts_with(path, prefix) && ends_with(path, "']")) {
      return label_lookup(m.value(which, json::object()), path.substr(prefix.size(), path.size() - prefix.size() - 2));
    }
  }
  if (path == "metadata.labels" || path == "metadata.annotations") {
    std::string out;
    const json map = m.value(path.substr(9), json::object());
    for (auto it = map.begin(); it != map.end(); ++it) {
      out += it.key() + "=" + json(it.value()).dump() + "\n";
    }
    return out;
  }
  throw std::runtime_error("unsupported fieldRef path " + path);
}

std::string resource_ref(const json& container, const json& ref) {
  std::string res = ref.value("resource", "");
  const json resources = container.value("resources", json::object());
  auto dot = res.find('.');
  std::string kind = res.substr(0, dot), name = dot == std::string::npos ? "" : res.substr(dot + 1);
  const json* v = json_path(resources, kind + "." + name);
  if (v && v->is_string()) return *v;
  if (v && v->is_number()) return v->dump();
  if (name == "cpu") return "2";
  if (name == "memory") return "8589934592";
  return "0";
}

std::optional<json> lookup(ClusterView& cluster, bool secret, const std::string& ns, const std::string& name) {
  return secret ? cluster.secret(ns, name) : cluster.config_map(ns, name);
}

std::string data_value(const json& obj, bool secret, const std::string& key, bool& found) {
  found = false;
  const json data = obj.value("data", json::object());
  if (data.contains(key) && data[key].is_string()) {
    found = true;
    return secret ? base64_decode(data[key]) : data[key].get<std::string>();
  }
  if (!secret) {
    const json bin = obj.value("binaryData", json::object());
    if (bin.contains(key) && bin[key].is_string()) {
      found = true;
      return base64_decode(bin[key]);
    }
  }
  return "";
}

}  // namespace

std::string expand_vars(const std::string& s, const std::map<std::string, std::string>& vars) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '$' && i + 1 < s.size()) {
      if (s[i + 1] == '$') {
        out += '$';
        ++i;
        continue;
      }
      if (s[i + 1] == '(') {
        auto close = s.find(')', i + 2);
        if (close != std::string::npos) {
          std::string name = s.substr(i + 2, close - i - 2);
          auto it = vars.find(name);
          if (it != vars.end()) {
            out += it->second;
          } else {
            out += s.substr(i, close - i + 1);
          }
          i = close;
          continue;
        }
      }
    }
    out += s[i];
  }
  return out;
}

EnvList container_env(const PodEnvContext& ctx, const json& container) {
  const std::string ns = ctx.pod["metadata"].value("namespace", "");
  EnvList out;
  std::map<std::string, std::string> vars;
  auto set = [&](const std::string& k, const std::string& v) {
    for (auto& kv : out) {
      if (kv.first == k) {
        kv.second = v;
        vars[k] = v;
        return;
      }
    }
    out.emplace_back(k, v);
    vars[k] = v;
  };
  for (const auto& from : container.value("envFrom", json::array())) {
    std::string prefix = from.value("prefix", "");
    for (const char* which : {"configMapRef", "secretRef"}) {
      if (!from.contains(which)) continue;
      bool secret = std::string(which) == "secretRef";
      const json& ref = from[which];
      std::string name = ref.value("name", "");
      std::optional<json> obj = lookup(ctx.cluster, secret, ns, name);
      if (!obj) {
        if (ref.value("optional", false)) continue;
        throw std::runtime_error(std::string(secret ? "secret" : "configmap") + " \"" + name + "\" not found");
      }
      const json data = obj->value("data", json::object());
      for (auto it = data.begin(); it != data.end(); ++it) {
        bool found = false;
        std::string v = data_value(*obj, secret, it.key(), found);
        set(prefix + it.key(), v);
      }
    }
  }
  for (const auto& e : container.value("env", json::array())) {
    std::string name = e.value("name", "");
    if (e.contains("valueFrom") && e["valueFrom"].is_object()) {
      const json& vf = e["valueFrom"];
      if (vf.contains("fieldRef")) {
        set(name, field_ref(ctx.pod, vf["fieldRef"].value("fieldPath", "")));
      } else if (vf.contains("resourceFieldRef")) {
        set(name, resource_ref(container, vf["resourceFieldRef"]));
      } else {
        for (const char* which : {"configMapKeyRef", "secretKeyRef"}) {
          if (!vf.contains(which)) continue;
          bool secret = std::string(which) == "secretKeyRef";
          const json& ref = vf[which];
          std::string obj_name = ref.value("name", "");
          std::string key = ref.value("key", "");
          bool optional = ref.value("optional", false);
          std::optional<json> obj = lookup(ctx.cluster, secret, ns, obj_name);
          if (!obj) {
            if (optional) break;
            throw std::runtime_error(std::string(secret ? "secret" : "configmap") + " \"" + obj_name + "\" not found");
          }
          bool found = false;
          std::string v = data_value(*obj, secret, key, found);
          if (!found) {
            if (optional) break;
            throw std::runtime_error("couldn't find key " + key + " in " + (secret ? "Secret " : "ConfigMap ") + ns +
                                     "/" + obj_name);
          }
          set(name, v);
        }
      }
    } else {
      set(name, expand_vars(e.value("value", ""), vars));
    }
  }
  return out;
}

namespace {

bool host_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.'; }

// The address for a .svc host name (labels before ".svc"), or "" if none yet.
std::string resolve(ClusterView& cluster, const std::vector<std::string>& labels) {
  if (labels.size() == 2) {
    if (labels[0] == "kubernetes" && labels[1] == "default") return cluster.api_host();
    return cluster.service_address(labels[1], labels[0]);
  }
  if (labels.size() == 3) return cluster.hostname_address(labels[2], labels[0], labels[1]);
  return "";
}

}  // namespace

bool rewrite_service_names(ClusterView& cluster, std::string& value) {
  bool all = true;
  std::string out;
  std::size_t i = 0;
  while (i < value.size()) {
    if (!host_char(value[i])) {
      out += value[i++];
      continue;
    }
    std::size_t j = i;
    while (j < value.size() && host_char(value[j])) ++j;
    std::string host = value.substr(i, j - i);
    std::string base;
    if (ends_with(host, ".svc.cluster.local")) base = host.substr(0, host.size() - 18);
    else if (ends_with(host, ".svc")) base = host.substr(0, host.size() - 4);
    if (!base.empty()) {
      std::vector<std::string> labels = split(to_lower(base), '.');
      std::string addr = (labels.size() == 2 || labels.size() == 3) ? resolve(cluster, labels) : "";
      if (addr.empty()) {
        all = false;
        out += host;
      } else {
        out += addr;
      }
    } else {
      out += host;
    }
    i = j;
  }
  value = out;
  return all;
}

void put_env(EnvList& env, const std::string& key, const std::string& value) {
  for (auto& kv : env) {
    if (kv.first == key) {
      kv.second = value;
      return;
    }
  }
  env.emplace_back(key, value);
}

}  // namespace noderuntime
