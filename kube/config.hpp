#pragma once

// Where the API server is and how to authenticate to it: kubeconfig files and in-cluster config.
//
// TLS is always verified (certificate chain and host name); `insecure-skip-tls-verify: true` and
// plain-http servers are refused. Every ConfigError names the file and the field.

#include <chrono>
#include <string>

#include "kube/log.hpp"
#include "kube/request_info.hpp"

namespace trainbench::kube {

struct TlsConfig {
  /// PEM of the CA bundle that signs the server certificate; empty: the system trust store.
  std::string ca_pem;
  /// PEM of the client certificate (chain) and its private key; both empty or both set.
  std::string client_cert_pem;
  std::string client_key_pem;
  /// Where each came from, for error messages (e.g. "/root/.kube/config: users[alice].user.client-key").
  std::string ca_origin;
  std::string client_cert_origin;
  std::string client_key_origin;
};

/// Everything needed to talk to one API server (client-go's rest.Config).
struct ClientConfig {
  std::string server;  ///< "https://host:port[/prefix]", no trailing slash
  TlsConfig tls;
  std::string token;       ///< static bearer token (kubeconfig `token`)
  std::string token_file;  ///< bearer token file, re-read every `token_refresh` (rotating tokens)
  std::chrono::seconds token_refresh{60};
  std::string default_namespace = "default";
  std::string source;  ///< "kubeconfig /path (context x)" or "in-cluster (/var/run/...)"

  // Client behaviour (not from the file):
  double qps = 20.0;  ///< client-side rate limit; <= 0 disables it
  int burst = 30;
  std::chrono::milliseconds timeout{30000};  ///< per request (not watches), whole exchange
  int max_retries_on_429 = 3;                ///< 429s and 5xx with Retry-After, honouring it (capped at 30 s each)
  std::string user_agent = "trainbench-operator";
  LogSink log;  ///< optional request logging (redacted); see log.hpp
  RequestObserver observe;  ///< optional: every exchange's verb, resource, code, latency (metrics)
};

/// Loads a kubeconfig. `path` may be a colon-separated list as in KUBECONFIG (entries merged,
/// first definition wins). `context` empty means current-context. Relative file references are
/// resolved against the directory of the file that names them.
ClientConfig load_kubeconfig(const std::string& path, const std::string& context = "");

/// In-cluster config: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT and token, ca.crt and
/// namespace from `dir`; `dir` empty means $TRAINBENCH_SERVICEACCOUNT_DIR, else
/// /var/run/secrets/kubernetes.io/serviceaccount. The token is re-read periodically.
ClientConfig load_in_cluster_config(const std::string& dir = "");

/// $KUBECONFIG if set, else in-cluster when KUBERNETES_SERVICE_HOST is set, else ~/.kube/config.
ClientConfig load_default_config(const std::string& context = "");

/// Checks what a loaded config must satisfy (https server, parseable PEMs, key matches
/// certificate); the loaders call it, call it yourself for hand-built configs. Throws ConfigError.
void validate_config(const ClientConfig& config);

}  // namespace trainbench::kube
