#include "api_view.hpp"

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "kube/errors.hpp"
#include "runtime/util.hpp"

namespace nodeagent {

using json = nlohmann::json;

namespace {

/// What the DNS emulation reads of a pod or Service (the caches keep nothing else).
json dns_fields(json o) {
  json md = o.value("metadata", json::object());
  json out = {{"metadata",
               {{"name", md.value("name", "")},
                {"namespace", md.value("namespace", "")},
                {"resourceVersion", md.value("resourceVersion", "")},
                {"labels", md.value("labels", json::object())},
                {"deletionTimestamp", md.value("deletionTimestamp", json())}}}};
  const json spec = o.value("spec", json::object());
  out["spec"] = {{"selector", spec.value("selector", json())},
                 {"hostname", spec.value("hostname", "")},
                 {"subdomain", spec.value("subdomain", "")}};
  const json status = o.value("status", json::object());
  out["status"] = {{"phase", status.value("phase", "")}, {"podIP", status.value("podIP", "")}};
  return out;
}

bool usable(const json& pod) {
  const std::string phase = pod["status"].value("phase", "");
  return phase != "Succeeded" && phase != "Failed" && pod["metadata"]["deletionTimestamp"].is_null() &&
         !pod["status"].value("podIP", "").empty();
}

bool selects(const json& selector, const json& labels) {
  if (!selector.is_object() || selector.empty()) return false;
  for (const auto& [k, v] : selector.items()) {
    if (!labels.contains(k) || labels[k] != v) return false;
  }
  return true;
}

/// The pod IP of the first pod by name of `ns` that `pick` accepts and is usable.
std::string first_address(const kube::Reflector* pods, const std::string& ns,
                          const std::function<bool(const json&)>& pick) {
  if (!pods) return "";
  std::string best_name, best_ip;
  for (const auto& p : pods->cache()->list()) {
    const std::string name = p["metadata"].value("name", "");
    if (p["metadata"].value("namespace", "") != ns || !usable(p) || !pick(p)) continue;
    if (best_ip.empty() || name < best_name) {
      best_name = name;
      best_ip = p["status"].value("podIP", "");
    }
  }
  return best_ip;
}

}  // namespace

ApiView::ApiView(std::shared_ptr<const kube::Client> client, std::shared_ptr<const kube::Client> dns,
                 const std::string& pod_api_server)
    : client_(std::move(client)), dns_(std::move(dns)) {
  const kube::ClientConfig& config = client_->transport().config();
  ca_pem_ = config.tls.ca_pem;
  std::string rest = pod_api_server;
  if (rest.empty()) {  // the node's own API server
    rest = config.server.substr(config.server.find("://") + 3);
    rest = rest.substr(0, rest.find('/'));
  }
  const auto colon = rest.rfind(':');
  const bool has_port = colon != std::string::npos && rest.find(']', colon) == std::string::npos;
  host_ = has_port ? rest.substr(0, colon) : rest;
  if (has_port) port_ = std::stoi(rest.substr(colon + 1));
  if (host_.size() > 2 && host_.front() == '[') host_ = host_.substr(1, host_.size() - 2);
}

ApiView::~ApiView() { stop(); }

void ApiView::start() {
  if (!dns_) {
    std::fprintf(stderr, "trainbench-nodeagent: no cluster DNS credentials: service names in env values stay\n");
    return;
  }
  kube::ReflectorOptions options;
  options.transform = dns_fields;
  kube::ReflectorHandlers h;
  h.on_error = [](const std::string& m) { std::fprintf(stderr, "trainbench-nodeagent: cluster DNS: %s\n", m.c_str()); };
  pods_ = std::make_unique<kube::Reflector>(dns_, kube::resources::pods(), "", options, h);
  services_ = std::make_unique<kube::Reflector>(dns_, kube::resources::services(), "", options, h);
  pods_->start();
  services_->start();
}

void ApiView::stop() {
  if (pods_) pods_->stop();
  if (services_) services_->stop();
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
  if (!services_) return "";
  const std::optional<json> svc = services_->cache()->get(ns, service);
  if (!svc) return "";
  const json selector = (*svc)["spec"]["selector"];
  return first_address(pods_.get(), ns, [&](const json& p) { return selects(selector, p["metadata"]["labels"]); });
}

std::string ApiView::hostname_address(const std::string& ns, const std::string& hostname,
                                      const std::string& subdomain) {
  return first_address(pods_.get(), ns, [&](const json& p) {
    return p["spec"].value("hostname", "") == hostname && p["spec"].value("subdomain", "") == subdomain;
  });
}

}  // namespace nodeagent
