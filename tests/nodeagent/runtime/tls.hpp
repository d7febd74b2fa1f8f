#pragma once

// Test PKI made with the OpenSSL API: a CA and server certificate (kubesim's, historically) for
// 127.0.0.1/localhost, written as PEM files into its directory; a node agent's serving
// certificate for its InternalIP and its client certificate, signed by the cluster's CA.

#include <string>
#include <vector>

namespace noderuntime {

struct TlsFiles {
  std::string ca_cert;      ///< DIR/ca.crt
  std::string ca_key;       ///< DIR/ca.key
  std::string server_cert;  ///< DIR/server.crt (leaf, then the CA)
  std::string server_key;   ///< DIR/server.key
};

/// Generates a fresh P-256 CA ("nodeagent-test-ca") and a server certificate signed by it with SANs
/// IP:127.0.0.1, IP:::1, DNS:localhost, DNS:kubernetes.default.svc; throws on failure.
TlsFiles generate_test_pki(const std::string& dir);

struct SignedCert {
  std::string cert_pem;
  std::string key_pem;
};

/// A fresh P-256 key and a serving certificate (CN `cn`, SANs in X.509v3 syntax, e.g.
/// "IP:127.3.0.10,DNS:node-1") signed by the CA given as PEM; throws std::runtime_error.
SignedCert sign_serving_cert(const std::string& ca_cert_pem, const std::string& ca_key_pem, const std::string& cn,
                             const std::string& sans);

/// A fresh P-256 key and a client certificate (subject CN `cn`, an O per organization, as
/// Kubernetes reads user and groups) signed by the CA given as PEM; throws std::runtime_error.
SignedCert sign_client_cert(const std::string& ca_cert_pem, const std::string& ca_key_pem, const std::string& cn,
                            const std::vector<std::string>& organizations);

}  // namespace noderuntime
