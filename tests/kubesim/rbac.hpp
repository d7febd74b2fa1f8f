#pragma once

// Users and RBAC: who a request is (admin or a ServiceAccount, with groups), and whether Roles /
// ClusterRoles bound to them by RoleBindings / ClusterRoleBindings allow a request, with the
// real authorizer's matching rules (apiGroups, resources incl. "*/sub", verbs, resourceNames,
// nonResourceURLs) and its escalation check for RBAC writes.

#include <string>
#include <vector>

#include "store.hpp"

namespace kubesim {

struct UserInfo {
  std::string name;
  std::vector<std::string> groups;
  std::string uid;
  bool is_admin() const;  ///< member of system:masters
  /// `["g1" "g2"]` as the real escalation message prints groups.
  std::string groups_string() const;
};

UserInfo admin_user();
UserInfo service_account_user(const std::string& ns, const std::string& name, const std::string& uid = "");
/// True and fills ns/name for "system:serviceaccount:NS:NAME".
bool parse_service_account_user(const std::string& user, std::string& ns, std::string& name);

struct Attributes {
  std::string verb;  ///< get list watch create update patch delete deletecollection (or http verb for paths)
  bool resource_request = true;
  std::string group;
  std::string resource;
  std::string subresource;
  std::string ns;
  std::string name;
  std::string path;  ///< non-resource requests
};

class Authorizer {
 public:
  explicit Authorizer(Store& store) : store_(store) {}
  /// Whether RBAC allows the request (system:masters always).
  bool allowed(const UserInfo& user, const Attributes& attrs) const;
  /// The real 403 message: `User "u" cannot get resource "pods" in API group "" in the namespace "ns"`.
  static std::string denial_reason(const UserInfo& user, const Attributes& attrs);
  /// Rules of `rules` (a Role's) the user does not hold itself in `ns` ("" = cluster-wide), as
  /// the escalation check sees them; empty when none.
  std::vector<std::string> not_held(const UserInfo& user, const std::string& ns, const json& rules) const;

 private:
  std::vector<json> rules_for(const UserInfo& user, const std::string& ns) const;
  Store& store_;
};

}  // namespace kubesim
