#pragma once

// Typed-error REST client for Kubernetes resources, JSON in and out (nlohmann::json).
//
// Every call throws ApiError (subclass by status) when the server answers with an error,
// TransportError when no usable answer came (including a 2xx whose body is not JSON), and
// std::invalid_argument for bad arguments (missing metadata.name, unsafe names).
//
// Thread safety: a Client is immutable after construction and safe to use from many threads
// at once; share one (std::shared_ptr) per process so the rate limit is shared too.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kube/config.hpp"
#include "kube/resource.hpp"
#include "kube/stop_token.hpp"
#include "kube/transport.hpp"
#include "kube/watch.hpp"

namespace trainbench::kube {

struct ListOptions {
  std::string label_selector;  ///< "app=x,tier!=db"
  std::string field_selector;  ///< "metadata.name=x"
  std::string resource_version;
  std::string resource_version_match;  ///< "", "Exact" or "NotOlderThan"
  std::int64_t limit = 0;              ///< page size; 0: everything at once
  std::string continue_token;
  StopToken stop;
};

struct WriteOptions {
  std::string field_manager;  ///< defaults to "trainbench-operator" for apply
  bool dry_run = false;
  bool force = false;  ///< server-side apply: take over conflicting fields
  StopToken stop;
};

struct DeleteOptions {
  std::string propagation_policy;  ///< "", "Foreground", "Background", "Orphan"
  std::optional<std::int64_t> grace_period_seconds;
  std::string precondition_uid;
  std::string precondition_resource_version;
  bool dry_run = false;
  StopToken stop;
};

/// pods/log (Client::pod_log).
struct LogOptions {
  std::string container;  ///< "": the pod's only container (the server refuses when it has several)
  bool follow = false;    ///< stream until the container ends
  /// follow: the connection counts as dead after this long without a byte (a quiet container
  /// sends nothing, so it is long).
  std::chrono::seconds idle_timeout{std::chrono::hours(24)};
  StopToken stop;
};

enum class PatchType {
  kMerge,      ///< application/merge-patch+json (RFC 7386)
  kJson,       ///< application/json-patch+json (RFC 6902), an array of operations
  kStrategic,  ///< application/strategic-merge-patch+json (built-in kinds only)
  kApply,      ///< application/apply-patch+yaml (server-side apply; needs a field manager)
};

class Client {
 public:
  explicit Client(ClientConfig config);
  explicit Client(std::shared_ptr<Transport> transport);

  nlohmann::json get(const ResourceType& type, const std::string& ns, const std::string& name,
                     const StopToken& stop = {}) const;
  /// get() that returns nullopt on 404.
  std::optional<nlohmann::json> try_get(const ResourceType& type, const std::string& ns, const std::string& name,
                                        const StopToken& stop = {}) const;
  /// One page (or everything when limit is 0): the List object, with items,
  /// metadata.resourceVersion and metadata.continue. `ns` empty: all namespaces.
  nlohmann::json list(const ResourceType& type, const std::string& ns, const ListOptions& options = {}) const;
  /// Follows continue tokens (pages of options.limit, 500 when 0) and returns one List with all
  /// items and the resourceVersion of the first page.
  nlohmann::json list_all(const ResourceType& type, const std::string& ns, ListOptions options = {}) const;

  /// POST. `ns` empty: the object's metadata.namespace (or the type is cluster-scoped).
  nlohmann::json create(const ResourceType& type, const std::string& ns, const nlohmann::json& object,
                        const WriteOptions& options = {}) const;
  /// PUT of the whole object (name from metadata.name). A metadata.resourceVersion that is not
  /// the current one gives ConflictError (409).
  nlohmann::json update(const ResourceType& type, const std::string& ns, const nlohmann::json& object,
                        const WriteOptions& options = {}) const;
  /// PUT on the status subresource.
  nlohmann::json update_status(const ResourceType& type, const std::string& ns, const nlohmann::json& object,
                               const WriteOptions& options = {}) const;
  /// PATCH of the object, or of `subresource` ("status", "scale") when not empty.
  nlohmann::json patch(const ResourceType& type, const std::string& ns, const std::string& name, PatchType patch_type,
                       const nlohmann::json& patch, const WriteOptions& options = {},
                       const std::string& subresource = "") const;
  nlohmann::json merge_patch(const ResourceType& type, const std::string& ns, const std::string& name,
                             const nlohmann::json& patch) const;
  nlohmann::json json_patch(const ResourceType& type, const std::string& ns, const std::string& name,
                            const nlohmann::json& operations) const;
  /// Merge patch of the status subresource, as the controller writes status.
  nlohmann::json patch_status(const ResourceType& type, const std::string& ns, const std::string& name,
                              const nlohmann::json& status_patch) const;
  /// Server-side apply of a full (partial-intent) object; creates it when absent.
  nlohmann::json apply(const ResourceType& type, const std::string& ns, const nlohmann::json& object,
                       const WriteOptions& options = {}) const;
  /// DELETE. Returns the server's answer (the object being deleted, or a Status).
  nlohmann::json remove(const ResourceType& type, const std::string& ns, const std::string& name,
                        const DeleteOptions& options = {}) const;

  /// DELETE on the collection (deletecollection): every object matching `which`'s label and
  /// field selectors. Returns the server's answer (the List of deleted objects, or a Status).
  nlohmann::json remove_collection(const ResourceType& type, const std::string& ns, const ListOptions& which,
                                   const DeleteOptions& options = {}) const;

  /// Starts a watch (HTTP errors throw ApiError, e.g. GoneError when the resourceVersion is too old).
  std::unique_ptr<WatchStream> watch(const ResourceType& type, const std::string& ns,
                                     const WatchOptions& options = {}) const;

  /// GET pods/NAME/log: `on_text` gets the log as it arrives, whole lines with their "\n" when
  /// following, the whole log at once otherwise. Throws ApiError (404: no such pod; 400: e.g. the
  /// container has not started) or TransportError.
  void pod_log(const std::string& ns, const std::string& pod, const LogOptions& options,
               const std::function<void(const std::string& text)>& on_text) const;

  /// Any request; returns the parsed JSON answer (null for an empty body). For discovery etc.
  nlohmann::json request(const std::string& method, const std::string& path, const std::string& query = "",
                         const nlohmann::json* body = nullptr, const std::string& content_type = "",
                         const StopToken& stop = {}) const;

  const std::string& default_namespace() const;
  Transport& transport() const { return *transport_; }

 private:
  nlohmann::json call(HttpRequest request) const;
  nlohmann::json delete_request(HttpRequest request, const DeleteOptions& options) const;
  /// POST/PUT of a whole object (create, update, update_status).
  nlohmann::json write_object(const std::string& method, std::string path, const ResourceType& type,
                              const nlohmann::json& object, const WriteOptions& options) const;
  std::string namespace_for(const ResourceType& type, const std::string& ns, const nlohmann::json* object) const;

  std::shared_ptr<Transport> transport_;
};

}  // namespace trainbench::kube
