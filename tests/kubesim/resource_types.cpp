#include "resource_types.hpp"

#include <algorithm>
#include <regex>

namespace kubesim {

namespace {

const std::vector<std::string> kAllVerbs = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};

TypePtr make(const std::string& group, const std::string& version, const std::string& kind, const std::string& plural,
             bool namespaced, std::vector<std::string> short_names, std::vector<std::string> categories = {},
             std::vector<Subresource> subs = {}, std::vector<std::string> verbs = kAllVerbs) {
  auto t = std::make_shared<ResourceType>();
  t->group = group;
  t->version = version;
  t->kind = kind;
  t->list_kind = kind + "List";
  t->plural = plural;
  t->singular = to_lower(kind);
  t->namespaced = namespaced;
  t->short_names = std::move(short_names);
  t->categories = std::move(categories);
  t->verbs = std::move(verbs);
  t->subresources = std::move(subs);
  for (const auto& s : t->subresources) {
    if (s.name == "status") t->has_status = true;
  }
  return t;
}

Subresource status_sub(const std::string& kind) { return {"status", kind, "", "", {"get", "patch", "update"}}; }
Subresource scale_sub() { return {"scale", "Scale", "autoscaling", "v1", {"get", "patch", "update"}}; }

std::string scope_name(const ResourceType& t) { return t.namespaced ? "Namespaced" : "Cluster"; }

// Version priority key: (class, major, minor) with class 3 GA, 2 beta, 1 alpha, 0 other.
struct VersionKey {
  int cls = 0;
  int major = 0;
  int minor = 0;
  std::string raw;
};

VersionKey version_key(const std::string& v) {
  static const std::regex re("^v([0-9]+)(?:(alpha|beta)([0-9]+))?$");
  std::smatch m;
  VersionKey k;
  k.raw = v;
  if (std::regex_match(v, m, re)) {
    k.major = std::stoi(m[1]);
    if (m[2].matched) {
      k.cls = m[2] == "beta" ? 2 : 1;
      k.minor = std::stoi(m[3]);
    } else {
      k.cls = 3;
    }
  }
  return k;
}

}  // namespace

bool ResourceType::has_subresource(const std::string& name) const {
  for (const auto& s : subresources) {
    if (s.name == name) return true;
  }
  return false;
}

bool version_less_preferred(const std::string& a, const std::string& b) {
  VersionKey ka = version_key(a), kb = version_key(b);
  if (ka.cls != kb.cls) return ka.cls < kb.cls;
  if (ka.cls == 0) return ka.raw > kb.raw;  // lexical, earlier preferred
  if (ka.major != kb.major) return ka.major < kb.major;
  return ka.minor < kb.minor;
}

TypeRegistry::TypeRegistry() {
  const std::string core;
  builtin_ = {
      make(core, "v1", "ConfigMap", "configmaps", true, {"cm"}),
      make(core, "v1", "Event", "events", true, {"ev"}),
      make(core, "v1", "Namespace", "namespaces", false, {"ns"}, {},
           {status_sub("Namespace"), {"finalize", "Namespace", "", "", {"update"}}},
           {"create", "delete", "get", "list", "patch", "update", "watch"}),
      make(core, "v1", "Node", "nodes", false, {"no"}, {}, {status_sub("Node")}),
      make(core, "v1", "Pod", "pods", true, {"po"}, {"all"}, {status_sub("Pod"), {"log", "Pod", "", "", {"get"}}}),
      make(core, "v1", "Secret", "secrets", true, {}),
      make(core, "v1", "ServiceAccount", "serviceaccounts", true, {"sa"}, {},
           {{"token", "TokenRequest", "authentication.k8s.io", "v1", {"create"}}}),
      make(core, "v1", "Service", "services", true, {"svc"}, {"all"}, {status_sub("Service")},
           {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}),
      make("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false,
           {"crd", "crds"}, {"api-extensions"}, {status_sub("CustomResourceDefinition")}),
      make("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", false, {}, {}, {}, {"create"}),
      make("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", false, {}, {}, {}, {"create"}),
      make("authorization.k8s.io", "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews", true, {}, {}, {},
           {"create"}),
      make("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", false, {}, {}, {},
           {"create"}),
      make("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", false, {}, {}, {}, {"create"}),
      make("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false, {}),
      make("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false, {}),
      make("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true, {}),
      make("rbac.authorization.k8s.io", "v1", "Role", "roles", true, {}),
      make("coordination.k8s.io", "v1", "Lease", "leases", true, {}),
      make("events.k8s.io", "v1", "Event", "events", true, {"ev"}),
      make("apps", "v1", "Deployment", "deployments", true, {"deploy"}, {"all"},
           {status_sub("Deployment"), scale_sub()}),
      make("apps", "v1", "ReplicaSet", "replicasets", true, {"rs"}, {"all"}, {status_sub("ReplicaSet"), scale_sub()}),
  };
  for (auto& t : builtin_) {
    auto* m = const_cast<ResourceType*>(t.get());
    if (m->group == "authentication.k8s.io" || m->group == "authorization.k8s.io") m->create_only = true;
    if (m->kind == "CustomResourceDefinition" || m->group == "apps") m->tracks_generation = true;
  }
  builtin_groups_ = {"apps",
                     "apiextensions.k8s.io",
                     "authentication.k8s.io",
                     "authorization.k8s.io",
                     "rbac.authorization.k8s.io",
                     "coordination.k8s.io",
                     "events.k8s.io"};
}

TypePtr TypeRegistry::find(const std::string& group, const std::string& version, const std::string& plural) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& t : builtin_) {
    if (t->group == group && t->version == version && t->plural == plural) return t;
  }
  for (const auto& kv : crds_) {
    for (const auto& t : kv.second) {
      if (t->group == group && t->version == version && t->plural == plural) return t;
    }
  }
  return nullptr;
}

TypePtr TypeRegistry::by_key(const std::string& storage_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& t : builtin_) {
    if (t->storage_key() == storage_key) return t;
  }
  auto it = crds_.find(storage_key);
  if (it != crds_.end() && !it->second.empty()) return it->second.front();
  return nullptr;
}

