#pragma once

// A watch: the line-delimited JSON events of `?watch=true`, read as they arrive.
//
// One thread reads (next()); stop() and the StopToken may fire from any thread.

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kube/stop_token.hpp"
#include "kube/transport.hpp"

namespace trainbench::kube {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

const char* to_string(WatchEventType type);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  /// The object; for kBookmark only metadata.resourceVersion is meaningful; for kError a
  /// Status (its `code` 410 means the resourceVersion is too old: list again).
  nlohmann::json object;
};

struct WatchOptions {
  std::string resource_version;  ///< start after this version; empty: from "now" (+ synthetic ADDEDs)
  std::string label_selector;
  std::string field_selector;
  bool allow_bookmarks = true;
  int timeout_seconds = 300;  ///< the server ends the watch cleanly after this
  StopToken stop;             ///< makes a blocked next() throw TransportError(kCanceled)
};

/// Parses one line of a watch stream. Throws TransportError(kProtocol) for anything that is not
/// {"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": {...}}.
WatchEvent parse_watch_event(std::string_view line);

class WatchStream {
 public:
  /// Takes a 200 stream (Client::watch builds it). `what` names the watch in errors.
  WatchStream(std::unique_ptr<HttpStream> stream, std::string what, const StopToken& stop);
  ~WatchStream();
  WatchStream(const WatchStream&) = delete;
  WatchStream& operator=(const WatchStream&) = delete;

  /// Blocks for the next event. Returns false when the server ended the watch (timeoutSeconds);
  /// throws TransportError when the stream broke, was malformed (kProtocol) or was stopped.
  /// ERROR events are returned like the others (see make_api_error_from_status).
  bool next(WatchEvent& event);
  /// Ends the watch; a blocked next() throws TransportError(kCanceled). Any thread.
  void stop();

 private:
  std::unique_ptr<HttpStream> stream_;
  std::string what_;
  std::function<void()> cancel_;
  std::unique_ptr<StopCallback> on_stop_;
};

}  // namespace trainbench::kube
