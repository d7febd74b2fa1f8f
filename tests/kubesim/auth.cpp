#include "auth.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace kubesim {

TokenAuthority::TokenAuthority() : admin_token_("kubesim-admin-" + random_hex(16)), key_(random_hex(32)) {}

std::string TokenAuthority::sign(const std::string& data) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), mac, &len);
  return base64url_encode(std::string(reinterpret_cast<char*>(mac), len));
}

TokenAuthority::Minted TokenAuthority::mint(const std::string& ns, const std::string& sa, const std::string& sa_uid,
                                            long long expiration_seconds, const std::vector<std::string>& audiences,
                                            const std::string& bound_kind, const std::string& bound_name,
                                            const std::string& bound_uid) const {
  auto now = Clock::now();
  long long iat = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  long long exp = iat + expiration_seconds;
  json k8s = {{"namespace", ns}, {"serviceaccount", {{"name", sa}, {"uid", sa_uid}}}};
  if (bound_kind == "Pod") k8s["pod"] = {{"name", bound_name}, {"uid", bound_uid}};
  if (bound_kind == "Secret") k8s["secret"] = {{"name", bound_name}, {"uid", bound_uid}};
  json payload = {{"aud", audiences.empty() ? std::vector<std::string>{issuer()} : audiences},
                  {"exp", exp},
                  {"iat", iat},
                  {"nbf", iat},
                  {"iss", issuer()},
                  {"jti", new_uid()},
                  {"kubernetes.io", k8s},
                  {"sub", "system:serviceaccount:" + ns + ":" + sa}};
  json header = {{"alg", "HS256"}, {"kid", "kubesim"}, {"typ", "JWT"}};
  std::string data = base64url_encode(header.dump()) + "." + base64url_encode(payload.dump());
  return {data + "." + sign(data), rfc3339(Clock::from_time_t(static_cast<std::time_t>(exp)))};
}

std::optional<UserInfo> TokenAuthority::authenticate(const std::string& token, Store& store) const {
  if (token.size() == admin_token_.size() && CRYPTO_memcmp(token.data(), admin_token_.data(), token.size()) == 0) {
    return admin_user();
  }
  auto first = token.find('.');
  auto last = token.rfind('.');
  if (first == std::string::npos || first == last) return std::nullopt;
  std::string data = token.substr(0, last);
  std::string sig = sign(data);
  std::string given = token.substr(last + 1);
  if (sig.size() != given.size() || CRYPTO_memcmp(sig.data(), given.data(), sig.size()) != 0) return std::nullopt;
  json payload;
  try {
    payload = json::parse(base64url_decode(token.substr(first + 1, last - first - 1)));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  long long now = std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
  if (payload.value("exp", 0LL) < now) return std::nullopt;
  const json k8s = payload.value("kubernetes.io", json::object());
  std::string ns = k8s.value("namespace", "");
  const json sa = k8s.value("serviceaccount", json::object());
  std::string name = sa.value("name", "");
  std::lock_guard<std::recursive_mutex> lock(store.mu());
  ObjPtr obj = store.get("serviceaccounts", ns, name);
  if (!obj || (*obj)["metadata"].value("uid", "") != sa.value("uid", "")) return std::nullopt;
  if (k8s.contains("pod")) {
    ObjPtr pod = store.get("pods", ns, k8s["pod"].value("name", ""));
    if (!pod || (*pod)["metadata"].value("uid", "") != k8s["pod"].value("uid", "")) return std::nullopt;
  }
  if (k8s.contains("secret")) {
    ObjPtr secret = store.get("secrets", ns, k8s["secret"].value("name", ""));
    if (!secret || (*secret)["metadata"].value("uid", "") != k8s["secret"].value("uid", "")) return std::nullopt;
  }
  return service_account_user(ns, name, sa.value("uid", ""));
}

}  // namespace kubesim
