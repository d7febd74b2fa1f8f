#pragma once

// The API's object semantics over the store, as kube-apiserver's generic registry: create (201,
// AlreadyExists, generateName, namespace must exist), get, list (selectors, limit/continue),
// update (resourceVersion preconditions -> Conflict, no-op updates write nothing), status
// subresource rules, generation, patch (merge / JSON / strategic / apply), delete (preconditions,
// finalizers, graceful pod deletion, propagation policies), deletecollection. Kind-specific
// defaulting and validation live in strategies.cpp; CRD schemas in schema.cpp.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rbac.hpp"
#include "resource_types.hpp"
#include "status.hpp"
#include "store.hpp"

namespace kubesim {

enum class FieldValidation { Ignore, Warn, Strict };

struct WriteOptions {
  bool dry_run = false;
  FieldValidation validation = FieldValidation::Warn;
  std::string field_manager;
  bool force = false;
};

struct DeleteOptions {
  std::string propagation;  ///< "", Background, Foreground, Orphan
  std::optional<long long> grace;
  std::string precondition_uid;
  std::string precondition_rv;
  bool dry_run = false;
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  long long limit = 0;
  std::string continue_token;
};

struct Result {
  json object;
  int code = 200;
  std::vector<std::string> warnings;
};

struct ApiConfig {
  std::string server_host = "127.0.0.1";  ///< what pods use as KUBERNETES_SERVICE_HOST
  int server_port = 0;
  std::string ca_pem;  ///< published as ConfigMap kube-root-ca.crt in every namespace
};

class Api {
 public:
  Api(Store& store, TypeRegistry& types, const Authorizer& authz, ApiConfig config);

  Store& store() { return store_; }
  TypeRegistry& types() { return types_; }
  const Authorizer& authorizer() const { return authz_; }
  const ApiConfig& config() const { return config_; }
  void set_config(ApiConfig c) { config_ = std::move(c); }

  Result create(const ResourceType& t, const std::string& ns, json body, const UserInfo& user, const WriteOptions& opts);
  json get(const ResourceType& t, const std::string& ns, const std::string& name);
  /// `rv_out` receives the list's resourceVersion.
  json list(const ResourceType& t, const std::string& ns, const ListOptions& opts);
  Result update(const ResourceType& t, const std::string& ns, const std::string& name, const std::string& subresource,
                json body, const UserInfo& user, const WriteOptions& opts);
  Result patch(const ResourceType& t, const std::string& ns, const std::string& name, const std::string& subresource,
               const std::string& content_type, const std::string& body, const UserInfo& user,
               const WriteOptions& opts);
  Result remove(const ResourceType& t, const std::string& ns, const std::string& name, const DeleteOptions& opts);
  json delete_collection(const ResourceType& t, const std::string& ns, const ListOptions& list_opts,
                         const DeleteOptions& opts);

  /// Internal read-modify-write (controllers): `fn` edits the object and returns whether it
  /// changed; the status subresource rules are not applied. Returns the new state, or nullptr
  /// when the object is gone.
  ObjPtr mutate(const std::string& key, const std::string& ns, const std::string& name,
                const std::function<bool(json&)>& fn);
  /// Internal delete with the registry's semantics (grace, finalizers); returns false if absent.
  bool delete_internal(const std::string& key, const std::string& ns, const std::string& name,
                       const DeleteOptions& opts = {});
  /// Internal create as the system (no admission checks); no-op if it exists.
  void ensure(const std::string& key, const std::string& ns, json obj);
  /// Records a core/v1 Event about `involved` (from a controller, e.g. the kubelet).
  void record_event(const json& involved, const std::string& type, const std::string& reason,
                    const std::string& message, const std::string& component, const std::string& host = "");

  /// The object as the request's version shows it (apiVersion and kind set).
  static json present(const ResourceType& t, const json& obj);
  /// Whether a field label works with field selectors on this type.
  static bool field_supported(const ResourceType& t, const std::string& field);

  /// Creates the built-in namespaces, RBAC roles and the `kubernetes` Service.
  void bootstrap();

 private:
  ObjPtr remove_now(const ResourceType& t, const std::string& ns, const std::string& name);
  void after_delete(const ResourceType& t, const json& obj);
  void after_write(const ResourceType& t, const json& obj);
  Result write_update(const ResourceType& t, const ObjPtr& old, json obj, const std::string& subresource,
                      const UserInfo& user, const WriteOptions& opts, bool require_rv);
  void check_namespace(const ResourceType& t, const std::string& ns);

  Store& store_;
  TypeRegistry& types_;
  const Authorizer& authz_;
  ApiConfig config_;
  std::map<std::string, json> applied_;  ///< uid|manager|subresource -> last applied configuration
};

}  // namespace kubesim
