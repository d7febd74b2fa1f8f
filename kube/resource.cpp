#include "kube/resource.hpp"

#include <stdexcept>

namespace trainbench::kube {
namespace {

void check_segment(std::string_view what, std::string_view s) {
  if (s.empty()) throw std::invalid_argument(std::string(what) + " must not be empty");
  if (s == "." || s == ".." || s.find('/') != std::string_view::npos || s.find('%') != std::string_view::npos) {
    throw std::invalid_argument(std::string(what) + " \"" + std::string(s) + "\" is not a valid path segment");
  }
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '?' || c == '#') {
      throw std::invalid_argument(std::string(what) + " \"" + std::string(s) + "\" contains a character not allowed");
    }
  }
}

ResourceType core(const char* plural, const char* kind, bool namespaced = true) {
  return ResourceType{"", "v1", plural, namespaced, kind};
}

}  // namespace

std::string ResourceType::api_version() const { return group.empty() ? version : group + "/" + version; }

std::string ResourceType::path(std::string_view ns, std::string_view name, std::string_view subresource) const {
  check_segment("resource", plural);
  check_segment("version", version);
  std::string p = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !ns.empty()) {
    check_segment("namespace", ns);
    p += "/namespaces/";
    p += ns;
  }
  p += "/" + plural;
  if (!name.empty()) {
    check_segment("name", name);
    p += "/";
    p += name;
    if (!subresource.empty()) {
      check_segment("subresource", subresource);
      p += "/";
      p += subresource;
    }
  } else if (!subresource.empty()) {
    throw std::invalid_argument("a subresource needs an object name");
  }
  return p;
}

namespace resources {
ResourceType config_maps() { return core("configmaps", "ConfigMap"); }
ResourceType secrets() { return core("secrets", "Secret"); }
ResourceType pods() { return core("pods", "Pod"); }
ResourceType services() { return core("services", "Service"); }
ResourceType service_accounts() { return core("serviceaccounts", "ServiceAccount"); }
ResourceType events() { return core("events", "Event"); }
ResourceType namespaces() { return core("namespaces", "Namespace", false); }
ResourceType roles() { return {"rbac.authorization.k8s.io", "v1", "roles", true, "Role"}; }
ResourceType role_bindings() { return {"rbac.authorization.k8s.io", "v1", "rolebindings", true, "RoleBinding"}; }
ResourceType leases() { return {"coordination.k8s.io", "v1", "leases", true, "Lease"}; }
ResourceType custom_resource_definitions() {
  return {"apiextensions.k8s.io", "v1", "customresourcedefinitions", false, "CustomResourceDefinition"};
}
ResourceType benchmark_jobs() { return {"trainbench.dev", "v1alpha1", "benchmarkjobs", true, "BenchmarkJob"}; }
}  // namespace resources

std::string url_encode(std::string_view s) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  return out;
}

std::string build_query(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string q;
  for (const auto& [k, v] : params) {
    if (v.empty()) continue;
    if (!q.empty()) q += '&';
    q += url_encode(k) + "=" + url_encode(v);
  }
  return q;
}

std::string object_key(const nlohmann::json& obj) {
  if (!obj.is_object()) return {};
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return {};
  auto name = md->find("name");
  if (name == md->end() || !name->is_string()) return {};
  auto ns = md->find("namespace");
  if (ns != md->end() && ns->is_string() && !ns->get_ref<const std::string&>().empty()) {
    return ns->get<std::string>() + "/" + name->get<std::string>();
  }
  return name->get<std::string>();
}

}  // namespace trainbench::kube