TypePtr TypeRegistry::by_kind(const std::string& group, const std::string& kind) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& t : builtin_) {
    if (t->group == group && t->kind == kind) return t;
  }
  for (const auto& kv : crds_) {
    for (const auto& t : kv.second) {
      if (t->group == group && t->kind == kind) return t;
    }
  }
  return nullptr;
}

std::vector<TypePtr> TypeRegistry::all() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TypePtr> out = builtin_;
  for (const auto& kv : crds_) out.insert(out.end(), kv.second.begin(), kv.second.end());
  return out;
}

bool TypeRegistry::group_exists(const std::string& group) const { return !versions_of(group).empty(); }

bool TypeRegistry::group_version_exists(const std::string& group, const std::string& version) const {
  for (const auto& v : versions_of(group)) {
    if (v == version) return true;
  }
  return false;
}

std::vector<std::string> TypeRegistry::versions_of(const std::string& group) const {
  std::vector<std::string> out;
  for (const auto& t : all()) {
    if (t->group == group && std::find(out.begin(), out.end(), t->version) == out.end()) out.push_back(t->version);
  }
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) { return version_less_preferred(b, a); });
  return out;
}

void TypeRegistry::register_crd(const json& crd) {
  const json& spec = crd.value("spec", json::object());
  const json& names = spec.value("names", json::object());
  std::string name = crd["metadata"].value("name", "");
  std::vector<TypePtr> served;
  if (spec.contains("versions") && spec["versions"].is_array()) {
    for (const auto& v : spec["versions"]) {
      if (!v.value("served", true)) continue;
      auto t = std::make_shared<ResourceType>();
      t->group = spec.value("group", "");
      t->version = v.value("name", "");
      t->kind = names.value("kind", "");
      t->list_kind = names.value("listKind", t->kind + "List");
      t->plural = names.value("plural", "");
      t->singular = names.value("singular", to_lower(t->kind));
      t->namespaced = spec.value("scope", "Namespaced") == "Namespaced";
      if (names.contains("shortNames")) t->short_names = names["shortNames"].get<std::vector<std::string>>();
      if (names.contains("categories")) t->categories = names["categories"].get<std::vector<std::string>>();
      t->verbs = kAllVerbs;
      t->custom = true;
      t->tracks_generation = true;
      t->crd_name = name;
      const json subs = v.value("subresources", json::object());
      if (subs.contains("status")) {
        t->subresources.push_back(status_sub(t->kind));
        t->has_status = true;
      }
      if (subs.contains("scale")) t->subresources.push_back({"scale", "Scale", "autoscaling", "v1", {"get", "patch", "update"}});
      if (v.contains("schema") && v["schema"].contains("openAPIV3Schema")) t->schema = v["schema"]["openAPIV3Schema"];
      if (v.contains("additionalPrinterColumns")) t->printer_columns = v["additionalPrinterColumns"];
      if (v.contains("selectableFields") && v["selectableFields"].is_array()) {
        for (const auto& f : v["selectableFields"]) {
          std::string p = f.value("jsonPath", "");
          if (!p.empty() && p[0] == '.') p = p.substr(1);
          t->selectable_fields.push_back(p);
        }
      }
      served.push_back(t);
    }
  }
  std::sort(served.begin(), served.end(),
            [](const TypePtr& a, const TypePtr& b) { return version_less_preferred(b->version, a->version); });
  std::lock_guard<std::mutex> lock(mu_);
  if (served.empty()) {
    crds_.erase(name);
  } else {
    crds_[name] = served;
  }
}

