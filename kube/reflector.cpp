#include "kube/reflector.hpp"

#include <map>
#include <random>
#include <utility>

#include "kube/errors.hpp"

namespace trainbench::kube {
namespace {

std::string resource_version_of(const nlohmann::json& obj) {
  if (!obj.is_object()) return {};
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return {};
  auto rv = md->find("resourceVersion");
  if (rv == md->end() || !rv->is_string()) return {};
  return rv->get<std::string>();
}

int status_code_of(const nlohmann::json& status) {
  if (!status.is_object()) return 0;
  auto code = status.find("code");
  return code != status.end() && code->is_number_integer() ? code->get<int>() : 0;
}

}  // namespace

Reflector::Reflector(std::shared_ptr<const Client> client, ResourceType type, std::string ns,
                     ReflectorOptions options, ReflectorHandlers handlers)
    : client_(std::move(client)),
      type_(std::move(type)),
      ns_(std::move(ns)),
      options_(std::move(options)),
      handlers_(std::move(handlers)) {
  if (!client_) throw std::invalid_argument("Reflector: null client");
  if (options_.min_watch_timeout_seconds < 1) options_.min_watch_timeout_seconds = 1;
  if (options_.seed == 0) options_.seed = std::random_device{}();
}

Reflector::~Reflector() { stop(); }

void Reflector::start() {
  std::lock_guard<std::mutex> lock(start_mutex_);
  if (started_) return;
  started_ = true;
  thread_ = std::thread([this] { run(); });
}

void Reflector::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  synced_cv_.notify_all();
  stop_.request_stop();
  std::lock_guard<std::mutex> lock(start_mutex_);
  if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) thread_.join();
}

bool Reflector::has_synced() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return synced_;
}

bool Reflector::wait_for_sync(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  synced_cv_.wait_for(lock, timeout, [this] { return synced_ || stopping_; });
  return synced_;
}

std::string Reflector::resource_version() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return resource_version_;
}

Reflector::Stats Reflector::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void Reflector::set_resource_version(const std::string& rv) {
  if (rv.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  resource_version_ = rv;
}

void Reflector::report(const std::string& message) const {
  if (!handlers_.on_error) return;
  try {
    handlers_.on_error(message);
  } catch (...) {
    // A logging hook must not take the reflector down.
  }
}

template <typename F>
void Reflector::call_handler(const char* name, F&& f) const {
  try {
    f();
  } catch (const std::exception& e) {
    report(std::string("reflector ") + type_.plural + ": " + name + " handler threw: " + e.what());
  } catch (...) {
    report(std::string("reflector ") + type_.plural + ": " + name + " handler threw");
  }
}

void Reflector::list_and_replace() {
  ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  lo.limit = options_.page_size;
  lo.stop = stop_.token();
  nlohmann::json list = client_->list_all(type_, ns_, lo);

  std::map<std::string, nlohmann::json> fresh;
  for (auto& item : list["items"]) {
    if (!item.is_object()) continue;
    // List items come without apiVersion/kind; give them the type's, as watch events have.
    if (!type_.kind.empty()) {
      if (!item.contains("apiVersion")) item["apiVersion"] = type_.api_version();
      if (!item.contains("kind")) item["kind"] = type_.kind;
    }
    std::string key = object_key(item);
    if (key.empty()) continue;
    fresh.emplace(std::move(key), options_.transform ? options_.transform(std::move(item)) : std::move(item));
  }
  std::string rv;
  if (list.contains("metadata")) rv = resource_version_of(list);

  auto old = cache_->replace(fresh);
  // Named references, not structured bindings: clang before 16 (the fuzz build) cannot capture
  // a structured binding in a lambda.
  for (const auto& entry : fresh) {
    const nlohmann::json& obj = entry.second;
    auto it = old.find(entry.first);
    if (it == old.end()) {
      if (handlers_.on_add) call_handler("add", [&] { handlers_.on_add(obj); });
    } else if (resource_version_of(it->second) != resource_version_of(obj)) {
      if (handlers_.on_update) call_handler("update", [&] { handlers_.on_update(it->second, obj); });
    }
  }
  for (const auto& entry : old) {
    const nlohmann::json& obj = entry.second;
    if (fresh.count(entry.first) == 0 && handlers_.on_delete) call_handler("delete", [&] { handlers_.on_delete(obj); });
  }

  bool first_sync = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!rv.empty()) resource_version_ = rv;
    ++stats_.lists;
    first_sync = !synced_;
    synced_ = true;
  }
  if (first_sync) {
    synced_cv_.notify_all();
    if (handlers_.on_synced) call_handler("synced", [&] { handlers_.on_synced(); });
  }
}

