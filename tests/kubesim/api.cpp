#include "api.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "patch.hpp"
#include "selectors.hpp"
#include "strategies.hpp"

namespace kubesim {

namespace {

using Lock = std::lock_guard<std::recursive_mutex>;

std::string meta_str(const json& obj, const char* field) {
  const json* v = json_path(obj, std::string("metadata.") + field);
  return v && v->is_string() ? v->get<std::string>() : "";
}

bool has_deletion(const json& obj) {
  const json* v = json_path(obj, "metadata.deletionTimestamp");
  return v && !v->is_null();
}

json finalizers_of(const json& obj) {
  const json* v = json_path(obj, "metadata.finalizers");
  return v && v->is_array() ? *v : json::array();
}

// apiVersion/kind checks shared by create and update.
void check_type_fields(const ResourceType& t, json& body) {
  if (!body.is_object()) throw bad_request("the body of the request was not a JSON object");
  if (t.custom && (!body.contains("kind") || !body["kind"].is_string() || body["kind"].get<std::string>().empty())) {
    std::string shown = body.dump();
    if (shown.size() > 200) shown = shown.substr(0, 200) + "...";
    throw bad_request("Object 'Kind' is missing in '" + shown + "'");
  }
  if (body.contains("apiVersion") && body["apiVersion"].is_string() && !body["apiVersion"].get<std::string>().empty()) {
    std::string v = body["apiVersion"];
    if (v != t.api_version()) {
      throw bad_request("the API version in the data (" + v + ") does not match the expected API version (" +
                        t.api_version() + ")");
    }
  }
  if (body.contains("kind") && body["kind"].is_string() && !body["kind"].get<std::string>().empty() &&
      body["kind"].get<std::string>() != t.kind) {
    throw bad_request(body["kind"].get<std::string>() + " in version \"" + t.version + "\" cannot be handled as a " +
                      t.kind + ": the kind in the data does not match the expected kind (" + t.kind + ")");
  }
  body["apiVersion"] = t.api_version();
  body["kind"] = t.kind;
  if (!body.contains("metadata") || !body["metadata"].is_object()) body["metadata"] = json::object();
}

// As the real event recorder: "<object>.<unix nanoseconds in hex>", so names sort by time.
std::string event_name(const std::string& object) {
  static std::atomic<long long> last{0};
  long long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  long long prev = last.load();
  while (true) {
    long long next = ns > prev ? ns : prev + 1;
    if (last.compare_exchange_weak(prev, next)) {
      ns = next;
      break;
    }
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", ns);
  return object + "." + buf;
}

json spec_part(const json& obj, bool has_status) {
  json c = obj;
  c.erase("metadata");
  if (has_status) c.erase("status");
  return c;
}

}  // namespace

Api::Api(Store& store, TypeRegistry& types, const Authorizer& authz, ApiConfig config)
    : store_(store), types_(types), authz_(authz), config_(std::move(config)) {}

json Api::present(const ResourceType& t, const json& obj) {
  json out = obj;
  out["apiVersion"] = t.api_version();
  out["kind"] = t.kind;
  return out;
}

bool Api::field_supported(const ResourceType& t, const std::string& f) {
  if (f == "metadata.name" || f == "metadata.namespace") return true;
  const std::string key = t.storage_key();
  static const std::vector<std::string> pod_fields = {
      "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork",
      "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName"};
  static const std::vector<std::string> event_fields = {
      "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
      "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
      "reportingComponent", "source", "type"};
  auto in = [&](const std::vector<std::string>& v) { return std::find(v.begin(), v.end(), f) != v.end(); };
  if (key == "pods") return in(pod_fields);
  if (key == "events") return in(event_fields);
  if (key == "secrets") return f == "type";
  if (key == "namespaces") return f == "status.phase";
  if (key == "nodes") return f == "spec.unschedulable";
  if (t.custom) return in(t.selectable_fields);
  return false;
}

void Api::check_namespace(const ResourceType& t, const std::string& ns) {
  if (!t.namespaced) return;
  ObjPtr n = store_.get("namespaces", "", ns);
  if (!n) throw not_found("", "namespaces", ns);
  if (has_deletion(*n)) {
    throw ApiError(403, "Forbidden",
                   "unable to create new content in namespace " + ns + " because it is being terminated",
                   json{{"name", ns}, {"kind", "namespaces"},
                        {"causes", json::array({{{"reason", "NamespaceTerminating"},
                                                 {"message", "namespace " + ns + " is currently being terminated"},
                                                 {"field", "metadata.namespace"}}})}});
  }
}

Result Api::create(const ResourceType& t, const std::string& ns, json body, const UserInfo& user,
                   const WriteOptions& opts) {
  Lock lock(store_.mu());
  check_type_fields(t, body);
  json& meta = body["metadata"];
  if (t.namespaced) {
    std::string bns = meta.value("namespace", "");
    if (!bns.empty() && bns != ns) {
      throw bad_request("the namespace of the provided object does not match the namespace sent on the request");
    }
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
  }
  std::string name = meta.value("name", "");
  if (name.empty() && meta.contains("generateName") && meta["generateName"].is_string()) {
    std::string base = meta["generateName"];
    if (base.size() > 58) base = base.substr(0, 58);
    for (int tries = 0; tries < 10; ++tries) {
      name = base + random_name_suffix();
      if (!store_.get(t.storage_key(), t.namespaced ? ns : "", name)) break;
    }
    meta["name"] = name;
  }
  if (name.empty()) {
    throw invalid(t.group, t.kind, "", {required_error("metadata.name", "name or generateName is required")});
  }
  if (!meta.value("resourceVersion", "").empty()) {
    throw internal_error("resourceVersion should not be set on objects to be created");
  }
  for (const char* f : {"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation",
                        "selfLink", "managedFields"}) {
    meta.erase(f);
  }
  meta.erase("resourceVersion");
  check_namespace(t, ns);
  auto errs = validate_name(t, name);
  auto merrs = validate_metadata(meta);
  errs.insert(errs.end(), merrs.begin(), merrs.end());
  if (!errs.empty()) throw invalid(t.group, t.kind, name, errs);
  Result res;
  StrategyContext ctx{*this, user, opts.validation, res.warnings};
  prepare_create(ctx, t, body);
  const std::string obj_ns = t.namespaced ? ns : "";
  if (store_.get(t.storage_key(), obj_ns, name)) throw already_exists(t.group, t.plural, name);
  body["metadata"]["uid"] = new_uid();
  body["metadata"]["creationTimestamp"] = now_rfc3339();
  if (t.tracks_generation) body["metadata"]["generation"] = 1;
  res.code = 201;
  if (opts.dry_run) {
    res.object = present(t, body);
    return res;
  }
  ObjPtr ptr = store_.put(t.storage_key(), obj_ns, name, std::move(body));
  after_write(t, *ptr);
  res.object = present(t, *ptr);
  return res;
}

json Api::get(const ResourceType& t, const std::string& ns, const std::string& name) {
  Lock lock(store_.mu());
  ObjPtr p = store_.get(t.storage_key(), t.namespaced ? ns : "", name);
  if (!p) throw not_found(t.group, t.plural, name);
  return present(t, *p);
}

json Api::list(const ResourceType& t, const std::string& ns, const ListOptions& opts) {
  auto labels = LabelSelector::parse(opts.label_selector);
  auto fields = FieldSelector::parse(opts.field_selector, [&](const std::string& f) { return field_supported(t, f); });
  Lock lock(store_.mu());
  std::string start_ns, start_name;
  bool resume = false;
  if (!opts.continue_token.empty()) {
    try {
      json tok = json::parse(base64url_decode(opts.continue_token));
      start_ns = tok.at("ns");
      start_name = tok.at("name");
      resume = true;
    } catch (const std::exception&) {
      throw bad_request("continue key is not valid: illegal base64 data");
    }
  }
  json items = json::array();
  long long remaining = 0;
  std::string next_ns, next_name;
  for (const auto& p : store_.list(t.storage_key(), t.namespaced ? ns : "")) {
    const json& o = *p;
    if (resume) {
      std::string ons = meta_str(o, "namespace"), oname = meta_str(o, "name");
      if (std::tie(ons, oname) <= std::tie(start_ns, start_name)) continue;
    }
    const json* lbl = json_path(o, "metadata.labels");
    if (!labels.empty() && !labels.matches(lbl ? *lbl : json::object())) continue;
    if (!fields.empty() && !fields.matches(o)) continue;
    if (opts.limit > 0 && static_cast<long long>(items.size()) >= opts.limit) {
      ++remaining;
      continue;
    }
    json item = t.custom ? present(t, o) : o;
    if (!t.custom) {
      item.erase("apiVersion");
      item.erase("kind");
    }
    next_ns = meta_str(o, "namespace");
    next_name = meta_str(o, "name");
    items.push_back(std::move(item));
  }
  json meta = {{"resourceVersion", std::to_string(store_.rv())}};
  if (remaining > 0) {
    meta["continue"] = base64url_encode(json{{"ns", next_ns}, {"name", next_name}, {"rv", store_.rv()}}.dump());
    meta["remainingItemCount"] = remaining;
  }
  return {{"kind", t.list_kind}, {"apiVersion", t.api_version()}, {"metadata", meta}, {"items", items}};
}

Result Api::update(const ResourceType& t, const std::string& ns, const std::string& name, const std::string& subresource,
                   json body, const UserInfo& user, const WriteOptions& opts) {
  Lock lock(store_.mu());
  const std::string obj_ns = t.namespaced ? ns : "";
  ObjPtr old = store_.get(t.storage_key(), obj_ns, name);
  if (!old) throw not_found(t.group, t.plural, name);
  check_type_fields(t, body);
  json& meta = body["metadata"];
  std::string bname = meta.value("name", "");
  if (bname.empty()) {
    meta["name"] = name;
  } else if (bname != name) {
    throw bad_request("the name of the object (" + bname + ") does not match the name on the URL (" + name + ")");
  }
  if (t.namespaced) {
    std::string bns = meta.value("namespace", "");
    if (!bns.empty() && bns != ns) {
      throw bad_request("the namespace of the provided object does not match the namespace sent on the request");
    }
    meta["namespace"] = ns;
  }
  std::string rv = meta.value("resourceVersion", "");
  if (rv.empty() && t.custom) {
    throw invalid(t.group, t.kind, name,
                  {{"FieldValueInvalid", "metadata.resourceVersion", "Invalid value: 0x0: must be specified for an update"}});
  }
  if (!rv.empty() && rv != meta_str(*old, "resourceVersion")) throw stale_conflict(t.group, t.plural, name);
  return write_update(t, old, std::move(body), subresource, user, opts, true);
}

Result Api::write_update(const ResourceType& t, const ObjPtr& old, json obj, const std::string& subresource,
                         const UserInfo& user, const WriteOptions& opts, bool) {
  const std::string name = meta_str(*old, "name");
  const std::string obj_ns = meta_str(*old, "namespace");
  if (t.has_status) {
    if (subresource == "status") {
      json n = *old;
      if (obj.contains("status")) {
        n["status"] = obj["status"];
      } else {
        n.erase("status");
      }
      obj = std::move(n);
    } else if (old->contains("status")) {
      obj["status"] = (*old)["status"];
    } else {
      obj.erase("status");
    }
  }
  json& meta = obj["metadata"];
  const json& om = (*old)["metadata"];
  for (const char* f : {"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation",
                        "resourceVersion", "name", "namespace"}) {
    if (om.contains(f)) {
      meta[f] = om[f];
    } else {
      meta.erase(f);
    }
  }
  meta.erase("selfLink");
  if (has_deletion(*old)) {
    json oldf = finalizers_of(*old);
    json added = json::array();
    for (const auto& f : finalizers_of(obj)) {
      if (std::find(oldf.begin(), oldf.end(), f) == oldf.end()) added.push_back(f);
    }
    if (!added.empty()) {
      std::string list;
      for (const auto& f : added) list += (list.empty() ? "" : ", ") + f.dump();
      throw invalid(t.group, t.kind, name,
                    {forbidden_error("metadata.finalizers",
                                     "no new finalizers can be added if the object is being deleted, found new "
                                     "finalizers []string{" + list + "}")});
    }
  }
  if (meta.contains("finalizers") && meta["finalizers"].is_array() && meta["finalizers"].empty()) meta.erase("finalizers");
  auto merrs = validate_metadata(meta);
  if (!merrs.empty()) throw invalid(t.group, t.kind, name, merrs);
  Result res;
  StrategyContext ctx{*this, user, opts.validation, res.warnings};
  prepare_update(ctx, t, *old, obj, subresource);
  if (t.tracks_generation && spec_part(obj, t.has_status) != spec_part(*old, t.has_status)) {
    obj["metadata"]["generation"] = (*old)["metadata"].value("generation", 1) + 1;
  }
  if (obj == *old) {
    res.object = present(t, *old);
    return res;
  }
  if (opts.dry_run) {
    res.object = present(t, obj);
    return res;
  }
  if (has_deletion(obj) && finalizers_of(obj).empty() &&
      obj["metadata"].value("deletionGracePeriodSeconds", 0) == 0) {
    store_.put(t.storage_key(), obj_ns, name, std::move(obj));
    ObjPtr gone = remove_now(t, obj_ns, name);
    res.object = present(t, *gone);
    return res;
  }
  ObjPtr ptr = store_.put(t.storage_key(), obj_ns, name, std::move(obj));
  after_write(t, *ptr);
  res.object = present(t, *ptr);
  return res;
}

Result Api::patch(const ResourceType& t, const std::string& ns, const std::string& name, const std::string& subresource,
                  const std::string& content_type, const std::string& body, const UserInfo& user,
                  const WriteOptions& opts) {
  std::string ct = to_lower(trim(content_type.substr(0, content_type.find(';'))));
  const std::vector<std::string> builtin_types = {"application/json-patch+json", "application/merge-patch+json",
                                                  "application/strategic-merge-patch+json",
                                                  "application/apply-patch+yaml"};
  const std::vector<std::string> custom_types = {"application/json-patch+json", "application/merge-patch+json",
                                                 "application/apply-patch+yaml"};
  const auto& accepted = t.custom ? custom_types : builtin_types;
  if (std::find(accepted.begin(), accepted.end(), ct) == accepted.end()) {
    throw unsupported_media_type(ct, accepted);
  }
  bool apply = ct == "application/apply-patch+yaml";
  if (apply && opts.field_manager.empty()) {
    throw ApiError(422, "Invalid",
                   "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
                   json{{"group", "meta.k8s.io"}, {"kind", "PatchOptions"},
                        {"causes", json::array({{{"reason", "FieldValueRequired"},
                                                 {"message", "Required value: is required for apply patch"},
                                                 {"field", "fieldManager"}}})}});
  }
  json patch_body;
  try {
    patch_body = apply ? parse_json_or_yaml(body) : json::parse(body);
  } catch (const std::exception& e) {
    throw bad_request(std::string("error decoding patch: ") + e.what());
  }
  Lock lock(store_.mu());
  const std::string obj_ns = t.namespaced ? ns : "";
  ObjPtr old = store_.get(t.storage_key(), obj_ns, name);
  if (!old) {
    if (!apply || !subresource.empty()) throw not_found(t.group, t.plural, name);
    json obj = patch_body;
    if (!obj.is_object()) throw bad_request("apply patch must be an object");
    if (!obj.contains("metadata") || !obj["metadata"].is_object()) obj["metadata"] = json::object();
    std::string bname = obj["metadata"].value("name", "");
    if (!bname.empty() && bname != name) {
      throw bad_request("the name of the object (" + bname + ") does not match the name on the URL (" + name + ")");
    }
    obj["metadata"]["name"] = name;
    Result r = create(t, ns, obj, user, opts);
    if (!opts.dry_run) {
      applied_[r.object["metadata"].value("uid", "") + "|" + opts.field_manager + "|" + subresource] = patch_body;
    }
    return r;
  }
  json current = present(t, *old);
  json patched;
  try {
    if (ct == "application/merge-patch+json") {
      if (!patch_body.is_object()) throw std::runtime_error("merge patch must be a JSON object");
      patched = apply_merge_patch(current, patch_body);
    } else if (ct == "application/json-patch+json") {
      patched = apply_json_patch(current, patch_body);
    } else if (ct == "application/strategic-merge-patch+json") {
      patched = apply_strategic_merge_patch(current, patch_body);
    } else {
      if (!patch_body.is_object()) throw std::runtime_error("apply patch must be an object");
      if (patch_body.contains("apiVersion") && patch_body["apiVersion"] != t.api_version()) {
        throw bad_request("the API version in the data (" + patch_body["apiVersion"].dump() +
                          ") does not match the expected API version (" + t.api_version() + ")");
      }
      std::string key = meta_str(*old, "uid") + "|" + opts.field_manager + "|" + subresource;
      auto it = applied_.find(key);
      patched = apply_server_side(current, patch_body, it == applied_.end() ? nullptr : &it->second, !t.custom);
    }
  } catch (const ApiError&) {
    throw;
  } catch (const std::exception& e) {
    throw ApiError(422, "Invalid", std::string("the server rejected our request due to an error in our request: ") + e.what());
  }
  if (!patched.is_object()) throw bad_request("patched object is not an object");
  if (!patched.contains("metadata") || !patched["metadata"].is_object()) patched["metadata"] = json::object();
  std::string prv = patched["metadata"].value("resourceVersion", "");
  if (!prv.empty() && prv != meta_str(*old, "resourceVersion")) throw stale_conflict(t.group, t.plural, name);
  patched["apiVersion"] = t.api_version();
  patched["kind"] = t.kind;
  json stored_old = *old;
  Result r = write_update(t, old, std::move(patched), subresource, user, opts, false);
  if (apply && !opts.dry_run) applied_[meta_str(stored_old, "uid") + "|" + opts.field_manager + "|" + subresource] = patch_body;
  return r;
}

Result Api::remove(const ResourceType& t, const std::string& ns, const std::string& name, const DeleteOptions& opts) {
  Lock lock(store_.mu());
  const std::string key = t.storage_key();
  const std::string obj_ns = t.namespaced ? ns : "";
  ObjPtr old = store_.get(key, obj_ns, name);
  if (!old) throw not_found(t.group, t.plural, name);
  if (!opts.precondition_uid.empty() && opts.precondition_uid != meta_str(*old, "uid")) {
    throw conflict(t.group, t.plural, name,
                   "Precondition failed: UID in precondition: " + opts.precondition_uid +
                       ", UID in object meta: " + meta_str(*old, "uid"));
  }
  if (!opts.precondition_rv.empty() && opts.precondition_rv != meta_str(*old, "resourceVersion")) {
    throw conflict(t.group, t.plural, name,
                   "Precondition failed: ResourceVersion in precondition: " + opts.precondition_rv +
                       ", ResourceVersion in object meta: " + meta_str(*old, "resourceVersion"));
  }
  Result res;
  if (key == "namespaces" && (name == "default" || name == "kube-system" || name == "kube-public")) {
    throw forbidden("", "namespaces", name, "this namespace may not be deleted");
  }
  if (opts.dry_run) {
    res.object = present(t, *old);
    return res;
  }
  json obj = *old;
  json& meta = obj["metadata"];
  std::string now = now_rfc3339();
  if (key == "namespaces") {
    if (!has_deletion(obj)) {
      meta["deletionTimestamp"] = now;
      meta["deletionGracePeriodSeconds"] = 0;
      obj["status"]["phase"] = "Terminating";
      ObjPtr p = store_.put(key, obj_ns, name, std::move(obj));
      res.object = present(t, *p);
    } else {
      res.object = present(t, *old);
    }
    return res;
  }
  const bool is_pod = key == "pods";
  long long grace = 0;
  if (is_pod) {
    grace = opts.grace ? *opts.grace : obj["spec"].value("terminationGracePeriodSeconds", 30LL);
    std::string phase = obj.value("status", json::object()).value("phase", "");
    if (obj["spec"].value("nodeName", "").empty() || phase == "Succeeded" || phase == "Failed") grace = 0;
    if (grace < 0) grace = 1;
  }
  if (has_deletion(obj)) {
    // Already being deleted: only a shorter grace period for a pod changes anything.
    long long cur = meta.value("deletionGracePeriodSeconds", 0LL);
    if (is_pod && opts.grace && grace < cur) {
      if (grace == 0 && finalizers_of(obj).empty()) {
        res.object = present(t, *remove_now(t, obj_ns, name));
        return res;
      }
      meta["deletionGracePeriodSeconds"] = grace;
      meta["deletionTimestamp"] = rfc3339(Clock::now() + std::chrono::seconds(grace));
      res.object = present(t, *store_.put(key, obj_ns, name, std::move(obj)));
      return res;
    }
    res.object = present(t, *old);
    return res;
  }
  std::string policy = opts.propagation.empty() ? "Background" : opts.propagation;
  if (policy != "Background" && policy != "Foreground" && policy != "Orphan") {
    throw invalid("meta.k8s.io", "DeleteOptions", "",
                  {not_supported_error("propagationPolicy", policy, {"\"Foreground\"", "\"Background\"", "\"Orphan\""})});
  }
  const std::string uid = meta_str(obj, "uid");
  if (policy == "Orphan") {
    for (const auto& dep : store_.dependents_of(uid)) {
      mutate(dep.key, dep.ns, dep.name, [&](json& d) {
        json refs = json::array();
        for (const auto& r : d["metadata"]["ownerReferences"]) {
          if (r.value("uid", "") != uid) refs.push_back(r);
        }
        if (refs.empty()) {
          d["metadata"].erase("ownerReferences");
        } else {
          d["metadata"]["ownerReferences"] = refs;
        }
        return true;
      });
    }
  }
  if (policy == "Foreground" && !store_.dependents_of(uid).empty()) {
    json f = finalizers_of(obj);
    f.push_back("foregroundDeletion");
    meta["finalizers"] = f;
  }
  if (is_pod && grace > 0) {
    meta["deletionTimestamp"] = rfc3339(Clock::now() + std::chrono::seconds(grace));
    meta["deletionGracePeriodSeconds"] = grace;
    res.object = present(t, *store_.put(key, obj_ns, name, std::move(obj)));
    return res;
  }
  if (!finalizers_of(obj).empty()) {
    meta["deletionTimestamp"] = now;
    meta["deletionGracePeriodSeconds"] = 0;
    res.object = present(t, *store_.put(key, obj_ns, name, std::move(obj)));
    return res;
  }
  res.object = present(t, *remove_now(t, obj_ns, name));
  return res;
}

ObjPtr Api::remove_now(const ResourceType& t, const std::string& ns, const std::string& name) {
  ObjPtr gone = store_.remove(t.storage_key(), ns, name);
  if (gone) after_delete(t, *gone);
  return gone;
}

json Api::delete_collection(const ResourceType& t, const std::string& ns, const ListOptions& list_opts,
                            const DeleteOptions& opts) {
  Lock lock(store_.mu());
  json listed = list(t, ns, list_opts);
  json items = json::array();
  for (const auto& item : listed["items"]) {
    try {
      items.push_back(remove(t, item["metadata"].value("namespace", ""), item["metadata"].value("name", ""), opts).object);
    } catch (const ApiError&) {
    }
  }
  listed["items"] = items;
  listed["metadata"]["resourceVersion"] = std::to_string(store_.rv());
  return listed;
}

ObjPtr Api::mutate(const std::string& key, const std::string& ns, const std::string& name,
                   const std::function<bool(json&)>& fn) {
  Lock lock(store_.mu());
  ObjPtr old = store_.get(key, ns, name);
  if (!old) return nullptr;
  json obj = *old;
  if (!fn(obj) || obj == *old) return old;
  TypePtr t = types_.by_key(key);
  if (has_deletion(obj) && finalizers_of(obj).empty() && obj["metadata"].value("deletionGracePeriodSeconds", 0) == 0 &&
      t) {
    store_.put(key, ns, name, std::move(obj));
    return remove_now(*t, ns, name);
  }
  ObjPtr p = store_.put(key, ns, name, std::move(obj));
  if (t) after_write(*t, *p);
  return p;
}

bool Api::delete_internal(const std::string& key, const std::string& ns, const std::string& name,
                          const DeleteOptions& opts) {
  Lock lock(store_.mu());
  TypePtr t = types_.by_key(key);
  if (!t) return store_.remove(key, ns, name) != nullptr;
  try {
    remove(*t, ns, name, opts);
    return true;
  } catch (const ApiError&) {
    return false;
  }
}

void Api::ensure(const std::string& key, const std::string& ns, json obj) {
  Lock lock(store_.mu());
  std::string name = obj["metadata"].value("name", "");
  if (store_.get(key, ns, name)) return;
  TypePtr t = types_.by_key(key);
  if (t) {
    try {
      create(*t, ns, std::move(obj), admin_user(), {});
    } catch (const ApiError&) {
    }
    return;
  }
}

void Api::record_event(const json& involved, const std::string& type, const std::string& reason,
                       const std::string& message, const std::string& component, const std::string& host) {
  const json& m = involved["metadata"];
  std::string ns = m.value("namespace", "default");
  std::string now = now_rfc3339();
  json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata", {{"name", event_name(m.value("name", ""))}, {"namespace", ns}}},
             {"involvedObject",
              {{"apiVersion", involved.value("apiVersion", "v1")},
               {"kind", involved.value("kind", "")},
               {"name", m.value("name", "")},
               {"namespace", ns},
               {"uid", m.value("uid", "")},
               {"resourceVersion", m.value("resourceVersion", "")}}},
             {"reason", reason},
             {"message", message},
             {"type", type},
             {"source", host.empty() ? json{{"component", component}} : json{{"component", component}, {"host", host}}},
             {"firstTimestamp", now},
             {"lastTimestamp", now},
             {"count", 1},
             {"reportingComponent", component},
             {"reportingInstance", host}};
  ensure("events", ns, ev);
}

void Api::after_write(const ResourceType& t, const json& obj) {
  const std::string key = t.storage_key();
  if (key == "customresourcedefinitions.apiextensions.k8s.io") {
    types_.register_crd(obj);
  } else if (key == "namespaces" && !has_deletion(obj)) {
    std::string ns = meta_str(obj, "name");
    if (!store_.get("serviceaccounts", ns, "default")) {
      ensure("serviceaccounts", ns, {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "default"}, {"namespace", ns}}}});
    }
    if (!config_.ca_pem.empty() && !store_.get("configmaps", ns, "kube-root-ca.crt")) {
      ensure("configmaps", ns,
             {{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", "kube-root-ca.crt"}, {"namespace", ns}, {"annotations", {{"kubernetes.io/description", "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}}}}},
              {"data", {{"ca.crt", config_.ca_pem}}}});
    }
  }
}

