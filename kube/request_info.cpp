#include "kube/request_info.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

namespace trainbench::kube {
namespace {

std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream in(path);
  for (std::string s; std::getline(in, s, '/');) {
    if (!s.empty()) out.push_back(s);
  }
  return out;
}

bool query_has(const std::string& query, const std::string& key_value) {
  std::stringstream in(query);
  for (std::string kv; std::getline(in, kv, '&');) {
    if (kv == key_value) return true;
  }
  return false;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

RequestInfo classify_request(const std::string& method, const std::string& path, const std::string& query) {
  const std::vector<std::string> s = segments(path);
  // /api/v1/... or /apis/GROUP/VERSION/...: the resource part starts after the version.
  std::size_t i = 0;
  if (s.size() >= 2 && s[0] == "api") {
    i = 2;
  } else if (s.size() >= 3 && s[0] == "apis") {
    i = 3;
  } else {
    return {lower(method), ""};
  }
  bool watch_path = false;
  if (i < s.size() && s[i] == "watch") {  // the deprecated /watch/ prefix
    watch_path = true;
    ++i;
  }
  std::vector<std::string> rest(s.begin() + static_cast<std::ptrdiff_t>(i), s.end());
  // namespaces/NS/RESOURCE[/NAME[/SUB]]; "namespaces" alone or namespaces/NS[/status] is the
  // namespaces resource itself.
  const bool namespace_subresource =
      rest.size() == 3 && rest[0] == "namespaces" && (rest[2] == "status" || rest[2] == "finalize");
  if (rest.size() >= 3 && rest[0] == "namespaces" && !namespace_subresource) rest.erase(rest.begin(), rest.begin() + 2);
  if (rest.empty()) return {lower(method), ""};
  std::string resource = rest[0];
  const bool named = rest.size() >= 2;
  if (rest.size() >= 3) resource += "/" + rest[2];

  std::string verb;
  if (method == "GET" || method == "HEAD") {
    verb = watch_path || query_has(query, "watch=true") || query_has(query, "watch=1") ? "watch"
           : named                                                                       ? "get"
                                                                                         : "list";
  } else if (method == "POST") {
    verb = "create";
  } else if (method == "PUT") {
    verb = "update";
  } else if (method == "PATCH") {
    verb = "patch";
  } else if (method == "DELETE") {
    verb = named ? "delete" : "deletecollection";
  } else {
    verb = lower(method);
  }
  return {verb, resource};
}

}  // namespace trainbench::kube
