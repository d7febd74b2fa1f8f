#pragma once

// The API's resource types: built-in kinds and the kinds that CustomResourceDefinitions add at
// run time, with what discovery (/api, /apis, APIResourceLists) publishes about them.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "util.hpp"

namespace kubesim {

struct Subresource {
  std::string name;  ///< "status", "log", "token"
  std::string kind;  ///< response kind
  std::string group;  ///< for a kind from another group (TokenRequest)
  std::string version;
  std::vector<std::string> verbs;
};

struct ResourceType {
  std::string group;  ///< "" for core
  std::string version;
  std::string kind;
  std::string list_kind;
  std::string plural;
  std::string singular;
  bool namespaced = true;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<std::string> verbs;
  std::vector<Subresource> subresources;
  bool custom = false;          ///< a CRD's resource
  bool create_only = false;     ///< reviews: POST only, nothing stored
  bool has_status = false;      ///< status subresource (main endpoint ignores status)
  bool tracks_generation = false;
  std::string crd_name;         ///< plural.group of the CRD
  json schema;                  ///< openAPIV3Schema (custom resources)
  json printer_columns;         ///< additionalPrinterColumns (custom resources)
  std::vector<std::string> selectable_fields;  ///< CRD selectableFields (jsonPaths without the dot)

  /// "pods", "benchmarkjobs.trainbench.dev": one storage per group+resource, all versions.
  std::string storage_key() const { return group.empty() ? plural : plural + "." + group; }
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  bool has_subresource(const std::string& name) const;
};

using TypePtr = std::shared_ptr<const ResourceType>;

/// Kubernetes' version priority: v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > others (lexical).
bool version_less_preferred(const std::string& a, const std::string& b);

class TypeRegistry {
 public:
  TypeRegistry();

  TypePtr find(const std::string& group, const std::string& version, const std::string& plural) const;
  /// The preferred version's type for a storage key.
  TypePtr by_key(const std::string& storage_key) const;
  /// By group and kind (any version, preferred first).
  TypePtr by_kind(const std::string& group, const std::string& kind) const;
  std::vector<TypePtr> all() const;
  bool group_exists(const std::string& group) const;
  bool group_version_exists(const std::string& group, const std::string& version) const;

  /// Registers (or replaces) the served versions of a CRD object; returns field errors as
  /// strings when the CRD cannot be served.
  void register_crd(const json& crd);
  void unregister_crd(const std::string& crd_name);

  // Discovery documents.
  json api_versions(const std::string& server_address) const;  ///< /api
  json api_group_list() const;                                  ///< /apis
  json api_group(const std::string& group) const;               ///< /apis/<group>
  json resource_list(const std::string& group, const std::string& version) const;
  /// Aggregated discovery (apidiscovery.k8s.io/v2 APIGroupDiscoveryList), core or named groups.
  json aggregated_discovery(bool core) const;

 private:
  std::vector<std::string> versions_of(const std::string& group) const;  // preferred first
  mutable std::mutex mu_;
  std::vector<TypePtr> builtin_;
  std::map<std::string, std::vector<TypePtr>> crds_;  // crd name -> served versions
  std::vector<std::string> builtin_groups_;            // order of /apis
};

}  // namespace kubesim
