#pragma once

// Certificates for the kube client tests, made with the OpenSSL API at run time (P-256):
// a CA, a server certificate for 127.0.0.1/localhost, a server certificate for another host
// name, a client certificate, and an unrelated CA.

#include <string>

namespace kubetest {

struct KeyPair {
  std::string cert_pem;
  std::string key_pem;
};

struct TestPki {
  KeyPair ca;           ///< "kubetest-ca"
  KeyPair server;       ///< signed by ca; SAN IP:127.0.0.1, DNS:localhost
  KeyPair wrong_host;   ///< signed by ca; SAN DNS:elsewhere.invalid only
  KeyPair client;       ///< signed by ca; CN "alice", clientAuth
  KeyPair other_ca;     ///< an unrelated CA
  KeyPair other_client; ///< signed by other_ca
};

/// Generated once per process.
const TestPki& test_pki();

}  // namespace kubetest
