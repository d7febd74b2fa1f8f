#include "service_account_token.hpp"

#include "kube/errors.hpp"

namespace nodeagent {

using json = nlohmann::json;

std::optional<json> service_account_token_source(const json& pod) {
  for (const auto& volume : pod.value("spec", json::object()).value("volumes", json::array())) {
    if (!volume.contains("projected")) continue;
    for (const auto& source : volume["projected"].value("sources", json::array())) {
      if (source.contains("serviceAccountToken")) return source["serviceAccountToken"];
    }
  }
  return std::nullopt;
}

std::optional<std::string> request_service_account_token(const kube::Client& client, const json& pod) {
  const std::optional<json> source = service_account_token_source(pod);
  if (!source) return std::nullopt;
  const json& md = pod["metadata"];
  const std::string ns = md.value("namespace", "");
  const std::string sa = pod["spec"].value("serviceAccountName", "default");
  json spec = {{"expirationSeconds", source->value("expirationSeconds", 3607)},
               {"boundObjectRef",
                {{"kind", "Pod"}, {"apiVersion", "v1"}, {"name", md.value("name", "")}, {"uid", md.value("uid", "")}}}};
  const std::string audience = source->value("audience", "");
  if (!audience.empty()) spec["audiences"] = json::array({audience});
  const json request = {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenRequest"}, {"spec", spec}};
  const json answer = client.request("POST", kube::resources::service_accounts().path(ns, sa, "token"), "", &request);
  const std::string token = answer.value("status", json::object()).value("token", "");
  if (token.empty()) throw kube::KubeError("TokenRequest for " + ns + "/" + sa + ": no token in the answer");
  return token;
}

}  // namespace nodeagent
