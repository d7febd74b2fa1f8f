#pragma once

// The local copy of a watched collection, keyed "namespace/name" (or "name" for cluster-scoped
// objects). Written by one Reflector, read by any number of threads (all methods thread-safe;
// readers get copies).

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainbench::kube {

class Cache {
 public:
  std::optional<nlohmann::json> get(const std::string& key) const;
  std::optional<nlohmann::json> get(const std::string& ns, const std::string& name) const;
  std::vector<nlohmann::json> list() const;
  /// Objects whose metadata.labels contain every pair of `labels`.
  std::vector<nlohmann::json> list_matching(const std::map<std::string, std::string>& labels) const;
  std::vector<std::string> keys() const;
  std::size_t size() const;

  // Writers (the Reflector). Return the previous object when there was one.
  std::optional<nlohmann::json> upsert(const std::string& key, nlohmann::json object);
  std::optional<nlohmann::json> erase(const std::string& key);
  /// Swaps in a complete new content; returns the old one.
  std::map<std::string, nlohmann::json> replace(std::map<std::string, nlohmann::json> objects);

 private:
  mutable std::mutex mutex_;
  std::map<std::string, nlohmann::json> objects_;
};

}  // namespace trainbench::kube
