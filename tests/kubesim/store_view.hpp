#pragma once

// The node runtime's view of the cluster (runtime/cluster_view.hpp) on kubesim's own store:
// ConfigMaps and Secrets as stored, a Service's address as the first pod by name it selects
// (running or pending with an IP, not terminating), <hostname>.<subdomain> as the pod with that
// spec.hostname and spec.subdomain, the API server as kubesim itself.

#include "api.hpp"
#include "runtime/cluster_view.hpp"

namespace kubesim {

class StoreView : public noderuntime::ClusterView {
 public:
  explicit StoreView(Api& api) : api_(api) {}

  std::optional<json> config_map(const std::string& ns, const std::string& name) override;
  std::optional<json> secret(const std::string& ns, const std::string& name) override;
  std::string service_address(const std::string& ns, const std::string& service) override;
  std::string hostname_address(const std::string& ns, const std::string& hostname,
                               const std::string& subdomain) override;
  std::string api_host() override { return api_.config().server_host; }
  int api_port() override { return api_.config().server_port; }
  std::string api_ca_pem() override { return api_.config().ca_pem; }

 private:
  std::optional<json> lookup(const std::string& key, const std::string& ns, const std::string& name);

  Api& api_;
};

}  // namespace kubesim
