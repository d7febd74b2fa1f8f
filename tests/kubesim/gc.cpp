#include "gc.hpp"

#include <algorithm>

namespace kubesim {

namespace {

bool deleting(const json& obj) {
  const json* v = json_path(obj, "metadata.deletionTimestamp");
  return v && !v->is_null();
}

bool has_finalizer(const json& obj, const std::string& f) {
  const json* v = json_path(obj, "metadata.finalizers");
  if (!v || !v->is_array()) return false;
  return std::find(v->begin(), v->end(), f) != v->end();
}

std::vector<std::string> owner_uids(const json& obj) {
  std::vector<std::string> out;
  const json* refs = json_path(obj, "metadata.ownerReferences");
  if (refs && refs->is_array()) {
    for (const auto& r : *refs) out.push_back(r.value("uid", ""));
  }
  return out;
}

}  // namespace

void GarbageCollector::start() {
  {
    std::lock_guard<std::recursive_mutex> lock(api_.store().mu());
    watcher_ = api_.store().watch_now("*", "");
  }
  thread_ = std::thread([this] { run(); });
}

void GarbageCollector::stop() {
  if (stopping_.exchange(true)) return;
  if (watcher_) watcher_->close();
  if (thread_.joinable()) thread_.join();
}

void GarbageCollector::run() {
  auto next_sweep = std::chrono::steady_clock::now();
  while (!stopping_) {
    WatchEvent ev;
    if (watcher_->next(ev, std::chrono::milliseconds(250))) {
      try {
        on_event(ev);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "kubesim gc: %s\n", e.what());
      }
    }
    if (std::chrono::steady_clock::now() >= next_sweep) {
      try {
        sweep_namespaces();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "kubesim namespace controller: %s\n", e.what());
      }
      next_sweep = std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
    }
  }
}

void GarbageCollector::on_event(const WatchEvent& ev) {
  const json& obj = *ev.object;
  if (ev.type == "DELETED") {
    std::string uid = obj["metadata"].value("uid", "");
    std::vector<ObjectRef> deps;
    {
      std::lock_guard<std::recursive_mutex> lock(api_.store().mu());
      deps = api_.store().dependents_of(uid);
    }
    for (const auto& d : deps) check_dependent(d);
    for (const auto& owner : owner_uids(obj)) check_foreground_owner(owner);
    return;
  }
  if (!owner_uids(obj).empty()) check_dependent(ev.ref);
  if (deleting(obj) && has_finalizer(obj, "foregroundDeletion")) {
    std::string uid = obj["metadata"].value("uid", "");
    std::vector<ObjectRef> deps;
    {
      std::lock_guard<std::recursive_mutex> lock(api_.store().mu());
      deps = api_.store().dependents_of(uid);
    }
    for (const auto& d : deps) {
      DeleteOptions o;
      o.propagation = "Foreground";
      api_.delete_internal(d.key, d.ns, d.name, o);
    }
    check_foreground_owner(uid);
  }
}

void GarbageCollector::check_dependent(const ObjectRef& ref) {
  std::lock_guard<std::recursive_mutex> lock(api_.store().mu());
  Store& store = api_.store();
  ObjPtr obj = store.get(ref.key, ref.ns, ref.name);
  if (!obj) return;
  auto uids = owner_uids(*obj);
  if (uids.empty()) return;
  std::vector<std::string> alive, gone;
  for (const auto& u : uids) {
    auto owner = store.find_uid(u);
    // An owner that is itself being deleted in the foreground still counts as present.
    (owner ? alive : gone).push_back(u);
  }
  if (alive.empty()) {
    if (!deleting(*obj)) {
      DeleteOptions o;
      o.propagation = "Background";
      api_.delete_internal(ref.key, ref.ns, ref.name, o);
    }
    return;
  }
  if (!gone.empty()) {
    api_.mutate(ref.key, ref.ns, ref.name, [&](json& d) {
      json refs = json::array();
      for (const auto& r : d["metadata"]["ownerReferences"]) {
        if (std::find(gone.begin(), gone.end(), r.value("uid", "")) == gone.end()) refs.push_back(r);
      }
      d["metadata"]["ownerReferences"] = refs;
      return true;
    });
  }
}

void GarbageCollector::check_foreground_owner(const std::string& uid) {
  std::lock_guard<std::recursive_mutex> lock(api_.store().mu());
  Store& store = api_.store();
  auto ref = store.find_uid(uid);
  if (!ref) return;
  ObjPtr owner = store.get(ref->key, ref->ns, ref->name);
  if (!owner || !deleting(*owner) || !has_finalizer(*owner, "foregroundDeletion")) return;
  // Dependents with blockOwnerDeletion keep the owner; the others do not.
  for (const auto& d : store.dependents_of(uid)) {
    ObjPtr dep = store.get(d.key, d.ns, d.name);
    if (!dep) continue;
    for (const auto& r : (*dep)["metadata"]["ownerReferences"]) {
      if (r.value("uid", "") == uid && r.value("blockOwnerDeletion", false)) return;
    }
  }
  api_.mutate(ref->key, ref->ns, ref->name, [&](json& o) {
    json f = json::array();
    for (const auto& x : o["metadata"]["finalizers"]) {
      if (x != "foregroundDeletion") f.push_back(x);
    }
    o["metadata"]["finalizers"] = f;
    if (f.empty()) o["metadata"].erase("finalizers");
    return true;
  });
}

void GarbageCollector::sweep_namespaces() {
  std::vector<std::string> terminating;
  {
    std::lock_guard<std::recursive_mutex> lock(api_.store().mu());
    for (const auto& ns : api_.store().list("namespaces", "")) {
      if (deleting(*ns)) terminating.push_back((*ns)["metadata"].value("name", ""));
    }
  }
  for (const auto& ns : terminating) {
    std::lock_guard<std::recursive_mutex> lock(api_.store().mu());
    Store& store = api_.store();
    bool empty = true;
    for (const auto& key : store.keys()) {
      for (const auto& obj : store.list(key, ns)) {
        if ((*obj)["metadata"].value("namespace", "") != ns) continue;
        empty = false;
        if (!deleting(*obj)) api_.delete_internal(key, ns, (*obj)["metadata"].value("name", ""));
      }
    }
    if (empty) store.remove("namespaces", "", ns);
  }
}

}  // namespace kubesim
