// The REST verbs on resources: get, list, create, update, patch, delete, deletecollection,
// plus the special subresources (pods/log, serviceaccounts/token) and the review kinds
// (SelfSubjectAccessReview, SubjectAccessReview, TokenReview, SelfSubjectReview).

#include <fstream>
#include <thread>

#include "protobuf.hpp"
#include "runtime/container_log.hpp"
#include "server.hpp"

namespace kubesim {

namespace {

HeaderList warning_headers(const std::vector<std::string>& warnings) {
  HeaderList h;
  for (const auto& w : warnings) h.emplace_back("Warning", "299 - " + json(w).dump());
  return h;
}

json parse_body(const HttpRequest& req) {
  std::string ct = to_lower(req.header("content-type"));
  if (is_protobuf_content_type(ct)) return decode_k8s_protobuf(req.body);
  try {
    if (ct.find("yaml") != std::string::npos) return parse_json_or_yaml(req.body);
    return json::parse(req.body);
  } catch (const std::exception& e) {
    throw bad_request(std::string("the object provided is unrecognized (") + e.what() + ")");
  }
}

WriteOptions write_options(const HttpRequest& req) {
  WriteOptions o;
  o.dry_run = req.param("dryRun") == "All";
  std::string fv = req.param("fieldValidation");
  if (fv == "Strict") o.validation = FieldValidation::Strict;
  else if (fv == "Ignore") o.validation = FieldValidation::Ignore;
  else if (fv.empty() || fv == "Warn") o.validation = FieldValidation::Warn;
  else throw bad_request("fieldValidation parameter unsupported: " + fv);
  o.field_manager = req.param("fieldManager");
  o.force = req.param("force") == "true";
  return o;
}

DeleteOptions delete_options(const HttpRequest& req) {
  DeleteOptions o;
  if (!trim(req.body).empty()) {
    json b;
    try {
      b = is_protobuf_content_type(req.header("content-type")) ? decode_k8s_protobuf(req.body) : json::parse(req.body);
    } catch (const ApiError&) {
      throw;
    } catch (const std::exception& e) {
      throw bad_request(std::string("invalid DeleteOptions: ") + e.what());
    }
    if (b.contains("propagationPolicy") && b["propagationPolicy"].is_string()) o.propagation = b["propagationPolicy"];
    if (b.contains("orphanDependents") && b["orphanDependents"].is_boolean()) {
      if (o.propagation.empty()) o.propagation = b["orphanDependents"].get<bool>() ? "Orphan" : "Background";
    }
    if (b.contains("gracePeriodSeconds") && b["gracePeriodSeconds"].is_number()) o.grace = b["gracePeriodSeconds"].get<long long>();
    if (b.contains("preconditions") && b["preconditions"].is_object()) {
      o.precondition_uid = b["preconditions"].value("uid", "");
      o.precondition_rv = b["preconditions"].value("resourceVersion", "");
    }
    if (b.contains("dryRun") && b["dryRun"].is_array() && !b["dryRun"].empty()) o.dry_run = true;
  }
  if (req.has_param("propagationPolicy")) o.propagation = req.param("propagationPolicy");
  if (req.has_param("orphanDependents") && o.propagation.empty()) {
    o.propagation = req.param("orphanDependents") == "true" ? "Orphan" : "Background";
  }
  if (req.has_param("gracePeriodSeconds")) {
    try {
      o.grace = std::stoll(req.param("gracePeriodSeconds"));
    } catch (...) {
      throw bad_request("invalid gracePeriodSeconds");
    }
  }
  if (req.param("dryRun") == "All") o.dry_run = true;
  return o;
}

ListOptions list_options(const HttpRequest& req) {
  ListOptions o;
  o.label_selector = req.param("labelSelector");
  o.field_selector = req.param("fieldSelector");
  if (req.has_param("limit")) {
    try {
      o.limit = std::stoll(req.param("limit"));
    } catch (...) {
      throw bad_request("invalid limit");
    }
  }
  o.continue_token = req.param("continue");
  return o;
}

}  // namespace

void ApiServer::serve_resource(Ctx& c, const ResourceType& t) {
  const RequestInfo& info = c.info;
  const HttpRequest& req = c.req;
  const std::string& verb = info.verb;
  if (t.create_only) {
    if (verb != "create") {
      send_error(c, method_not_supported(qualified_resource(t.group, t.plural), verb));
      return;
    }
    serve_review(c, t);
    return;
  }
  if (verb == "watch") {
    serve_watch(c, t);
    return;
  }
  if (info.subresource == "log") {
    if (verb != "get") {
      send_error(c, method_not_supported("pods/log", verb));
      return;
    }
    serve_log(c, t);
    return;
  }
  if (info.subresource == "token") {
    if (verb != "create") {
      send_error(c, method_not_supported("serviceaccounts/token", verb));
      return;
    }
    serve_token_request(c);
    return;
  }
  if (info.subresource == "scale" && t.group == "apps") {
    serve_scale(c, t);
    return;
  }
  if (info.subresource == "finalize" || info.subresource == "scale") {
    send_error(c, method_not_supported(qualified_resource(t.group, t.plural + "/" + info.subresource), verb));
    return;
  }
  if (verb == "get") {
    send_json(c, 200, shape_response(c, t, api_.get(t, info.ns, info.name), true));
  } else if (verb == "list") {
    send_json(c, 200, shape_response(c, t, api_.list(t, info.ns, list_options(req)), false));
  } else if (verb == "create") {
    if (!info.subresource.empty() || !info.name.empty()) {
      send_error(c, method_not_supported(qualified_resource(t.group, t.plural), "create"));
      return;
    }
    Result r = api_.create(t, info.ns, parse_body(req), c.user, write_options(req));
    // The audit record names the created object, as the real server's objectRef does.
    if (r.object.is_object() && r.object.contains("metadata")) c.info.name = r.object["metadata"].value("name", "");
    send_json(c, r.code, r.object, warning_headers(r.warnings));
  } else if (verb == "update") {
    Result r = api_.update(t, info.ns, info.name, info.subresource, parse_body(req), c.user, write_options(req));
    send_json(c, r.code, r.object, warning_headers(r.warnings));
  } else if (verb == "patch") {
    Result r = api_.patch(t, info.ns, info.name, info.subresource, req.header("content-type"), req.body, c.user,
                          write_options(req));
    send_json(c, r.code, r.object, warning_headers(r.warnings));
  } else if (verb == "delete") {
    if (!info.subresource.empty()) {
      send_error(c, method_not_supported(qualified_resource(t.group, t.plural + "/" + info.subresource), "delete"));
      return;
    }
    Result r = api_.remove(t, info.ns, info.name, delete_options(req));
    send_json(c, r.code, r.object);
  } else if (verb == "deletecollection") {
    send_json(c, 200, api_.delete_collection(t, info.ns, list_options(req), delete_options(req)));
  } else {
    send_error(c, method_not_supported(qualified_resource(t.group, t.plural), verb));
  }
}

void ApiServer::serve_log(Ctx& c, const ResourceType& t) {
  const RequestInfo& info = c.info;
  json pod = api_.get(t, info.ns, info.name);
  std::string container = c.req.param("container");
  const json containers = pod["spec"].value("containers", json::array());
  if (container.empty()) {
    if (containers.size() != 1) {
      std::string names;
      for (const auto& ct : containers) names += (names.empty() ? "" : " ") + ct.value("name", "");
      throw bad_request("a container name must be specified for pod " + info.name + ", choose one of: [" + names + "]");
    }
    container = containers[0].value("name", "");
  } else {
    bool found = false;
    for (const auto& ct : containers) found = found || ct.value("name", "") == container;
    for (const auto& ct : pod["spec"].value("initContainers", json::array())) found = found || ct.value("name", "") == container;
    if (!found) throw bad_request("container " + container + " is not valid for pod " + info.name);
  }
  std::string path = kubelet_ ? kubelet_->log_path(info.ns, info.name, container) : "";
  if (path.empty()) {
    throw bad_request("container \"" + container + "\" in pod \"" + info.name + "\" is waiting to start: ContainerCreating");
  }
  std::string data;
  try {
    data = read_file(path);
  } catch (const std::exception&) {
  }
  if (c.req.has_param("tailLines")) data = noderuntime::tail_lines(data, std::stoll(c.req.param("tailLines")));
  bool follow = c.req.param("follow") == "true";
  if (!follow) {
    c.code = 200;
    c.res.send(200, "text/plain", data);
    return;
  }
  c.code = 200;
  audit(c);
  if (!c.res.start_stream(200, "text/plain")) return;
  c.res.write_chunk(data);
  std::size_t offset = 0;
  try {
    offset = read_file(path).size();
  } catch (const std::exception&) {
  }
  noderuntime::LogFollower follower{[&] { return kubelet_->container_finished(info.ns, info.name, container); },
                                    [&](const std::string& more) { return c.res.write_chunk(more); },
                                    [&] { return c.res.peer_closed(); }};
  if (noderuntime::follow_log(path, offset, follower)) c.res.end_stream();
}

void ApiServer::serve_token_request(Ctx& c) {
  const RequestInfo& info = c.info;
  json body = trim(c.req.body).empty() ? json::object() : parse_body(c.req);
  TypePtr sa_type = api_.types().by_key("serviceaccounts");
  json sa = api_.get(*sa_type, info.ns, info.name);
  json spec = body.value("spec", json::object());
  long long exp = spec.value("expirationSeconds", 3600LL);
  if (exp < 600) {
    throw invalid("authentication.k8s.io", "TokenRequest", info.name,
                  {invalid_error("spec.expirationSeconds", exp, "may not specify a duration less than 10 minutes")});
  }
  if (exp > 1LL << 32) {
    throw invalid("authentication.k8s.io", "TokenRequest", info.name,
                  {invalid_error("spec.expirationSeconds", exp, "may not specify a duration larger than 2^32 seconds")});
  }
  std::vector<std::string> audiences;
  if (spec.contains("audiences") && spec["audiences"].is_array()) {
    for (const auto& a : spec["audiences"]) audiences.push_back(a.get<std::string>());
  }
  if (audiences.empty()) audiences.push_back(TokenAuthority::issuer());
  std::string bkind, bname, buid;
  if (spec.contains("boundObjectRef") && spec["boundObjectRef"].is_object()) {
    const json& ref = spec["boundObjectRef"];
    bkind = ref.value("kind", "");
    bname = ref.value("name", "");
    std::string key = bkind == "Pod" ? "pods" : bkind == "Secret" ? "secrets" : "";
    if (key.empty()) throw bad_request("cannot bind token to object of kind " + bkind);
    TypePtr bt = api_.types().by_key(key);
    json obj = api_.get(*bt, info.ns, bname);
    buid = obj["metadata"].value("uid", "");
    if (!ref.value("uid", "").empty() && ref.value("uid", "") != buid) {
      throw conflict("", key, bname, "the UID in the bound object reference (" + ref.value("uid", "") +
                                          ") does not match the UID in record. The object might have been deleted and then recreated");
    }
  }
  auto minted = tokens_.mint(info.ns, info.name, sa["metadata"].value("uid", ""), exp, audiences, bkind, bname, buid);
  spec["audiences"] = audiences;
  spec["expirationSeconds"] = exp;
  if (!spec.contains("boundObjectRef")) spec["boundObjectRef"] = nullptr;
  json out = {{"kind", "TokenRequest"},
              {"apiVersion", "authentication.k8s.io/v1"},
              {"metadata", {{"name", info.name}, {"namespace", info.ns}, {"creationTimestamp", nullptr}}},
              {"spec", spec},
              {"status", {{"token", minted.token}, {"expirationTimestamp", minted.expiration}}}};
  send_json(c, 201, out);
}

void ApiServer::serve_review(Ctx& c, const ResourceType& t) {
  json body = parse_body(c.req);
  json spec = body.value("spec", json::object());
  json out = body;
  out["apiVersion"] = t.api_version();
  out["kind"] = t.kind;
  if (!out.contains("metadata") || !out["metadata"].is_object()) out["metadata"] = json::object();
  out["metadata"]["creationTimestamp"] = nullptr;
  const std::string& kind = t.kind;
  if (kind == "SelfSubjectReview") {
    out["status"] = {{"userInfo", {{"username", c.user.name}, {"groups", c.user.groups}}}};
    if (!c.user.uid.empty()) out["status"]["userInfo"]["uid"] = c.user.uid;
    send_json(c, 201, out);
    return;
  }
  if (kind == "TokenReview") {
    auto user = tokens_.authenticate(spec.value("token", ""), api_.store());
    if (user) {
      out["status"] = {{"authenticated", true},
                       {"user", {{"username", user->name}, {"uid", user->uid}, {"groups", user->groups}}},
                       {"audiences", spec.value("audiences", json::array({TokenAuthority::issuer()}))}};
    } else {
      out["status"] = {{"authenticated", false}, {"error", "invalid bearer token"}, {"user", json::object()}};
    }
    send_json(c, 201, out);
    return;
  }
  UserInfo subject = c.user;
  if (kind == "SubjectAccessReview" || kind == "LocalSubjectAccessReview") {
    subject.name = spec.value("user", "");
    subject.groups.clear();
    if (spec.contains("groups") && spec["groups"].is_array()) {
      for (const auto& g : spec["groups"]) subject.groups.push_back(g);
    }
    subject.uid = spec.value("uid", "");
  }
  Attributes a;
  if (spec.contains("resourceAttributes")) {
    const json& ra = spec["resourceAttributes"];
    a = {ra.value("verb", ""), true, ra.value("group", ""), ra.value("resource", ""), ra.value("subresource", ""),
         ra.value("namespace", ""), ra.value("name", ""), ""};
    if (kind == "LocalSubjectAccessReview") a.ns = c.info.ns;
  } else if (spec.contains("nonResourceAttributes")) {
    const json& na = spec["nonResourceAttributes"];
    a = {na.value("verb", ""), false, "", "", "", "", "", na.value("path", "")};
  } else {
    throw invalid(t.group, kind, "",
                  {required_error("spec.resourceAttributes", "exactly one of nonResourceAttributes or resourceAttributes must be specified")});
  }
  bool allowed = api_.authorizer().allowed(subject, a);
  out["status"] = {{"allowed", allowed}};
  if (allowed && !subject.is_admin()) out["status"]["reason"] = "RBAC: allowed by a binding";
  send_json(c, 201, out);
}

}  // namespace kubesim
