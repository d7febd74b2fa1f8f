#include "server.hpp"

#include <algorithm>

namespace kubesim {

namespace {

const char* kGitVersion = "v1.32.2";

bool public_path(const std::string& p) {
  for (const char* prefix : {"/healthz", "/livez", "/readyz", "/version"}) {
    std::string s = prefix;
    if (p == s || starts_with(p, s + "/")) return true;
  }
  return false;
}

std::string accept_of(const HttpRequest& req) { return req.header("accept"); }

// The media-type entries of an Accept header, each as a lowercase string without spaces.
std::vector<std::string> accept_entries(const std::string& accept) {
  std::vector<std::string> out;
  for (auto& part : split(accept, ',')) {
    std::string e;
    for (char ch : part) {
      if (ch != ' ') e += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    if (!e.empty()) out.push_back(e);
  }
  return out;
}

bool entry_has(const std::string& entry, const std::string& param) {
  for (const auto& p : split(entry, ';')) {
    if (p == param) return true;
  }
  return false;
}

}  // namespace

RequestInfo parse_request_info(const HttpRequest& req) {
  RequestInfo info;
  std::string m = req.method;
  info.verb = to_lower(m);
  std::vector<std::string> parts;
  for (const auto& p : split(req.path, '/')) {
    if (!p.empty()) parts.push_back(p);
  }
  if (parts.empty() || (parts[0] != "api" && parts[0] != "apis")) return info;
  std::size_t i;
  if (parts[0] == "api") {
    if (parts.size() < 2) return info;
    info.version = parts[1];
    i = 2;
  } else {
    if (parts.size() < 3) return info;
    info.group = parts[1];
    info.version = parts[2];
    i = 3;
  }
  std::vector<std::string> rest(parts.begin() + static_cast<long>(i), parts.end());
  if (rest.empty()) return info;
  info.resource_request = true;
  if (m == "POST") info.verb = "create";
  else if (m == "GET" || m == "HEAD") info.verb = "get";
  else if (m == "PUT") info.verb = "update";
  else if (m == "PATCH") info.verb = "patch";
  else if (m == "DELETE") info.verb = "delete";
  else info.verb = "";
  if (rest[0] == "watch") {
    info.watch_path = true;
    info.verb = "watch";
    rest.erase(rest.begin());
    if (rest.empty()) {
      info.resource_request = false;
      return info;
    }
  }
  if (rest[0] == "namespaces") {
    if (rest.size() > 1) {
      info.ns = rest[1];
      if (rest.size() > 2 && rest[2] != "status" && rest[2] != "finalize") rest.erase(rest.begin(), rest.begin() + 2);
    }
  }
  info.resource = rest[0];
  if (rest.size() > 1) info.name = rest[1];
  if (rest.size() > 2) info.subresource = rest[2];
  if (rest.size() > 3) info.subresource += "/" + rest[3];  // unknown: answered 404 later
  if (info.name.empty()) {
    std::string w = req.param("watch");
    if (info.verb == "get") info.verb = (w == "true" || w == "1") ? "watch" : "list";
    if (info.verb == "delete") info.verb = "deletecollection";
  } else if (info.verb == "get") {
    std::string w = req.param("watch");
    if (w == "true" || w == "1") info.verb = "watch";
  }
  return info;
}

ApiServer::ApiServer(Api& api, const TokenAuthority& tokens, AuditLog& audit, Kubelet* kubelet, ServerOptions opts)
    : api_(api), tokens_(tokens), audit_(audit), kubelet_(kubelet), opts_(std::move(opts)) {}

void ApiServer::send_json(Ctx& c, int code, const json& body, const HeaderList& headers) {
  c.code = code;
  c.res.send(code, "application/json", body.dump() + "\n", headers);
}

void ApiServer::send_error(Ctx& c, const ApiError& e) { send_json(c, e.code(), e.status()); }

void ApiServer::audit(Ctx& c) {
  if (c.logged) return;
  c.logged = true;
  json e = {{"ts", now_rfc3339_micro()},
            {"user", c.user.name},
            {"verb", c.info.verb},
            {"code", c.code},
            {"uri", c.req.target},
            {"userAgent", c.req.header("user-agent")}};
  if (!c.impersonator.empty()) e["impersonator"] = c.impersonator;
  if (!c.fault.empty()) e["fault"] = c.fault;
  if (c.info.resource_request) {
    e["apiGroup"] = c.info.group;
    e["apiVersion"] = c.info.version;
    e["resource"] = c.info.resource;
    e["subresource"] = c.info.subresource;
    e["namespace"] = c.info.ns;
    e["name"] = c.info.name;
  } else {
    e["path"] = c.req.path;
  }
  audit_.write(e);
}

bool ApiServer::authenticate(Ctx& c) {
  std::string auth = c.req.header("authorization");
  std::string token;
  if (auth.size() > 7 && to_lower(auth.substr(0, 7)) == "bearer ") token = trim(auth.substr(7));
  if (token.empty()) {
    c.user = {"system:anonymous", {"system:unauthenticated"}, ""};
    if (!public_path(c.req.path) || c.info.resource_request) {
      send_error(c, unauthorized());
      return false;
    }
    return true;
  }
  auto user = tokens_.authenticate(token, api_.store());
  if (!user) {
    c.user = {"", {}, ""};
    send_error(c, unauthorized());
    return false;
  }
  c.user = *user;
  std::string as_user = c.req.header("impersonate-user");
  std::vector<std::string> as_groups = c.req.header_all("impersonate-group");
  if (as_user.empty() && !as_groups.empty()) {
    send_error(c, ApiError(500, "InternalError",
                           "Internal error occurred: requested [{Group  " + as_groups[0] +
                               "  authentication.k8s.io/v1  }] without impersonating a user"));
    return false;
  }
  if (as_user.empty()) return true;
  const Authorizer& authz = api_.authorizer();
  std::string sa_ns, sa_name;
  Attributes a{"impersonate", true, "", "users", "", "", as_user, ""};
  if (parse_service_account_user(as_user, sa_ns, sa_name)) a = {"impersonate", true, "", "serviceaccounts", "", sa_ns, sa_name, ""};
  if (!authz.allowed(c.user, a)) {
    send_error(c, forbidden(a.group, a.resource, a.name, Authorizer::denial_reason(c.user, a)));
    return false;
  }
  for (const auto& g : as_groups) {
    Attributes ga{"impersonate", true, "", "groups", "", "", g, ""};
    if (!authz.allowed(c.user, ga)) {
      send_error(c, forbidden("", "groups", g, Authorizer::denial_reason(c.user, ga)));
      return false;
    }
  }
  c.impersonator = c.user.name;
  UserInfo u;
  if (!sa_ns.empty()) {
    u = service_account_user(sa_ns, sa_name);
  } else {
    u.name = as_user;
    u.groups.clear();
  }
  for (const auto& g : as_groups) {
    if (std::find(u.groups.begin(), u.groups.end(), g) == u.groups.end()) u.groups.push_back(g);
  }
  if (as_user != "system:anonymous" &&
      std::find(u.groups.begin(), u.groups.end(), "system:authenticated") == u.groups.end()) {
    u.groups.push_back("system:authenticated");
  }
  u.uid = c.req.header("impersonate-uid");
  c.user = u;
  return true;
}

void ApiServer::handle(const HttpRequest& req, HttpResponder& res) {
  ++requests_;
  Ctx c{req, res, parse_request_info(req), {}, "", 0, false, ""};
  try {
    if (authenticate(c)) {
      FaultDecision f;  // injected faults (faults.hpp) hit API requests only, never /kubesim/
      if (c.info.resource_request)
        f = faults_.pick(c.info.verb, c.info.resource, c.info.subresource, req.header("user-agent"));
      if (f.kind == FaultKind::kNone) {
        dispatch(c);
      } else {
        serve_with_fault(c, f);
      }
    }
  } catch (const ApiError& e) {
    if (!res.answered()) send_error(c, e);
  } catch (const std::exception& e) {
    if (!res.answered()) send_error(c, internal_error(e.what()));
  }
  if (!res.answered()) send_error(c, internal_error("no response"));
  audit(c);
}

void ApiServer::dispatch(Ctx& c) {
  if (starts_with(c.req.path, "/kubesim/")) {
    serve_admin(c);
    return;
  }
  const Authorizer& authz = api_.authorizer();
  if (!c.info.resource_request) {
    Attributes a{c.info.verb, false, "", "", "", "", "", c.req.path};
    if (!authz.allowed(c.user, a) && !(c.user.name == "system:anonymous" && public_path(c.req.path))) {
      send_error(c, ApiError(403, "Forbidden", "forbidden: " + Authorizer::denial_reason(c.user, a), json::object()));
      return;
    }
    serve_non_resource(c);
    return;
  }
  const RequestInfo& info = c.info;
  if (info.verb.empty()) {
    send_error(c, ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
    return;
  }
  Attributes a{info.verb, true, info.group, info.resource, info.subresource, info.ns, info.name, ""};
  if (!authz.allowed(c.user, a)) {
    send_error(c, forbidden(info.group, info.resource, info.name, Authorizer::denial_reason(c.user, a)));
    return;
  }
  TypePtr t = api_.types().find(info.group, info.version, info.resource);
  if (!t) {
    send_error(c, plain_not_found());
    return;
  }
  bool ns_given = !info.ns.empty() && info.resource != "namespaces";
  if ((!t->namespaced && ns_given) ||
      (t->namespaced && info.ns.empty() && info.verb != "list" && info.verb != "watch")) {
    send_error(c, plain_not_found());
    return;
  }
  if (!info.subresource.empty() && !t->has_subresource(info.subresource)) {
    send_error(c, plain_not_found());
    return;
  }
  serve_resource(c, *t);
}

void ApiServer::serve_non_resource(Ctx& c) {
  const std::string& p = c.req.path;
  auto& types = api_.types();
  std::string accept = accept_of(c.req);
  auto entries = accept_entries(accept);
  auto wants_aggregated = [&](std::string& version) {
    if (!opts_.aggregated_discovery) return false;
    for (const auto& e : entries) {
      if (entry_has(e, "as=apigroupdiscoverylist") && entry_has(e, "g=apidiscovery.k8s.io")) {
        if (entry_has(e, "v=v2")) {
          version = "v2";
          return true;
        }
        if (entry_has(e, "v=v2beta1")) {
          version = "v2beta1";
          return true;
        }
      }
    }
    return false;
  };
  if (c.req.method != "GET" && c.req.method != "HEAD") {
    send_error(c, ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
    return;
  }
  if (p == "/healthz" || p == "/livez" || p == "/readyz" || starts_with(p, "/healthz/") || starts_with(p, "/livez/") ||
      starts_with(p, "/readyz/")) {
    c.code = 200;
    c.res.send(200, "text/plain; charset=utf-8", "ok");
    return;
  }
  if (p == "/version" || p == "/version/") {
    send_json(c, 200,
              {{"major", "1"}, {"minor", "32"}, {"gitVersion", kGitVersion}, {"gitCommit", "kubesim"},
               {"gitTreeState", "clean"}, {"buildDate", "2025-02-12T21:17:58Z"}, {"goVersion", "go1.23.6"},
               {"compiler", "gc"}, {"platform", "linux/amd64"}});
    return;
  }
  if (p == "/openapi/v2") {
    bool proto = accept.find("protobuf") != std::string::npos;
    c.code = 200;
    if (proto) {
      c.res.send(200, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf", std::string("\x0a\x03\x32\x2e\x30", 5));
    } else {
      c.res.send(200, "application/json",
                 json{{"swagger", "2.0"}, {"info", {{"title", "Kubernetes"}, {"version", kGitVersion}}},
                      {"paths", json::object()}, {"definitions", json::object()}}
                     .dump());
    }
    return;
  }
  std::string agg_version;
  if (p == "/api" || p == "/api/") {
    if (wants_aggregated(agg_version)) {
      json doc = types.aggregated_discovery(true);
      doc["apiVersion"] = "apidiscovery.k8s.io/" + agg_version;
      c.code = 200;
      c.res.send(200, "application/json;g=apidiscovery.k8s.io;v=" + agg_version + ";as=APIGroupDiscoveryList",
                 doc.dump());
      return;
    }
    send_json(c, 200, types.api_versions(opts_.address));
    return;
  }
  if (p == "/apis" || p == "/apis/") {
    if (wants_aggregated(agg_version)) {
      json doc = types.aggregated_discovery(false);
      doc["apiVersion"] = "apidiscovery.k8s.io/" + agg_version;
      c.code = 200;
      c.res.send(200, "application/json;g=apidiscovery.k8s.io;v=" + agg_version + ";as=APIGroupDiscoveryList",
                 doc.dump());
      return;
    }
    send_json(c, 200, types.api_group_list());
    return;
  }
  std::vector<std::string> parts;
  for (const auto& s : split(p, '/')) {
    if (!s.empty()) parts.push_back(s);
  }
  if (parts.size() == 2 && parts[0] == "api" && parts[1] == "v1") {
    send_json(c, 200, types.resource_list("", "v1"));
    return;
  }
  if (parts.size() == 2 && parts[0] == "apis" && types.group_exists(parts[1])) {
    json g = types.api_group(parts[1]);
    g["kind"] = "APIGroup";
    g["apiVersion"] = "v1";
    send_json(c, 200, g);
    return;
  }
  if (parts.size() == 3 && parts[0] == "apis" && types.group_version_exists(parts[1], parts[2])) {
    send_json(c, 200, types.resource_list(parts[1], parts[2]));
    return;
  }
  c.code = 404;
  c.res.send(404, "text/plain; charset=utf-8", "404 page not found\n");
}

json ApiServer::shape_response(Ctx& c, const ResourceType& t, const json& obj, bool single) {
  std::string table_version;
  bool partial = false;
  for (const auto& e : accept_entries(accept_of(c.req))) {
    if (entry_has(e, "g=meta.k8s.io") && entry_has(e, "as=table")) {
      table_version = entry_has(e, "v=v1beta1") ? "meta.k8s.io/v1beta1" : "meta.k8s.io/v1";
      break;
    }
    if (entry_has(e, "g=meta.k8s.io") &&
        (entry_has(e, "as=partialobjectmetadata") || entry_has(e, "as=partialobjectmetadatalist"))) {
      partial = true;
      break;
    }
    if (starts_with(e, "application/json") || e == "*/*") break;
  }
  if (!table_version.empty()) {
    std::string inc = c.req.param("includeObject", "Metadata");
    IncludeObject include = inc == "Object" ? IncludeObject::Object : inc == "None" ? IncludeObject::None : IncludeObject::Metadata;
    return to_table(t, obj, single, include, table_version);
  }
  if (partial) {
    auto pom = [](const json& o) {
      return json{{"kind", "PartialObjectMetadata"}, {"apiVersion", "meta.k8s.io/v1"}, {"metadata", o["metadata"]}};
    };
    if (single) return pom(obj);
    json items = json::array();
    for (const auto& o : obj["items"]) items.push_back(pom(o));
    return {{"kind", "PartialObjectMetadataList"}, {"apiVersion", "meta.k8s.io/v1"}, {"metadata", obj["metadata"]}, {"items", items}};
  }
  return obj;
}

}  // namespace kubesim
