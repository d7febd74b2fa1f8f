#pragma once

// An informer-style reflector: keeps a Cache of one collection in step with the server and
// calls handlers on changes.
//
//   list (all pages; remember metadata.resourceVersion) -> watch from that version
//     BOOKMARK              -> remember its resourceVersion
//     ADDED/MODIFIED/DELETED-> update the cache, remember the version, call on_add/update/delete
//     410 Gone (HTTP status or ERROR event with code 410) -> list again; the difference between
//                              the cache and the new list is delivered as add/update/delete
//     clean end (timeoutSeconds) -> watch again from the remembered version
//     any other failure     -> wait (capped exponential backoff with jitter), then watch again
//                              (or list again, if the list failed)
//
// Thread safety: handlers run on the reflector's own thread, one at a time, in order; they must
// not block for long. cache(), has_synced(), wait_for_sync(), resource_version() and stats() may
// be called from any thread. stop() returns promptly (it aborts the open watch or list and the
// backoff sleep) and may be called from any thread; called from a handler it only requests the
// stop. The destructor stops and joins.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "kube/backoff.hpp"
#include "kube/cache.hpp"
#include "kube/client.hpp"
#include "kube/resource.hpp"
#include "kube/stop_token.hpp"

namespace trainbench::kube {

struct ReflectorHandlers {
  std::function<void(const nlohmann::json& object)> on_add;
  std::function<void(const nlohmann::json& old_object, const nlohmann::json& new_object)> on_update;
  /// With the last known state of the object.
  std::function<void(const nlohmann::json& object)> on_delete;
  /// Once, after the first complete list was delivered to the cache and the handlers.
  std::function<void()> on_synced;
  /// Failures the reflector recovers from (for logs). Never contains credentials.
  std::function<void(const std::string& message)> on_error;
};

struct ReflectorOptions {
  std::string label_selector;
  std::string field_selector;
  std::int64_t page_size = 500;
  /// Each watch asks the server for a random timeout in [min, 2 * min) seconds (as client-go),
  /// so that many watches do not all reconnect at once.
  int min_watch_timeout_seconds = 300;
  BackoffPolicy backoff;  ///< between failed attempts
  std::uint64_t seed = 0;  ///< for jitter and timeouts; 0: random
  /// Applied to every object before it is cached and handed to the handlers (client-go's
  /// SetTransform): drop what the consumer never reads, to keep the cache small. Must keep
  /// metadata.name, metadata.namespace and metadata.resourceVersion.
  std::function<nlohmann::json(nlohmann::json)> transform;
};

class Reflector {
 public:
  struct Stats {
    std::uint64_t lists = 0;            ///< successful lists
    std::uint64_t watches = 0;          ///< watches opened (200)
    std::uint64_t events = 0;           ///< events received, bookmarks included
    std::uint64_t relists_on_gone = 0;  ///< 410 answers that caused a list
    std::uint64_t failures = 0;         ///< errors followed by a backoff
  };

  /// `ns` empty: all namespaces (or a cluster-scoped type).
  Reflector(std::shared_ptr<const Client> client, ResourceType type, std::string ns, ReflectorOptions options,
            ReflectorHandlers handlers);
  ~Reflector();
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  /// Starts the reflector thread (once).
  void start();
  /// Stops and joins (idempotent).
  void stop();

  bool has_synced() const;
  /// Waits for the first complete list; false on timeout or when stopped first.
  bool wait_for_sync(std::chrono::milliseconds timeout) const;
  std::shared_ptr<const Cache> cache() const { return cache_; }
  /// The last resourceVersion seen (list, event or bookmark).
  std::string resource_version() const;
  Stats stats() const;

 private:
  void run();
  void list_and_replace();
  /// Returns true when the server answered 410 (list again).
  bool watch_once(int timeout_seconds, bool& got_events);
  void set_resource_version(const std::string& rv);
  void report(const std::string& message) const;
  template <typename F>
  void call_handler(const char* name, F&& f) const;

  std::shared_ptr<const Client> client_;
  ResourceType type_;
  std::string ns_;
  ReflectorOptions options_;
  ReflectorHandlers handlers_;
  std::shared_ptr<Cache> cache_ = std::make_shared<Cache>();

  StopSource stop_;
  std::thread thread_;
  std::thread::id thread_id_;
  std::mutex start_mutex_;
  bool started_ = false;

  mutable std::mutex mutex_;
  mutable std::condition_variable synced_cv_;
  bool synced_ = false;
  bool stopping_ = false;
  std::string resource_version_;
  Stats stats_;
};

}  // namespace trainbench::kube
