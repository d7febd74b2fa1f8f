#include "node_lease.hpp"

#include "kube/errors.hpp"
#include "runtime/util.hpp"

namespace nodeagent {

void renew_node_lease(const kube::Client& client, const std::string& node, const std::string& node_uid) {
  const nlohmann::json spec = {{"holderIdentity", node},
                               {"leaseDurationSeconds", kLeaseDurationSeconds},
                               {"renewTime", noderuntime::now_rfc3339_micro()}};
  try {
    client.merge_patch(kube::resources::leases(), kNodeLeaseNamespace, node, {{"spec", spec}});
    return;
  } catch (const kube::NotFoundError&) {
  }
  nlohmann::json lease = {
      {"metadata",
       {{"name", node},
        {"namespace", kNodeLeaseNamespace},
        {"ownerReferences",
         nlohmann::json::array({{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}, {"uid", node_uid}}})}}},
      {"spec", spec}};
  try {
    client.create(kube::resources::leases(), kNodeLeaseNamespace, lease);
  } catch (const kube::ConflictError& e) {  // made meanwhile (a restarted agent's first renewal raced)
    if (!e.is_already_exists()) throw;
  }
}

}  // namespace nodeagent
