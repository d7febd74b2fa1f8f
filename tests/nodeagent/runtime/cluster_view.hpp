#pragma once

// What a node's runtime reads of the cluster while it starts a pod's containers: the ConfigMaps
// and Secrets their env and volumes name, where a Service's name leads (the DNS emulation of
// pod_env.hpp) and the API server's address. The node agent answers
// from the real API server, with what a node's identity may read (tests/nodeagent/README.md).

#include <optional>
#include <string>

#include "runtime/util.hpp"

namespace noderuntime {

class ClusterView {
 public:
  virtual ~ClusterView() = default;

  /// The object as stored; nullopt when it does not exist. Throws std::runtime_error when the
  /// answer cannot be had (the caller waits and tries again, as for a missing one).
  virtual std::optional<json> config_map(const std::string& ns, const std::string& name) = 0;
  virtual std::optional<json> secret(const std::string& ns, const std::string& name) = 0;

  /// The pod IP that `<service>.<ns>.svc` stands for: a pod the Service selects (running or
  /// pending with an IP, not terminating; the first by name); "" when there is none yet.
  virtual std::string service_address(const std::string& ns, const std::string& service) = 0;
  /// The pod IP of `<hostname>.<subdomain>.<ns>.svc`; "" when there is none yet.
  virtual std::string hostname_address(const std::string& ns, const std::string& hostname,
                                       const std::string& subdomain) = 0;

  /// Where pods reach the API server (KUBERNETES_SERVICE_HOST / _PORT, kubernetes.default.svc).
  virtual std::string api_host() = 0;
  virtual int api_port() = 0;
  /// The PEM of the CA that signs the API server's certificate (a ServiceAccount's ca.crt).
  virtual std::string api_ca_pem() = 0;
};

}  // namespace noderuntime
