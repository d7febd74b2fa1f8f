#pragma once

// The kubelet's log endpoint, so that `kubectl logs [-f]` through the real API server works:
// HTTPS on the node's InternalIP and kubelet port, with a serving certificate for that IP
// signed by the cluster CA (the API server runs --kubelet-certificate-authority), clients
// verified against the same CA (the API server's --kubelet-client-certificate), and each
// client authorized as a kubelet does (webhook mode): a SubjectAccessReview for `get` on
// nodes/proxy of this node, its answer kept for a minute.
//
//   GET /containerLogs/{namespace}/{pod}/{container}?follow&tailLines&limitBytes&previous
//   GET /healthz
//
// A followed stream ends once the container instance has terminated and its log has been sent.
// timestamps and sinceSeconds are accepted and ignored: the log files carry no per-line times.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "kube/client.hpp"
#include "node_pods.hpp"
#include "runtime/http_server.hpp"

namespace nodeagent {

namespace kube = trainbench::kube;

struct LogServerConfig {
  std::string node;
  std::string ip;
  int port = 10250;
  std::string cert_file;  ///< serving certificate chain (PEM)
  std::string key_file;
  std::string client_ca_file;  ///< the cluster CA
};

class LogServer {
 public:
  /// Binds at once (throws when it cannot).
  LogServer(std::shared_ptr<const kube::Client> client, NodePods& pods, LogServerConfig config);
  void start() { server_.start(); }
  void stop() { server_.stop(); }

 private:
  void handle(const noderuntime::HttpRequest& req, noderuntime::HttpResponder& res);
  bool authorized(const noderuntime::HttpRequest& req);
  void serve_log(const noderuntime::HttpRequest& req, noderuntime::HttpResponder& res, const std::string& ns,
                 const std::string& pod, const std::string& container);

  std::shared_ptr<const kube::Client> client_;
  NodePods& pods_;
  LogServerConfig config_;
  std::mutex mu_;
  std::map<std::string, std::pair<bool, std::chrono::steady_clock::time_point>> decisions_;  // user -> allowed, until
  noderuntime::HttpsServer server_;
};

}  // namespace nodeagent
