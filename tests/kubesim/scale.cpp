// The scale subresource of Deployments and ReplicaSets, as `kubectl scale` and autoscalers use
// it: GET gives an autoscaling/v1 Scale (spec.replicas, status.replicas, status.selector as a
// string), PUT of a Scale and PATCH (merge, JSON, strategic) of it write spec.replicas through
// the object's own update (validation, generation, resourceVersion precondition).

#include "patch.hpp"
#include "server.hpp"
#include "workloads.hpp"

namespace kubesim {

namespace {

json scale_of(const json& obj) {
  const json& m = obj["metadata"];
  json spec = json::object();
  set_or_omit(spec, "replicas", obj["spec"].value("replicas", 1LL));
  const json* sel = json_path(obj, "spec.selector");
  return {{"kind", "Scale"},
          {"apiVersion", "autoscaling/v1"},
          {"metadata",
           {{"name", m.value("name", "")},
            {"namespace", m.value("namespace", "")},
            {"uid", m.value("uid", "")},
            {"resourceVersion", m.value("resourceVersion", "")},
            {"creationTimestamp", m.value("creationTimestamp", "")}}},
          {"spec", spec},
          {"status",
           {{"replicas", obj.value("status", json::object()).value("replicas", 0LL)},
            {"selector", sel ? selector_string(*sel) : ""}}}};
}

// The Scale the request asks for: the PUT body, or the current Scale patched.
json wanted_scale(const HttpRequest& req, const std::string& verb, const json& current) {
  json body;
  try {
    body = json::parse(req.body);
  } catch (const std::exception& e) {
    throw bad_request(std::string("the object provided is unrecognized (") + e.what() + ")");
  }
  if (verb == "update") return body;
  std::string ct = to_lower(trim(req.header("content-type").substr(0, req.header("content-type").find(';'))));
  try {
    if (ct == "application/merge-patch+json") return apply_merge_patch(current, body);
    if (ct == "application/json-patch+json") return apply_json_patch(current, body);
    if (ct == "application/strategic-merge-patch+json") return apply_strategic_merge_patch(current, body);
  } catch (const std::exception& e) {
    throw ApiError(422, "Invalid",
                   std::string("the server rejected our request due to an error in our request: ") + e.what());
  }
  throw unsupported_media_type(
      ct, {"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"});
}

}  // namespace

void ApiServer::serve_scale(Ctx& c, const ResourceType& t) {
  const RequestInfo& info = c.info;
  if (info.verb == "get") {
    send_json(c, 200, scale_of(api_.get(t, info.ns, info.name)));
    return;
  }
  if (info.verb != "update" && info.verb != "patch") {
    send_error(c, method_not_supported(qualified_resource(t.group, t.plural + "/scale"), info.verb));
    return;
  }
  json obj = api_.get(t, info.ns, info.name);
  const json current = scale_of(obj);
  json scale = wanted_scale(c.req, info.verb, current);
  const json replicas = scale.value("spec", json::object()).value("replicas", json(0));
  if (!replicas.is_number_integer() || replicas.get<long long>() < 0) {
    throw invalid("autoscaling", "Scale", info.name,
                  {invalid_error("spec.replicas", replicas, "must be greater than or equal to 0")});
  }
  const std::string rv = scale.value("metadata", json::object()).value("resourceVersion", "");
  if (!rv.empty() && rv != current["metadata"].value("resourceVersion", ""))
    throw stale_conflict(t.group, t.plural, info.name);
  obj["spec"]["replicas"] = replicas;
  WriteOptions opts;
  opts.dry_run = c.req.param("dryRun") == "All";
  Result r = api_.update(t, info.ns, info.name, "", obj, c.user, opts);
  send_json(c, 200, scale_of(r.object));
}

}  // namespace kubesim
