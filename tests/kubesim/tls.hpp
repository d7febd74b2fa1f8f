#pragma once

// Test PKI made with the OpenSSL API: a CA and a server certificate for 127.0.0.1/localhost,
// written as PEM files into kubesim's directory.

#include <string>

namespace kubesim {

struct TlsFiles {
  std::string ca_cert;      ///< DIR/ca.crt
  std::string ca_key;       ///< DIR/ca.key
  std::string server_cert;  ///< DIR/server.crt (leaf, then the CA)
  std::string server_key;   ///< DIR/server.key
};

/// Generates a fresh P-256 CA ("kubesim-ca") and a server certificate signed by it with SANs
/// IP:127.0.0.1, IP:::1, DNS:localhost, DNS:kubernetes.default.svc; throws on failure.
TlsFiles generate_test_pki(const std::string& dir);

}  // namespace kubesim
