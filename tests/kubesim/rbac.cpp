#include "rbac.hpp"

#include <algorithm>

namespace kubesim {

namespace {

const std::string kRbacGroup = "rbac.authorization.k8s.io";

bool contains(const json& list, const std::string& v) {
  if (!list.is_array()) return false;
  for (const auto& x : list) {
    if (x.is_string() && x.get<std::string>() == v) return true;
  }
  return false;
}

bool has_star_or(const json& list, const std::string& v) { return contains(list, "*") || contains(list, v); }

bool resource_matches(const json& rule_resources, const std::string& combined, const std::string& sub) {
  if (!rule_resources.is_array()) return false;
  for (const auto& r : rule_resources) {
    if (!r.is_string()) continue;
    const std::string& rr = r.get_ref<const std::string&>();
    if (rr == "*" || rr == combined) return true;
    if (!sub.empty() && rr == "*/" + sub) return true;
  }
  return false;
}

bool url_matches(const json& urls, const std::string& path) {
  if (!urls.is_array()) return false;
  for (const auto& u : urls) {
    if (!u.is_string()) continue;
    const std::string& s = u.get_ref<const std::string&>();
    if (s == "*" || s == path) return true;
    if (!s.empty() && s.back() == '*' && starts_with(path, s.substr(0, s.size() - 1))) return true;
  }
  return false;
}

bool applies_to(const json& subject, const UserInfo& user, const std::string& binding_ns) {
  std::string kind = subject.value("kind", "");
  std::string name = subject.value("name", "");
  if (kind == "User") return name == user.name;
  if (kind == "Group") return std::find(user.groups.begin(), user.groups.end(), name) != user.groups.end();
  if (kind == "ServiceAccount") {
    std::string ns = subject.value("namespace", "");
    if (ns.empty()) ns = binding_ns;
    return user.name == "system:serviceaccount:" + ns + ":" + name;
  }
  return false;
}

bool rule_allows(const json& rule, const Attributes& a) {
  if (!has_star_or(rule.value("verbs", json::array()), a.verb)) return false;
  if (!a.resource_request) return url_matches(rule.value("nonResourceURLs", json::array()), a.path);
  if (!has_star_or(rule.value("apiGroups", json::array()), a.group)) return false;
  std::string combined = a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
  if (!resource_matches(rule.value("resources", json::array()), combined, a.subresource)) return false;
  const json names = rule.value("resourceNames", json::array());
  if (names.is_array() && !names.empty()) return contains(names, a.name);
  return true;
}

std::string quoted_list(const std::vector<std::string>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += " ";
    s += "\"" + v[i] + "\"";
  }
  return s + "]";
}

}  // namespace

bool UserInfo::is_admin() const { return std::find(groups.begin(), groups.end(), "system:masters") != groups.end(); }

std::string UserInfo::groups_string() const { return quoted_list(groups); }

UserInfo admin_user() { return {"kubesim-admin", {"system:masters", "system:authenticated"}, ""}; }