void TypeRegistry::unregister_crd(const std::string& crd_name) {
  std::lock_guard<std::mutex> lock(mu_);
  crds_.erase(crd_name);
}

json TypeRegistry::api_versions(const std::string& server_address) const {
  return {{"kind", "APIVersions"},
          {"versions", {"v1"}},
          {"serverAddressByClientCIDRs", json::array({{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address}}})}};
}

json TypeRegistry::api_group(const std::string& group) const {
  json versions = json::array();
  for (const auto& v : versions_of(group)) versions.push_back({{"groupVersion", group + "/" + v}, {"version", v}});
  json g = {{"name", group}, {"versions", versions}};
  if (!versions.empty()) g["preferredVersion"] = versions[0];
  return g;
}

json TypeRegistry::api_group_list() const {
  std::vector<std::string> groups = builtin_groups_;
  std::vector<std::string> custom;
  for (const auto& t : all()) {
    if (!t->custom) continue;
    if (std::find(groups.begin(), groups.end(), t->group) == groups.end() &&
        std::find(custom.begin(), custom.end(), t->group) == custom.end()) {
      custom.push_back(t->group);
    }
  }
  std::sort(custom.begin(), custom.end());
  groups.insert(groups.end(), custom.begin(), custom.end());
  json list = json::array();
  for (const auto& g : groups) {
    json doc = api_group(g);
    if (!doc["versions"].empty()) list.push_back(doc);
  }
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", list}};
}

json TypeRegistry::resource_list(const std::string& group, const std::string& version) const {
  json resources = json::array();
  for (const auto& t : all()) {
    if (t->group != group || t->version != version) continue;
    json r = {{"name", t->plural}, {"singularName", t->singular}, {"namespaced", t->namespaced}, {"kind", t->kind},
              {"verbs", t->verbs}};
    if (!t->short_names.empty()) r["shortNames"] = t->short_names;
    if (!t->categories.empty()) r["categories"] = t->categories;
    resources.push_back(r);
    for (const auto& s : t->subresources) {
      json sr = {{"name", t->plural + "/" + s.name}, {"singularName", ""}, {"namespaced", t->namespaced},
                 {"kind", s.kind}, {"verbs", s.verbs}};
      if (!s.group.empty()) {
        sr["group"] = s.group;
        sr["version"] = s.version;
      }
      resources.push_back(sr);
    }
  }
  return {{"kind", "APIResourceList"},
          {"apiVersion", "v1"},
          {"groupVersion", group.empty() ? version : group + "/" + version},
          {"resources", resources}};
}

json TypeRegistry::aggregated_discovery(bool core) const {
  json items = json::array();
  std::vector<std::string> groups;
  if (core) {
    groups = {""};
  } else {
    const json list = api_group_list();
    for (const auto& g : list["groups"]) groups.push_back(g["name"]);
  }
  auto types = all();
  for (const auto& g : groups) {
    json versions = json::array();
    for (const auto& v : versions_of(g)) {
      json resources = json::array();
      for (const auto& t : types) {
        if (t->group != g || t->version != v) continue;
        json r = {{"resource", t->plural},
                  {"responseKind", {{"group", t->group}, {"version", t->version}, {"kind", t->kind}}},
                  {"scope", scope_name(*t)},
                  {"singularResource", t->singular},
                  {"verbs", t->verbs}};
        if (!t->short_names.empty()) r["shortNames"] = t->short_names;
        if (!t->categories.empty()) r["categories"] = t->categories;
        if (!t->subresources.empty()) {
          json subs = json::array();
          for (const auto& s : t->subresources) {
            subs.push_back({{"subresource", s.name},
                            {"responseKind",
                             {{"group", s.group.empty() ? t->group : s.group},
                              {"version", s.version.empty() ? t->version : s.version},
                              {"kind", s.kind}}},
                            {"verbs", s.verbs}});
          }
          r["subresources"] = subs;
        }
        resources.push_back(r);
      }
      versions.push_back({{"version", v}, {"resources", resources}, {"freshness", "Current"}});
    }
    items.push_back({{"metadata", {{"name", g}, {"creationTimestamp", nullptr}}}, {"versions", versions}});
  }
  return {{"kind", "APIGroupDiscoveryList"}, {"apiVersion", "apidiscovery.k8s.io/v2"}, {"metadata", json::object()},
          {"items", items}};
}

}  // namespace kubesim
