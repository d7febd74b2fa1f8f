#pragma once

// The HTTP face of the API server: authentication (bearer tokens, impersonation), RBAC
// authorization, audit logging, discovery (/version, /api, /apis, aggregated discovery,
// /openapi), the REST verbs on resources (rest.cpp), watches (watch.cpp) and kubesim's admin
// endpoints under /kubesim/ (admin.cpp).

#include <atomic>
#include <string>

#include "api.hpp"
#include "audit.hpp"
#include "auth.hpp"
#include "faults.hpp"
#include "http.hpp"
#include "kubelet.hpp"
#include "table.hpp"

namespace kubesim {

struct ServerOptions {
  std::string address;                ///< "127.0.0.1:PORT" for discovery
  double bookmark_interval_s = 5;     ///< watch bookmarks when allowWatchBookmarks=true
  double default_watch_timeout_s = 1800;
  bool aggregated_discovery = true;
};

/// What kube-apiserver's RequestInfoFactory derives from a request.
struct RequestInfo {
  bool resource_request = false;
  std::string verb;  ///< get list watch create update patch delete deletecollection | http verb
  std::string group;
  std::string version;
  std::string ns;
  std::string resource;
  std::string name;
  std::string subresource;
  bool watch_path = false;  ///< deprecated /watch/ prefix
};

RequestInfo parse_request_info(const HttpRequest& req);

class ApiServer {
 public:
  ApiServer(Api& api, const TokenAuthority& tokens, AuditLog& audit, Kubelet* kubelet, ServerOptions opts);
  void handle(const HttpRequest& req, HttpResponder& res);
  /// Ends every open watch stream (as a dropped connection would).
  void close_watches() { ++watch_epoch_; }
  /// The fault injector (faults.hpp), configured by --faults and /kubesim/v1/faults.
  FaultInjector& faults() { return faults_; }
  long long open_watches() const { return open_watches_; }

 private:
  struct Ctx {
    const HttpRequest& req;
    HttpResponder& res;
    RequestInfo info;
    UserInfo user;
    std::string impersonator;
    int code = 0;
    bool logged = false;
    std::string fault;  ///< the injected fault, for the audit log ("" when none)
  };
  void send_json(Ctx& c, int code, const json& body, const HeaderList& headers = {});
  void send_error(Ctx& c, const ApiError& e);
  void audit(Ctx& c);

  bool authenticate(Ctx& c);
  void dispatch(Ctx& c);
  void serve_non_resource(Ctx& c);
  void serve_resource(Ctx& c, const ResourceType& t);
  void serve_watch(Ctx& c, const ResourceType& t);
  void serve_log(Ctx& c, const ResourceType& t);
  void serve_token_request(Ctx& c);
  /// The scale subresource (autoscaling/v1 Scale) of Deployments and ReplicaSets (scale.cpp).
  void serve_scale(Ctx& c, const ResourceType& t);
  void serve_review(Ctx& c, const ResourceType& t);
  void serve_admin(Ctx& c);
  void serve_faults_admin(Ctx& c);
  /// Serves the request with fault `f` (faults.cpp).
  void serve_with_fault(Ctx& c, const FaultDecision& f);
  /// dispatch() answering through `res` instead of c.res.
  void dispatch_via(Ctx& c, HttpResponder& res);
  /// Table / PartialObjectMetadata conversion per the Accept header.
  json shape_response(Ctx& c, const ResourceType& t, const json& obj, bool single);

  Api& api_;
  const TokenAuthority& tokens_;
  AuditLog& audit_;
  Kubelet* kubelet_;
  ServerOptions opts_;
  std::atomic<long long> watch_epoch_{0};
  std::atomic<long long> open_watches_{0};
  std::atomic<long long> requests_{0};
  FaultInjector faults_;
};

}  // namespace kubesim
