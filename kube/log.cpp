#include "kube/log.hpp"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

namespace trainbench::kube {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool sensitive_path(std::string_view path) {
  const std::string p = lower(path.substr(0, path.find('?')));
  return p.find("/secrets") != std::string::npos || ends_with(p, "/token") ||
         p.find("/tokenrequests") != std::string::npos;
}

bool is_secret_kind(const nlohmann::json& j) {
  if (!j.is_object()) return false;
  auto kind = j.find("kind");
  if (kind == j.end() || !kind->is_string()) return false;
  const auto& k = kind->get_ref<const std::string&>();
  return k == "Secret" || k == "SecretList" || k == "TokenRequest";
}

// Redacts Secret payloads wherever they are nested (lists, watch events, ...). Bounded depth.
void scrub(nlohmann::json& j, int depth) {
  if (depth > 64) {
    j = "<redacted: too deep>";
    return;
  }
  if (j.is_object()) {
    if (is_secret_kind(j)) {
      for (const char* key : {"data", "stringData", "status"}) {
        auto it = j.find(key);
        if (it != j.end()) *it = "<redacted>";
      }
    }
    for (auto& item : j.items()) scrub(item.value(), depth + 1);
  } else if (j.is_array()) {
    for (auto& v : j) scrub(v, depth + 1);
  }
}

}  // namespace

std::string redact_header(std::string_view name, std::string_view value) {
  const std::string n = lower(name);
  if (n == "authorization" || n == "proxy-authorization" || n == "cookie" || n == "set-cookie" ||
      ends_with(n, "-token") || n.find("secret") != std::string::npos) {
    return "<redacted>";
  }
  return std::string(value);
}

std::string redact_body(std::string_view path, std::string_view body, std::size_t max_chars) {
  if (body.empty()) return {};
  if (sensitive_path(path)) return "<redacted: " + std::to_string(body.size()) + " bytes>";
  nlohmann::json j = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  std::string out;
  if (j.is_discarded()) {
    // Not JSON (or one line of a watch stream cut short): never guess, show only its size.
    out = "<" + std::to_string(body.size()) + " bytes, not JSON>";
  } else {
    if (is_secret_kind(j)) return "<redacted: " + std::to_string(body.size()) + " bytes>";
    scrub(j, 0);
    out = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  if (out.size() > max_chars) {
    out.resize(max_chars);
    out += "...";
  }
  return out;
}

}  // namespace trainbench::kube
