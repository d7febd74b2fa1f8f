#include "store.hpp"

#include <algorithm>

namespace kubesim {

bool Watcher::next(WatchEvent& out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !queue_.empty() || closed_; });
  if (queue_.empty()) return false;
  out = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

void Watcher::push(const WatchEvent& e) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    queue_.push_back(e);
  }
  cv_.notify_one();
}

void Watcher::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

bool Watcher::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

ObjPtr Store::get(const std::string& key, const std::string& ns, const std::string& name) const {
  auto k = objects_.find(key);
  if (k == objects_.end()) return nullptr;
  auto it = k->second.find({ns, name});
  return it == k->second.end() ? nullptr : it->second;
}

std::vector<ObjPtr> Store::list(const std::string& key, const std::string& ns) const {
  std::vector<ObjPtr> out;
  auto k = objects_.find(key);
  if (k == objects_.end()) return out;
  if (ns.empty()) {
    for (const auto& kv : k->second) out.push_back(kv.second);
  } else {
    for (auto it = k->second.lower_bound({ns, ""}); it != k->second.end() && it->first.first == ns; ++it) {
      out.push_back(it->second);
    }
  }
  return out;
}

std::vector<std::string> Store::keys() const {
  std::vector<std::string> out;
  for (const auto& kv : objects_) {
    if (!kv.second.empty()) out.push_back(kv.first);
  }
  return out;
}

std::size_t Store::object_count() const {
  std::size_t n = 0;
  for (const auto& kv : objects_) n += kv.second.size();
  return n;
}

namespace {
std::vector<std::string> owner_uids(const json* obj) {
  std::vector<std::string> out;
  if (!obj) return out;
  const json* refs = json_path(*obj, "metadata.ownerReferences");
  if (!refs || !refs->is_array()) return out;
  for (const auto& r : *refs) {
    if (r.is_object() && r.contains("uid") && r["uid"].is_string()) out.push_back(r["uid"]);
  }
  return out;
}
std::string uid_of(const json& obj) {
  const json* u = json_path(obj, "metadata.uid");
  return u && u->is_string() ? u->get<std::string>() : "";
}
}  // namespace

void Store::index_owners(const ObjectRef& ref, const json* old_obj, const json* new_obj) {
  for (const auto& u : owner_uids(old_obj)) {
    auto it = owners_.find(u);
    if (it != owners_.end()) {
      it->second.erase(ref);
      if (it->second.empty()) owners_.erase(it);
    }
  }
  for (const auto& u : owner_uids(new_obj)) owners_[u].insert(ref);
}

ObjPtr Store::put(const std::string& key, const std::string& ns, const std::string& name, json obj) {
  ++rv_;
  obj["metadata"]["resourceVersion"] = std::to_string(rv_);
  auto ptr = std::make_shared<const json>(std::move(obj));
  auto& slot = objects_[key][{ns, name}];
  ObjPtr old = slot;
  slot = ptr;
  ObjectRef ref{key, ns, name};
  index_owners(ref, old.get(), ptr.get());
  if (old) {
    std::string ou = uid_of(*old);
    if (!ou.empty() && ou != uid_of(*ptr)) uids_.erase(ou);
  }
  std::string u = uid_of(*ptr);
  if (!u.empty()) uids_[u] = ref;
  record({old ? "MODIFIED" : "ADDED", ptr, old, rv_, ref});
  return ptr;
}

ObjPtr Store::remove(const std::string& key, const std::string& ns, const std::string& name) {
  auto k = objects_.find(key);
  if (k == objects_.end()) return nullptr;
  auto it = k->second.find({ns, name});
  if (it == k->second.end()) return nullptr;
  ObjPtr old = it->second;
  k->second.erase(it);
  ++rv_;
  json last = *old;
  last["metadata"]["resourceVersion"] = std::to_string(rv_);
  auto ptr = std::make_shared<const json>(std::move(last));
  ObjectRef ref{key, ns, name};
  index_owners(ref, old.get(), nullptr);
  std::string u = uid_of(*old);
  auto uit = uids_.find(u);
  if (uit != uids_.end() && uit->second == ref) uids_.erase(uit);
  record({"DELETED", ptr, old, rv_, ref});
  return ptr;
}

std::optional<ObjectRef> Store::find_uid(const std::string& uid) const {
  auto it = uids_.find(uid);
  if (it == uids_.end()) return std::nullopt;
  return it->second;
}

std::vector<ObjectRef> Store::dependents_of(const std::string& uid) const {
  auto it = owners_.find(uid);
  if (it == owners_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

void Store::record(WatchEvent e) {
  for (const auto& w : watchers_) {
    if ((w->key() == "*" || w->key() == e.ref.key) && (w->ns().empty() || w->ns() == e.ref.ns)) w->push(e);
  }
  history_.push_back(std::move(e));
  while (history_.size() > history_limit_) {
    compacted_rv_ = history_.front().rv;
    history_.pop_front();
  }
}

std::shared_ptr<Watcher> Store::watch(const std::string& key, const std::string& ns, std::uint64_t since_rv) {
  if (since_rv < compacted_rv_) return nullptr;
  auto w = std::make_shared<Watcher>(key, ns);
  auto first = std::upper_bound(history_.begin(), history_.end(), since_rv,
                                [](std::uint64_t rv, const WatchEvent& e) { return rv < e.rv; });
  for (auto it = first; it != history_.end(); ++it) {
    if (it->ref.key == key && (ns.empty() || it->ref.ns == ns)) w->push(*it);
  }
  watchers_.push_back(w);
  return w;
}

std::shared_ptr<Watcher> Store::watch_now(const std::string& key, const std::string& ns) {
  auto w = std::make_shared<Watcher>(key, ns);
  watchers_.push_back(w);
  return w;
}

void Store::unwatch(const std::shared_ptr<Watcher>& w) {
  w->close();
  watchers_.erase(std::remove(watchers_.begin(), watchers_.end(), w), watchers_.end());
}

void Store::compact() {
  history_.clear();
  compacted_rv_ = rv_;
}

}  // namespace kubesim
