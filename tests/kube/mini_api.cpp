#include "mini_api.hpp"

#include <algorithm>
#include <chrono>

namespace kubetest {

using nlohmann::json;

namespace {

std::string event_line(const std::string& type, const json& obj) { return json{{"type", type}, {"object", obj}}.dump(); }

}  // namespace

void MiniApi::broadcast(const std::string& line) {
  for (auto& w : live_) {
    std::lock_guard<std::mutex> lock(w->m);
    w->lines.push_back(line);
    w->cv.notify_all();
  }
}

void MiniApi::put(const std::string& name, const std::string& value, bool silent) {
  std::lock_guard<std::mutex> lock(mutex_);
  const bool existed = objects_.count(name) > 0;
  ++rv_;
  json obj = {{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", name}, {"namespace", "default"}, {"resourceVersion", std::to_string(rv_)}}},
              {"data", {{"value", value}}}};
  objects_[name] = obj;
  const std::string line = event_line(existed ? "MODIFIED" : "ADDED", obj);
  history_.emplace_back(rv_, line);
  if (!silent) broadcast(line);
}

void MiniApi::remove(const std::string& name, bool silent) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = objects_.find(name);
  if (it == objects_.end()) return;
  ++rv_;
  json obj = it->second;
  obj["metadata"]["resourceVersion"] = std::to_string(rv_);
  objects_.erase(it);
  const std::string line = event_line("DELETED", obj);
  history_.emplace_back(rv_, line);
  if (!silent) broadcast(line);
}

void MiniApi::compact(bool http_gone) {
  std::lock_guard<std::mutex> lock(mutex_);
  compacted_rv_ = rv_;
  http_gone_ = http_gone;
  history_.clear();
  broadcast(event_line("ERROR", {{"kind", "Status"},
                                 {"apiVersion", "v1"},
                                 {"status", "Failure"},
                                 {"reason", "Expired"},
                                 {"message", "too old resource version"},
                                 {"code", 410}}));
  for (auto& w : live_) {
    std::lock_guard<std::mutex> wl(w->m);
    w->end = 1;
    w->cv.notify_all();
  }
}

void MiniApi::bookmark() {
  std::lock_guard<std::mutex> lock(mutex_);
  broadcast(event_line("BOOKMARK",
                       {{"kind", "ConfigMap"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", std::to_string(rv_)}}}}));
}

void MiniApi::send_raw(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  broadcast(line);
}

void MiniApi::end_watches(bool clean) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& w : live_) {
    std::lock_guard<std::mutex> wl(w->m);
    w->end = clean ? 1 : 2;
    w->cv.notify_all();
  }
}

std::string MiniApi::resource_version() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::to_string(rv_);
}

int MiniApi::list_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lists_;
}

int MiniApi::watch_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return watches_;
}

int MiniApi::live_watches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(live_.size());
}

void MiniApi::serve_watch(const FakeRequest& req, FakeConnection& c) {
  auto live = std::make_shared<Live>();
  std::vector<std::string> replay;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++watches_;
    const std::string rv_param = req.param("resourceVersion");
    const long from = rv_param.empty() ? rv_ : std::stol(rv_param);
    if (from < compacted_rv_) {
      const std::string status = json{{"kind", "Status"},
                                      {"apiVersion", "v1"},
                                      {"status", "Failure"},
                                      {"reason", "Expired"},
                                      {"message", "too old resource version: " + rv_param},
                                      {"code", 410}}
                                     .dump();
      if (http_gone_) {
        c.respond(410, status);
      } else {
        c.start_chunked(200);
        c.chunk(event_line("ERROR", json::parse(status)) + "\n");
        c.end_chunked();
      }
      return;
    }
    for (const auto& [rv, line] : history_) {
      if (rv > from) replay.push_back(line);
    }
    live_.push_back(live);
  }
  bool ok = c.start_chunked(200);
  for (const auto& line : replay) ok = ok && c.chunk(line + "\n");
  int end = 0;
  while (ok && !c.stopping()) {
    std::deque<std::string> lines;
    {
      std::unique_lock<std::mutex> lock(live->m);
      live->cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return !live->lines.empty() || live->end; });
      lines.swap(live->lines);
      end = live->end;
    }
    for (const auto& line : lines) ok = ok && c.chunk(line + "\n");
    if (end) break;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(std::remove(live_.begin(), live_.end(), live), live_.end());
  }
  if (end == 1 && ok) {
    c.end_chunked();
  } else {
    c.close_after();
  }
}

FakeApiServer::Handler MiniApi::handler() {
  return [this](const FakeRequest& req, FakeConnection& c) {
    if (req.method != "GET" || req.path != "/api/v1/namespaces/default/configmaps") {
      c.respond(404, status_json(404, "NotFound", "not here"));
      return;
    }
    if (req.param("watch") == "true") {
      serve_watch(req, c);
      return;
    }
    json list;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++lists_;
      list = {{"kind", "ConfigMapList"},
              {"apiVersion", "v1"},
              {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
              {"items", json::array()}};
      for (const auto& [name, obj] : objects_) {
        json item = obj;
        item.erase("kind");  // as the real server: items without type meta
        item.erase("apiVersion");
        list["items"].push_back(item);
      }
    }
    c.respond(200, list.dump());
  };
}

}  // namespace kubetest