UserInfo service_account_user(const std::string& ns, const std::string& name, const std::string& uid) {
  return {"system:serviceaccount:" + ns + ":" + name,
          {"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
          uid};
}

bool parse_service_account_user(const std::string& user, std::string& ns, std::string& name) {
  const std::string prefix = "system:serviceaccount:";
  if (!starts_with(user, prefix)) return false;
  auto rest = user.substr(prefix.size());
  auto colon = rest.find(':');
  if (colon == std::string::npos) return false;
  ns = rest.substr(0, colon);
  name = rest.substr(colon + 1);
  return !ns.empty() && !name.empty();
}

std::vector<json> Authorizer::rules_for(const UserInfo& user, const std::string& ns) const {
  std::lock_guard<std::recursive_mutex> lock(store_.mu());
  std::vector<json> rules;
  auto add_role = [&](const json& role) {
    const json r = role.value("rules", json::array());
    if (r.is_array()) {
      for (const auto& x : r) rules.push_back(x);
    }
  };
  for (const auto& b : store_.list("clusterrolebindings." + kRbacGroup, "")) {
    const json subjects = b->value("subjects", json::array());
    bool applies = false;
    if (subjects.is_array()) {
      for (const auto& s : subjects) applies = applies || applies_to(s, user, "");
    }
    if (!applies) continue;
    const json ref = b->value("roleRef", json::object());
    if (ref.value("kind", "") != "ClusterRole") continue;
    if (auto role = store_.get("clusterroles." + kRbacGroup, "", ref.value("name", ""))) add_role(*role);
  }
  if (!ns.empty()) {
    for (const auto& b : store_.list("rolebindings." + kRbacGroup, ns)) {
      const json subjects = b->value("subjects", json::array());
      bool applies = false;
      if (subjects.is_array()) {
        for (const auto& s : subjects) applies = applies || applies_to(s, user, ns);
      }
      if (!applies) continue;
      const json ref = b->value("roleRef", json::object());
      ObjPtr role;
      if (ref.value("kind", "") == "Role") role = store_.get("roles." + kRbacGroup, ns, ref.value("name", ""));
      if (ref.value("kind", "") == "ClusterRole") role = store_.get("clusterroles." + kRbacGroup, "", ref.value("name", ""));
      if (role) add_role(*role);
    }
  }
  return rules;
}

bool Authorizer::allowed(const UserInfo& user, const Attributes& attrs) const {
  if (user.is_admin()) return true;
  for (const auto& rule : rules_for(user, attrs.ns)) {
    if (rule_allows(rule, attrs)) return true;
  }
  return false;
}

std::string Authorizer::denial_reason(const UserInfo& user, const Attributes& a) {
  if (!a.resource_request) return "User \"" + user.name + "\" cannot " + a.verb + " path \"" + a.path + "\"";
  std::string resource = a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
  std::string s = "User \"" + user.name + "\" cannot " + a.verb + " resource \"" + resource + "\" in API group \"" +
                  a.group + "\"";
  if (!a.ns.empty()) return s + " in the namespace \"" + a.ns + "\"";
  return s + " at the cluster scope";
}

std::vector<std::string> Authorizer::not_held(const UserInfo& user, const std::string& ns, const json& rules) const {
  std::vector<std::string> missing;
  if (user.is_admin() || !rules.is_array()) return missing;
  std::vector<json> owner = rules_for(user, ns);
  auto covered = [&](const std::string& verb, const std::string& group, const std::string& resource,
                     const std::string& name, const std::string& url) {
    for (const auto& r : owner) {
      if (!has_star_or(r.value("verbs", json::array()), verb)) continue;
      if (!url.empty()) {
        if (url_matches(r.value("nonResourceURLs", json::array()), url)) return true;
        continue;
      }
      if (!has_star_or(r.value("apiGroups", json::array()), group)) continue;
      const json res = r.value("resources", json::array());
      bool res_ok = contains(res, "*") || contains(res, resource);
      auto slash = resource.find('/');
      if (!res_ok && slash != std::string::npos) res_ok = contains(res, "*/" + resource.substr(slash + 1));
      if (!res_ok) continue;
      const json names = r.value("resourceNames", json::array());
      if (names.is_array() && !names.empty() && (name.empty() || !contains(names, name))) continue;
      return true;
    }
    return false;
  };
  for (const auto& rule : rules) {
    std::vector<std::string> verbs, groups, resources, names, urls;
    for (const auto& [field, out] : std::vector<std::pair<const char*, std::vector<std::string>*>>{
             {"verbs", &verbs}, {"apiGroups", &groups}, {"resources", &resources}, {"resourceNames", &names},
             {"nonResourceURLs", &urls}}) {
      const json v = rule.value(field, json::array());
      if (v.is_array()) {
        for (const auto& x : v) {
          if (x.is_string()) out->push_back(x);
        }
      }
    }
    if (names.empty()) names.push_back("");
    for (const auto& verb : verbs) {
      for (const auto& url : urls) {
        if (!covered(verb, "", "", "", url)) {
          missing.push_back("{NonResourceURLs:[\"" + url + "\"], Verbs:[\"" + verb + "\"]}");
        }
      }
      for (const auto& g : groups) {
        for (const auto& res : resources) {
          for (const auto& n : names) {
            if (covered(verb, g, res, n, "")) continue;
            std::string s = "{APIGroups:[\"" + g + "\"], Resources:[\"" + res + "\"]";
            if (!n.empty()) s += ", ResourceNames:[\"" + n + "\"]";
            s += ", Verbs:[\"" + verb + "\"]}";
            missing.push_back(s);
          }
        }
      }
    }
  }
  return missing;
}

}  // namespace kubesim
