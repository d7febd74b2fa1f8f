// kubesim's own endpoints (admin token only), for tests:
//   POST /kubesim/v1/namespaces/NS/pods/NAME/kill?signal=9[&container=C]  signal a pod's processes
//   POST /kubesim/v1/compact         drop the watch history (older resourceVersions get 410)
//   POST /kubesim/v1/watches/close   end every open watch stream, as a dropped connection would
//   POST /kubesim/v1/nodes/NAME/lose  take a node away (node_lifecycle.hpp): its kubelet stops
//   GET  /kubesim/v1/stats           counters (requests, objects, resourceVersion, watches, pods, faults)
//   GET|PUT|POST|DELETE /kubesim/v1/faults   the fault injection rules (faults.hpp, README.md)

#include <csignal>

#include "server.hpp"

namespace kubesim {

void ApiServer::serve_admin(Ctx& c) {
  c.info.verb = to_lower(c.req.method);
  if (!c.user.is_admin()) {
    send_error(c, ApiError(403, "Forbidden",
                           "forbidden: User \"" + c.user.name + "\" cannot " + c.info.verb + " path \"" + c.req.path + "\"",
                           json::object()));
    return;
  }
  std::vector<std::string> parts;
  for (const auto& p : split(c.req.path, '/')) {
    if (!p.empty()) parts.push_back(p);
  }
  // parts[0] == "kubesim"
  const std::string& m = c.req.method;
  if (parts.size() == 3 && parts[1] == "v1" && parts[2] == "stats" && m == "GET") {
    Store& store = api_.store();
    json out;
    {
      std::lock_guard<std::recursive_mutex> lock(store.mu());
      out = {{"resourceVersion", std::to_string(store.rv())},
             {"compactedResourceVersion", std::to_string(store.compacted_rv())},
             {"objects", store.object_count()},
             {"history", store.history_size()},
             {"watchers", store.watcher_count()}};
    }
    out["requests"] = requests_.load();
    out["openWatches"] = open_watches_.load();
    out["auditEntries"] = audit_.count();
    if (kubelet_) out["kubelet"] = kubelet_->stats();
    out["faults"] = faults_.describe();
    send_json(c, 200, out);
    return;
  }
  if (parts.size() == 3 && parts[1] == "v1" && parts[2] == "faults") {
    serve_faults_admin(c);
    return;
  }
  if (parts.size() == 3 && parts[1] == "v1" && parts[2] == "compact" && m == "POST") {
    Store& store = api_.store();
    std::lock_guard<std::recursive_mutex> lock(store.mu());
    store.compact();
    send_json(c, 200, {{"compactedResourceVersion", std::to_string(store.compacted_rv())}});
    return;
  }
  if (parts.size() == 4 && parts[1] == "v1" && parts[2] == "watches" && parts[3] == "close" && m == "POST") {
    long long open = open_watches_;
    close_watches();
    send_json(c, 200, {{"closed", open}});
    return;
  }
  if (parts.size() == 7 && parts[1] == "v1" && parts[2] == "namespaces" && parts[4] == "pods" && parts[6] == "kill" &&
      m == "POST") {
    int sig = SIGKILL;
    if (c.req.has_param("signal")) {
      try {
        sig = std::stoi(c.req.param("signal"));
      } catch (...) {
        throw bad_request("invalid signal");
      }
    }
    int n = kubelet_ ? kubelet_->kill(parts[3], parts[5], c.req.param("container"), sig) : -1;
    if (n < 0) throw not_found("", "pods", parts[5]);
    send_json(c, 200, {{"signalled", n}, {"signal", sig}});
    return;
  }
  if (parts.size() == 5 && parts[1] == "v1" && parts[2] == "nodes" && parts[4] == "lose" && m == "POST") {
    if (!kubelet_ || !kubelet_->lose_node(parts[3])) throw not_found("", "nodes", parts[3]);
    send_json(c, 200, {{"lost", parts[3]}});
    return;
  }
  c.code = 404;
  c.res.send(404, "text/plain; charset=utf-8", "404 page not found\n");
}

}  // namespace kubesim
