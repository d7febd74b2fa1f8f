#pragma once

// The node's credentials and certificates, from the cluster CA (tests only: a kubelet gets
// both through CertificateSigningRequests an approver signs): its client identity
// (CN=system:node:NAME, O=system:nodes, so that the Node authorizer and NodeRestriction apply)
// from --kubeconfig, or signed here for --controlplane; the serving certificate of its log
// endpoint for its InternalIP.

#include <optional>
#include <string>

#include "kube/config.hpp"
#include "options.hpp"

namespace nodeagent {

namespace kube = trainbench::kube;

/// The API server and the node's credentials. Throws kube::ConfigError, std::runtime_error.
kube::ClientConfig node_client_config(const Options& options);

/// The cluster DNS server's identity (--dns-kubeconfig, or DIR/cluster-dns.kubeconfig of
/// --controlplane DIR); nullopt when there is none.
std::optional<kube::ClientConfig> cluster_dns_config(const Options& options);

/// Writes DIR/pki/kubelet.{crt,key}: a serving certificate for `ip` (and the node's name),
/// chained to the CA. Returns DIR/pki.
std::string write_serving_cert(const Options& options, const std::string& ip);

}  // namespace nodeagent
