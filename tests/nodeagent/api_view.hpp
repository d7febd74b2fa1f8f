#pragma once

// The node runtime's view of the cluster (runtime/cluster_view.hpp) on the real API server,
// with what a node's identity may read (the Node authorizer): a ConfigMap or Secret a pod bound
// to this node names (GET by name), and a Service's Endpoints (GET by name) for the DNS
// emulation, where cluster DNS would read EndpointSlices: a node may not list or read
// EndpointSlices, nor list pods beyond its own (README.md, "What a node may read").

#include <memory>
#include <string>

#include "kube/client.hpp"
#include "runtime/cluster_view.hpp"

namespace nodeagent {

namespace kube = trainbench::kube;

class ApiView : public noderuntime::ClusterView {
 public:
  /// `api_host`/`api_port`: where pods reach the API server (from the kubeconfig's server).
  explicit ApiView(std::shared_ptr<const kube::Client> client);

  std::optional<nlohmann::json> config_map(const std::string& ns, const std::string& name) override;
  std::optional<nlohmann::json> secret(const std::string& ns, const std::string& name) override;
  /// The first address by pod name among the Endpoints' ready and not-ready ones.
  std::string service_address(const std::string& ns, const std::string& service) override;
  /// The address whose hostname is `hostname` in the Endpoints of the (headless) Service
  /// `subdomain`, as cluster DNS answers <hostname>.<subdomain>.<ns>.svc.
  std::string hostname_address(const std::string& ns, const std::string& hostname,
                               const std::string& subdomain) override;
  std::string api_host() override { return host_; }
  int api_port() override { return port_; }
  std::string api_ca_pem() override { return ca_pem_; }

 private:
  std::optional<nlohmann::json> get(const kube::ResourceType& type, const std::string& ns, const std::string& name);

  std::shared_ptr<const kube::Client> client_;
  std::string host_;
  int port_ = 443;
  std::string ca_pem_;
};

}  // namespace nodeagent
