#include "kube/tls.hpp"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <utility>

#include "kube/errors.hpp"

namespace trainbench::kube {
namespace {

std::string openssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

int no_password(char*, int, int, void*) { return 0; }  // never prompt for a passphrase

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioDeleter>;

BioPtr mem_bio(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) throw ConfigError("out of memory reading PEM");
  return bio;
}

void free_certs(std::vector<X509*>& certs) {
  for (X509* x : certs) X509_free(x);
  certs.clear();
}

// All certificates of a PEM bundle; throws ConfigError "<origin>: ..." when there is none or a
// block is malformed.
std::vector<X509*> read_certs(const std::string& pem, const std::string& origin) {
  ERR_clear_error();
  auto bio = mem_bio(pem);
  std::vector<X509*> certs;
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, no_password, nullptr)) certs.push_back(x);
  const unsigned long err = ERR_peek_last_error();
  const bool clean_end = ERR_GET_LIB(err) == ERR_LIB_PEM && ERR_GET_REASON(err) == PEM_R_NO_START_LINE;
  if (certs.empty() || (err != 0 && !clean_end)) {
    const std::string detail = certs.empty() && clean_end ? "no PEM certificate found" : openssl_errors();
    free_certs(certs);
    ERR_clear_error();
    throw ConfigError(origin + ": not a valid PEM certificate (" + detail + ")");
  }
  ERR_clear_error();
  return certs;
}

EVP_PKEY* read_key(const std::string& pem, const std::string& origin) {
  ERR_clear_error();
  auto bio = mem_bio(pem);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, no_password, nullptr);
  if (!key) {
    const std::string detail = openssl_errors();
    throw ConfigError(origin + ": not a valid unencrypted PEM private key (" + detail + ")");
  }
  ERR_clear_error();
  return key;
}

void free_diagnostics(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<std::shared_ptr<TlsDiagnostics>*>(ptr);
}

int diagnostics_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, free_diagnostics);
  return index;
}

// Replaces X509_verify_cert for our contexts only to remember why a chain was rejected.
int verify_and_record(X509_STORE_CTX* store, void*) {
  const int ok = X509_verify_cert(store);
  if (ok > 0) return ok;
  auto* ssl = static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  if (!ssl) return ok;
  auto* diag = static_cast<std::shared_ptr<TlsDiagnostics>*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), diagnostics_index()));
  if (!diag || !*diag) return ok;
  const int err = X509_STORE_CTX_get_error(store);
  std::string msg = err == X509_V_OK ? std::string("certificate rejected (host name does not match)")
                                     : std::string("certificate verify failed: ") + X509_verify_cert_error_string(err);
  if (X509* cert = X509_STORE_CTX_get_current_cert(store)) {
    char subject[256];
    X509_NAME_oneline(X509_get_subject_name(cert), subject, sizeof subject);
    msg += " (depth " + std::to_string(X509_STORE_CTX_get_error_depth(store)) + ", subject " + subject + ")";
  }
  (*diag)->record(std::move(msg));
  return ok;
}

bool is_ip_literal(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

void TlsDiagnostics::record(std::string error) {
  std::lock_guard<std::mutex> lock(mutex_);
  last_ = std::move(error);
}

std::string TlsDiagnostics::last() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_;
}

void TlsDiagnostics::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  last_.clear();
}

void check_tls_material(const TlsConfig& tls) { TlsSetup probe(tls, "localhost"); }

TlsSetup::TlsSetup(const TlsConfig& tls, std::string host) : host_(std::move(host)) {
  if (host_.size() >= 2 && host_.front() == '[' && host_.back() == ']') host_ = host_.substr(1, host_.size() - 2);
  host_is_ip_ = is_ip_literal(host_);
  try {
    if (!tls.ca_pem.empty()) ca_ = read_certs(tls.ca_pem, tls.ca_origin.empty() ? "CA certificate" : tls.ca_origin);
    const bool has_cert = !tls.client_cert_pem.empty();
    const bool has_key = !tls.client_key_pem.empty();
    if (has_cert != has_key) {
      throw ConfigError((has_cert ? tls.client_cert_origin : tls.client_key_origin) + ": a client " +
                        (has_cert ? "certificate needs its key" : "key needs its certificate") +
                        " (client-certificate and client-key go together)");
    }
    if (has_cert) {
      const std::string cert_origin = tls.client_cert_origin.empty() ? "client certificate" : tls.client_cert_origin;
      const std::string key_origin = tls.client_key_origin.empty() ? "client key" : tls.client_key_origin;
      client_chain_ = read_certs(tls.client_cert_pem, cert_origin);
      client_key_ = read_key(tls.client_key_pem, key_origin);
      if (X509_check_private_key(client_chain_.front(), client_key_) != 1) {
        ERR_clear_error();
        throw ConfigError(key_origin + ": the private key does not match the client certificate (" + cert_origin + ")");
      }
    }
  } catch (...) {
    free_certs(ca_);
    free_certs(client_chain_);
    EVP_PKEY_free(client_key_);
    client_key_ = nullptr;
    throw;
  }
}

TlsSetup::~TlsSetup() {
  free_certs(ca_);
  free_certs(client_chain_);
  EVP_PKEY_free(client_key_);
}

void TlsSetup::apply(ssl_ctx_st* ctx) const {
  auto fail = [](const std::string& what) {
    const std::string detail = openssl_errors();
    throw TransportError(TransportError::Kind::kTls, "TLS setup: " + what + (detail.empty() ? "" : " (" + detail + ")"));
  };
  ERR_clear_error();
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) fail("cannot require TLS 1.2");
  if (!ca_.empty()) {
    // Trust exactly the configured CA bundle, not the system store cpprestsdk preloads.
    X509_STORE* store = X509_STORE_new();
    if (!store) fail("out of memory");
    for (X509* x : ca_) {
      if (X509_STORE_add_cert(store, x) != 1) {
        X509_STORE_free(store);
        fail("cannot add CA certificate");
      }
    }
    SSL_CTX_set_cert_store(ctx, store);  // takes ownership
  }
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
  if (host_is_ip_) {
    if (X509_VERIFY_PARAM_set1_ip_asc(param, host_.c_str()) != 1) fail("bad server IP " + host_);
  } else {
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (X509_VERIFY_PARAM_set1_host(param, host_.c_str(), host_.size()) != 1) fail("bad server host " + host_);
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  auto* diag = new std::shared_ptr<TlsDiagnostics>(diagnostics_);
  if (SSL_CTX_set_ex_data(ctx, diagnostics_index(), diag) != 1) {
    delete diag;
    fail("cannot attach diagnostics");
  }
  SSL_CTX_set_cert_verify_callback(ctx, verify_and_record, nullptr);
  if (client_key_) {
    if (SSL_CTX_use_certificate(ctx, client_chain_.front()) != 1) fail("cannot use the client certificate");
    for (std::size_t i = 1; i < client_chain_.size(); ++i) {
      if (SSL_CTX_add1_chain_cert(ctx, client_chain_[i]) != 1) fail("cannot use the client certificate chain");
    }
    if (SSL_CTX_use_PrivateKey(ctx, client_key_) != 1) fail("cannot use the client key");
  }
}

}  // namespace trainbench::kube
