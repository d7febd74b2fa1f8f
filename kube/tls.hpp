#pragma once

// TLS material for the HTTPS transport, on OpenSSL.
//
// TlsSetup parses the PEMs once and configures each connection's SSL_CTX: only the configured CA
// bundle is trusted (the system store when none is given), the peer certificate must verify, and
// OpenSSL checks the host name (or IP address) of the server against the certificate as well as
// cpprestsdk's own RFC 2818 check. Immutable after construction: safe to share between threads.

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kube/config.hpp"

struct ssl_ctx_st;   // SSL_CTX
struct x509_st;      // X509
struct evp_pkey_st;  // EVP_PKEY

namespace trainbench::kube {

/// Parses (and for a client key: matches against its certificate) the PEMs of `tls`.
/// Throws ConfigError naming the origin of the bad piece.
void check_tls_material(const TlsConfig& tls);

/// The last certificate verification failure seen on connections of one transport.
class TlsDiagnostics {
 public:
  void record(std::string error);
  std::string last() const;
  void clear();

 private:
  mutable std::mutex mutex_;
  std::string last_;
};

class TlsSetup {
 public:
  /// `host` is the server's host name or IP literal (brackets allowed) verified against the
  /// certificate. Throws ConfigError on unparseable material.
  TlsSetup(const TlsConfig& tls, std::string host);
  ~TlsSetup();
  TlsSetup(const TlsSetup&) = delete;
  TlsSetup& operator=(const TlsSetup&) = delete;

  /// Configures a fresh SSL_CTX for one connection. Throws TransportError(kTls) on failure.
  void apply(ssl_ctx_st* ctx) const;
  const std::shared_ptr<TlsDiagnostics>& diagnostics() const { return diagnostics_; }

 private:
  std::string host_;
  bool host_is_ip_ = false;
  std::vector<x509_st*> ca_;
  std::vector<x509_st*> client_chain_;  // [0] is the leaf
  evp_pkey_st* client_key_ = nullptr;
  std::shared_ptr<TlsDiagnostics> diagnostics_ = std::make_shared<TlsDiagnostics>();
};

}  // namespace trainbench::kube
