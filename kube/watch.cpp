#include "kube/watch.hpp"

#include <utility>

#include "kube/errors.hpp"
#include "kube/json_depth.hpp"

namespace trainbench::kube {

const char* to_string(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded: return "ADDED";
    case WatchEventType::kModified: return "MODIFIED";
    case WatchEventType::kDeleted: return "DELETED";
    case WatchEventType::kBookmark: return "BOOKMARK";
    case WatchEventType::kError: return "ERROR";
  }
  return "UNKNOWN";
}

WatchEvent parse_watch_event(std::string_view line) {
  auto bad = [](const std::string& why) {
    return TransportError(TransportError::Kind::kProtocol, "malformed watch event: " + why);
  };
  if (json_nesting_exceeds(line)) throw bad("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw bad("not JSON (" + std::to_string(line.size()) + " bytes)");
  if (!j.is_object()) throw bad("not a JSON object");
  auto type = j.find("type");
  if (type == j.end() || !type->is_string()) throw bad("no \"type\"");
  auto object = j.find("object");
  if (object == j.end() || !object->is_object()) throw bad("no \"object\"");
  const auto& t = type->get_ref<const std::string&>();
  WatchEvent ev;
  if (t == "ADDED") {
    ev.type = WatchEventType::kAdded;
  } else if (t == "MODIFIED") {
    ev.type = WatchEventType::kModified;
  } else if (t == "DELETED") {
    ev.type = WatchEventType::kDeleted;
  } else if (t == "BOOKMARK") {
    ev.type = WatchEventType::kBookmark;
  } else if (t == "ERROR") {
    ev.type = WatchEventType::kError;
  } else {
    throw bad("unknown type \"" + t.substr(0, 32) + "\"");
  }
  ev.object = std::move(*object);
  return ev;
}

WatchStream::WatchStream(std::unique_ptr<HttpStream> stream, std::string what, const StopToken& stop)
    : stream_(std::move(stream)), what_(std::move(what)), cancel_(stream_->canceler()) {
  on_stop_ = std::make_unique<StopCallback>(stop, cancel_);
}

WatchStream::~WatchStream() {
  on_stop_.reset();
  stream_.reset();  // cancels the request if it is still open
}

bool WatchStream::next(WatchEvent& event) {
  std::string line;
  for (;;) {
    if (!stream_->read_line(line)) return false;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // keep-alive blank lines
    try {
      event = parse_watch_event(line);
    } catch (const TransportError& e) {
      throw TransportError(e.kind(), what_ + ": " + e.what());
    }
    return true;
  }
}

void WatchStream::stop() { cancel_(); }

}  // namespace trainbench::kube
