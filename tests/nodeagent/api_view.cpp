#include "api_view.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>

#include "kube/errors.hpp"

namespace nodeagent {

using json = nlohmann::json;

namespace {

kube::ResourceType endpoints_resource() { return {"", "v1", "endpoints", true, "Endpoints"}; }

/// Every address of an Endpoints object, ready ones and not-ready ones.
std::vector<json> addresses_of(const json& endpoints) {
  std::vector<json> out;
  for (const auto& subset : endpoints.value("subsets", json::array())) {
    for (const char* list : {"addresses", "notReadyAddresses"}) {
      for (const auto& a : subset.value(list, json::array())) out.push_back(a);
    }
  }
  return out;
}

std::string target_name(const json& address) {
  return address.value("targetRef", json::object()).value("name", "");
}

}  // namespace

ApiView::ApiView(std::shared_ptr<const kube::Client> client) : client_(std::move(client)) {
  const kube::ClientConfig& config = client_->transport().config();
  ca_pem_ = config.tls.ca_pem;
  std::string rest = config.server.substr(config.server.find("://") + 3);
  rest = rest.substr(0, rest.find('/'));
  const auto colon = rest.rfind(':');
  const bool has_port = colon != std::string::npos && rest.find(']', colon) == std::string::npos;
  host_ = has_port ? rest.substr(0, colon) : rest;
  if (has_port) port_ = std::stoi(rest.substr(colon + 1));
  if (host_.size() > 2 && host_.front() == '[') host_ = host_.substr(1, host_.size() - 2);
}

std::optional<json> ApiView::get(const kube::ResourceType& type, const std::string& ns, const std::string& name) {
  // A pod just bound to this node reaches the Node authorizer's graph a moment after it reaches
  // the agent: a 403 is tried again for two seconds before it counts.
  for (int attempt = 0;; ++attempt) {
    try {
      return client_->try_get(type, ns, name);
    } catch (const kube::KubeError& e) {
      const bool forbidden = dynamic_cast<const kube::ForbiddenError*>(&e) != nullptr;
      if (!forbidden || attempt >= 8) {
        throw std::runtime_error("cannot read " + type.plural + " " + ns + "/" + name + ": " + e.what());
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

std::optional<json> ApiView::config_map(const std::string& ns, const std::string& name) {
  return get(kube::resources::config_maps(), ns, name);
}

std::optional<json> ApiView::secret(const std::string& ns, const std::string& name) {
  return get(kube::resources::secrets(), ns, name);
}

std::string ApiView::service_address(const std::string& ns, const std::string& service) {
  std::optional<json> ep;
  try {
    ep = get(endpoints_resource(), ns, service);
  } catch (const std::exception&) {
    return "";  // not readable now: as not resolvable yet
  }
  if (!ep) return "";
  std::string best_name, best_ip;
  for (const auto& a : addresses_of(*ep)) {
    const std::string name = target_name(a), ip = a.value("ip", "");
    if (!ip.empty() && (best_ip.empty() || name < best_name)) {
      best_name = name;
      best_ip = ip;
    }
  }
  return best_ip;
}

std::string ApiView::hostname_address(const std::string& ns, const std::string& hostname,
                                      const std::string& subdomain) {
  std::optional<json> ep;
  try {
    ep = get(endpoints_resource(), ns, subdomain);
  } catch (const std::exception&) {
    return "";
  }
  if (!ep) return "";
  for (const auto& a : addresses_of(*ep)) {
    if (a.value("hostname", "") == hostname) return a.value("ip", "");
  }
  return "";
}

}  // namespace nodeagent
