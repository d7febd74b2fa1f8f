#include "fake_cluster.hpp"

#include <algorithm>
#include <sstream>

namespace trainbench::op::test {

using kubetest::FakeConnection;
using kubetest::FakeRequest;
using nlohmann::json;

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

bool matches(const std::string& selector, const json& object) {
  const json labels = object["metadata"].value("labels", json::object());
  for (const auto& term : split(selector, ',')) {
    const auto eq = term.find('=');
    if (labels.value(term.substr(0, eq), "") != term.substr(eq + 1)) return false;
  }
  return true;
}

json error_status(int code, const std::string& reason) {
  return json::parse(kubetest::status_json(code, reason, reason + " (scripted by the test)"));
}

}  // namespace

void FakeCluster::seed(const std::string& resource, json object) {
  std::lock_guard<std::mutex> lock(mutex_);
  object["metadata"]["resourceVersion"] = std::to_string(++version_);
  const json& md = object["metadata"];
  objects_[resource][key(md.value("namespace", ""), md.value("name", ""))] = std::move(object);
}

void FakeCluster::fail_next(const std::string& method, const std::string& resource, int status,
                            const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  scripted_[method + " " + resource].emplace_back(status, reason);
}

std::optional<json> FakeCluster::get(const std::string& resource, const std::string& ns,
                                     const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto of = objects_.find(resource);
  if (of == objects_.end()) return std::nullopt;
  const auto it = of->second.find(key(ns, name));
  if (it == of->second.end()) return std::nullopt;
  return it->second;
}

std::vector<FakeCluster::Write> FakeCluster::writes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return writes_;
}

std::size_t FakeCluster::count(const std::string& method, const std::string& resource) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<std::size_t>(std::count_if(
      writes_.begin(), writes_.end(), [&](const Write& w) { return w.method == method && w.resource == resource; }));
}

kubetest::FakeApiServer::Handler FakeCluster::handler() {
  return [this](const FakeRequest& req, FakeConnection& c) { serve(req, c); };
}

/// /api/v1/namespaces/NS/RESOURCE/NAME/SUB or /apis/GROUP/VERSION/...; namespace and the
/// parts after the resource are optional.
FakeCluster::Target FakeCluster::target_of(const std::string& path) {
  const std::vector<std::string> parts = split(path, '/');
  std::size_t i = parts.at(0) == "api" ? 2 : 3;
  Target t;
  if (i < parts.size() && parts[i] == "namespaces" && i + 2 < parts.size()) {
    t.ns = parts[i + 1];
    i += 2;
  }
  t.resource = parts.at(i);
  if (i + 1 < parts.size()) t.name = parts[i + 1];
  if (i + 2 < parts.size()) t.subresource = parts[i + 2];
  return t;
}

void FakeCluster::serve(const FakeRequest& req, FakeConnection& c) {
  const Target t = target_of(req.path);
  int status = 200;
  json body;
  if (!answer(req, t, status, body)) {
    c.start_chunked(200);  // a watch: open, and silent until the server stops
    while (!c.sleep(std::chrono::milliseconds(50))) {
    }
    return;
  }
  if (req.method != "GET") {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string name =
        t.name.empty() && req.method == "POST" ? json::parse(req.body)["metadata"].value("name", "") : t.name;
    writes_.push_back({req.method, t.resource, name, status});
  }
  c.respond(status, body.dump());
}

bool FakeCluster::answer(const FakeRequest& req, const Target& t, int& status, json& body) {
  if (req.method == "GET" && t.name.empty() && req.param("watch") == "true") return false;
  std::unique_lock<std::mutex> lock(mutex_);
  auto& scripted = scripted_[req.method + " " + t.resource];
  if (!scripted.empty()) {
    status = scripted.front().first;
    body = error_status(status, scripted.front().second);
    scripted.pop_front();
    return true;
  }
  auto& objects = objects_[t.resource];
  if (req.method == "GET" && t.name.empty()) {
    body = {{"kind", "List"},
            {"apiVersion", "v1"},
            {"metadata", {{"resourceVersion", std::to_string(version_)}}},
            {"items", json::array()}};
    for (const auto& [k, o] : objects) {
      if (t.ns.empty() || o["metadata"].value("namespace", "") == t.ns) body["items"].push_back(o);
    }
    return true;
  }
  lock.unlock();
  if (req.method == "POST") {
    create(t, json::parse(req.body), status, body);
  } else if (req.method == "DELETE" && t.name.empty()) {
    remove_collection(t, req.param("labelSelector"), status, body);
  } else if (req.method == "PATCH" && t.subresource == "status") {
    patch_status(t, json::parse(req.body), status, body);
  } else {
    get_or_remove(t, req.method == "DELETE", status, body);
  }
  return true;
}

json* FakeCluster::find_locked(const Target& t, int& status, json& body) {
  auto& objects = objects_[t.resource];
  const auto it = objects.find(key(t.ns, t.name));
  if (it != objects.end()) return &it->second;
  status = 404;
  body = error_status(404, "NotFound");
  return nullptr;
}

void FakeCluster::get_or_remove(const Target& t, bool remove, int& status, json& body) {
  std::lock_guard<std::mutex> lock(mutex_);
  const json* object = find_locked(t, status, body);
  if (object == nullptr) return;
  status = 200;
  body = *object;
  if (remove) objects_[t.resource].erase(key(t.ns, t.name));
}

void FakeCluster::create(const Target& t, json object, int& status, json& body) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& md = object["metadata"];
  md["namespace"] = t.ns;
  auto& objects = objects_[t.resource];
  const std::string k = key(t.ns, md.value("name", ""));
  if (objects.count(k) != 0) {
    status = 409;
    body = error_status(409, "AlreadyExists");
    return;
  }
  md["resourceVersion"] = std::to_string(++version_);
  md["uid"] = "uid-" + std::to_string(version_);
  objects[k] = object;
  status = 201;
  body = std::move(object);
}

void FakeCluster::remove_collection(const Target& t, const std::string& selector, int& status, json& body) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& objects = objects_[t.resource];
  body = {{"kind", "List"}, {"apiVersion", "v1"}, {"items", json::array()}};
  for (auto it = objects.begin(); it != objects.end();) {
    if (it->second["metadata"].value("namespace", "") == t.ns && matches(selector, it->second)) {
      body["items"].push_back(it->second);
      it = objects.erase(it);
    } else {
      ++it;
    }
  }
  status = 200;
}

void FakeCluster::patch_status(const Target& t, const json& patch, int& status, json& body) {
  std::lock_guard<std::mutex> lock(mutex_);
  json* found = find_locked(t, status, body);
  if (found == nullptr) return;
  json& object = *found;
  const std::string precondition = patch.value("metadata", json::object()).value("resourceVersion", "");
  if (!precondition.empty() && precondition != object["metadata"].value("resourceVersion", "")) {
    status = 409;
    body = error_status(409, "Conflict");
    return;
  }
  object["status"].merge_patch(patch.value("status", json::object()));
  object["metadata"]["resourceVersion"] = std::to_string(++version_);
  status = 200;
  body = object;
}

}  // namespace trainbench::op::test
