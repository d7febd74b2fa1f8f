#pragma once

// trainbench-nodeagent's command line (README.md, "Running it").

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/image_store.hpp"

namespace nodeagent {

/// What the node does with the pods bound to it: run their containers (processes, or images
/// with --images), or only report them running (runtime/simulated_run.hpp; scale tests).
enum class PodMode { kRun, kSimulated };

struct Options {
  std::string kubeconfig;  ///< the node's own credentials (controlplane.sh node-kubeconfig)
  /// A control plane of tests/controlplane/controlplane.sh: its URL and CA (DIR/url,
  /// DIR/pki/ca.{crt,key}); without --kubeconfig the agent signs its node credentials itself.
  std::string controlplane;
  /// The cluster DNS server's identity, for the DNS emulation (api_view.hpp); with
  /// --controlplane DIR, DIR/cluster-dns.kubeconfig when it exists.
  std::string dns_kubeconfig;
  /// HOST:PORT where the node's pods reach the API server (KUBERNETES_SERVICE_HOST / _PORT). On
  /// a real node kube-proxy sends the kubernetes Service to the API server's endpoints; a test
  /// may put tests/faultproxy there instead. "": the API server the agent itself talks to.
  std::string pod_api_server;
  std::string node;        ///< the Node's name
  std::map<std::string, std::string> labels;
  /// Taints the Node registers with (a kubelet's --register-with-taints), KEY[=VALUE]:EFFECT.
  std::vector<std::string> taints;
  std::string dir;  ///< pods/ (each pod's directory, logs), the serving certificate
  /// The cluster CA: the log endpoint's serving certificate is signed with it (a kubelet gets
  /// its from a CSR an approver signs) and clients of the endpoint must hold a certificate it
  /// signed (the API server's kubelet client certificate).
  std::string ca_cert;
  std::string ca_key;
  int net_block = 0;      ///< 127.K.0.0/16 for the node and its pods; 0: the first free one
  int port = 10250;       ///< the log endpoint's port on the node's InternalIP
  int gpus = 0;           ///< nvidia.com/gpu capacity
  int cpus = 0;           ///< 0: this machine's
  long long memory = 0;   ///< bytes; 0: this machine's
  int max_pods = 110;
  double max_grace_s = 3;
  double dns_wait_s = 60;
  double lease_interval_s = 10;   ///< Lease renewal, as a kubelet (duration 40 s)
  double status_interval_s = 60;  ///< node status posted at least this often
  std::optional<std::string> podnet_library;  ///< nullopt: next to the binary, else where it is built
  std::optional<noderuntime::ImageStoreOptions> images;  ///< --images buildah
  PodMode pods = PodMode::kRun;  ///< --pods run|simulated
};

/// Parses argv; exits 2 with a usage message on a bad command line.
Options parse_options(int argc, char** argv);

}  // namespace nodeagent
