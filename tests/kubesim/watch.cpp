// Watches: a chunked stream of {"type":..., "object":...} lines. resourceVersion "" or "0"
// starts with synthetic ADDED events for the current state; a resourceVersion N replays history
// after N, or, when N is older than the history, sends one ERROR event with a 410 Expired
// Status (as the watch cache does). Label and field selectors turn MODIFIED into ADDED /
// DELETED when an object starts / stops matching. Bookmarks (allowWatchBookmarks=true) carry
// the current resourceVersion; sendInitialEvents=true ends the initial events with a bookmark
// annotated k8s.io/initial-events-end.

#include <thread>

#include "selectors.hpp"
#include "server.hpp"

namespace kubesim {

void ApiServer::serve_watch(Ctx& c, const ResourceType& t) {
  const HttpRequest& req = c.req;
  const RequestInfo& info = c.info;
  auto labels = LabelSelector::parse(req.param("labelSelector"));
  std::string field_text = req.param("fieldSelector");
  if (!info.name.empty()) field_text = field_text.empty() ? "metadata.name=" + info.name : field_text + ",metadata.name=" + info.name;
  auto fields = FieldSelector::parse(field_text, [&](const std::string& f) { return Api::field_supported(t, f); });
  double timeout = opts_.default_watch_timeout_s;
  if (req.has_param("timeoutSeconds")) {
    try {
      timeout = std::stod(req.param("timeoutSeconds"));
    } catch (...) {
      throw bad_request("invalid timeoutSeconds");
    }
  }
  bool bookmarks = req.param("allowWatchBookmarks") == "true";
  bool initial_events = req.param("sendInitialEvents") == "true";
  std::string rv_text = req.param("resourceVersion");
  std::uint64_t since = 0;
  bool from_now = rv_text.empty() || rv_text == "0";
  if (!from_now) {
    try {
      since = std::stoull(rv_text);
    } catch (...) {
      throw bad_request("resourceVersion: Invalid value: \"" + rv_text + "\": must be a valid resource version");
    }
  }
  const std::string key = t.storage_key();
  const std::string ns = t.namespaced ? info.ns : "";
  auto matches = [&](const json& o) {
    const json* l = json_path(o, "metadata.labels");
    return (labels.empty() || labels.matches(l ? *l : json::object())) && (fields.empty() || fields.matches(o));
  };
  bool table = false;
  {
    std::string accept = to_lower(req.header("accept"));
    table = accept.find("as=table") != std::string::npos;
  }
  auto encode = [&](const std::string& type, const json& obj) {
    json o = Api::present(t, obj);
    if (table && type != "BOOKMARK" && type != "ERROR") o = shape_response(c, t, o, true);
    return json{{"type", type}, {"object", o}}.dump() + "\n";
  };
  auto bookmark = [&](std::uint64_t rv, bool initial_end) {
    json meta = {{"resourceVersion", std::to_string(rv)}, {"creationTimestamp", nullptr}};
    if (initial_end) meta["annotations"] = {{"k8s.io/initial-events-end", "true"}};
    return json{{"type", "BOOKMARK"}, {"object", {{"kind", t.kind}, {"apiVersion", t.api_version()}, {"metadata", meta}}}}
               .dump() + "\n";
  };

  std::shared_ptr<Watcher> watcher;
  std::vector<std::string> initial;
  std::uint64_t start_rv = 0;
  Store& store = api_.store();
  {
    std::lock_guard<std::recursive_mutex> lock(store.mu());
    start_rv = store.rv();
    if (from_now) {
      if (rv_text.empty() || rv_text == "0" || initial_events) {
        for (const auto& o : store.list(key, ns)) {
          if (matches(*o)) initial.push_back(encode("ADDED", *o));
        }
      }
      watcher = store.watch_now(key, ns);
    } else {
      watcher = store.watch(key, ns, since);
      if (watcher && initial_events) {
        // sendInitialEvents with an explicit resourceVersion: the state now, then changes after it.
        store.unwatch(watcher);
        for (const auto& o : store.list(key, ns)) {
          if (matches(*o)) initial.push_back(encode("ADDED", *o));
        }
        watcher = store.watch_now(key, ns);
      }
    }
  }
  c.code = 200;
  audit(c);
  if (!watcher) {
    json status = expired("too old resource version: " + rv_text + " (" + std::to_string(store.compacted_rv()) + ")").status();
    if (c.res.start_stream(200, "application/json")) {
      c.res.write_chunk(json{{"type", "ERROR"}, {"object", status}}.dump() + "\n");
      c.res.end_stream();
    }
    return;
  }
  ++open_watches_;
  const long long epoch = watch_epoch_;
  auto cleanup = [&] {
    std::lock_guard<std::recursive_mutex> lock(store.mu());
    store.unwatch(watcher);
    --open_watches_;
  };
  if (!c.res.start_stream(200, "application/json")) {
    cleanup();
    return;
  }
  bool ok = true;
  for (const auto& line : initial) {
    if (!(ok = c.res.write_chunk(line))) break;
  }
  if (ok && initial_events && bookmarks) ok = c.res.write_chunk(bookmark(start_rv, true));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long long>(timeout * 1000));
  auto next_bookmark = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<long long>(opts_.bookmark_interval_s * 1000));
  // The line an event becomes for this watch ("" when filtered out).
  auto line_for = [&](const WatchEvent& ev) -> std::string {
    bool now_m = matches(*ev.object);
    bool old_m = ev.old && matches(*ev.old);
    if (ev.type == "ADDED") return now_m ? encode("ADDED", *ev.object) : "";
    if (ev.type == "DELETED") return old_m ? encode("DELETED", *ev.object) : "";
    if (now_m && old_m) return encode("MODIFIED", *ev.object);
    if (now_m) return encode("ADDED", *ev.object);
    if (old_m) {
      json gone = *ev.old;
      gone["metadata"]["resourceVersion"] = std::to_string(ev.rv);
      return encode("DELETED", gone);
    }
    return "";
  };
  const auto bookmark_every = std::chrono::milliseconds(static_cast<long long>(opts_.bookmark_interval_s * 1000));
  while (ok) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline || watch_epoch_ != epoch || c.res.peer_closed()) break;
    WatchEvent ev;
    bool got = false;
    std::uint64_t bookmark_rv = 0;
    if (bookmarks && now >= next_bookmark) {
      // Under the store's lock no event can slip in between "queue empty" and reading the
      // resourceVersion, so a bookmark never skips an undelivered event.
      std::lock_guard<std::recursive_mutex> lock(store.mu());
      got = watcher->next(ev, std::chrono::milliseconds(0));
      if (!got) bookmark_rv = store.rv();
    } else {
      auto until = std::min(deadline, bookmarks ? next_bookmark : deadline);
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
      got = watcher->next(ev, std::min(wait, std::chrono::milliseconds(250)));
    }
    if (got) {
      std::string line = line_for(ev);
      if (!line.empty()) ok = c.res.write_chunk(line);
    } else if (bookmark_rv > 0) {
      ok = c.res.write_chunk(bookmark(bookmark_rv, false));
      next_bookmark = now + bookmark_every;
    }
  }
  cleanup();
  if (ok) c.res.end_stream();
}

}  // namespace kubesim
