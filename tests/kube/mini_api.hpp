#pragma once

// A tiny in-memory ConfigMap collection behind a FakeApiServer handler, for reflector tests:
// list with resourceVersion, watch with replay from a version, live events, bookmarks,
// compaction (410 as an ERROR event or as an HTTP answer), broken and malformed streams.

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fake_api_server.hpp"

namespace kubetest {

class MiniApi {
 public:
  /// Creates or updates default/<name>; live watches see ADDED/MODIFIED unless `silent`.
  void put(const std::string& name, const std::string& value, bool silent = false);
  void remove(const std::string& name, bool silent = false);
  /// Forgets the history: watches from an older version get 410 (ERROR event, or HTTP 410 when
  /// `http_gone`); live watches get an ERROR 410 event and end.
  void compact(bool http_gone = false);
  void bookmark();
  /// Sends a raw line to live watches.
  void send_raw(const std::string& line);
  /// Ends live watches: cleanly (terminating chunk) or by dropping the connection.
  void end_watches(bool clean);

  std::string resource_version() const;
  int list_count() const;
  int watch_count() const;
  int live_watches() const;

  FakeApiServer::Handler handler();

 private:
  struct Live {
    std::mutex m;
    std::condition_variable cv;
    std::deque<std::string> lines;  // "" + end marker handled by `end`
    int end = 0;                    // 1: clean end, 2: drop
  };
  void broadcast(const std::string& line);  // requires mutex_
  void serve_watch(const FakeRequest& req, FakeConnection& c);

  mutable std::mutex mutex_;
  long rv_ = 100;
  long compacted_rv_ = 0;
  bool http_gone_ = false;
  std::map<std::string, nlohmann::json> objects_;
  std::vector<std::pair<long, std::string>> history_;
  std::vector<std::shared_ptr<Live>> live_;
  int lists_ = 0;
  int watches_ = 0;
};

}  // namespace kubetest
