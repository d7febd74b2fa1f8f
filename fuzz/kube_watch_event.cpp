// The kube client's decoding of a watch stream and the objects in it, as the operator's
// informers run it: the input is a stream (lines, as HttpStream::read_line splits them; blank
// lines are keep-alives); each line goes through kube::parse_watch_event (only TransportError
// may come out), object_key, the Cache (upsert / erase / list_matching by the object's labels),
// an ERROR event's Status through make_api_error_from_status, and the operator's cache
// transforms (slim_pod, slim_config_map, slim_object). A decoded event must decode the same from
// its own JSON.

#include <exception>
#include <map>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.hpp"
#include "operator/controller/cache_transforms.hpp"
#include "kube/cache.hpp"
#include "kube/errors.hpp"
#include "kube/resource.hpp"
#include "kube/watch.hpp"

namespace {

using namespace trainbench;
using nlohmann::json;

std::map<std::string, std::string> string_labels(const json& object) {
  std::map<std::string, std::string> out;
  const json md = object.value("metadata", json::object());
  if (!md.is_object()) return out;
  auto labels = md.find("labels");
  if (labels == md.end() || !labels->is_object()) return out;
  for (const auto& [k, v] : labels->items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

void check_status(const json& status) {
  try {
    std::rethrow_exception(kube::make_api_error_from_status(status, "watch"));
  } catch (const kube::ApiError& e) {
    FUZZ_CHECK(e.code() >= 400 && e.code() <= 599, "an ERROR event's code outside 400..599");
    FUZZ_CHECK(std::string_view(e.what()).size() > 0, "an ApiError without a message");
  }
}

void apply(kube::Cache& cache, const kube::WatchEvent& ev) {
  const std::string key = kube::object_key(ev.object);
  (void)op::slim_pod(ev.object);
  (void)op::slim_config_map(ev.object);
  (void)op::slim_object(ev.object);
  switch (ev.type) {
    case kube::WatchEventType::kAdded:
    case kube::WatchEventType::kModified:
      if (!key.empty()) cache.upsert(key, op::slim_pod(ev.object));
      (void)cache.list_matching(string_labels(ev.object));
      break;
    case kube::WatchEventType::kDeleted:
      if (!key.empty()) cache.erase(key);
      break;
    case kube::WatchEventType::kError:
      check_status(ev.object);
      break;
    case kube::WatchEventType::kBookmark:
      break;
  }
}

void round_trip(const kube::WatchEvent& ev) {
  const json again = {{"type", kube::to_string(ev.type)}, {"object", ev.object}};
  try {
    const kube::WatchEvent back = kube::parse_watch_event(again.dump());
    FUZZ_CHECK(back.type == ev.type && back.object == ev.object, "watch event round trip differs");
  } catch (const kube::TransportError& e) {
    trainbench::fuzz::fail(__FILE__, __LINE__, std::string("a decoded event's own JSON is refused: ") + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view stream(reinterpret_cast<const char*>(data), size);
  kube::Cache cache;
  while (!stream.empty()) {
    const std::size_t nl = stream.find('\n');
    std::string_view line = stream.substr(0, nl);
    stream.remove_prefix(nl == std::string_view::npos ? stream.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    kube::WatchEvent ev;
    try {
      ev = kube::parse_watch_event(line);
    } catch (const kube::TransportError& e) {
      FUZZ_CHECK(e.kind() == kube::TransportError::Kind::kProtocol, "a malformed event that is not kProtocol");
      continue;
    }
    apply(cache, ev);
    round_trip(ev);
  }
  (void)cache.list();
  return 0;
}
