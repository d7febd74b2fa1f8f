#include "test_pki.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <stdexcept>

namespace kubetest {
namespace {

struct KeyDel {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertDel {
  void operator()(X509* c) const { X509_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyDel>;
using Cert = std::unique_ptr<X509, CertDel>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test pki: ") + what);
}

Key make_key() {
  EVP_PKEY* k = EVP_EC_gen("P-256");
  check(k != nullptr, "EVP_EC_gen");
  return Key(k);
}

void extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  check(ext != nullptr, value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

std::string pem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}

std::string pem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}

struct Issued {
  Key key;
  Cert cert;
  KeyPair pems() const { return {pem(cert.get()), pem(key.get())}; }
};

// issuer null: self-signed CA.
Issued issue(const char* cn, const Issued* issuer, long serial, const char* san, bool client) {
  Issued out{make_key(), Cert(X509_new())};
  X509* c = out.cert.get();
  X509_set_version(c, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c), serial);
  X509_gmtime_adj(X509_getm_notBefore(c), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c), 30L * 24 * 3600);
  X509_set_pubkey(c, out.key.get());
  X509_NAME_add_entry_by_txt(X509_get_subject_name(c), "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509* signer = issuer ? issuer->cert.get() : c;
  X509_set_issuer_name(c, X509_get_subject_name(signer));
  if (!issuer) {
    extension(c, c, NID_basic_constraints, "critical,CA:TRUE");
    extension(c, c, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
    extension(c, c, NID_subject_key_identifier, "hash");
  } else {
    extension(c, signer, NID_basic_constraints, "critical,CA:FALSE");
    extension(c, signer, NID_key_usage, "critical,digitalSignature,keyEncipherment");
    extension(c, signer, NID_ext_key_usage, client ? "clientAuth" : "serverAuth");
    extension(c, signer, NID_authority_key_identifier, "keyid:always");
    if (san) extension(c, signer, NID_subject_alt_name, san);
  }
  check(X509_sign(c, issuer ? issuer->key.get() : out.key.get(), EVP_sha256()) > 0, "X509_sign");
  return out;
}

TestPki generate() {
  const Issued ca = issue("kubetest-ca", nullptr, 1, nullptr, false);
  const Issued other_ca = issue("other-ca", nullptr, 2, nullptr, false);
  TestPki pki;
  pki.ca = ca.pems();
  pki.other_ca = other_ca.pems();
  pki.server = issue("kubetest-server", &ca, 10, "IP:127.0.0.1,DNS:localhost", false).pems();
  pki.wrong_host = issue("elsewhere", &ca, 11, "DNS:elsewhere.invalid", false).pems();
  pki.client = issue("alice", &ca, 12, nullptr, true).pems();
  pki.other_client = issue("mallory", &other_ca, 13, nullptr, true).pems();
  return pki;
}

}  // namespace

const TestPki& test_pki() {
  static const TestPki pki = generate();
  return pki;
}

}  // namespace kubetest
