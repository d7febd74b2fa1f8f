#include "kube/client.hpp"

#include <stdexcept>
#include <utility>
#include <vector>

#include "kube/errors.hpp"
#include "kube/json_depth.hpp"

namespace trainbench::kube {
namespace {

using Params = std::vector<std::pair<std::string, std::string>>;

const char* content_type_of(PatchType t) {
  switch (t) {
    case PatchType::kMerge: return "application/merge-patch+json";
    case PatchType::kJson: return "application/json-patch+json";
    case PatchType::kStrategic: return "application/strategic-merge-patch+json";
    case PatchType::kApply: return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

std::string name_of(const nlohmann::json& object) {
  if (!object.is_object()) throw std::invalid_argument("the object must be a JSON object");
  auto md = object.find("metadata");
  if (md != object.end() && md->is_object()) {
    auto name = md->find("name");
    if (name != md->end() && name->is_string() && !name->get_ref<const std::string&>().empty()) {
      return name->get<std::string>();
    }
  }
  throw std::invalid_argument("the object has no metadata.name");
}

nlohmann::json with_type_meta(const ResourceType& type, nlohmann::json object) {
  if (!object.is_object()) throw std::invalid_argument("the object must be a JSON object");
  if (!type.kind.empty()) {
    if (!object.contains("apiVersion")) object["apiVersion"] = type.api_version();
    if (!object.contains("kind")) object["kind"] = type.kind;
  }
  return object;
}

void add_write_params(Params& q, const WriteOptions& o) {
  if (!o.field_manager.empty()) q.emplace_back("fieldManager", o.field_manager);
  if (o.dry_run) q.emplace_back("dryRun", "All");
}

bool is_json_content_type(const std::string& ct) { return ct.find("json") != std::string::npos; }

/// A stream whose status is not 200: the ApiError its body describes.
void throw_unless_ok(HttpStream& stream, const std::string& what) {
  if (stream.status() == 200) return;
  std::string body;
  try {
    body = stream.read_all(64 * 1024);
  } catch (const TransportError&) {
    // The status alone still says what went wrong.
  }
  std::rethrow_exception(make_api_error(stream.status(), body, {}, what));
}

}  // namespace

Client::Client(ClientConfig config) : transport_(std::make_shared<Transport>(std::move(config))) {}

Client::Client(std::shared_ptr<Transport> transport) : transport_(std::move(transport)) {
  if (!transport_) throw std::invalid_argument("Client: null transport");
}

const std::string& Client::default_namespace() const { return transport_->config().default_namespace; }

std::string Client::namespace_for(const ResourceType& type, const std::string& ns,
                                  const nlohmann::json* object) const {
  if (!type.namespaced) return {};
  if (!ns.empty()) return ns;
  if (object && object->is_object()) {
    auto md = object->find("metadata");
    if (md != object->end() && md->is_object()) {
      auto n = md->find("namespace");
      if (n != md->end() && n->is_string() && !n->get_ref<const std::string&>().empty()) return n->get<std::string>();
    }
  }
  return default_namespace();
}

nlohmann::json Client::call(HttpRequest req) const {
  const HttpResponse resp = transport_->send(req);
  const std::string what = req.method + " " + req.path;
  if (resp.status < 200 || resp.status > 299) {
    std::rethrow_exception(make_api_error(resp.status, resp.body, resp.retry_after, what));
  }
  if (resp.body.empty()) return nullptr;
  if (!resp.content_type.empty() && !is_json_content_type(resp.content_type)) {
    throw TransportError(TransportError::Kind::kProtocol,
                         what + ": expected a JSON answer, got Content-Type " + resp.content_type.substr(0, 100));
  }
  if (json_nesting_exceeds(resp.body)) {
    throw TransportError(TransportError::Kind::kProtocol,
                         what + ": the answer nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  nlohmann::json j = nlohmann::json::parse(resp.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    throw TransportError(TransportError::Kind::kProtocol,
                         what + ": malformed JSON in the answer (" + std::to_string(resp.body.size()) + " bytes)");
  }
  return j;
}

nlohmann::json Client::request(const std::string& method, const std::string& path, const std::string& query,
                               const nlohmann::json* body, const std::string& content_type,
                               const StopToken& stop) const {
  if (path.empty() || path.front() != '/') throw std::invalid_argument("request path must start with '/'");
  HttpRequest req;
  req.method = method;
  req.path = path;
  req.query = query;
  if (body) {
    req.body = body->dump();
    req.content_type = content_type.empty() ? "application/json" : content_type;
  }
  req.stop = stop;
  return call(std::move(req));
}

nlohmann::json Client::get(const ResourceType& type, const std::string& ns, const std::string& name,
                           const StopToken& stop) const {
  HttpRequest req;
  req.path = type.path(namespace_for(type, ns, nullptr), name);
  req.stop = stop;
  return call(std::move(req));
}

std::optional<nlohmann::json> Client::try_get(const ResourceType& type, const std::string& ns,
                                              const std::string& name, const StopToken& stop) const {
  try {
    return get(type, ns, name, stop);
  } catch (const NotFoundError&) {
    return std::nullopt;
  }
}

nlohmann::json Client::list(const ResourceType& type, const std::string& ns, const ListOptions& o) const {
  HttpRequest req;
  req.path = type.path(type.namespaced ? ns : std::string());
  req.query = build_query({{"labelSelector", o.label_selector},
                           {"fieldSelector", o.field_selector},
                           {"resourceVersion", o.resource_version},
                           {"resourceVersionMatch", o.resource_version_match},
                           {"limit", o.limit > 0 ? std::to_string(o.limit) : std::string()},
                           {"continue", o.continue_token}});
  req.stop = o.stop;
  nlohmann::json out = call(std::move(req));
  if (!out.is_object() || !out.contains("items") || (!out["items"].is_array() && !out["items"].is_null())) {
    throw TransportError(TransportError::Kind::kProtocol, "GET " + type.path(ns) + ": the answer is not a List");
  }
  if (out["items"].is_null()) out["items"] = nlohmann::json::array();
  return out;
}

nlohmann::json Client::list_all(const ResourceType& type, const std::string& ns, ListOptions o) const {
  if (o.limit <= 0) o.limit = 500;
  o.continue_token.clear();
  nlohmann::json all;
  for (;;) {
    nlohmann::json page;
    try {
      page = list(type, ns, o);
    } catch (const GoneError&) {
      if (o.continue_token.empty()) throw;
      // The continue token expired between pages: fall back to one consistent full list.
      o.limit = 0;
      o.continue_token.clear();
      return list(type, ns, o);
    }
    if (all.is_null()) {
      all = page;
    } else {
      for (auto& item : page["items"]) all["items"].push_back(std::move(item));
    }
    std::string next;
    if (page.contains("metadata") && page["metadata"].is_object()) {
      const auto& md = page["metadata"];
      auto it = md.find("continue");
      if (it != md.end() && it->is_string()) next = it->get<std::string>();
    }
    if (next.empty()) break;
    o.continue_token = next;
  }
  if (all.contains("metadata") && all["metadata"].is_object()) all["metadata"].erase("continue");
  return all;
}

nlohmann::json Client::create(const ResourceType& type, const std::string& ns, const nlohmann::json& object,
                              const WriteOptions& o) const {
  return write_object("POST", type.path(namespace_for(type, ns, &object)), type, object, o);
}

nlohmann::json Client::update(const ResourceType& type, const std::string& ns, const nlohmann::json& object,
                              const WriteOptions& o) const {
  return write_object("PUT", type.path(namespace_for(type, ns, &object), name_of(object)), type, object, o);
}

nlohmann::json Client::update_status(const ResourceType& type, const std::string& ns, const nlohmann::json& object,
                                     const WriteOptions& o) const {
  return write_object("PUT", type.path(namespace_for(type, ns, &object), name_of(object), "status"), type, object, o);
}

nlohmann::json Client::write_object(const std::string& method, std::string path, const ResourceType& type,
                                    const nlohmann::json& object, const WriteOptions& o) const {
  HttpRequest req;
  req.method = method;
  req.path = std::move(path);
  Params q;
  add_write_params(q, o);
  req.query = build_query(q);
  req.body = with_type_meta(type, object).dump();
  req.content_type = "application/json";
  req.stop = o.stop;
  return call(std::move(req));
}

nlohmann::json Client::patch(const ResourceType& type, const std::string& ns, const std::string& name,
                             PatchType patch_type, const nlohmann::json& patch, const WriteOptions& o,
                             const std::string& subresource) const {
  if (patch_type == PatchType::kJson && !patch.is_array()) {
    throw std::invalid_argument("a JSON patch must be an array of operations");
  }
  if (patch_type != PatchType::kJson && !patch.is_object()) throw std::invalid_argument("a patch must be an object");
  HttpRequest req;
  req.method = "PATCH";
  req.path = type.path(namespace_for(type, ns, nullptr), name, subresource);
  Params q;
  WriteOptions opts = o;
  if (patch_type == PatchType::kApply) {
    if (opts.field_manager.empty()) opts.field_manager = "trainbench-operator";
    if (opts.force) q.emplace_back("force", "true");
  }
  add_write_params(q, opts);
  req.query = build_query(q);
  req.body = patch.dump();
  req.content_type = content_type_of(patch_type);
  req.stop = o.stop;
  return call(std::move(req));
}

nlohmann::json Client::merge_patch(const ResourceType& type, const std::string& ns, const std::string& name,
                                   const nlohmann::json& p) const {
  return patch(type, ns, name, PatchType::kMerge, p);
}

nlohmann::json Client::json_patch(const ResourceType& type, const std::string& ns, const std::string& name,
                                  const nlohmann::json& operations) const {
  return patch(type, ns, name, PatchType::kJson, operations);
}

nlohmann::json Client::patch_status(const ResourceType& type, const std::string& ns, const std::string& name,
                                    const nlohmann::json& status_patch) const {
  return patch(type, ns, name, PatchType::kMerge, status_patch, {}, "status");
}

nlohmann::json Client::apply(const ResourceType& type, const std::string& ns, const nlohmann::json& object,
                             const WriteOptions& o) const {
  const nlohmann::json full = with_type_meta(type, object);
  return patch(type, namespace_for(type, ns, &object), name_of(object), PatchType::kApply, full, o);
}

nlohmann::json Client::remove(const ResourceType& type, const std::string& ns, const std::string& name,
                              const DeleteOptions& o) const {
  HttpRequest req;
  req.method = "DELETE";
  req.path = type.path(namespace_for(type, ns, nullptr), name);
  return delete_request(std::move(req), o);
}

nlohmann::json Client::remove_collection(const ResourceType& type, const std::string& ns, const ListOptions& which,
                                         const DeleteOptions& o) const {
  if (which.label_selector.empty() && which.field_selector.empty()) {
    throw std::invalid_argument("remove_collection without a selector would delete every " + type.plural);
  }
  HttpRequest req;
  req.method = "DELETE";
  req.path = type.path(type.namespaced ? namespace_for(type, ns, nullptr) : std::string());
  req.query = build_query({{"labelSelector", which.label_selector}, {"fieldSelector", which.field_selector}});
  return delete_request(std::move(req), o);
}

nlohmann::json Client::delete_request(HttpRequest req, const DeleteOptions& o) const {
  nlohmann::json body = nlohmann::json::object();
  if (!o.propagation_policy.empty()) body["propagationPolicy"] = o.propagation_policy;
  if (o.grace_period_seconds) body["gracePeriodSeconds"] = *o.grace_period_seconds;
  if (!o.precondition_uid.empty()) body["preconditions"]["uid"] = o.precondition_uid;
  if (!o.precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = o.precondition_resource_version;
  }
  if (o.dry_run) body["dryRun"] = nlohmann::json::array({"All"});
  if (!body.empty()) {
    body["kind"] = "DeleteOptions";
    body["apiVersion"] = "v1";
    req.body = body.dump();
    req.content_type = "application/json";
  }
  req.stop = o.stop;
  return call(std::move(req));
}

std::unique_ptr<WatchStream> Client::watch(const ResourceType& type, const std::string& ns,
                                           const WatchOptions& o) const {
  HttpRequest req;
  req.path = type.path(type.namespaced ? ns : std::string());
  req.query = build_query({{"watch", "true"},
                           {"resourceVersion", o.resource_version},
                           {"allowWatchBookmarks", o.allow_bookmarks ? "true" : ""},
                           {"timeoutSeconds", o.timeout_seconds > 0 ? std::to_string(o.timeout_seconds) : ""},
                           {"labelSelector", o.label_selector},
                           {"fieldSelector", o.field_selector}});
  req.stop = o.stop;
  // Without an event for this long the connection is considered dead (the server closes the
  // watch itself after timeoutSeconds; bookmarks also arrive about every minute).
  const auto idle = std::chrono::seconds(o.timeout_seconds > 0 ? o.timeout_seconds + 60 : 600);
  auto stream = transport_->open_stream(req, idle);
  const std::string what = "watch " + req.path;
  throw_unless_ok(*stream, what);
  if (!is_json_content_type(stream->content_type())) {
    throw TransportError(TransportError::Kind::kProtocol,
                         what + ": expected a JSON stream, got Content-Type " + stream->content_type().substr(0, 100));
  }
  return std::make_unique<WatchStream>(std::move(stream), what, o.stop);
}

void Client::pod_log(const std::string& ns, const std::string& pod, const LogOptions& o,
                     const std::function<void(const std::string& text)>& on_text) const {
  HttpRequest req;
  req.path = resources::pods().path(ns, pod, "log");
  req.query = build_query({{"container", o.container}, {"follow", o.follow ? "true" : ""}});
  req.stop = o.stop;
  const std::string what = "GET " + req.path;
  if (!o.follow) {
    const HttpResponse resp = transport_->send(req);
    if (resp.status != 200) std::rethrow_exception(make_api_error(resp.status, resp.body, resp.retry_after, what));
    on_text(resp.body);
    return;
  }
  auto stream = transport_->open_stream(req, o.idle_timeout);
  throw_unless_ok(*stream, what);
  std::string line;
  while (stream->read_line(line)) on_text(line + "\n");
}

}  // namespace trainbench::kube
