#pragma once

// Which REST collection a request addresses, and URL building.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainbench::kube {

struct ResourceType {
  std::string group;    ///< "" for the core group
  std::string version;  ///< "v1", "v1alpha1"
  std::string plural;   ///< "configmaps", "benchmarkjobs"
  bool namespaced = true;
  std::string kind;  ///< "ConfigMap"; create/update/apply fill apiVersion/kind from it when missing

  /// "v1" or "group/version".
  std::string api_version() const;
  /// "/api/v1/namespaces/NS/configmaps[/NAME[/SUBRESOURCE]]"; `ns` empty for cluster-scoped
  /// types or for a namespaced list across all namespaces. Throws std::invalid_argument for an
  /// empty or unsafe name segment (names must not contain '/', "." or "..").
  std::string path(std::string_view ns, std::string_view name = {}, std::string_view subresource = {}) const;
};

/// Well-known types. `benchmark_jobs()` is trainbench.dev/v1alpha1.
namespace resources {
ResourceType config_maps();
ResourceType secrets();
ResourceType pods();
ResourceType services();
ResourceType service_accounts();
ResourceType events();
ResourceType namespaces();
ResourceType roles();
ResourceType role_bindings();
ResourceType leases();
ResourceType custom_resource_definitions();
ResourceType benchmark_jobs();
}  // namespace resources

/// Percent-encodes a query key or value (RFC 3986 unreserved characters stay).
std::string url_encode(std::string_view s);

/// Builds "k1=v1&k2=v2", skipping pairs whose value is empty.
std::string build_query(const std::vector<std::pair<std::string, std::string>>& params);

/// "namespace/name", or "name" for cluster-scoped objects; empty when metadata.name is missing.
std::string object_key(const nlohmann::json& obj);

}  // namespace trainbench::kube