void Api::after_delete(const ResourceType& t, const json& obj) {
  const std::string key = t.storage_key();
  if (key == "customresourcedefinitions.apiextensions.k8s.io") {
    std::string crd = meta_str(obj, "name");
    for (const auto& o : store_.list(crd, "")) store_.remove(crd, meta_str(*o, "namespace"), meta_str(*o, "name"));
    types_.unregister_crd(crd);
  }
  for (auto it = applied_.begin(); it != applied_.end();) {
    if (starts_with(it->first, meta_str(obj, "uid") + "|")) {
      it = applied_.erase(it);
    } else {
      ++it;
    }
  }
}

void Api::bootstrap() {
  Lock lock(store_.mu());
  UserInfo admin = admin_user();
  auto mk = [&](const std::string& key, const std::string& ns, const json& obj) {
    TypePtr t = types_.by_key(key);
    try {
      create(*t, ns, obj, admin, {});
    } catch (const ApiError&) {
    }
  };
  for (const char* n : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    mk("namespaces", "", {{"metadata", {{"name", n}}}});
  }
  const std::string rbac = "rbac.authorization.k8s.io";
  auto role = [&](const std::string& name, const json& rules) {
    mk("clusterroles." + rbac, "",
       {{"metadata", {{"name", name}, {"labels", {{"kubernetes.io/bootstrapping", "rbac-defaults"}}}}}, {"rules", rules}});
  };
  auto bind = [&](const std::string& name, const std::string& role_name, const json& groups) {
    json subjects = json::array();
    for (const auto& g : groups) subjects.push_back({{"kind", "Group"}, {"apiGroup", rbac}, {"name", g}});
    mk("clusterrolebindings." + rbac, "",
       {{"metadata", {{"name", name}, {"labels", {{"kubernetes.io/bootstrapping", "rbac-defaults"}}}}},
        {"roleRef", {{"apiGroup", rbac}, {"kind", "ClusterRole"}, {"name", role_name}}},
        {"subjects", subjects}});
  };
  role("cluster-admin", json::array({{{"apiGroups", {"*"}}, {"resources", {"*"}}, {"verbs", {"*"}}},
                                     {{"nonResourceURLs", {"*"}}, {"verbs", {"*"}}}}));
  role("system:discovery",
       json::array({{{"nonResourceURLs", {"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                                          "/openapi/*", "/readyz", "/version", "/version/"}},
                     {"verbs", {"get"}}}}));
  role("system:public-info-viewer",
       json::array({{{"nonResourceURLs", {"/healthz", "/livez", "/readyz", "/version", "/version/"}}, {"verbs", {"get"}}}}));
  role("system:basic-user",
       json::array({{{"apiGroups", {"authorization.k8s.io"}},
                     {"resources", {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
                     {"verbs", {"create"}}},
                    {{"apiGroups", {"authentication.k8s.io"}}, {"resources", {"selfsubjectreviews"}}, {"verbs", {"create"}}}}));
  bind("cluster-admin", "cluster-admin", {"system:masters"});
  bind("system:discovery", "system:discovery", {"system:authenticated"});
  bind("system:public-info-viewer", "system:public-info-viewer", {"system:authenticated", "system:unauthenticated"});
  bind("system:basic-user", "system:basic-user", {"system:authenticated"});
  mk("services", "default",
     {{"metadata", {{"name", "kubernetes"}, {"labels", {{"component", "apiserver"}, {"provider", "kubernetes"}}}}},
      {"spec",
       {{"clusterIP", "10.96.0.1"},
        {"ports", json::array({{{"name", "https"}, {"port", 443}, {"protocol", "TCP"}, {"targetPort", config_.server_port}}})}}}});
}

}  // namespace kubesim
