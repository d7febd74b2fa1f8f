#include "credentials.hpp"

#include <filesystem>

#include "runtime/tls.hpp"
#include "runtime/util.hpp"

namespace nodeagent {

namespace fs = std::filesystem;

kube::ClientConfig node_client_config(const Options& o) {
  kube::ClientConfig config;
  if (!o.kubeconfig.empty()) {
    config = kube::load_kubeconfig(o.kubeconfig);
  } else {
    const std::string ca_pem = noderuntime::read_file(o.ca_cert);
    const auto cert = noderuntime::sign_client_cert(ca_pem, noderuntime::read_file(o.ca_key), "system:node:" + o.node,
                                                    {"system:nodes"});
    config.server = noderuntime::trim(noderuntime::read_file(o.controlplane + "/url"));
    config.tls.ca_pem = ca_pem;
    config.tls.client_cert_pem = cert.cert_pem;
    config.tls.client_key_pem = cert.key_pem;
    config.tls.ca_origin = o.ca_cert;
    config.tls.client_cert_origin = config.tls.client_key_origin = "signed for system:node:" + o.node;
    config.source = "control plane " + o.controlplane + " (node " + o.node + ")";
    kube::validate_config(config);
  }
  config.user_agent = "trainbench-nodeagent/" + o.node;
  return config;
}

std::optional<kube::ClientConfig> cluster_dns_config(const Options& o) {
  std::string path = o.dns_kubeconfig;
  if (path.empty() && !o.controlplane.empty() && fs::exists(o.controlplane + "/cluster-dns.kubeconfig")) {
    path = o.controlplane + "/cluster-dns.kubeconfig";
  }
  if (path.empty()) return std::nullopt;
  kube::ClientConfig config = kube::load_kubeconfig(path);
  config.user_agent = "trainbench-nodeagent/" + o.node + " (cluster DNS)";
  return config;
}

std::string write_serving_cert(const Options& o, const std::string& ip) {
  const std::string ca_pem = noderuntime::read_file(o.ca_cert);
  const auto cert =
      noderuntime::sign_serving_cert(ca_pem, noderuntime::read_file(o.ca_key), o.node, "IP:" + ip + ",DNS:" + o.node);
  const std::string dir = o.dir + "/pki";
  fs::create_directories(dir);
  noderuntime::write_file_atomic(dir + "/kubelet.crt", cert.cert_pem + ca_pem);
  noderuntime::write_file_atomic(dir + "/kubelet.key", cert.key_pem, 0600);
  return dir;
}

}  // namespace nodeagent
