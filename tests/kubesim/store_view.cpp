#include "store_view.hpp"

namespace kubesim {

namespace {

bool pod_usable(const json& p) {
  const json st = p.value("status", json::object());
  std::string phase = st.value("phase", "");
  if (phase == "Succeeded" || phase == "Failed") return false;
  const json* dt = json_path(p, "metadata.deletionTimestamp");
  if (dt && !dt->is_null()) return false;
  return !st.value("podIP", "").empty();
}

}  // namespace

std::optional<json> StoreView::lookup(const std::string& key, const std::string& ns, const std::string& name) {
  std::lock_guard<std::recursive_mutex> lock(api_.store().mu());
  ObjPtr p = api_.store().get(key, ns, name);
  if (!p) return std::nullopt;
  return *p;
}

std::optional<json> StoreView::config_map(const std::string& ns, const std::string& name) {
  return lookup("configmaps", ns, name);
}

std::optional<json> StoreView::secret(const std::string& ns, const std::string& name) {
  return lookup("secrets", ns, name);
}

std::string StoreView::service_address(const std::string& ns, const std::string& service) {
  std::lock_guard<std::recursive_mutex> lock(api_.store().mu());
  Store& store = api_.store();
  ObjPtr s = store.get("services", ns, service);
  if (!s) return "";
  const json sel = (*s)["spec"].value("selector", json::object());
  if (!sel.is_object() || sel.empty()) return "";
  for (const auto& p : store.list("pods", ns)) {
    const json labels_of = (*p)["metadata"].value("labels", json::object());
    bool match = true;
    for (auto it = sel.begin(); it != sel.end() && match; ++it) {
      match = labels_of.contains(it.key()) && labels_of[it.key()] == it.value();
    }
    if (match && pod_usable(*p)) return (*p)["status"]["podIP"];
  }
  return "";
}

std::string StoreView::hostname_address(const std::string& ns, const std::string& hostname,
                                        const std::string& subdomain) {
  std::lock_guard<std::recursive_mutex> lock(api_.store().mu());
  for (const auto& p : api_.store().list("pods", ns)) {
    const json spec = (*p).value("spec", json::object());
    if (spec.value("hostname", "") == hostname && spec.value("subdomain", "") == subdomain && pod_usable(*p)) {
      return (*p)["status"]["podIP"];
    }
  }
  return "";
}

}  // namespace kubesim
