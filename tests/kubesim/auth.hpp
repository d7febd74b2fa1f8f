#pragma once

// Authentication: the admin bearer token, and ServiceAccount tokens as JWTs (HS256 with a
// per-process key; the real server signs RS256) carrying the same claims as the real ones
// (sub system:serviceaccount:NS:NAME, kubernetes.io namespace / serviceaccount / pod). A token
// is valid while it has not expired, its ServiceAccount still exists with the same uid, and the
// pod it is bound to (if any) still exists.

#include <optional>
#include <string>
#include <vector>

#include "rbac.hpp"
#include "store.hpp"

namespace kubesim {

class TokenAuthority {
 public:
  TokenAuthority();
  const std::string& admin_token() const { return admin_token_; }

  struct Minted {
    std::string token;
    std::string expiration;  ///< RFC 3339
  };
  /// `bound_kind`/`bound_name`/`bound_uid`: the object the token is bound to ("Pod", or empty).
  Minted mint(const std::string& ns, const std::string& sa, const std::string& sa_uid, long long expiration_seconds,
              const std::vector<std::string>& audiences, const std::string& bound_kind = "",
              const std::string& bound_name = "", const std::string& bound_uid = "") const;

  /// The user a bearer token names, or nullopt if it is not valid. Takes the store's lock.
  std::optional<UserInfo> authenticate(const std::string& token, Store& store) const;

  static const char* issuer() { return "https://kubernetes.default.svc.cluster.local"; }

 private:
  std::string sign(const std::string& data) const;
  std::string admin_token_;
  std::string key_;
};

}  // namespace kubesim
