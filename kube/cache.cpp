#include "kube/cache.hpp"

#include <utility>

namespace trainbench::kube {

std::optional<nlohmann::json> Cache::get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

std::optional<nlohmann::json> Cache::get(const std::string& ns, const std::string& name) const {
  return get(ns.empty() ? name : ns + "/" + name);
}

std::vector<nlohmann::json> Cache::list() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<nlohmann::json> out;
  out.reserve(objects_.size());
  for (const auto& [key, obj] : objects_) out.push_back(obj);
  return out;
}

std::vector<nlohmann::json> Cache::list_matching(const std::map<std::string, std::string>& labels) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<nlohmann::json> out;
  for (const auto& [key, obj] : objects_) {
    const auto md = obj.find("metadata");
    if (md == obj.end() || !md->is_object()) continue;
    const auto have = md->find("labels");
    bool all = true;
    for (const auto& [k, v] : labels) {
      if (have == md->end() || !have->is_object()) {
        all = false;
        break;
      }
      auto it = have->find(k);
      if (it == have->end() || !it->is_string() || it->get_ref<const std::string&>() != v) {
        all = false;
        break;
      }
    }
    if (all) out.push_back(obj);
  }
  return out;
}

std::vector<std::string> Cache::keys() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  out.reserve(objects_.size());
  for (const auto& entry : objects_) out.push_back(entry.first);
  return out;
}

std::size_t Cache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return objects_.size();
}

std::optional<nlohmann::json> Cache::upsert(const std::string& key, nlohmann::json object) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = objects_.find(key);
  if (it == objects_.end()) {
    objects_.emplace(key, std::move(object));
    return std::nullopt;
  }
  std::optional<nlohmann::json> old = std::move(it->second);
  it->second = std::move(object);
  return old;
}

std::optional<nlohmann::json> Cache::erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  std::optional<nlohmann::json> old = std::move(it->second);
  objects_.erase(it);
  return old;
}

std::map<std::string, nlohmann::json> Cache::replace(std::map<std::string, nlohmann::json> objects) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::swap(objects_, objects);
  return objects;
}

}  // namespace trainbench::kube
