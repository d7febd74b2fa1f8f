#include "runtime/tls.hpp"

#include <memory>
#include <stdexcept>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "runtime/util.hpp"

namespace noderuntime {
namespace {

struct PkeyFree { void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); } };
struct X509Free { void operator()(X509* p) const { X509_free(p); } };
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;

[[noreturn]] void fail(const std::string& what) {
  char buf[256];
  ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
  throw std::runtime_error("tls: " + what + ": " + buf);
}

Pkey new_key() {
  EVP_PKEY* k = EVP_EC_gen("P-256");
  if (!k) fail("EVP_EC_gen");
  return Pkey(k);
}

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) fail(std::string("extension ") + value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

Cert new_cert(EVP_PKEY* key, const char* cn) {
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  unsigned char serial_bytes[8];
  RAND_bytes(serial_bytes, sizeof serial_bytes);
  std::uint64_t serial = 0;
  for (unsigned char b : serial_bytes) serial = (serial << 8) | b;
  ASN1_INTEGER_set_uint64(X509_get_serialNumber(cert.get()), serial >> 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 365L * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
  return cert;
}

std::string pem_of_cert(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}

std::string pem_of_key(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}

Pkey read_key(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* k = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (!k) fail("read the CA key");
  return Pkey(k);
}

Cert read_cert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* c = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (!c) fail("read the CA certificate");
  return Cert(c);
}

/// A serving certificate for `cn` with the SANs given (X.509v3 syntax), signed by the CA.
Cert server_cert(EVP_PKEY* key, X509* ca, EVP_PKEY* ca_key, const char* cn, const std::string& sans) {
  Cert srv = new_cert(key, cn);
  X509_set_issuer_name(srv.get(), X509_get_subject_name(ca));
  add_ext(srv.get(), ca, NID_basic_constraints, "critical,CA:FALSE");
  add_ext(srv.get(), ca, NID_key_usage, "critical,digitalSignature,keyEncipherment");
  add_ext(srv.get(), ca, NID_ext_key_usage, "serverAuth");
  add_ext(srv.get(), ca, NID_subject_key_identifier, "hash");
  add_ext(srv.get(), ca, NID_authority_key_identifier, "keyid:always");
  add_ext(srv.get(), ca, NID_subject_alt_name, sans.c_str());
  if (!X509_sign(srv.get(), ca_key, EVP_sha256())) fail("sign server");
  return srv;
}

}  // namespace

TlsFiles generate_test_pki(const std::string& dir) {
  Pkey ca_key = new_key();
  Cert ca = new_cert(ca_key.get(), "nodeagent-test-ca");
  X509_set_issuer_name(ca.get(), X509_get_subject_name(ca.get()));
  add_ext(ca.get(), ca.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_ext(ca.get(), ca.get(), NID_key_usage, "critical,digitalSignature,keyCertSign,cRLSign");
  add_ext(ca.get(), ca.get(), NID_subject_key_identifier, "hash");
  if (!X509_sign(ca.get(), ca_key.get(), EVP_sha256())) fail("sign CA");

  Pkey srv_key = new_key();
  Cert srv = server_cert(srv_key.get(), ca.get(), ca_key.get(), "kube-apiserver",
                         "IP:127.0.0.1,IP:::1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
                         "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local");

  TlsFiles files{dir + "/ca.crt", dir + "/ca.key", dir + "/server.crt", dir + "/server.key"};
  write_file_atomic(files.ca_cert, pem_of_cert(ca.get()));
  write_file_atomic(files.ca_key, pem_of_key(ca_key.get()), 0600);
  write_file_atomic(files.server_cert, pem_of_cert(srv.get()) + pem_of_cert(ca.get()));
  write_file_atomic(files.server_key, pem_of_key(srv_key.get()), 0600);
  return files;
}

SignedCert sign_serving_cert(const std::string& ca_cert_pem, const std::string& ca_key_pem, const std::string& cn,
                             const std::string& sans) {
  Cert ca = read_cert(ca_cert_pem);
  Pkey ca_key = read_key(ca_key_pem);
  Pkey key = new_key();
  Cert cert = server_cert(key.get(), ca.get(), ca_key.get(), cn.c_str(), sans);
  return {pem_of_cert(cert.get()), pem_of_key(key.get())};
}

SignedCert sign_client_cert(const std::string& ca_cert_pem, const std::string& ca_key_pem, const std::string& cn,
                            const std::vector<std::string>& organizations) {
  Cert ca = read_cert(ca_cert_pem);
  Pkey ca_key = read_key(ca_key_pem);
  Pkey key = new_key();
  Cert cert = new_cert(key.get(), cn.c_str());
  X509_NAME* name = X509_get_subject_name(cert.get());
  for (const auto& o : organizations) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(o.c_str()), -1, -1, 0);
  }
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca.get()));
  add_ext(cert.get(), ca.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_ext(cert.get(), ca.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment");
  add_ext(cert.get(), ca.get(), NID_ext_key_usage, "clientAuth");
  add_ext(cert.get(), ca.get(), NID_authority_key_identifier, "keyid:always");
  if (!X509_sign(cert.get(), ca_key.get(), EVP_sha256())) fail("sign client");
  return {pem_of_cert(cert.get()), pem_of_key(key.get())};
}

}  // namespace noderuntime
