#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainbench::op {

/// Read-your-own-writes for a controller that reads from informer caches (what client-go's
/// ControllerExpectations are for). The caches lag the API server by one watch event, so right
/// after the operator wrote something a reconcile may see the world from before that write:
/// a job status without the run it just started, a run without the pods it just created. Acting
/// on that would start a run twice or take fresh pods for lost ones.
///
/// So the controller records what it wrote, per job key ("namespace/name"):
///  - the resourceVersion its last status write returned: until the job cache has reached it,
///    the job is `stale()` and reconcile waits for the watch event (which enqueues the key);
///  - the objects it created and the names it deleted: `overlay()` lays them over the cached
///    list (a created object missing from the cache is added, a deleted one still in it is marked
///    with a deletionTimestamp) until the cache shows them.
/// Every record expires after `ttl` (a watch that re-listed may have skipped a version): then the
/// caller falls back to reading the API.
///
/// Thread-safe; `observe_job` is called by the job informer's handler, the rest by workers.
class OwnWrites {
 public:
  using Clock = std::chrono::steady_clock;
  explicit OwnWrites(std::chrono::milliseconds ttl = std::chrono::seconds(10));

  /// The job informer saw this version of the job (add or update).
  void observe_job(const std::string& key, const std::string& resource_version);
  /// The operator's status write returned this version.
  void wrote_status(const std::string& key, const std::string& resource_version, Clock::time_point now);
  enum class Freshness {
    kCurrent,  ///< the cache holds the operator's last write (or there is none): act on it
    kWaiting,  ///< the cache is behind the operator's last write: wait for the watch
    kExpired,  ///< waited longer than ttl: read the job from the API instead
  };
  Freshness job_freshness(const std::string& key, const std::string& cached_version, Clock::time_point now);

  void created(const std::string& key, const std::string& resource, nlohmann::json object, Clock::time_point now);
  void deleted(const std::string& key, const std::string& resource, const std::string& name, Clock::time_point now);
  /// `cached`: the informer's objects of this resource for this job. Returns them with the
  /// operator's own creates and deletes applied; forgets writes the cache already shows.
  std::vector<nlohmann::json> overlay(const std::string& key, const std::string& resource,
                                      std::vector<nlohmann::json> cached, Clock::time_point now);

  /// When the earliest of the job's deletes that the caches have not shown yet expires (nullopt:
  /// none). Until then overlay() hides the object as being deleted; should the delete not have
  /// taken (a DeleteCollection whose server-side list missed one, a write lost in a restart),
  /// no watch event may ever come for it, so the controller looks again at this time.
  std::optional<Clock::time_point> unconfirmed_deletes_expire(const std::string& key) const;
  /// The job is gone: drop everything about it.
  void forget(const std::string& key);
  /// Number of writes still waiting for the caches (for tests and metrics).
  std::size_t pending() const;

 private:
  struct Written {
    nlohmann::json object;  ///< null for a delete
    Clock::time_point at;
  };
  struct JobWrites {
    std::string status_version;  ///< "" when there is nothing to wait for
    Clock::time_point status_at;
    std::deque<std::string> seen;  ///< the last versions the informer delivered
    std::map<std::string, std::map<std::string, Written>> objects;  ///< resource -> name -> write
  };

  mutable std::mutex mutex_;
  std::map<std::string, JobWrites> jobs_;
  std::chrono::milliseconds ttl_;
};

}  // namespace trainbench::op
