#pragma once

// The node runtime's view of the cluster (runtime/cluster_view.hpp) on the real API server.
// ConfigMaps and Secrets are read with the node's identity (GET by name: the Node authorizer
// allows those a pod bound to this node names). The DNS emulation (service names in env values
// to pod IPs) reads as the cluster's DNS server does, with an identity of its own (--controlplane
// DIR: DIR/cluster-dns.kubeconfig; else --dns-kubeconfig): a node may list neither the pods of
// other nodes nor EndpointSlices, and the API server refuses loopback addresses in Endpoints and
// EndpointSlices, so they never hold the pods' addresses. Pods and Services of every namespace
// are watched into caches (as CoreDNS watches), and a Service's address is the first pod by
// name its selector picks (running or pending with an IP, not terminating), as kubesim's.

#include <memory>
#include <string>

#include "kube/client.hpp"
#include "kube/reflector.hpp"
#include "runtime/cluster_view.hpp"

namespace nodeagent {

namespace kube = trainbench::kube;

class ApiView : public noderuntime::ClusterView {
 public:
  /// `dns`: the cluster DNS identity's client; null: service names are not resolved.
  /// `pod_api_server`: HOST:PORT where pods reach the API server; "": the client's server.
  ApiView(std::shared_ptr<const kube::Client> client, std::shared_ptr<const kube::Client> dns,
          const std::string& pod_api_server);
  ~ApiView() override;

  /// Starts watching pods and Services for the DNS emulation.
  void start();
  void stop();

  std::optional<nlohmann::json> config_map(const std::string& ns, const std::string& name) override;
  std::optional<nlohmann::json> secret(const std::string& ns, const std::string& name) override;
  std::string service_address(const std::string& ns, const std::string& service) override;
  std::string hostname_address(const std::string& ns, const std::string& hostname,
                               const std::string& subdomain) override;
  std::string api_host() override { return host_; }
  int api_port() override { return port_; }
  std::string api_ca_pem() override { return ca_pem_; }

 private:
  std::optional<nlohmann::json> get(const kube::ResourceType& type, const std::string& ns, const std::string& name);

  std::shared_ptr<const kube::Client> client_;
  std::shared_ptr<const kube::Client> dns_;
  std::unique_ptr<kube::Reflector> pods_;
  std::unique_ptr<kube::Reflector> services_;
  std::string host_;
  int port_ = 443;
  std::string ca_pem_;
};

}  // namespace nodeagent
