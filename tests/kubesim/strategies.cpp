#include "strategies.hpp"

#include <atomic>
#include <regex>
#include <set>

#include "apps_strategy.hpp"
#include "schema.hpp"

namespace kubesim {

namespace {

const std::string kSubdomainRe = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const std::string kLabelRe = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const std::string kDns1035Re = "[a-z]([-a-z0-9]*[a-z0-9])?";
const std::string kQualifiedNameRe = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const std::string kLabelValueRe = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

bool full_match(const std::string& s, const std::string& re) { return std::regex_match(s, std::regex(re)); }

std::vector<FieldError> subdomain_errors(const std::string& field, const std::string& v) {
  std::vector<FieldError> e;
  if (v.size() > 253) e.push_back(invalid_error(field, v, "must be no more than 253 characters"));
  if (!full_match(v, kSubdomainRe)) {
    e.push_back(invalid_error(field, v,
                              "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                              "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
                              "used for validation is '" + kSubdomainRe + "')"));
  }
  return e;
}

std::vector<FieldError> label_name_errors(const std::string& field, const std::string& v) {
  std::vector<FieldError> e;
  if (v.size() > 63) e.push_back(invalid_error(field, v, "must be no more than 63 characters"));
  if (!full_match(v, kLabelRe)) {
    e.push_back(invalid_error(field, v,
                              "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
                              "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
                              "used for validation is '" + kLabelRe + "')"));
  }
  return e;
}

std::vector<FieldError> dns1035_errors(const std::string& field, const std::string& v) {
  std::vector<FieldError> e;
  if (v.size() > 63) e.push_back(invalid_error(field, v, "must be no more than 63 characters"));
  if (!full_match(v, kDns1035Re)) {
    e.push_back(invalid_error(field, v,
                              "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                              "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
                              "'abc-123', regex used for validation is '" + kDns1035Re + "')"));
  }
  return e;
}

std::vector<FieldError> qualified_name_errors(const std::string& field, const std::string& key) {
  std::vector<FieldError> e;
  std::string name = key;
  auto slash = key.find('/');
  if (slash != std::string::npos) {
    std::string prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty() || !full_match(prefix, kSubdomainRe) || prefix.size() > 253) {
      e.push_back(invalid_error(field, key, "prefix part a lowercase RFC 1123 subdomain must consist of lower case "
                                            "alphanumeric characters, '-' or '.', and must start and end with an "
                                            "alphanumeric character (e.g. 'example.com', regex used for validation is '" +
                                                kSubdomainRe + "')"));
    }
  }
  if (name.empty()) {
    e.push_back(invalid_error(field, key, "name part must be non-empty"));
  } else {
    if (name.size() > 63) e.push_back(invalid_error(field, key, "name part must be no more than 63 characters"));
    if (!full_match(name, kQualifiedNameRe)) {
      e.push_back(invalid_error(field, key, "name part must consist of alphanumeric characters, '-', '_' or '.', and "
                                            "must start and end with an alphanumeric character (e.g. 'MyName',  or "
                                            "'my.name',  or '123-abc', regex used for validation is '" +
                                                kQualifiedNameRe + "')"));
    }
  }
  return e;
}

void append(std::vector<FieldError>& to, const std::vector<FieldError>& from) { to.insert(to.end(), from.begin(), from.end()); }

std::string name_of(const json& obj) { return obj["metadata"].value("name", ""); }
std::string ns_of(const json& obj) { return obj["metadata"].value("namespace", ""); }

[[noreturn]] void fail(const ResourceType& t, const json& obj, const std::vector<FieldError>& errs) {
  throw invalid(t.group, t.kind, name_of(obj), errs);
}

json& ensure_object(json& parent, const std::string& key) {
  if (!parent.contains(key) || !parent[key].is_object()) parent[key] = json::object();
  return parent[key];
}

// ---------- pods ----------

std::string image_pull_policy(const std::string& image) {
  auto slash = image.rfind('/');
  std::string last = slash == std::string::npos ? image : image.substr(slash + 1);
  if (last.find('@') != std::string::npos) return "IfNotPresent";
  auto colon = last.find(':');
  if (colon == std::string::npos || last.substr(colon + 1) == "latest") return "Always";
  return "IfNotPresent";
}

void default_containers(json& list) {
  if (!list.is_array()) return;
  for (auto& c : list) {
    if (!c.is_object()) continue;
    if (!c.contains("terminationMessagePath")) c["terminationMessagePath"] = "/dev/termination-log";
    if (!c.contains("terminationMessagePolicy")) c["terminationMessagePolicy"] = "File";
    if (!c.contains("imagePullPolicy") && c.contains("image") && c["image"].is_string()) {
      c["imagePullPolicy"] = image_pull_policy(c["image"]);
    }
    if (!c.contains("resources")) c["resources"] = json::object();
    if (c.contains("ports") && c["ports"].is_array()) {
      for (auto& p : c["ports"]) {
        if (p.is_object() && !p.contains("protocol")) p["protocol"] = "TCP";
      }
    }
  }
}

void default_pod_spec(json& spec) {
  default_pod_template_spec(spec);
  if (!spec.contains("enableServiceLinks")) spec["enableServiceLinks"] = true;
  if (!spec.contains("priority")) spec["priority"] = 0;
  if (!spec.contains("preemptionPolicy")) spec["preemptionPolicy"] = "PreemptLowerPriority";
  std::string sa = spec.value("serviceAccountName", spec.value("serviceAccount", "default"));
  if (sa.empty()) sa = "default";
  spec["serviceAccountName"] = sa;
  spec["serviceAccount"] = sa;
  if (!spec.contains("tolerations")) {
    spec["tolerations"] = json::array(
        {{{"key", "node.kubernetes.io/not-ready"}, {"operator", "Exists"}, {"effect", "NoExecute"}, {"tolerationSeconds", 300}},
         {{"key", "node.kubernetes.io/unreachable"}, {"operator", "Exists"}, {"effect", "NoExecute"}, {"tolerationSeconds", 300}}});
  }
}

std::string qos_class(const json& spec) {
  bool any = false, guaranteed = true;
  for (const auto& c : spec.value("containers", json::array())) {
    const json res = c.value("resources", json::object());
    const json req = res.value("requests", json::object()), lim = res.value("limits", json::object());
    if (!req.empty() || !lim.empty()) any = true;
    for (const char* r : {"cpu", "memory"}) {
      if (!lim.contains(r) || (req.contains(r) && req[r] != lim[r])) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

std::vector<FieldError> validate_containers(const json& list, const std::string& field, bool required) {
  std::vector<FieldError> errs;
  if (!list.is_array() || list.empty()) {
    if (required) errs.push_back(required_error(field));
    return errs;
  }
  std::set<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& c = list[i];
    std::string p = field + "[" + std::to_string(i) + "]";
    std::string name = c.value("name", "");
    if (name.empty()) {
      errs.push_back(required_error(p + ".name"));
    } else {
      append(errs, label_name_errors(p + ".name", name));
      if (!names.insert(name).second) errs.push_back(duplicate_error(p + ".name", name));
    }
    if (c.value("image", "").empty()) errs.push_back(required_error(p + ".image"));
    if (c.contains("env") && c["env"].is_array()) {
      for (std::size_t j = 0; j < c["env"].size(); ++j) {
        if (c["env"][j].value("name", "").empty()) {
          errs.push_back(required_error(p + ".env[" + std::to_string(j) + "].name"));
        }
      }
    }
  }
  return errs;
}

void prepare_pod_create(StrategyContext& ctx, const ResourceType& t, json& obj) {
  std::vector<FieldError> errs;
  json& spec = ensure_object(obj, "spec");
  append(errs, validate_containers(spec.value("containers", json()), "spec.containers", true));
  if (spec.contains("initContainers")) append(errs, validate_containers(spec["initContainers"], "spec.initContainers", false));
  default_pod_spec(spec);
  std::string rp = spec.value("restartPolicy", "");
  if (rp != "Always" && rp != "OnFailure" && rp != "Never") {
    errs.push_back(not_supported_error("spec.restartPolicy", rp, {"\"Always\"", "\"OnFailure\"", "\"Never\""}));
  }
  if (!errs.empty()) fail(t, obj, errs);
  std::string sa = spec.value("serviceAccountName", "default");
  std::string ns = ns_of(obj);
  if (!ctx.api.store().get("serviceaccounts", ns, sa)) {
    throw ApiError(403, "Forbidden",
                   "pods \"" + name_of(obj) + "\" is forbidden: error looking up service account " + ns + "/" + sa +
                       ": serviceaccount \"" + sa + "\" not found",
                   json{{"name", name_of(obj)}, {"kind", "pods"}});
  }
  obj["status"] = {{"phase", "Pending"}, {"qosClass", qos_class(spec)}};
}

json masked_pod_spec(json spec) {
  for (const char* list : {"containers", "initContainers"}) {
    if (spec.contains(list) && spec[list].is_array()) {
      for (auto& c : spec[list]) {
        if (c.is_object()) c.erase("image");
      }
    }
  }
  spec.erase("activeDeadlineSeconds");
  spec.erase("tolerations");
  spec.erase("terminationGracePeriodSeconds");
  return spec;
}

void prepare_pod_update(StrategyContext&, const ResourceType& t, const json& old, json& obj, const std::string& sub) {
  if (sub == "status") return;
  json& spec = ensure_object(obj, "spec");
  default_pod_spec(spec);
  if (masked_pod_spec(spec) != masked_pod_spec(old.value("spec", json::object()))) {
    fail(t, obj,
         {forbidden_error("spec",
                          "pod updates may not change fields other than `spec.containers[*].image`,"
                          "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
                          "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
                          "to 1 if it was previously negative)")});
  }
}

// ---------- services ----------

std::atomic<unsigned> g_next_cluster_ip{2};

std::string allocate_cluster_ip() {
  unsigned n = g_next_cluster_ip++;
  return "10.96." + std::to_string((n / 254) % 256) + "." + std::to_string(n % 254 + 1);
}

void default_service(json& spec) {
  if (!spec.contains("type")) spec["type"] = "ClusterIP";
  if (!spec.contains("sessionAffinity")) spec["sessionAffinity"] = "None";
  if (!spec.contains("internalTrafficPolicy")) spec["internalTrafficPolicy"] = "Cluster";
  if (!spec.contains("ipFamilies")) spec["ipFamilies"] = json::array({"IPv4"});
  if (!spec.contains("ipFamilyPolicy")) spec["ipFamilyPolicy"] = "SingleStack";
  if (spec.contains("ports") && spec["ports"].is_array()) {
    for (auto& p : spec["ports"]) {
      if (!p.is_object()) continue;
      if (!p.contains("protocol")) p["protocol"] = "TCP";
      if (!p.contains("targetPort") && p.contains("port")) p["targetPort"] = p["port"];
    }
  }
}

void prepare_service_create(StrategyContext&, const ResourceType& t, json& obj) {
  json& spec = ensure_object(obj, "spec");
  default_service(spec);
  std::vector<FieldError> errs;
  std::string cip = spec.value("clusterIP", "");
  bool headless = cip == "None";
  if (!headless && (!spec.contains("ports") || !spec["ports"].is_array() || spec["ports"].empty()) &&
      spec.value("type", "") != "ExternalName") {
    errs.push_back(required_error("spec.ports"));
  }
  if (spec.contains("ports") && spec["ports"].is_array()) {
    for (std::size_t i = 0; i < spec["ports"].size(); ++i) {
      const json& p = spec["ports"][i];
      if (!p.contains("port")) errs.push_back(required_error("spec.ports[" + std::to_string(i) + "].port"));
      if (spec["ports"].size() > 1 && p.value("name", "").empty()) {
        errs.push_back(required_error("spec.ports[" + std::to_string(i) + "].name"));
      }
    }
  }
  if (!errs.empty()) fail(t, obj, errs);
  if (cip.empty()) cip = allocate_cluster_ip();
  spec["clusterIP"] = cip;
  spec["clusterIPs"] = json::array({cip});
  obj["status"] = {{"loadBalancer", json::object()}};
}

void prepare_service_update(StrategyContext&, const ResourceType& t, const json& old, json& obj, const std::string& sub) {
  if (sub == "status") return;
  json& spec = ensure_object(obj, "spec");
  default_service(spec);
  std::string old_ip = old["spec"].value("clusterIP", "");
  std::string new_ip = spec.value("clusterIP", "");
  if (new_ip.empty()) {
    spec["clusterIP"] = old_ip;
    spec["clusterIPs"] = old["spec"].value("clusterIPs", json::array({old_ip}));
  } else if (new_ip != old_ip) {
    fail(t, obj, {invalid_error("spec.clusterIPs[0]", new_ip, "may not change once set")});
  }
  if (!spec.contains("clusterIPs")) spec["clusterIPs"] = json::array({spec["clusterIP"]});
}

// ---------- secrets and config maps ----------

void prepare_secret(StrategyContext&, const ResourceType&, json& obj, const json* old) {
  if (obj.contains("stringData") && obj["stringData"].is_object()) {
    json& data = ensure_object(obj, "data");
    for (auto it = obj["stringData"].begin(); it != obj["stringData"].end(); ++it) {
      data[it.key()] = base64_encode(it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
    }
    obj.erase("stringData");
  }
  if (obj.contains("data") && obj["data"].is_object()) {
    for (auto it = obj["data"].begin(); it != obj["data"].end(); ++it) {
      try {
        base64_decode(it.value().is_string() ? it.value().get<std::string>() : "?");
      } catch (const std::exception&) {
        throw bad_request("Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 0");
      }
    }
  }
  if (!obj.contains("type")) obj["type"] = old ? old->value("type", "Opaque") : "Opaque";
  if (old && old->value("type", "Opaque") != obj.value("type", "Opaque")) {
    throw invalid("", "Secret", name_of(obj), {invalid_error("type", obj["type"], "field is immutable")});
  }
  if (old && old->value("immutable", false) && (old->value("data", json()) != obj.value("data", json()))) {
    throw invalid("", "Secret", name_of(obj), {forbidden_error("data", "field is immutable when `immutable` is set")});
  }
}

// ConfigMaps and Secrets hold at most 1 MiB of data, as the real validation says.
void check_data_size(const ResourceType& t, const json& obj) {
  std::size_t total = 0;
  bool secret = t.kind == "Secret";
  for (const char* field : {"data", "binaryData"}) {
    if (!obj.contains(field) || !obj[field].is_object()) continue;
    for (auto it = obj[field].begin(); it != obj[field].end(); ++it) {
      std::size_t n = it.value().is_string() ? it.value().get_ref<const std::string&>().size() : 0;
      if (secret || std::string(field) == "binaryData") n = n / 4 * 3;
      total += it.key().size() + n;
    }
  }
  if (total > 1048576) {
    fail(t, obj, {{"FieldValueTooLong", secret ? "data" : "", "Too long: must have at most 1048576 bytes"}});
  }
}

void check_configmap_immutable(const json& old, const json& obj) {
  if (!old.value("immutable", false)) return;
  std::vector<FieldError> errs;
  if (old.value("data", json()) != obj.value("data", json())) {
    errs.push_back(forbidden_error("data", "field is immutable when `immutable` is set"));
  }
  if (old.value("binaryData", json()) != obj.value("binaryData", json())) {
    errs.push_back(forbidden_error("binaryData", "field is immutable when `immutable` is set"));
  }
  if (!obj.value("immutable", false)) errs.push_back(forbidden_error("immutable", "field is immutable when `immutable` is set"));
  if (!errs.empty()) throw invalid("", "ConfigMap", name_of(obj), errs);
}

// ---------- namespaces, nodes ----------

void prepare_namespace(json& obj, const json* old) {
  std::string name = name_of(obj);
  ensure_object(obj["metadata"], "labels")["kubernetes.io/metadata.name"] = name;
  json& spec = ensure_object(obj, "spec");
  if (!spec.contains("finalizers")) spec["finalizers"] = json::array({"kubernetes"});
  if (!old) obj["status"] = {{"phase", "Active"}};
}

void prepare_node(json& obj) {
  json& status = ensure_object(obj, "status");
  if (!status.contains("conditions")) {
    std::string now = now_rfc3339();
    status["conditions"] = json::array({{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"},
                                         {"message", "kubelet is posting ready status"},
                                         {"lastHeartbeatTime", now}, {"lastTransitionTime", now}}});
  }
  if (!status.contains("capacity")) status["capacity"] = {{"cpu", "2"}, {"memory", "8Gi"}, {"pods", "110"}};
  if (!status.contains("allocatable")) status["allocatable"] = status["capacity"];
  if (!status.contains("nodeInfo")) {
    status["nodeInfo"] = {{"kubeletVersion", "v1.32.2"}, {"operatingSystem", "linux"}, {"architecture", "amd64"},
                          {"containerRuntimeVersion", "kubesim://1"}, {"osImage", "kubesim"}};
  }
}

// ---------- RBAC ----------

const std::string kRbac = "rbac.authorization.k8s.io";

void validate_rules(const ResourceType& t, const json& obj, bool namespaced) {
  std::vector<FieldError> errs;
  const json rules = obj.value("rules", json::array());
  if (!rules.is_array()) return;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const json& r = rules[i];
    std::string p = "rules[" + std::to_string(i) + "]";
    if (!r.contains("verbs") || r["verbs"].empty()) errs.push_back(required_error(p + ".verbs", "verbs must contain at least one value"));
    bool has_urls = r.contains("nonResourceURLs") && !r["nonResourceURLs"].empty();
    bool has_res = r.contains("resources") && !r["resources"].empty();
    if (has_urls) {
      if (namespaced) errs.push_back(invalid_error(p + ".nonResourceURLs", r["nonResourceURLs"].dump(),
                                                   "namespaced rules cannot apply to non-resource URLs"));
      if (has_res || (r.contains("apiGroups") && !r["apiGroups"].empty())) {
        errs.push_back(invalid_error(p + ".nonResourceURLs", r["nonResourceURLs"].dump(),
                                     "rules cannot apply to both regular resources and non-resource URLs"));
      }
    } else {
      if (!r.contains("apiGroups") || r["apiGroups"].empty()) {
        errs.push_back(required_error(p + ".apiGroups", "resource rules must supply at least one api group"));
      }
      if (!has_res) errs.push_back(required_error(p + ".resources", "resource rules must supply at least one resource"));
    }
  }
  if (!errs.empty()) fail(t, obj, errs);
}

void check_escalation(StrategyContext& ctx, const ResourceType& t, const json& obj, const json& rules,
                      const std::string& ns) {
  if (ctx.user.is_admin()) return;
  // The escalate verb on the role kind lets a user write any rules.
  Attributes esc{"escalate", true, kRbac, t.plural, "", ns, name_of(obj), ""};
  if (ctx.api.authorizer().allowed(ctx.user, esc)) return;
  auto missing = ctx.api.authorizer().not_held(ctx.user, ns, rules);
  if (missing.empty()) return;
  std::string list;
  for (const auto& m : missing) list += "\n" + m;
  throw forbidden(t.group, t.plural, name_of(obj),
                  "user \"" + ctx.user.name + "\" (groups=" + ctx.user.groups_string() +
                      ") is attempting to grant RBAC permissions not currently held:" + list);
}

void prepare_binding(StrategyContext& ctx, const ResourceType& t, const json& obj, const json* old) {
  bool namespaced = t.namespaced;
  std::vector<FieldError> errs;
  const json ref = obj.value("roleRef", json::object());
  if (ref.value("name", "").empty()) errs.push_back(required_error("roleRef.name"));
  std::string kind = ref.value("kind", "");
  if (namespaced ? (kind != "Role" && kind != "ClusterRole") : kind != "ClusterRole") {
    errs.push_back(not_supported_error("roleRef.kind", kind,
                                       namespaced ? std::vector<std::string>{"\"ClusterRole\"", "\"Role\""}
                                                  : std::vector<std::string>{"\"ClusterRole\""}));
  }
  if (ref.value("apiGroup", "") != kRbac) {
    errs.push_back(not_supported_error("roleRef.apiGroup", ref.value("apiGroup", ""), {"\"" + kRbac + "\""}));
  }
  const json subjects = obj.value("subjects", json::array());
  if (subjects.is_array()) {
    for (std::size_t i = 0; i < subjects.size(); ++i) {
      const json& s = subjects[i];
      std::string p = "subjects[" + std::to_string(i) + "]";
      std::string k = s.value("kind", "");
      if (k != "ServiceAccount" && k != "User" && k != "Group") {
        errs.push_back(not_supported_error(p + ".kind", k, {"\"ServiceAccount\"", "\"User\"", "\"Group\""}));
      }
      if (s.value("name", "").empty()) errs.push_back(required_error(p + ".name"));
      if (k == "ServiceAccount" && !namespaced && s.value("namespace", "").empty()) {
        errs.push_back(required_error(p + ".namespace"));
      }
    }
  }
  if (old && old->value("roleRef", json()) != obj.value("roleRef", json())) {
    errs.push_back(invalid_error("roleRef", ref.dump(), "cannot change roleRef"));
  }
  if (!errs.empty()) fail(t, obj, errs);
  if (ctx.user.is_admin()) return;
  std::string ns = namespaced ? ns_of(obj) : "";
  std::string role_plural = kind == "Role" ? "roles" : "clusterroles";
  Attributes bind{"bind", true, kRbac, role_plural, "", kind == "Role" ? ns : "", ref.value("name", ""), ""};
  if (kind == "ClusterRole") bind.ns = ns;
  if (ctx.api.authorizer().allowed(ctx.user, bind)) return;
  ObjPtr role = kind == "Role" ? ctx.api.store().get("roles." + kRbac, ns, ref.value("name", ""))
                               : ctx.api.store().get("clusterroles." + kRbac, "", ref.value("name", ""));
  json rules = role ? role->value("rules", json::array()) : json::array();
  auto missing = ctx.api.authorizer().not_held(ctx.user, ns, rules);
  if (missing.empty()) return;
  std::string list;
  for (const auto& m : missing) list += "\n" + m;
  throw forbidden(t.group, t.plural, name_of(obj),
                  "user \"" + ctx.user.name + "\" (groups=" + ctx.user.groups_string() +
                      ") is attempting to grant RBAC permissions not currently held:" + list);
}

// ---------- CRDs ----------

void prepare_crd(const ResourceType& t, json& obj, const json* old) {
  std::vector<FieldError> errs;
  json& spec = ensure_object(obj, "spec");
  std::string group = spec.value("group", "");
  json& names = ensure_object(spec, "names");
  std::string plural = names.value("plural", "");
  std::string kind = names.value("kind", "");
  if (group.empty()) {
    errs.push_back(required_error("spec.group"));
  } else if (group.find('.') == std::string::npos) {
    errs.push_back(invalid_error("spec.group", group, "should be a domain with at least one dot"));
  }
  if (plural.empty()) errs.push_back(required_error("spec.names.plural"));
  if (kind.empty()) errs.push_back(required_error("spec.names.kind"));
  if (name_of(obj) != plural + "." + group) {
    errs.push_back(invalid_error("metadata.name", name_of(obj), "must be spec.names.plural+\".\"+spec.group"));
  }
  std::string scope = spec.value("scope", "");
  if (scope != "Namespaced" && scope != "Cluster") {
    errs.push_back(not_supported_error("spec.scope", scope, {"\"Cluster\"", "\"Namespaced\""}));
  }
  int storage = 0;
  std::string storage_version;
  if (!spec.contains("versions") || !spec["versions"].is_array() || spec["versions"].empty()) {
    errs.push_back(invalid_error("spec.versions", "null", "must have exactly one version marked as storage version"));
  } else {
    for (std::size_t i = 0; i < spec["versions"].size(); ++i) {
      json& v = spec["versions"][i];
      std::string p = "spec.versions[" + std::to_string(i) + "]";
      if (v.value("name", "").empty()) errs.push_back(required_error(p + ".name"));
      if (v.value("storage", false)) {
        ++storage;
        storage_version = v.value("name", "");
      }
      if (!v.contains("schema") || !v["schema"].contains("openAPIV3Schema")) {
        errs.push_back(required_error(p + ".schema.openAPIV3Schema", "schemas are required"));
      } else if (v["schema"]["openAPIV3Schema"].value("type", "") != "object") {
        errs.push_back(required_error(p + ".schema.openAPIV3Schema.type", "must not be empty at the root"));
      }
      if (!v.contains("served")) v["served"] = true;
    }
    if (storage != 1) {
      errs.push_back(invalid_error("spec.versions", spec["versions"].dump(),
                                   "must have exactly one version marked as storage version"));
    }
  }
  if (old) {
    if (old->at("spec").value("group", "") != group) errs.push_back(invalid_error("spec.group", group, "field is immutable"));
    if (old->at("spec").value("scope", "") != scope) errs.push_back(invalid_error("spec.scope", scope, "field is immutable"));
  }
  if (!errs.empty()) fail(t, obj, errs);
  if (!names.contains("singular")) names["singular"] = to_lower(kind);
  if (!names.contains("listKind")) names["listKind"] = kind + "List";
  if (!spec.contains("conversion")) spec["conversion"] = {{"strategy", "None"}};
  std::string now = now_rfc3339();
  json stored = json::array();
  if (old && old->contains("status") && (*old)["status"].contains("storedVersions")) stored = (*old)["status"]["storedVersions"];
  bool have = false;
  for (const auto& s : stored) have = have || s == storage_version;
  if (!have) stored.push_back(storage_version);
  json conditions = json::array(
      {{{"type", "NamesAccepted"}, {"status", "True"}, {"reason", "NoConflicts"}, {"message", "no conflicts found"},
        {"lastTransitionTime", now}},
       {{"type", "Established"}, {"status", "True"}, {"reason", "InitialNamesAccepted"},
        {"message", "the initial names have been accepted"}, {"lastTransitionTime", now}}});
  if (old && old->contains("status") && (*old)["status"].contains("conditions")) conditions = (*old)["status"]["conditions"];
  obj["status"] = {{"acceptedNames", names}, {"conditions", conditions}, {"storedVersions", stored}};
}

}  // namespace

void default_pod_template_spec(json& spec) {
  if (!spec.contains("restartPolicy")) spec["restartPolicy"] = "Always";
  if (!spec.contains("terminationGracePeriodSeconds")) spec["terminationGracePeriodSeconds"] = 30;
  if (!spec.contains("dnsPolicy")) spec["dnsPolicy"] = "ClusterFirst";
  if (!spec.contains("schedulerName")) spec["schedulerName"] = "default-scheduler";
  if (!spec.contains("securityContext")) spec["securityContext"] = json::object();
  if (spec.contains("containers")) default_containers(spec["containers"]);
  if (spec.contains("initContainers")) default_containers(spec["initContainers"]);
}

std::vector<FieldError> validate_pod_template_spec(const json& spec, const std::string& field) {
  std::vector<FieldError> errs = validate_containers(spec.value("containers", json()), field + ".containers", true);
  if (spec.contains("initContainers"))
    append(errs, validate_containers(spec["initContainers"], field + ".initContainers", false));
  std::string rp = spec.value("restartPolicy", "");
  if (rp != "Always" && rp != "OnFailure" && rp != "Never") {
    errs.push_back(not_supported_error(field + ".restartPolicy", rp, {"\"Always\"", "\"OnFailure\"", "\"Never\""}));
  }
  return errs;
}

std::vector<FieldError> validate_name(const ResourceType& t, const std::string& name) {
  const std::string key = t.storage_key();
  if (key == "namespaces") return label_name_errors("metadata.name", name);
  if (key == "services") return dns1035_errors("metadata.name", name);
  if (t.group == kRbac) {
    std::vector<FieldError> e;
    if (name == "." || name == ".." || name.find('/') != std::string::npos || name.find('%') != std::string::npos) {
      e.push_back(invalid_error("metadata.name", name, "may not contain '/' or '%' or be '.' or '..'"));
    }
    return e;
  }
  return subdomain_errors("metadata.name", name);
}

std::vector<FieldError> validate_metadata(const json& metadata) {
  std::vector<FieldError> errs;
  if (metadata.contains("labels") && metadata["labels"].is_object()) {
    for (auto it = metadata["labels"].begin(); it != metadata["labels"].end(); ++it) {
      append(errs, qualified_name_errors("metadata.labels", it.key()));
      if (!it.value().is_string()) {
        errs.push_back(invalid_error("metadata.labels", it.value(), "label values must be strings"));
        continue;
      }
      std::string v = it.value();
      if (v.size() > 63) {
        errs.push_back(invalid_error("metadata.labels", v, "must be no more than 63 characters"));
      } else if (!full_match(v, kLabelValueRe)) {
        errs.push_back(invalid_error("metadata.labels", v,
                                     "a valid label must be an empty string or consist of alphanumeric characters, "
                                     "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                                     "'MyValue',  or 'my_value',  or '12345', regex used for validation is '" +
                                         kLabelValueRe + "')"));
      }
    }
  }
  if (metadata.contains("annotations") && metadata["annotations"].is_object()) {
    std::size_t total = 0;
    for (auto it = metadata["annotations"].begin(); it != metadata["annotations"].end(); ++it) {
      append(errs, qualified_name_errors("metadata.annotations", it.key()));
      total += it.key().size() + (it.value().is_string() ? it.value().get<std::string>().size() : 0);
    }
    if (total > 262144) errs.push_back({"FieldValueTooLong", "metadata.annotations", "Too long: must have at most 262144 bytes"});
  }
  return errs;
}

void apply_crd_schema(StrategyContext& ctx, const ResourceType& t, json& obj) {
  if (!t.schema.is_object()) return;
  std::vector<std::string> unknown;
  default_and_prune(t.schema, obj, unknown);
  if (!unknown.empty()) {
    if (ctx.validation == FieldValidation::Strict) {
      std::string list;
      for (std::size_t i = 0; i < unknown.size(); ++i) {
        if (i) list += ", ";
        list += "unknown field \"" + unknown[i] + "\"";
      }
      throw bad_request(t.kind + " in version \"" + t.version + "\" cannot be handled as a " + t.kind +
                        ": strict decoding error: " + list);
    }
    if (ctx.validation == FieldValidation::Warn) {
      for (const auto& u : unknown) ctx.warnings.push_back("unknown field \"" + u + "\"");
    }
  }
  auto errs = validate_against_schema(t.schema, obj);
  if (!errs.empty()) fail(t, obj, errs);
}

void prepare_create(StrategyContext& ctx, const ResourceType& t, json& obj) {
  const std::string key = t.storage_key();
  if (t.custom) {
    if (t.has_status) obj.erase("status");
    apply_crd_schema(ctx, t, obj);
    return;
  }
  if (key == "pods") {
    prepare_pod_create(ctx, t, obj);
  } else if (key == "services") {
    prepare_service_create(ctx, t, obj);
  } else if (key == "secrets") {
    prepare_secret(ctx, t, obj, nullptr);
    check_data_size(t, obj);
  } else if (key == "configmaps") {
    check_data_size(t, obj);
  } else if (key == "namespaces") {
    prepare_namespace(obj, nullptr);
  } else if (key == "nodes") {
    prepare_node(obj);
  } else if (key == "roles." + kRbac || key == "clusterroles." + kRbac) {
    validate_rules(t, obj, t.namespaced);
    check_escalation(ctx, t, obj, obj.value("rules", json::array()), t.namespaced ? ns_of(obj) : "");
  } else if (key == "rolebindings." + kRbac || key == "clusterrolebindings." + kRbac) {
    prepare_binding(ctx, t, obj, nullptr);
  } else if (key == "customresourcedefinitions.apiextensions.k8s.io") {
    prepare_crd(t, obj, nullptr);
  } else if (t.group == "apps") {
    prepare_workload_create(t, obj);
  }
}

void prepare_update(StrategyContext& ctx, const ResourceType& t, const json& old, json& obj, const std::string& sub) {
  const std::string key = t.storage_key();
  if (t.custom) {
    apply_crd_schema(ctx, t, obj);
    return;
  }
  if (key == "pods") {
    prepare_pod_update(ctx, t, old, obj, sub);
  } else if (key == "services") {
    prepare_service_update(ctx, t, old, obj, sub);
  } else if (key == "secrets") {
    prepare_secret(ctx, t, obj, &old);
    check_data_size(t, obj);
  } else if (key == "configmaps") {
    check_configmap_immutable(old, obj);
    check_data_size(t, obj);
  } else if (key == "namespaces") {
    prepare_namespace(obj, &old);
  } else if (key == "roles." + kRbac || key == "clusterroles." + kRbac) {
    validate_rules(t, obj, t.namespaced);
    check_escalation(ctx, t, obj, obj.value("rules", json::array()), t.namespaced ? ns_of(obj) : "");
  } else if (key == "rolebindings." + kRbac || key == "clusterrolebindings." + kRbac) {
    prepare_binding(ctx, t, obj, &old);
  } else if (key == "customresourcedefinitions.apiextensions.k8s.io") {
    if (sub != "status") prepare_crd(t, obj, &old);
  } else if (t.group == "apps") {
    prepare_workload_update(t, old, obj, sub);
  }
}

}  // namespace kubesim