bool Reflector::watch_once(int timeout_seconds, bool& got_events) {
  WatchOptions wo;
  wo.resource_version = resource_version();
  wo.label_selector = options_.label_selector;
  wo.field_selector = options_.field_selector;
  wo.allow_bookmarks = true;
  wo.timeout_seconds = timeout_seconds;
  wo.stop = stop_.token();
  auto watch = client_->watch(type_, ns_, wo);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.watches;
  }
  WatchEvent ev;
  while (watch->next(ev)) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.events;
    }
    if (ev.type == WatchEventType::kError) {
      if (status_code_of(ev.object) == 410) return true;
      std::rethrow_exception(make_api_error_from_status(ev.object, "watch " + type_.plural));
    }
    got_events = true;
    const std::string rv = resource_version_of(ev.object);
    if (ev.type == WatchEventType::kBookmark) {
      set_resource_version(rv);
      continue;
    }
    const std::string key = object_key(ev.object);
    if (key.empty()) {
      report("reflector " + type_.plural + ": event without metadata.name ignored");
      continue;
    }
    if (options_.transform) ev.object = options_.transform(std::move(ev.object));
    if (ev.type == WatchEventType::kDeleted) {
      cache_->erase(key);
      set_resource_version(rv);
      if (handlers_.on_delete) call_handler("delete", [&] { handlers_.on_delete(ev.object); });
    } else {
      auto old = cache_->upsert(key, ev.object);
      set_resource_version(rv);
      if (old) {
        if (handlers_.on_update) call_handler("update", [&] { handlers_.on_update(*old, ev.object); });
      } else if (handlers_.on_add) {
        call_handler("add", [&] { handlers_.on_add(ev.object); });
      }
    }
  }
  return false;  // the server ended the watch (timeoutSeconds): watch again from the version
}

void Reflector::run() {
  Backoff backoff(options_.backoff, options_.seed);
  std::mt19937_64 rng(options_.seed ^ 0x9e3779b97f4a7c15ull);
  const int min_timeout = options_.min_watch_timeout_seconds;
  std::uniform_int_distribution<int> timeout_dist(min_timeout, 2 * min_timeout - 1);
  const StopToken stop = stop_.token();
  bool need_list = true;
  int gone_streak = 0;  // 410s in a row without a useful event: back off too

  while (!stop.stop_requested()) {
    bool got_events = false;
    try {
      if (need_list) {
        list_and_replace();
        need_list = false;
      }
      const bool gone = watch_once(timeout_dist(rng), got_events);
      if (got_events) {
        backoff.reset();
        gone_streak = 0;
      }
      if (!gone) continue;
      need_list = true;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.relists_on_gone;
      }
      if (++gone_streak <= 2) continue;
      report("reflector " + type_.plural + ": resourceVersion expired again; backing off");
    } catch (const GoneError&) {
      // HTTP 410 on the watch: the version we hold was compacted away.
      need_list = true;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.relists_on_gone;
      }
      if (++gone_streak <= 2) continue;
    } catch (const TransportError& e) {
      if (stop.stop_requested()) break;
      report("reflector " + type_.plural + ": " + e.what());
    } catch (const std::exception& e) {
      if (stop.stop_requested()) break;
      report("reflector " + type_.plural + ": " + e.what());
    } catch (...) {
      if (stop.stop_requested()) break;
      report("reflector " + type_.plural + ": unknown failure");
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.failures;
    }
    // A stream that delivered events before it broke (a dropped connection, a cut in the middle
    // of an event) was a working watch: reconnect after the first delay, not a growing one.
    if (got_events) backoff.reset();
    if (stop.wait_for(backoff.next())) break;
  }
}

}  // namespace trainbench::kube
