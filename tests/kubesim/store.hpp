#pragma once

// The object store (etcd's role): objects per storage key ("pods", "benchmarkjobs.trainbench.dev"),
// a global resourceVersion counter, uid and ownerReference indexes, and the watch hub: a bounded
// history of events (replayed to watches that start from an older resourceVersion; older than
// the history -> "too old") and live subscribers.
//
// Locking: one recursive mutex (`mu()`) guards everything; every method but the Watcher's own
// expects it held. Watchers have their own lock and never take the store's.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "util.hpp"

namespace kubesim {

using ObjPtr = std::shared_ptr<const json>;

struct ObjectRef {
  std::string key;
  std::string ns;
  std::string name;
  bool operator<(const ObjectRef& o) const { return std::tie(key, ns, name) < std::tie(o.key, o.ns, o.name); }
  bool operator==(const ObjectRef& o) const { return key == o.key && ns == o.ns && name == o.name; }
};

struct WatchEvent {
  std::string type;  ///< ADDED, MODIFIED, DELETED
  ObjPtr object;     ///< the new state (DELETED: the last state, at the deletion's resourceVersion)
  ObjPtr old;        ///< the previous state (MODIFIED, DELETED)
  std::uint64_t rv = 0;
  ObjectRef ref;
};

/// One subscription: a queue of events for one storage key ("*": every key) and namespace (empty: all).
class Watcher {
 public:
  Watcher(std::string key, std::string ns) : key_(std::move(key)), ns_(std::move(ns)) {}
  /// Waits up to `timeout` for an event; false on timeout or when closed and drained.
  bool next(WatchEvent& out, std::chrono::milliseconds timeout);
  void push(const WatchEvent& e);
  void close();
  bool closed() const;
  const std::string& key() const { return key_; }
  const std::string& ns() const { return ns_; }

 private:
  std::string key_;
  std::string ns_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<WatchEvent> queue_;
  bool closed_ = false;
};

class Store {
 public:
  explicit Store(std::size_t history_limit = 20000) : history_limit_(history_limit) {}

  std::recursive_mutex& mu() { return mu_; }

  std::uint64_t rv() const { return rv_; }
  /// Reserves the next resourceVersion (for objects that are written with it).
  ObjPtr get(const std::string& key, const std::string& ns, const std::string& name) const;
  /// Objects of a key, ordered by namespace then name; `ns` empty: all namespaces.
  std::vector<ObjPtr> list(const std::string& key, const std::string& ns) const;
  /// All storage keys that hold objects.
  std::vector<std::string> keys() const;

  /// Stores `obj` with a new resourceVersion and records ADDED (new) or MODIFIED.
  ObjPtr put(const std::string& key, const std::string& ns, const std::string& name, json obj);
  /// Removes the object and records DELETED; returns its last state (nullptr if absent).
  ObjPtr remove(const std::string& key, const std::string& ns, const std::string& name);

  /// The object with this uid, if stored.
  std::optional<ObjectRef> find_uid(const std::string& uid) const;
  /// Objects whose ownerReferences name `uid`.
  std::vector<ObjectRef> dependents_of(const std::string& uid) const;

  /// Starts a watch on `key` (`ns` empty: all) replaying history events after `since_rv`.
  /// Returns nullptr when `since_rv` is older than the history (410 Gone).
  std::shared_ptr<Watcher> watch(const std::string& key, const std::string& ns, std::uint64_t since_rv);
  /// A watch from now on (no replay).
  std::shared_ptr<Watcher> watch_now(const std::string& key, const std::string& ns);
  void unwatch(const std::shared_ptr<Watcher>& w);

  /// Drops the whole event history: any watch from an older resourceVersion gets 410.
  void compact();
  std::uint64_t compacted_rv() const { return compacted_rv_; }
  std::size_t object_count() const;
  std::size_t history_size() const { return history_.size(); }
  std::size_t watcher_count() const { return watchers_.size(); }

 private:
  void record(WatchEvent e);
  void index_owners(const ObjectRef& ref, const json* old_obj, const json* new_obj);

  mutable std::recursive_mutex mu_;
  std::uint64_t rv_ = 1;
  std::uint64_t compacted_rv_ = 0;
  std::size_t history_limit_;
  std::map<std::string, std::map<std::pair<std::string, std::string>, ObjPtr>> objects_;
  std::map<std::string, ObjectRef> uids_;
  std::map<std::string, std::set<ObjectRef>> owners_;  // owner uid -> dependents
  std::deque<WatchEvent> history_;
  std::vector<std::shared_ptr<Watcher>> watchers_;
};

}  // namespace kubesim
